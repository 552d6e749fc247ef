/* seed.h - seedFromPeers: a server that starts with an empty store copies
 * the topology and the KV config of a peer that is in sync, before it
 * listens, so that its first client already gets routes.
 *
 * When. At start, after the store is open and before liveness is restored
 * from it, with seedFromPeers=true, a non-empty `peers` and a store with no
 * topology and no KV config (ns_store_topology_nonempty: no cluster, group,
 * registration, queue data, route, mapping, KV namespace, entry or
 * tombstone; users and the trails do not count). A store with any of those
 * is never seeded over. `namesrvctl recover` that found no good backup
 * leaves an empty store, which is then seeded like a new one.
 *
 * From whom: the peers in the order listed, each asked with NS_SEED_PAGE
 * (include/ns/seed.h) over the remoting port, TLS and signing from the
 * peer* settings as for the peer checks. A peer is in sync, and seeded
 * from, when
 *   1. it answers at all: a server that is itself seeding does not listen
 *      yet, and one of an older version answers REQUEST_CODE_NOT_SUPPORTED;
 *   2. none of its broker addresses is only restored: every broker it
 *      serves has registered with it since it started (`unconfirmed` 0).
 *      A peer that restarted, or was seeded itself, and whose brokers have
 *      not come back is no better a source than an empty store;
 *   3. it has data (a digest with leaves); an empty peer is skipped;
 *   4. the copy is the peer's state: the digest root of the pages equals
 *      at the first page and the last, and the digest this server computes
 *      over what it wrote, in the write transaction before it commits,
 *      equals the peer's. A mismatch is an abort (nothing is written); the
 *      peer is asked again once (it changed during the copy), then the next
 *      peer is tried.
 *
 * What: the clusters' members, the groups, the registered addresses (with
 * their DataVersion and heartbeat timeout), the queue data of every topic
 * and every KV entry with its version, applied in ONE write transaction
 * (the routes materialised in it as after a restore). Not copied: the
 * static topic mappings and KV tombstones (not in the digest; kvSync brings
 * deletes), the users and the trails (local records).
 *
 * Then. The seeded registrations are restored into liveness like those of
 * a restart (ns_broker_restore): routed at once, kept for
 * max(brokerGraceWindowMillis, heartbeatTimeoutMillis), evicted if they
 * never register with this server.
 *
 * Bounds. The whole seed within seedTimeoutMillis (each request within
 * min(peerTimeoutMillis, what is left)); pages of at most SEED_PAGE_BYTES
 * asked for (the peer caps them at half its maxFrameBytes); the replies
 * kept in memory up to SEED_MAX_BYTES, beyond which the peer is given up.
 * A reply that does not parse is the end of that peer. When no peer
 * serves, the server starts empty and says so in the log.
 *
 * Main thread, blocking, before the loops run: nothing else is served yet. */
#ifndef NS_SEED_OPS_H
#define NS_SEED_OPS_H

#include "ns/buf.h"

#define SEED_PAGE_BYTES (1u << 20)
#define SEED_MAX_BYTES (1024u << 20)

typedef struct ns_server ns_server_t;

/* Seeds srv's store when the rules above say so. NS_OK whether or not it
 * seeded (each outcome is logged); an error only when the store itself
 * fails (the server does not start). srv's store, registry and liveness
 * must exist; the writer must not run yet. */
int ns_seed_at_start(ns_server_t *srv, char *err, size_t errlen);
/* Appends the namesrv_seed_* families (Prometheus text) to out. */
void ns_seed_render(ns_buf_t *out);

#endif
