/* writer.c - the writer thread (see writer.h for the contract).
 *
 * Queues: `in` (loop -> writer, under mu/cond) and `out` (writer -> loop,
 * under mu, announced on an eventfd the loop polls). Ops are applied in submission
 * order, which is what fences an eviction against a later re-registration:
 * whatever the loop submitted later is applied later. */
#include "core/writer.h"

#include <pthread.h>
#include <stdlib.h>
#include <errno.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ns/err.h"
#include "ns/log.h"
#include "net/budget.h"
#include "net/metrics.h"

/* The lowest priority short of SCHED_IDLE (which an unprivileged process
 * cannot leave again, so a busy loop could starve it for good). Measured with
 * both threads on one core, reads at 20,000/s during 10k-topic commits
 * (tools/bench.sh, mixed): read p99 0.9-1.0 ms at nice 19 against 2-4 ms at
 * nice 10, where a woken loop thread waited out the writer's slice; the commit
 * itself takes ~100 ms instead of ~80 ms under that load. */
#define WRITER_NICE 19

struct ns_writer {
    ns_store_t *store;
    size_t batch_max;
    size_t batch_max_bytes; /* a batch is cut once its transaction wrote this */
    ns_writer_hooks_t hooks;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    ns_wop_t *in_head, *in_tail;
    ns_wop_t *out_head, *out_tail;
    bool stopping;
    bool newest_kept; /* the last batch's freed pages are still cached (wait_for_ops) */
    bool index_stale; /* the routes index waits for the writer to idle (wait_for_ops) */
    /* Batches done, announced to the loop. Not uv_async_t: uv_async_send
     * marks the handle busy, writes the eventfd and only then marks it done,
     * and the loop spins (then sched_yields) on a busy handle; the woken loop
     * preempts the nice-19 writer between those steps and burns its slice.
     * A plain eventfd under uv_poll has no such window. */
    int done_fd;
    uv_poll_t done_poll;
    size_t pending; /* loop thread only */
    uint64_t done;  /* ops whose done callback ran; loop thread only */
    ns_writer_stats_t stats;
    ns_metrics_writer_t m; /* the writer thread's, but `queued` (loop thread) */
};

static void append(ns_wop_t **head, ns_wop_t **tail, ns_wop_t *first, ns_wop_t *last)
{
    if (*tail)
        (*tail)->next = first;
    else
        *head = first;
    *tail = last;
}

/* Cuts the batch after op: the ops after it go first in *rest (before what
 * an earlier run of the same batch cut off). */
static void cut_after(ns_wop_t *op, ns_wop_t **rest)
{
    ns_wop_t *tail = op->next;
    while (tail->next)
        tail = tail->next;
    tail->next = *rest;
    *rest = op->next;
    op->next = NULL;
}

static void set_rc_all(ns_wop_t *batch, int rc)
{
    for (ns_wop_t *op = batch; op; op = op->next)
        if (!op->failed)
            op->rc = rc;
}

/* Applies a batch in one transaction. An op that fails (other than with a
 * full map) is taken out and the batch is run again without it, so its
 * partial changes never commit; ops already marked failed are skipped.
 * Returns NS_EMAPFULL when the map must grow before a retry, NS_ERETRY when
 * an op failed and the batch must run again; otherwise the ops carry their
 * own results. (No nested transactions: LMDB allocates a 2 MiB dirty list
 * for each one, which would cost more than the rare re-run.)
 * Once the transaction has written batch_max_bytes, the ops after the one
 * that crossed it are cut off into *rest (the caller queues them again,
 * first): LMDB holds every page a transaction dirties in memory until the
 * commit, so a batch of large registrations would hold them all at once. */
