/* seed.h - the NS_SEED_PAGE request (ours, 9712) that a server started with
 * an empty store and seedFromPeers=true copies a peer's topology and KV
 * config with (protocol floor: bodies and the call; the pull itself is
 * src/daemon/ops/seed.c, the peer's side src/daemon/cmd/cmd_seed.c).
 *
 * One request asks for one page of one section, in store key order, after
 * a cursor (the key of the last item of the page before; none: the first):
 *
 *   request  {"section":S,"after":[a,b],"maxBytes":N}     after optional
 *   reply    {"digest":H,"leaves":L,"uptimeMillis":U,"graceMillis":G,
 *             "unconfirmed":C,"items":[item,...],"next":[a,b]}
 *                                                 next absent: last page
 *
 * H is the peer's fleet digest root (32 hex digits, ns_digest_hex) and L
 * its leaf count, both read in the same read transaction as the page; U
 * how long the peer has served, G its brokerGraceWindowMillis, C how many
 * of its broker addresses were restored (from its store or a seed) and
 * have not registered with it since. The page's items fill at most
 * maxBytes of the body (the peer caps that by its own maxFrameBytes), and
 * at least one item is sent whenever next is.
 *
 * Sections and their items, arrays so that a page of 100,000 topics stays
 * small; numbers are integers within +-(2^53 - 1):
 *
 *   members  [cluster, brokerName]                           cursor [cluster, brokerName]
 *   groups   [brokerName, cluster, zone|null, actingMaster, [[id, addr], ...]]
 *                                                            cursor [brokerName]
 *   live     [cluster, addr, brokerName, brokerId, haAddr|null, counter,
 *             stateVersion, timestamp, heartbeatTimeoutMillis, [filterServer, ...]]
 *                                                            cursor [cluster, addr]
 *   queues   [topic, brokerName, perm, readQueueNums, writeQueueNums, topicSysFlag]
 *                                                            cursor [topic, brokerName]
 *   kv       [namespace, key, value, version]                cursor [namespace, key]
 *
 * version is ns_kvver_format's "hlc.server" ((0, 0) for an entry without
 * one). Tombstones are not sent: a seeded server learns a delete from
 * kvSync like any server that missed it. */
#ifndef NS_SEED_H
#define NS_SEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"

typedef enum {
    NS_SEED_MEMBERS = 0,
    NS_SEED_GROUPS,
    NS_SEED_LIVE,
    NS_SEED_QUEUES,
    NS_SEED_KV,
    NS_SEED_SECTIONS
} ns_seed_section_t;

/* "members", ...; NULL out of range. */
const char *ns_seed_section_name(ns_seed_section_t s);
/* How many names a section's cursor has (1 or 2). */
size_t ns_seed_cursor_len(ns_seed_section_t s);

/* A cursor: up to two names, heap copies (NULL when absent). */
typedef struct {
    char *a, *b;
} ns_seed_cursor_t;
void ns_seed_cursor_free(ns_seed_cursor_t *c);
/* Orders cursors as the store orders their keys (a, NUL, b bytewise); an
 * absent cursor (a NULL) sorts first. */
int ns_seed_cursor_cmp(const ns_seed_cursor_t *x, const ns_seed_cursor_t *y);

typedef struct {
    ns_seed_section_t section;
    ns_seed_cursor_t after; /* a NULL: from the first */
    int64_t max_bytes;
} ns_seed_request_t;

int ns_seed_request_encode(ns_buf_t *out, const ns_seed_request_t *r);
/* Into *r (cursor heap-owned: ns_seed_cursor_free). NS_EINVAL: not that
 * form (unknown section, a cursor of the wrong length, maxBytes < 1). */
int ns_seed_request_decode(const uint8_t *body, size_t len, ns_seed_request_t *r);

/* What a reply says about the peer, besides its items. */
typedef struct {
    char digest[33]; /* hex, NUL-terminated */
    int64_t leaves, uptime_ms, grace_ms, unconfirmed;
} ns_seed_info_t;

/* The peer's side: the head, then items (each a complete JSON array text,
 * written with ns_seed_item_* below), then the end with the next cursor
 * (NULL: the last page). */
int ns_seed_reply_begin(ns_buf_t *out, const ns_seed_info_t *info);
int ns_seed_reply_end(ns_buf_t *out, const ns_seed_cursor_t *next);
/* Item writers: each appends "," first unless first. */
int ns_seed_item_begin(ns_buf_t *out, bool first);
int ns_seed_item_str(ns_buf_t *out, const char *s, bool more); /* NULL: null */
int ns_seed_item_int(ns_buf_t *out, int64_t v, bool more);
int ns_seed_item_bool(ns_buf_t *out, bool v, bool more);
int ns_seed_item_raw(ns_buf_t *out, const char *text, bool more);
int ns_seed_item_end(ns_buf_t *out);

/* One decoded item, borrowed from its page (valid until ns_seed_page_free):
 * s[] the strings in the order of the item's form (NULL for a null), n[]
 * its integers in order, and for groups the (id, addr) pairs, for live the
 * filter servers. */
#define NS_SEED_MAX_STR 5
#define NS_SEED_MAX_INT 6
typedef struct {
    const char *s[NS_SEED_MAX_STR];
    int64_t n[NS_SEED_MAX_INT];
    bool flag; /* groups: actingMaster */
    size_t n_list;
    const int64_t *ids;      /* groups: n_list ids */
    const char *const *list; /* groups: n_list addrs; live: n_list filter servers */
} ns_seed_item_t;

/* A decoded reply: info, the items, and the next cursor. Heap; freed
 * with ns_seed_page_free. */
typedef struct {
    ns_seed_info_t info;
    ns_seed_item_t *items;
    size_t n;
    ns_seed_cursor_t next; /* a NULL: the last page */
    void *mem;             /* the parsed document the items point into */
    int64_t *ids;
    const char **strs;
} ns_seed_page_t;

/* Decodes a reply body of section s: NS_EINVAL for anything but the form
 * above (a missing or mistyped member, an item of another shape, a number
 * that is not an exact integer, a next cursor of the wrong length, next with no item, more than
 * max_items items); NS_ENOMEM. On error *p is left empty. */
int ns_seed_page_decode(const uint8_t *body, size_t len, ns_seed_section_t s, size_t max_items,
                        ns_seed_page_t *p);
void ns_seed_page_free(ns_seed_page_t *p);

/* Sends one NS_SEED_PAGE with body req over c and appends the reply body
 * to resp; as ns_kvsync_call (NS_EREFUSED: another code; why says). */
struct ns_client;
int ns_seed_call(struct ns_client *c, const ns_buf_t *req, int timeout_ms, ns_buf_t *resp,
                 char *why, size_t whylen);

#endif
