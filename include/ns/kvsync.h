/* kvsync.h - the NS_KV_SYNC_GET request (ours, 9711) that kvSync pulls a
 * peer's KV entries with, versions and tombstones included (protocol
 * floor: bodies and the call; the pull itself is src/daemon/ops/kvsync.c).
 *
 *   request body  {"entries":[[namespace, key], ...]}   1..NS_KVSYNC_MAX_KEYS
 *   reply body    {"entries":[entry, ...]}               one per key, in order
 *   entry         {"namespace":..,"key":..,"state":"value","version":V,"value":..}
 *                 {"namespace":..,"key":..,"state":"deleted","version":V}
 *                 {"namespace":..,"key":..,"state":"absent"}
 *
 * V is "hlc.server", 16 + 16 hex digits (ns_kvver_format). A tombstone
 * always has an hlc above 0. */
#ifndef NS_KVSYNC_H
#define NS_KVSYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"
#include "ns/kvver.h"

#define NS_KVSYNC_MAX_KEYS 64

typedef enum { NS_KVSYNC_ABSENT = 0, NS_KVSYNC_VALUE, NS_KVSYNC_DELETED } ns_kvsync_state_t;

typedef struct {
    char *ns, *key;
    char *value; /* NS_KVSYNC_VALUE only, else NULL */
    ns_kvsync_state_t state;
    ns_kvver_t ver; /* not ABSENT */
} ns_kvsync_entry_t;

/* The request body for keys (ns[i], key[i]), i < n. */
int ns_kvsync_keys_encode(ns_buf_t *out, const char *const *ns, const char *const *key, size_t n);
/* Decodes a request body into *out (n entries, only ns and key set; heap,
 * the caller frees with ns_kvsync_entries_free). NS_OK, NS_EINVAL (not that
 * form, no key or more than NS_KVSYNC_MAX_KEYS), NS_ENOMEM. */
int ns_kvsync_keys_decode(const uint8_t *body, size_t len, ns_kvsync_entry_t **out, size_t *n);
/* Appends one reply entry; first says whether it is the first (the body's
 * head is written with it) and ns_kvsync_reply_end closes the body. */
int ns_kvsync_reply_entry(ns_buf_t *out, bool first, const ns_kvsync_entry_t *e, size_t value_len);
int ns_kvsync_reply_end(ns_buf_t *out, bool any);
/* Decodes a reply body: NS_EINVAL for anything but the form above (an
 * unknown state, a version that does not parse, a tombstone at hlc 0, a
 * value missing or where it does not belong, more than max entries). */
int ns_kvsync_reply_decode(const uint8_t *body, size_t len, size_t max, ns_kvsync_entry_t **out,
                           size_t *n);
void ns_kvsync_entries_free(ns_kvsync_entry_t *e, size_t n);

/* Sends one NS_KV_SYNC_GET with body req over c and appends the reply body
 * to resp; as ns_fleet_call (NS_EREFUSED: answered another code; why says
 * what went wrong). */
struct ns_client;
int ns_kvsync_call(struct ns_client *c, const ns_buf_t *req, int timeout_ms, ns_buf_t *resp,
                   char *why, size_t whylen);

#endif
