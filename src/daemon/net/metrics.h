/* metrics.h - counters the request loops and the writer keep for /metrics.
 *
 * Threads: every counter has exactly one writer thread, the thread that owns
 * the block it lives in (a loop's block is written by that loop only, the
 * writer's by the writer thread only). Writers bump a counter with a relaxed
 * load and store (NS_M_ADD), which on x86-64 and arm64 compiles to a plain
 * add: no lock, no atomic read-modify-write, no allocation. The HTTP thread
 * reads them with relaxed atomic loads and sums the loops' blocks, so a
 * scrape sees every counter monotonic (each value is one the owner wrote),
 * though not all counters of one instant.
 *
 * Whatever the loop owns that is not a counter (the liveness table, store
 * statistics) reaches the HTTP thread as a snapshot the main loop publishes
 * once a second (metrics_snap.c); the HTTP thread never reads loop memory. */
#ifndef NS_METRICS_H
#define NS_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"
#include "ns/codes.h"

typedef _Atomic uint64_t ns_counter_t;

/* Only the owner thread calls these on a counter. */
#define NS_M_ADD(c, n)                                                                             \
    atomic_store_explicit(&(c), atomic_load_explicit(&(c), memory_order_relaxed) + (uint64_t)(n),  \
                          memory_order_relaxed)
#define NS_M_INC(c) NS_M_ADD(c, 1)
/* Any thread. */
#define NS_M_GET(c) atomic_load_explicit(&(c), memory_order_relaxed)

/* ---- histograms ---- */

#define NS_M_HIST_MAX 24
typedef struct {
    ns_counter_t bucket[NS_M_HIST_MAX + 1]; /* non-cumulative; the last one is +Inf */
    ns_counter_t count;
    ns_counter_t sum; /* in the histogram's raw unit (ns, or items) */
} ns_hist_t;

/* Bucket bounds are powers of two, so that an observation finds its bucket
 * with one count-leading-zeros instead of a scan: latencies 1 us * 2^k
 * (1 us .. 4.19 s, in ns), batch sizes 2^k (1 .. 1024). */
typedef enum { NS_HIST_LATENCY, NS_HIST_BATCH } ns_hist_kind_t;
#define NS_HIST_LATENCY_BOUNDS 23
#define NS_HIST_BATCH_BOUNDS 11

/* Smallest k with v <= unit * 2^k, at most nb (the +Inf bucket). */
static inline unsigned ns_hist_index(uint64_t v, uint64_t unit, unsigned nb)
{
    uint64_t q = (v + unit - 1) / unit;
    unsigned k = q <= 1 ? 0 : 64u - (unsigned)__builtin_clzll(q - 1);
    return k < nb ? k : nb;
}

/* Owner thread: one observation of v (ns or items). */
static inline void ns_hist_observe(ns_hist_t *h, ns_hist_kind_t kind, uint64_t v)
{
    unsigned i = kind == NS_HIST_LATENCY ? ns_hist_index(v, 1000, NS_HIST_LATENCY_BOUNDS)
                                         : ns_hist_index(v, 1, NS_HIST_BATCH_BOUNDS);
    NS_M_INC(h->bucket[i]);
    NS_M_INC(h->count);
    NS_M_ADD(h->sum, v);
}

/* ---- request results: the response code sent ---- */

/* Index of each response code of NS_RESPONSE_CODE_MAP, then OTHER. */
enum {
#define NS_M_RSP_ENUM(name, value) NS_M_RSP_##name,
    NS_RESPONSE_CODE_MAP(NS_M_RSP_ENUM)
#undef NS_M_RSP_ENUM
        NS_M_RSP_OTHER,
    NS_M_RSP_N
};
int ns_metrics_rsp_index_slow(int code);
static inline int ns_metrics_rsp_index(int code)
{
    return code == 0 ? NS_M_RSP_SUCCESS : ns_metrics_rsp_index_slow(code);
}

/* Request rows: 0 = not a request (no counting), 1..NS_M_ROWS-2 = the
 * dispatcher's table rows + 1, NS_M_ROW_UNKNOWN = a code we do not serve. */
#define NS_M_ROWS 32
#define NS_M_ROW_UNKNOWN (NS_M_ROWS - 1)

/* Why a connection or its input was refused by the loops' own checks (the
 * budgets count their refusals apart, net/budget.h); the renderer names
 * every row. */
#define NS_M_REFUSAL_MAP(X)                                                                        \
    X(OVERSIZED_FRAME, "oversized_frame")                                                          \
    X(MALFORMED_FRAME, "malformed_frame")                                                          \
    X(MALFORMED_HEADER, "malformed_header")                                                        \
    X(SLOW_READER, "slow_reader")                                                                  \
    X(ACCEPT_FAILED, "accept_failed")
enum {
#define NS_M_REF_ENUM(name, label) NS_M_REFUSE_##name,
    NS_M_REFUSAL_MAP(NS_M_REF_ENUM)
#undef NS_M_REF_ENUM
        NS_M_REFUSE_N
};

