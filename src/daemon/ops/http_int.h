/* http_int.h - the insides of the HTTP endpoint, shared by http.c (the
 * server and its threads), http_snap.c (the snapshot) and http_text.c
 * (/metrics). Not for other files: the rest of the daemon uses http.h. */
#ifndef NS_HTTP_INT_H
#define NS_HTTP_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "ns/model.h"
#include "ops/addrsrv.h"
#include "ops/http.h"

/* One broker address as the liveness table had it (times: loop clock, ms). */
typedef struct {
    const char *cluster, *broker_name, *addr; /* in the snapshot's pool */
    int64_t broker_id;
    int64_t timeout_ms;
    uint64_t last_update_ms;
    uint64_t grace_until_ms; /* != 0: restored and not heard from since */
    uint64_t deadline_ms;
    bool evicting;
    bool stored; /* the store has its record (dv valid) */
    ns_dataversion_t dv;
    uint64_t topics; /* topics with queue data of its broker name */
} ns_snap_broker_t;

typedef struct ns_snap {
    atomic_int refs;
    uint64_t writer_done;      /* the writer's done count when built: dv/topics reuse */
    ns_snap_broker_t *brokers; /* sorted by cluster, addr */
    size_t n_brokers;
    char *pool;
    uint64_t topics, clusters, kv_keys;
    uint64_t map_size_bytes, map_used_bytes;
    unsigned readers, readers_max;
    bool store_ok; /* the last read transaction worked */
} ns_snap_t;

/* Broker states (http_snap.c). */
typedef enum { NS_BROKER_LIVE, NS_BROKER_GRACE, NS_BROKER_EXPIRING, NS_BROKER_STATE_N } ns_bstate_t;
const char *ns_bstate_name(ns_bstate_t s);
ns_bstate_t ns_snap_broker_state(const ns_snap_broker_t *b, uint64_t now_ms);

struct ns_http {
    struct MHD_Daemon *daemon;
    struct ns_http_guard *guard; /* header deadline (http_guard.c) */
    int port;
    /* fixed at start (copies: the configuration is the main loop's) */
    int64_t start_wall_ms;
    uint64_t start_mono_ms;
    int64_t map_max_bytes;
    int64_t backup_interval_s; /* backupIntervalSeconds at start (0 = off) */
    bool fsync;                /* syncMode is not nosync */
    int io_loops;
    /* counters: pointers into the servers and the writer, valid until stop */
    ns_metrics_loop_t **loops;
    size_t n_loops;
    const ns_metrics_writer_t *writer;
    ns_metrics_backup_t backup;
    /* readiness */
    atomic_bool listening;
    atomic_int verified;    /* invariants: 0 running, 1 passed, -1 failed */
    atomic_int store_check; /* verifyOnStart's walk: 0 running, 1 passed or off, -1 damaged */
    pthread_t verify_thread;
    bool verify_started;
    /* fixed at start: the store (/fleet/digest reads it in its own read
     * transaction) and the peer checks (/metrics renders their state) */
    ns_store_t *store;
    ns_peers_t *peers;
    struct ns_kvsync *kvsync;
    /* GET /rocketmq/<subgroup>: its self address is set before listening */
    ns_addrsrv_t addrsrv;
    /* the main loop's snapshot */
    pthread_mutex_t mu;
    ns_snap_t *snap;
};

/* 1 passed, 0 running, -1 failed: the invariants and verifyOnStart's walk.
 * Any thread. */
static inline int ns_http_verified(ns_http_t *h)
{
    int a = atomic_load(&h->verified), b = atomic_load(&h->store_check);
    return a < 0 || b < 0 ? -1 : a == 1 && b == 1 ? 1 : 0;
}

/* ---- for the HTTP thread (http_text.c, http_snap.c) ---- */

/* Takes a reference on the newest snapshot (NULL before the first);
 * release it with ns_snap_unref. */
ns_snap_t *ns_snap_get(ns_http_t *h);
void ns_snap_unref(ns_snap_t *s);
/* Main loop: builds a snapshot of srv (NULL when out of memory); prev (may
 * be NULL) lends data versions and topic counts when the store has not
 * changed since it was built. */
ns_snap_t *ns_snap_build(ns_server_t *srv, const ns_snap_t *prev);
/* The body of /brokers, /metrics and /readyz (now: loop clock, ms). */
void ns_http_brokers_json(const ns_snap_t *s, uint64_t now_ms, ns_buf_t *out);
void ns_http_metrics_text(ns_http_t *h, const ns_snap_t *s, uint64_t now_ms, ns_buf_t *out);
/* Grace window: brokers restored and not heard from, and how long the
 * longest of them may still wait. */
void ns_snap_grace(const ns_snap_t *s, uint64_t now_ms, size_t *waiting, uint64_t *remaining_ms);

#endif