static int run_batch(ns_writer_t *w, ns_wop_t *batch, ns_wop_t **rest)
{
    ns_txn_t *txn = NULL;
    uint64_t t0 = uv_hrtime(), t1;
    int rc = ns_txn_begin(w->store, true, &txn);
    if (rc != NS_OK)
        goto fail;
    if (w->hooks.batch_reset)
        w->hooks.batch_reset(w->hooks.ctx);
    for (ns_wop_t *op = batch; op; op = op->next) {
        if (op->failed)
            continue;
        op->rc = op->apply(op, txn, w->hooks.ctx);
        if (op->rc == NS_EMAPFULL) {
            rc = NS_EMAPFULL;
            goto fail;
        }
        if (op->rc != NS_OK) {
            op->failed = true;
            rc = NS_ERETRY;
            goto fail;
        }
        if (op->next && ns_txn_written(txn) >= w->batch_max_bytes)
            cut_after(op, rest);
    }
    if (w->hooks.before_commit && (rc = w->hooks.before_commit(w->hooks.ctx, txn)) != NS_OK)
        goto fail;
    t1 = uv_hrtime();
    rc = ns_txn_commit(txn);
    txn = NULL;
    if (rc != NS_OK)
        goto fail;
    ns_hist_observe(&w->m.apply_ns, NS_HIST_LATENCY, t1 - t0);
    ns_hist_observe(&w->m.commit_ns, NS_HIST_LATENCY, uv_hrtime() - t1);
    return NS_OK;
fail:
    ns_txn_abort(txn);
    if (rc != NS_EMAPFULL && rc != NS_ERETRY) {
        NS_LOG_ERROR("writer: batch failed: %s", ns_strerror(rc));
        set_rc_all(batch, rc);
    }
    return rc;
}

/* Writer thread: wakes the loop to run the done callbacks. */
static void announce(ns_writer_t *w)
{
    uint64_t one = 1;
    while (write(w->done_fd, &one, sizeof one) < 0 && errno == EINTR)
        ;
    /* EAGAIN: the counter is saturated, the loop has a wake-up pending */
}

/* Writer thread: puts the ops cut off a batch back at the head of the
 * queue, in their order, before anything queued since. */
static void requeue(ns_writer_t *w, ns_wop_t *rest)
{
    ns_wop_t *tail = rest;
    while (tail->next)
        tail = tail->next;
    pthread_mutex_lock(&w->mu);
    tail->next = w->in_head;
    w->in_head = rest;
    if (w->in_tail == NULL)
        w->in_tail = tail;
    pthread_mutex_unlock(&w->mu);
}

/* The routes index (store/route_index.h; lookups descend while it is
 * behind) follows each batch when nothing more is queued: a diff of the
 * leaves the batch changed, and the index then holds that snapshot until
 * the next refresh. In a burst it lets go (held across four batches of a
 * 1M-topic set-up, the pages it kept from reuse cost +90 MiB of map
 * resident, and following each batch +5 % on the set-up's time) and is
 * rebuilt from the whole tree once the writer has idled INDEX_IDLE_MS;
 * the store's first build waits for that too. */
#define INDEX_IDLE_MS 100

static void follow_route_index(ns_writer_t *w)
{
    pthread_mutex_lock(&w->mu);
    bool queued = w->in_head != NULL;
    pthread_mutex_unlock(&w->mu);
    if (queued) {
        if (!w->index_stale)
            NS_LOG_INFO("routes index behind: writes queued; lookups descend until it is "
                        "rebuilt, %d ms after the last",
                        INDEX_IDLE_MS);
        ns_store_route_index_let_go(w->store);
        w->index_stale = true;
    } else if (!w->index_stale) {
        ns_store_route_index_refresh(w->store);
    }
}

/* Under w->mu: until there is an op or a stop. Once it has waited
 * INDEX_IDLE_MS with nothing to do, a stale routes index is rebuilt; once
 * NEWEST_DROP_MS, the pages the last commit freed are dropped too: the
 * loops have renewed their snapshots long since. */
#define NEWEST_DROP_MS 1000