/* Why the authentication check (auth.c, main loop) refused a request: the
 * reason label of namesrv_auth_refusals_total and the "auth" field of the
 * refusal's admin trail record. */
#define NS_M_AUTH_REFUSAL_MAP(X)                                                                   \
    X(UNSIGNED, "unsigned")             /* no AccessKey where one was needed */                    \
    X(BAD_SIGNATURE, "bad_signature")   /* unknown key, wrong secret or disabled user */           \
    X(STORE_ERROR, "store_error")       /* the user could not be read: refused unchecked */        \
    X(ADDRESS, "address")               /* source address not in the user's allowlist */           \
    X(ROLE, "role")                     /* the user's role is too low for the request */           \
    X(BROKER_NAME, "broker_name")       /* a broker name the user is not granted */                \
    X(BROKER_ADDRESS, "broker_address") /* a broker address the caller does not speak for */
enum {
#define NS_M_AUTH_ENUM(name, label) NS_M_AUTH_##name,
    NS_M_AUTH_REFUSAL_MAP(NS_M_AUTH_ENUM)
#undef NS_M_AUTH_ENUM
        NS_M_AUTH_N
};

enum { NS_M_EVICT_TIMEOUT, NS_M_EVICT_CONN_CLOSED, NS_M_EVICT_N };
#define NS_M_IDENTITY_KINDS 4
enum { NS_M_LAT_READ, NS_M_LAT_WRITE, NS_M_LAT_N };

/* One event loop's counters (embedded in its ns_loop_t). The broker ones
 * move on the main loop only. */
typedef struct {
    ns_counter_t req[NS_M_ROWS][NS_M_RSP_N];
    ns_hist_t latency[NS_M_LAT_N];
    ns_counter_t bytes_in, bytes_out;
    ns_counter_t conn_accepted, conn_closed;
    ns_counter_t tls_handshakes_offloaded; /* steps fed on a worker (conn_offload.c) */
    ns_counter_t refused[NS_M_REFUSE_N];
    ns_counter_t reg_changed, reg_unchanged, heartbeats, unregistrations;
    /* registrations with a broker identity conflict, by ns_identity_conflict_t
     * (ns/store.h: NS_IDENTITY_KINDS of them, checked in cmd_broker.c) */
    ns_counter_t identity_conflicts[NS_M_IDENTITY_KINDS];
    ns_counter_t evictions[NS_M_EVICT_N];
    ns_counter_t forwarded; /* an I/O loop's requests sent to the main loop (iothreads.c) */
    /* authentication (auth.c): on the main loop, and auth_checked on an I/O
     * loop for the requests that pass there (ns_auth_check_here) */
    ns_counter_t auth_checked;              /* requests checked (authMode writes/all) */
    ns_counter_t auth_refused[NS_M_AUTH_N]; /* refusals by reason */
    ns_counter_t auth_delayed;              /* refusals answered late (penalty) */
    ns_counter_t auth_unrecorded;           /* refusals not put in the trail (rate limit) */
} ns_metrics_loop_t;

/* The writer thread's counters (embedded in ns_writer). */
typedef struct {
    ns_counter_t queued; /* ops submitted (loop thread: the only other writer here) */
    ns_counter_t taken;  /* ops the writer took off its queue */
    ns_counter_t batches, failed_batches, grows;
    ns_counter_t cut_batches;      /* batches cut at writerBatchMaxBytes */
    ns_counter_t pages_given_back; /* free store pages dropped (ns_store_release_free_pages) */
    ns_hist_t batch_size;          /* ops per batch */
    ns_hist_t apply_ns;            /* applying a batch and materialising its routes: no fsync */
    ns_hist_t commit_ns;           /* mdb_txn_commit: with fsync unless syncMode=nosync */
} ns_metrics_writer_t;

/* Backups: what each one reports when it ends. Any thread. */
typedef struct {
    _Atomic uint64_t ok, failed;
    _Atomic int64_t last_ok_wall_ms; /* 0 = none since start */
} ns_metrics_backup_t;
void ns_metrics_backup_done(ns_metrics_backup_t *b, bool ok, int64_t wall_ms);

/* Label names (for the renderer and namesrvctl top). */
const char *ns_metrics_rsp_name(int idx);
const char *ns_metrics_refusal_name(int idx);
/* The label of an NS_M_AUTH_* reason ("other" out of range). */
const char *ns_metrics_auth_reason_name(int idx);

/* Renders one histogram in the Prometheus text format: `name{labels,le=..}`
 * lines, _sum and _count. labels may be "" (no other labels). scale turns
 * the raw unit into the metric's (1e-9 for ns -> s, 1 for items). hs: n
 * histograms to sum. */
void ns_metrics_hist_render(ns_buf_t *out, const char *name, const char *labels,
                            ns_hist_kind_t kind, double scale, ns_hist_t *const *hs, size_t n);

#endif
