/* keys.h - the key layout of the LMDB store and its invariants.
 *
 * Named databases (all keys are byte strings; "\0" is a NUL separator, so
 * names themselves never contain NUL):
 *
 *   meta           "schema_version" -> u64 LE; "audit_seq" -> u64 LE (last seq)
 *   kvns           namespace -> ""                    (namespace exists, maybe empty)
 *   kv             namespace \0 key -> value bytes
 *   clusters       cluster \0 brokerName -> ""        (cluster membership set)
 *   groups         brokerName -> packed group          (BrokerData: cluster, zone,
 *                                                       actingMaster, id -> addr list)
 *   live           cluster \0 brokerAddr -> packed live record (brokerName, id,
 *                                                       haAddr, DataVersion, timeout,
 *                                                       filter servers, registered_ms)
 *   queues         topic \0 brokerName -> QueueData as 4 x i32 LE (perm, r, w, sysflag)
 *   broker_topics  brokerName \0 topic -> ""           (reverse index of queues; v2)
 *   routes         topic -> materialised route: [u32 std_insert][u32 std_len][std]
 *                                               [u32 legacy_insert][legacy]
 *                                  (v4: legacy_insert 0xFFFFFFFF and no legacy
 *                                   bytes = legacy derived from std on read)
 *   mappings       topic \0 bname -> packed TopicQueueMappingInfo
 *   audit          seq (u64 BE) -> JSON record of one data-version change (v3);
 *                  from v11, records of 256 bytes or more packed (seqlog_pack.h)
 *   admin_audit    seq (u64 BE) -> JSON record of one admin request (v5; packed
 *                  as audit's from v11); meta
 *                  "admin_audit_seq" -> u64 LE (last seq). Never emptied by
 *                  ns_store_clear: the trail outlives a restore --replace.
 *   users          accessKey -> packed user: [u8 version=1][str secret][u8 role]
 *                                 [u8 enabled][str allow][str brokers]
 *                                 [i64 created_ms][i64 updated_ms]         (v6)
 *   (auth_refusals, v6-v7: refused requests; v8 moved them into admin_audit,
 *                  where authentication refusals are recorded since)
 *   digest         [u8 depth] name \0 name ... -> [u64 lo][u64 hi][u64 count] LE:
 *                  the fleet digest's nodes (v9; the tree and what is in it
 *                  at the top of store/digest.c). meta "digest_stale" -> u64
 *                  while the table waits for its first computation.
 *   kv_versions    namespace \0 key -> [u8 format=1][u64 hlc LE][u64 server LE]
 *                  [u8 deleted]: the version of a KV entry (v10; the order in
 *                  include/ns/kvver.h), or with deleted 1 a tombstone: the
 *                  entry was deleted at that version and has no kv row. A kv
 *                  entry without a row here has version (0, 0): written before
 *                  v10, or by an import or restore. The format byte and the
 *                  fixed size tell a row from anything else; another size or
 *                  format is NS_ECORRUPT. meta "kv_hlc" -> u64: the greatest
 *                  hlc issued or accepted (a restart never goes back);
 *                  "kv_server_id" -> u64: this store's tie-break id, made
 *                  once at random by the first versioned write.
 *
 * Invariants (checked by ns_store_verify, store/verify.c):
 *   I1 kv: every kv key's namespace has a kvns entry.
 *   I2 clusters: every (cluster, b) pair names an existing group b.
 *   I3 groups: every group is listed under its own cluster in clusters.
 *   I4 live: every live record (c, addr) belongs to a group that maps some id
 *      to addr, and that group is in cluster c.
 *   I5 groups: every id -> addr of a group has a live record (c, addr) for a
 *      cluster c that lists the group, and no address appears under two ids.
 *   I6 queues <-> broker_topics: (t, b) in queues iff (b, t) in broker_topics.
 *   I7 routes: a topic has a route iff it has queue data for at least one
 *      existing group; the route names exactly those groups.
 *   I8 a topic exists iff it has at least one queues entry (no empty topics).
 *   I9 digest: every node holds the sum and count of the leaves below it
 *      that the tables above give, and no other node is stored.
 *   I10 kv_versions: a row with deleted 0 has a kv entry, a tombstone none.
 *
 * Writers keep these in one write transaction: the registration, unregister,
 * eviction, permission and topic operations (store/registry.c,
 * registry_ops.c) rematerialise the route of every topic whose queue data or
 * groups they touch (store/route_build.c), before the transaction commits.
 */
#ifndef NS_STORE_KEYS_H
#define NS_STORE_KEYS_H

#include <stddef.h>

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ns/buf.h"

enum {
    NS_DB_META = 0,
    NS_DB_KVNS,
    NS_DB_KV,
    NS_DB_CLUSTERS,
    NS_DB_GROUPS,
    NS_DB_LIVE,
    NS_DB_QUEUES,
    NS_DB_BROKER_TOPICS,
    NS_DB_ROUTES,
    NS_DB_MAPPINGS,
    NS_DB_AUDIT,
    NS_DB_ADMIN_AUDIT,
    NS_DB_USERS,
    NS_DB_DIGEST,
    NS_DB_KV_VERSIONS,
    NS_DB_COUNT
};

/* LMDB database name of each NS_DB_*. */
extern const char *const ns_db_names[NS_DB_COUNT];

/* Builds "a \0 b" (b may be NULL: "a \0", the prefix of all a's keys) into k.
 * Returns NS_OK or NS_ENOMEM. */
int ns_key2(ns_buf_t *k, const char *a, const char *b);

/* The same key for one lookup, built on the stack when it fits (every real
 * name does) and on the heap otherwise: k->buf is the key until
 * ns_skey_free(k). k must not be copied. NS_OK or NS_ENOMEM. */
typedef struct {
    ns_buf_t buf;
    bool heap;
    uint8_t room[256];
} ns_skey_t;
int ns_skey2(ns_skey_t *k, const char *a, const char *b);
void ns_skey_free(ns_skey_t *k);
/* A one-part key (a name) as it is, borrowed: no copy at all. */
static inline ns_buf_t ns_key_view(const char *s)
{
    ns_buf_t k = {(uint8_t *)(uintptr_t)s, strlen(s), 0};
    return k;
}

#endif
