/* writer.h - the single writer thread and its group commit.
 *
 * The loop thread submits write operations; the writer takes every queued
 * op (up to writerBatchMax), applies them one after another in ONE write
 * transaction (cut short once it has written writerBatchMaxBytes: the ops
 * after the one that crossed it wait for the next batch, so the pages LMDB
 * holds until a commit stay bounded whatever is queued), runs the before-commit hook (route
 * materialisation), commits (fsync per syncMode), and only then hands the batch back to the loop
 * thread, which calls each op's done callback to reply. An op that fails is
 * taken out and the rest of the batch is applied again without it, so a
 * failure undoes only that op. A full map grows the
 * map and re-runs the whole batch; at the configured limit every op of the
 * batch fails with NS_EMAPFULL while reads go on being served.
 */
#ifndef NS_WRITER_H
#define NS_WRITER_H

#include <uv.h>

#include "net/metrics.h"
#include "ns/store.h"

typedef struct ns_wop ns_wop_t;

struct ns_wop {
    /* Writer thread, inside the batch transaction. May run more than once
     * for the same op (after a map growth, or when another op of the batch
     * failed), so it must rebuild its results from scratch each time. Returns NS_OK or an error
     * that aborts only this op (NS_EMAPFULL re-runs the batch). */
    int (*apply)(ns_wop_t *op, ns_txn_t *txn, void *hook_ctx);
    /* Loop thread, after the commit (or the failure): op->rc holds the
     * result. The op is the callee's from here on (free it here). */
    void (*done)(ns_wop_t *op);
    int rc;
    size_t bytes;   /* memory the op holds while queued (set by the submitter;
                       counted against writerQueueMaxBytes, budget.h) */
    bool failed;    /* writer: taken out of its batch */
    ns_wop_t *next; /* writer's queue link */
};

typedef struct {
    void *ctx;
    /* Before commit, in the batch transaction (e.g. materialise routes). */
    int (*before_commit)(void *ctx, ns_txn_t *txn);
    /* A batch is (re)starting: forget per-batch state. */
    void (*batch_reset)(void *ctx);
    /* Loop thread, after a batch's done callbacks ran (NULL = none): the
     * queue got shorter (connections paused on its budget may read again). */
    void (*drained)(void *loop_ctx);
    void *loop_ctx;
} ns_writer_hooks_t;

typedef struct ns_writer ns_writer_t;

/* Starts the writer thread. *out is freed by ns_writer_stop(). */
int ns_writer_start(ns_store_t *store, uv_loop_t *loop, size_t batch_max, size_t batch_max_bytes,
                    const ns_writer_hooks_t *hooks, ns_writer_t **out);
/* Loop thread: queues op; op->done will run on the loop later. */
void ns_writer_submit(ns_writer_t *w, ns_wop_t *op);
/* Ops submitted and not yet done (loop thread). */
size_t ns_writer_pending(const ns_writer_t *w);
/* Ops done so far (loop thread): while it and the pending count stay the
 * same, nothing in the store has changed. */
uint64_t ns_writer_done_count(const ns_writer_t *w);
/* Lets the batch in flight commit, fails every op still queued with
 * NS_ESHUTDOWN (not applied), joins the thread, runs the remaining done
 * callbacks, frees w. Loop thread. */
void ns_writer_stop(ns_writer_t *w);

/* Counters for logs and benchmarks (read on the loop thread). */
typedef struct {
    uint64_t batches;
    uint64_t ops;
    uint64_t grows;
    uint64_t failed_batches;
} ns_writer_stats_t;
void ns_writer_stats(ns_writer_t *w, ns_writer_stats_t *out);
/* The writer's counters for /metrics (metrics.h); valid until ns_writer_stop. */
const ns_metrics_writer_t *ns_writer_metrics(const ns_writer_t *w);

#endif
