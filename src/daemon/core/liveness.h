/* liveness.h - heartbeat state, in memory only, on the loop thread.
 *
 * One entry per registered broker address (cluster, addr). Time is passed in
 * by the caller (monotonic milliseconds), so tests drive it directly. */
#ifndef NS_LIVENESS_H
#define NS_LIVENESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ns_live_entry {
    char *cluster;
    char *addr;
    char *broker_name;
    int64_t broker_id;
    uint64_t last_update_ms;
    int64_t timeout_ms;
    uint64_t grace_until_ms; /* restored entries: not expired before this */
    bool grace_after_stall;  /* grace_until_ms came from a stall, not a restart */
    uint64_t deadline_ms;    /* max(last_update + timeout, grace_until) */
    void *conn;              /* connection of the last registration, NULL if restored */
    uint64_t generation;     /* grows with every registration */
    bool evicting;           /* an unregister for this generation is queued */
    /* The last registration found to change nothing: a fingerprint of its
     * header and body, the writer's done count when it was checked, and
     * the reply it got (heap copies). Owned by cmd_broker.c. */
    bool fp_valid;
    uint32_t fp;
    uint64_t fp_gen;
    char *fp_master, *fp_ha;
    size_t heap_idx;
} ns_live_entry_t;

typedef struct ns_liveness ns_liveness_t;

int ns_liveness_new(ns_liveness_t **out);
void ns_liveness_free(ns_liveness_t *lv);
size_t ns_liveness_count(const ns_liveness_t *lv);

/* The i-th entry in no particular order (i < ns_liveness_count), borrowed. */
ns_live_entry_t *ns_liveness_at(const ns_liveness_t *lv, size_t i);

/* Borrowed entry or NULL. */
ns_live_entry_t *ns_liveness_get(ns_liveness_t *lv, const char *cluster, const char *addr);

/* A registration was applied: create or refresh the entry, bump its
 * generation, remember conn. Returns the entry or NULL (ENOMEM). */
ns_live_entry_t *ns_liveness_register(ns_liveness_t *lv, const char *cluster, const char *addr,
                                      const char *broker_name, int64_t broker_id,
                                      int64_t timeout_ms, void *conn, uint64_t now_ms);

/* A stored broker found at startup: expires no earlier than grace_until. */
ns_live_entry_t *ns_liveness_restore(ns_liveness_t *lv, const char *cluster, const char *addr,
                                     const char *broker_name, int64_t broker_id, int64_t timeout_ms,
                                     uint64_t now_ms, uint64_t grace_until_ms);

/* The loop was stalled (ns_clock_stall) until now: nothing was read for
 * that long, so a missing heartbeat proves nothing. Every entry not being
 * evicted gets what a restored one gets: it expires no earlier than
 * now + max(grace_ms, its timeout) (an earlier grace_until is pushed out,
 * a later one kept). Returns how many entries that concerned. O(n). */
size_t ns_liveness_grace_all(ns_liveness_t *lv, uint64_t now_ms, int64_t grace_ms);

/* BROKER_HEARTBEAT / QUERY_DATA_VERSION: refresh last_update if known. */
bool ns_liveness_heartbeat(ns_liveness_t *lv, const char *cluster, const char *addr,
                           uint64_t now_ms);
/* The same for an entry already looked up (e from ns_liveness_get). */
void ns_liveness_touch(ns_liveness_t *lv, ns_live_entry_t *e, uint64_t now_ms);

/* Entries whose deadline is before now and that are not being evicted yet,
 * earliest first, at most max; they are marked evicting. Uses the deadline
 * heap: O(k log n) for k expired entries. */
size_t ns_liveness_expired(ns_liveness_t *lv, uint64_t now_ms, ns_live_entry_t **out, size_t max);

/* An eviction decided earlier could not be written: put the entry back on
 * the deadline heap so the next scan tries again. */
void ns_liveness_retry(ns_liveness_t *lv, ns_live_entry_t *e);

/* Entries registered over conn and not being evicted; marks them evicting. */
size_t ns_liveness_by_conn(ns_liveness_t *lv, void *conn, ns_live_entry_t **out, size_t max);

/* An unregister that removed the broker from the store was committed:
 * drop its entry. Returns true if there was one. */
bool ns_liveness_remove(ns_liveness_t *lv, const char *cluster, const char *addr);

/* Calls cb on every entry, in no particular order (the entries are
 * borrowed; cb must not change the table). */
void ns_liveness_foreach(ns_liveness_t *lv, void (*cb)(const ns_live_entry_t *e, void *ctx),
                         void *ctx);

/* Forgets conn in every entry that points to it (the connection is gone). */
void ns_liveness_forget_conn(ns_liveness_t *lv, void *conn);

#endif