static void wait_for_ops(ns_writer_t *w)
{
    while (w->in_head == NULL && !w->stopping) {
        if (!w->newest_kept && !w->index_stale) {
            pthread_cond_wait(&w->cond, &w->mu);
            continue;
        }
        unsigned ms = w->index_stale ? INDEX_IDLE_MS : NEWEST_DROP_MS;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)(ms % 1000) * 1000000L;
        until.tv_sec += ms / 1000 + until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        if (pthread_cond_timedwait(&w->cond, &w->mu, &until) != ETIMEDOUT || w->in_head ||
            w->stopping)
            continue;
        pthread_mutex_unlock(&w->mu);
        if (w->index_stale) {
            w->index_stale = false;
            ns_store_route_index_refresh(w->store);
        } else {
            w->newest_kept = false;
            uint64_t dropped = 0;
            (void)ns_store_release_free_pages(w->store, true, &dropped);
            NS_M_ADD(w->m.pages_given_back, dropped);
        }
        pthread_mutex_lock(&w->mu);
    }
}

static void *writer_main(void *arg)
{
    ns_writer_t *w = arg;
    /* Reads on the loop thread must not queue behind a long commit when both
     * threads share one core: the writer runs at a lower priority. */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), WRITER_NICE) != 0)
        NS_LOG_DEBUG("writer: cannot lower the thread's priority");
    w->index_stale = true; /* built once idle: not on a restart's way to its first route */
    for (;;) {
        pthread_mutex_lock(&w->mu);
        wait_for_ops(w);
        if (w->in_head == NULL && w->stopping) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        ns_wop_t *batch = w->in_head, *last = batch;
        size_t n = 1;
        while (last->next && n < w->batch_max) {
            last = last->next;
            n++;
        }
        w->in_head = last->next;
        if (w->in_head == NULL)
            w->in_tail = NULL;
        last->next = NULL;
        pthread_mutex_unlock(&w->mu);

        uint64_t grows = 0, failed = 0;
        ns_wop_t *rest = NULL;
        int brc;
        while ((brc = run_batch(w, batch, &rest)) == NS_EMAPFULL || brc == NS_ERETRY) {
            if (brc == NS_ERETRY)
                continue; /* an op failed: run the others again without it */
            grows++;
            if (ns_store_grow(w->store) != NS_OK) {
                NS_LOG_ERROR("writer: store map is full at its configured limit (mapMaxBytes); "
                             "%zu write(s) refused",
                             n);
                set_rc_all(batch, NS_EMAPFULL);
                break;
            }
        }
        failed = brc != NS_OK;
        if (rest) { /* cut at writerBatchMaxBytes: the rest is the next batch */
            requeue(w, rest);
            for (n = 1, last = batch; last->next; last = last->next)
                n++;
            NS_M_INC(w->m.cut_batches);
        }
        NS_M_ADD(w->m.taken, n);
        ns_hist_observe(&w->m.batch_size, NS_HIST_BATCH, n);
        /* room for the next batch before it needs it: a map that fills
         * makes a batch run twice, and one that a restart reopens full
         * made its first write do so (mapGrowPercent) */
        uint64_t before = ns_store_map_grown(w->store);
        ns_store_keep_headroom(w->store);
        grows += ns_store_map_grown(w->store) - before;
        NS_M_INC(w->m.batches);
        NS_M_ADD(w->m.grows, grows);
        NS_M_ADD(w->m.failed_batches, failed);

        pthread_mutex_lock(&w->mu);
        w->stats.batches++;
        w->stats.ops += n;
        w->stats.grows += grows;
        w->stats.failed_batches += failed;
        append(&w->out_head, &w->out_tail, batch, last);
        pthread_mutex_unlock(&w->mu);
        announce(w);
        /* the replies are on their way: give back the pages the commits
         * before this batch's made free (store/free_pages.c) */
        uint64_t dropped = 0;
        (void)ns_store_release_free_pages(w->store, false, &dropped);
        NS_M_ADD(w->m.pages_given_back, dropped);
        w->newest_kept = true; /* writer thread only, under mu when read */
        follow_route_index(w);
    }
    ns_store_route_index_let_go(w->store); /* its snapshot is this thread's */
    return NULL;
}

