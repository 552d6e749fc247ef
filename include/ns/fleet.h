/* fleet.h - comparing NameServers by their digests (protocol floor):
 * the FLEET_DIGEST request and reply bodies, and the diff that fetches
 * digests from several servers and descends only where they differ.
 *
 * The digest itself (the tree, what is in it, how it is kept) is the
 * store's: store/digest.c. Here a node is what a server answers:
 *
 *   request body  {"paths":[[], ["t","3"], ...]}   (absent or empty: the root)
 *   reply body    {"nodes":[node, ...]}             (one per path, in order)
 *   node          {"path":[...],"hash":"<32 hex>","count":N,
 *                  "children":[{"name":..,"hash":..,"count":..},...]}  interior
 *                 {"path":[...],"hash":..,"count":N,
 *                  "leaves":[{"name":..,"hash":..,"value":<JSON>},...]} item
 *
 * A node with no leaf below it has count 0, hash of zeros and no entry.
 * Both namesrvctl (fleet diff) and namesrvd's peer checks use ns_fleet_diff,
 * each with its own way of fetching (ns_fleet_fetch_fn). */
#ifndef NS_FLEET_H
#define NS_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"
#include "ns/strlist.h"

/* Depth of the items (broker group in a cluster, topic, KV entry): their
 * children are leaves. The root is depth 0. */
#define NS_FLEET_ITEM_DEPTH 5
/* Paths one request may ask for (the server refuses more). */
#define NS_FLEET_MAX_PATHS 64
/* Longest name in a path. */
#define NS_FLEET_MAX_NAME 4096

typedef struct ns_fleet_path {
    const char *v[NS_FLEET_ITEM_DEPTH];
    size_t depth;
} ns_fleet_path_t;

/* Decodes a request body into paths whose names point into *store (a heap
 * block the caller frees with free() after use, NULL on error). An absent
 * or empty body asks for the root. NS_OK, NS_EINVAL (malformed, more than
 * NS_FLEET_MAX_PATHS paths, a path deeper than the items, a name empty,
 * too long or not a string), NS_ENOMEM. */
int ns_fleet_paths_decode(const uint8_t *body, size_t len, ns_fleet_path_t *paths, size_t *n,
                          char **store);
/* Appends the request body for paths[0..n) to out. */
int ns_fleet_paths_encode(ns_buf_t *out, const ns_fleet_path_t *paths, size_t n);

/* Sends one FLEET_DIGEST with body req over c and appends the reply body
 * to resp. NS_OK; the client's error; NS_EREFUSED when the server answered
 * something else than SUCCESS. why (whylen bytes) says what went wrong. */
struct ns_client;
int ns_fleet_call(struct ns_client *c, const ns_buf_t *req, int timeout_ms, ns_buf_t *resp,
                  char *why, size_t whylen);

/* ---- the diff ---- */

/* Sends one request body to server i and leaves the reply body in resp
 * (reset by the caller). NS_OK, or the error that makes the server
 * unreachable for this diff (why: a static or thread-local text, may stay
 * NULL). */
typedef int (*ns_fleet_fetch_fn)(void *ctx, size_t server, const ns_buf_t *req, ns_buf_t *resp,
                                 const char **why);

/* What differs: the three kinds of items of the digest, and the broker
 * identity conflicts between servers read from their broker differences
 * (ns_fleet_conflicts). */
typedef enum {
    NS_FLEET_BROKER = 0,
    NS_FLEET_TOPIC,
    NS_FLEET_KV,
    NS_FLEET_CONFLICT,
    NS_FLEET_KINDS
} ns_fleet_kind_t;
/* "broker", "topic", "kv", "conflict". */
const char *ns_fleet_kind_name(ns_fleet_kind_t k);

/* One leaf that is not the same on every reachable server, or one
 * conflict. */
typedef struct {
    ns_fleet_kind_t kind;
    char *item;         /* "cluster/brokerName", "topic", "namespace/key"; a
                           conflict's "brokerName b", "brokerAddr a",
                           "cluster/brokerName brokerId n" */
    char *leaf;         /* "addr 10.0.0.1:10911", "queue broker-a", "value", ...;
                           a conflict's "clusterName", "brokerName", "brokerAddr" */
    char **values;      /* per server: the leaf's JSON, NULL where it is absent
                           or the server was not reached; a conflict's JSON
                           array of what that server holds */
    size_t cluster_len; /* broker items: the cluster is item[0..cluster_len) */
} ns_fleet_diff_t;

typedef struct {
    size_t n_servers;
    bool *reached;
    char **error;        /* per server: why it was not reached (heap) or NULL */
    char (*root)[33];    /* per server: the root hash ("" when not reached) */
    int64_t *root_count; /* per server: leaves in all */
    ns_fleet_diff_t *d;  /* sorted by kind, item, leaf */
    size_t n;
    size_t items[NS_FLEET_KINDS]; /* differing items per kind; conflicts */
    bool truncated;               /* more items differ than were looked at */
    uint64_t bytes_sent, bytes_received;
    size_t requests;
} ns_fleet_report_t;

/* Compares the digests of n servers: the roots, then, level by level, only
 * the children whose hashes are not the same on every reachable server,
 * down to the leaves of the differing items (at most max_items of them;
 * then truncated). Servers that cannot be fetched from are left out of the
 * comparison (reached[i] false). NS_OK with *out filled (the caller frees
 * it with ns_fleet_report_free), NS_ENOMEM. A server answering a body that
 * does not decode is treated as unreachable. */
int ns_fleet_diff(ns_fleet_fetch_fn fetch, void *ctx, size_t n, size_t max_items,
                  ns_fleet_report_t *out);
void ns_fleet_report_free(ns_fleet_report_t *r);
/* A new zeroed difference of kind appended to r (its item, leaf and values
 * are the caller's to fill; ns_fleet_report_free frees them), or NULL when
 * memory runs out (r unchanged). */
ns_fleet_diff_t *ns_fleet_report_append(ns_fleet_report_t *r, ns_fleet_kind_t kind);
/* Differing items of the data kinds (broker, topic, kv: not conflicts). */
size_t ns_fleet_items(const ns_fleet_report_t *r);

/* Appends to r (ns_fleet_diff calls it) the broker identity conflicts
 * between servers that its broker differences show, where two servers
 * each hold what the other does not (neither view contains the other):
 *   item "brokerName b", leaf "clusterName": b in different clusters
 *   item "brokerAddr a", leaf "brokerName": a under different names
 *   item "c/b brokerId n", leaf "brokerAddr": the id at different addresses
 * (what brokerConflict finds within one server, across servers). Each
 * server's value is the JSON array of what it holds (NULL: none);
 * r->items[NS_FLEET_CONFLICT] counts them. NS_OK or NS_ENOMEM. */
int ns_fleet_conflicts(ns_fleet_report_t *r);
/* Servers reached, and whether all reached ones agree (n reached >= 1). */
size_t ns_fleet_reached(const ns_fleet_report_t *r);
bool ns_fleet_agree(const ns_fleet_report_t *r);

/* The report as JSON (names: the servers' addresses, in order). */
int ns_fleet_report_json(const ns_fleet_report_t *r, const char *const *names, ns_buf_t *out);

#endif