static void drain_done(ns_writer_t *w)
{
    pthread_mutex_lock(&w->mu);
    ns_wop_t *op = w->out_head;
    w->out_head = w->out_tail = NULL;
    pthread_mutex_unlock(&w->mu);
    while (op) {
        ns_wop_t *next = op->next;
        op->next = NULL;
        w->pending--;
        w->done++;
        size_t bytes = op->bytes;
        op->done(op);
        ns_budget_writer_done(bytes + NS_WOP_BASE_BYTES);
        op = next;
    }
    if (w->hooks.drained)
        w->hooks.drained(w->hooks.loop_ctx);
}

static void done_cb(uv_poll_t *h, int status, int events)
{
    ns_writer_t *w = h->data;
    uint64_t n;
    while (read(w->done_fd, &n, sizeof n) < 0 && errno == EINTR)
        ; /* EAGAIN: a spurious wake-up, nothing to reset */
    drain_done(w);
}

/* Frees w once its poll handle is closed (the loop may still reference the
 * handle until then). */
static void free_writer_cb(uv_handle_t *h)
{
    ns_writer_t *w = h->data;
    close(w->done_fd);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cond);
    free(w);
}

int ns_writer_start(ns_store_t *store, uv_loop_t *loop, size_t batch_max, size_t batch_max_bytes,
                    const ns_writer_hooks_t *hooks, ns_writer_t **out)
{
    ns_writer_t *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NS_ENOMEM;
    w->store = store;
    w->batch_max = batch_max ? batch_max : 1024;
    w->batch_max_bytes = batch_max_bytes ? batch_max_bytes : SIZE_MAX;
    if (hooks)
        w->hooks = *hooks;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* wait_for_ops: no wall-clock step */
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    w->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->done_fd < 0 || uv_poll_init(loop, &w->done_poll, w->done_fd) != 0)
        goto fail;
    w->done_poll.data = w;
    if (uv_poll_start(&w->done_poll, UV_READABLE, done_cb) != 0 ||
        pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        uv_close((uv_handle_t *)&w->done_poll, free_writer_cb); /* frees w */
        return NS_EINTERNAL;
    }
    *out = w;
    return NS_OK;
fail:
    if (w->done_fd >= 0)
        close(w->done_fd);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cond);
    free(w);
    return NS_EINTERNAL;
}

void ns_writer_submit(ns_writer_t *w, ns_wop_t *op)
{
    op->next = NULL;
    op->rc = NS_OK;
    op->failed = false;
    w->pending++;
    ns_budget_writer_add(op->bytes + NS_WOP_BASE_BYTES);
    NS_M_INC(w->m.queued);
    pthread_mutex_lock(&w->mu);
    append(&w->in_head, &w->in_tail, op, op);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

size_t ns_writer_pending(const ns_writer_t *w)
{
    return w->pending;
}

uint64_t ns_writer_done_count(const ns_writer_t *w)
{
    return w->done;
}

const ns_metrics_writer_t *ns_writer_metrics(const ns_writer_t *w)
{
    return &w->m;
}

void ns_writer_stats(ns_writer_t *w, ns_writer_stats_t *out)
{
    pthread_mutex_lock(&w->mu);
    *out = w->stats;
    pthread_mutex_unlock(&w->mu);
}

void ns_writer_stop(ns_writer_t *w)
{
    if (w == NULL)
        return;
    /* The batch in flight commits; what is still queued is not applied but
     * answered NS_ESHUTDOWN at once, so a long queue cannot hold up the exit
     * (60 queued large registrations took 14.5 s). */
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    ns_wop_t *queued = w->in_head, *last = w->in_tail;
    w->in_head = w->in_tail = NULL;
    for (ns_wop_t *op = queued; op; op = op->next) {
        op->rc = NS_ESHUTDOWN;
        op->failed = true;
    }
    if (queued)
        append(&w->out_head, &w->out_tail, queued, last);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    drain_done(w);
    uv_close((uv_handle_t *)&w->done_poll, free_writer_cb); /* frees w */
}
