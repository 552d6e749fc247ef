/* liveness.c - in-memory heartbeat table with a deadline heap.
 *
 * When a broker expires (docs/protocol.md §6.6): its deadline is
 *     max(last_update + timeout, grace_until)
 * and it is expired once that deadline is strictly before now. last_update
 * is set by a registration and refreshed by BROKER_HEARTBEAT and
 * QUERY_DATA_VERSION; timeout is the registration's heartbeatTimeoutMillis
 * (default 120 s); grace_until is set for brokers restored from disk at
 * startup (now + brokerGraceWindowMillis), and for every broker after a
 * stall of the loop (see below), and cleared by the broker's next heartbeat
 * or registration. The scan timer pops expired
 * entries from a min-heap ordered by deadline, so a scan costs O(k log n)
 * for k expired brokers rather than a walk over all of them.
 *
 * A stall is not a silence. When the loop or the whole process did not run
 * (SIGSTOP, a VM pause, swapping), the brokers' heartbeats wait unread in
 * the sockets (or in an I/O loop's mail) while the monotonic clock runs on,
 * and a scan right after it would evict brokers that were alive all along.
 * So a scan first asks ns_clock_stall whether it came more than
 * NS_CLOCK_STALL_MS (1 s) later than its period (the gap since the previous
 * scan longer than the scan interval by that much); if so it expires
 * nothing and gives every broker the window a restart gives:
 *     grace_until = max(grace_until, now + max(brokerGraceWindowMillis, timeout))
 * The next scan comes after the loop has read what waited, so a broker
 * whose heartbeats were queued is refreshed by then and one that really
 * died during the pause is evicted when that window ends.
 *
 * Fencing (how a stale eviction never removes a newer registration) is the
 * job of the callers, see src/daemon/cmd/cmd_broker.c: unregisters and
 * registrations are applied by the writer in the order the loop saw them, a
 * registration refreshes its entry the moment it arrives, and the fast path for
 * unchanged registrations runs only while the writer is idle. Every
 * registration bumps the entry's generation, which the logs report. */
#include "core/liveness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/buf.h"
#include "ns/err.h"
#include "ns/strmap.h"

struct ns_liveness {
    ns_strmap_t by_key; /* "cluster\naddr" -> entry */
    ns_live_entry_t **heap;
    size_t n, cap;
    ns_buf_t key;
};

int ns_liveness_new(ns_liveness_t **out)
{
    ns_liveness_t *lv = calloc(1, sizeof *lv);
    if (lv == NULL)
        return NS_ENOMEM;
    *out = lv;
    return NS_OK;
}

static void entry_free(ns_live_entry_t *e)
{
    free(e->cluster);
    free(e->addr);
    free(e->broker_name);
    free(e->fp_master);
    free(e->fp_ha);
    free(e);
}

void ns_liveness_free(ns_liveness_t *lv)
{
    if (lv == NULL)
        return;
    for (size_t i = 0; i < lv->n; i++)
        entry_free(lv->heap[i]);
    free(lv->heap);
    ns_strmap_clear(&lv->by_key);
    ns_buf_free(&lv->key);
    free(lv);
}

size_t ns_liveness_count(const ns_liveness_t *lv)
{
    return lv->n;
}

/* "cluster\naddr" in the table's scratch key (no formatting: heartbeats
 * build one per request). */
static const char *make_key(ns_liveness_t *lv, const char *cluster, const char *addr)
{
    ns_buf_reset(&lv->key);
    if (ns_buf_append_str(&lv->key, cluster) != NS_OK ||
        ns_buf_append_u8(&lv->key, '\n') != NS_OK || ns_buf_append_str(&lv->key, addr) != NS_OK)
        return NULL;
    return (const char *)lv->key.data;
}

/* ---- deadline heap ---- */

static void heap_swap(ns_liveness_t *lv, size_t a, size_t b)
{
    ns_live_entry_t *t = lv->heap[a];
    lv->heap[a] = lv->heap[b];
    lv->heap[b] = t;
    lv->heap[a]->heap_idx = a;
    lv->heap[b]->heap_idx = b;
}

static void sift_up(ns_liveness_t *lv, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (lv->heap[p]->deadline_ms <= lv->heap[i]->deadline_ms)
            break;
        heap_swap(lv, i, p);
        i = p;
    }
}

static void sift_down(ns_liveness_t *lv, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < lv->n && lv->heap[l]->deadline_ms < lv->heap[m]->deadline_ms)
            m = l;
        if (r < lv->n && lv->heap[r]->deadline_ms < lv->heap[m]->deadline_ms)
            m = r;
        if (m == i)
            return;
        heap_swap(lv, i, m);
        i = m;
    }
}

/* max(last_update + timeout, grace_until): when e expires. */
static uint64_t deadline_of(const ns_live_entry_t *e)
{
    uint64_t d = e->last_update_ms + (uint64_t)(e->timeout_ms > 0 ? e->timeout_ms : 0);
    return d > e->grace_until_ms ? d : e->grace_until_ms;
}

static void set_deadline(ns_liveness_t *lv, ns_live_entry_t *e)
{
    e->deadline_ms = deadline_of(e);
    sift_up(lv, e->heap_idx);
    sift_down(lv, e->heap_idx);
}

static void heap_remove(ns_liveness_t *lv, ns_live_entry_t *e)
{
    size_t i = e->heap_idx;
    lv->n--;
    if (i != lv->n) {
        heap_swap(lv, i, lv->n);
        sift_up(lv, i);
        sift_down(lv, i);
    }
}

ns_live_entry_t *ns_liveness_at(const ns_liveness_t *lv, size_t i)
{
    return i < lv->n ? lv->heap[i] : NULL;
}

ns_live_entry_t *ns_liveness_get(ns_liveness_t *lv, const char *cluster, const char *addr)
{
    const char *k = make_key(lv, cluster, addr);
    return k ? ns_strmap_get(&lv->by_key, k) : NULL;
}

static ns_live_entry_t *upsert(ns_liveness_t *lv, const char *cluster, const char *addr,
                               const char *broker_name, int64_t broker_id, int64_t timeout_ms)
{
    ns_live_entry_t *e = ns_liveness_get(lv, cluster, addr);
    if (e == NULL) {
        if (lv->n == lv->cap) {
            size_t cap = lv->cap ? lv->cap * 2 : 64;
            ns_live_entry_t **h = realloc(lv->heap, cap * sizeof *h);
            if (h == NULL)
                return NULL;
            lv->heap = h;
            lv->cap = cap;
        }
        e = calloc(1, sizeof *e);
        if (e == NULL)
            return NULL;
        e->cluster = strdup(cluster);
        e->addr = strdup(addr);
        const char *k = make_key(lv, cluster, addr);
        if (!e->cluster || !e->addr || !k || ns_strmap_put(&lv->by_key, k, e) != NS_OK) {
            entry_free(e);
            return NULL;
        }
        e->heap_idx = lv->n;
        lv->heap[lv->n++] = e;
    }
    if (e->broker_name == NULL || strcmp(e->broker_name, broker_name) != 0) {
        char *bn = strdup(broker_name);
        if (bn == NULL)
            return NULL;
        free(e->broker_name);
        e->broker_name = bn;
    }
    e->broker_id = broker_id;
    e->timeout_ms = timeout_ms;
    return e;
}

ns_live_entry_t *ns_liveness_register(ns_liveness_t *lv, const char *cluster, const char *addr,
                                      const char *broker_name, int64_t broker_id,
                                      int64_t timeout_ms, void *conn, uint64_t now_ms)
{
    ns_live_entry_t *e = upsert(lv, cluster, addr, broker_name, broker_id, timeout_ms);
    if (e == NULL)
        return NULL;
    e->conn = conn;
    e->generation++;
    e->evicting = false;
    e->last_update_ms = now_ms;
    e->grace_until_ms = 0;
    e->grace_after_stall = false;
    set_deadline(lv, e);
    return e;
}

ns_live_entry_t *ns_liveness_restore(ns_liveness_t *lv, const char *cluster, const char *addr,
                                     const char *broker_name, int64_t broker_id, int64_t timeout_ms,
                                     uint64_t now_ms, uint64_t grace_until_ms)
{
    ns_live_entry_t *e = upsert(lv, cluster, addr, broker_name, broker_id, timeout_ms);
    if (e == NULL)
        return NULL;
    e->conn = NULL;
    e->generation++;
    e->last_update_ms = now_ms;
    e->grace_until_ms = grace_until_ms;
    e->grace_after_stall = false;
    set_deadline(lv, e);
    return e;
}

size_t ns_liveness_grace_all(ns_liveness_t *lv, uint64_t now_ms, int64_t grace_ms)
{
    size_t k = 0;
    for (size_t i = 0; i < lv->n; i++) {
        ns_live_entry_t *e = lv->heap[i];
        if (e->evicting) /* its unregister is queued; its deadline stays parked */
            continue;
        int64_t w = grace_ms > e->timeout_ms ? grace_ms : e->timeout_ms;
        uint64_t until = now_ms + (uint64_t)(w > 0 ? w : 0);
        if (until > e->grace_until_ms) {
            e->grace_until_ms = until;
            e->grace_after_stall = true;
        }
        e->deadline_ms = deadline_of(e);
        k++;
    }
    /* every key may have moved: rebuild the heap bottom-up (Floyd) */
    for (size_t i = lv->n / 2; i-- > 0;)
        sift_down(lv, i);
    return k;
}

bool ns_liveness_heartbeat(ns_liveness_t *lv, const char *cluster, const char *addr,
                           uint64_t now_ms)
{
    ns_live_entry_t *e = ns_liveness_get(lv, cluster, addr);
    if (e == NULL)
        return false;
    ns_liveness_touch(lv, e, now_ms);
    return true;
}

void ns_liveness_touch(ns_liveness_t *lv, ns_live_entry_t *e, uint64_t now_ms)
{
    e->last_update_ms = now_ms;
    e->grace_until_ms = 0; /* it is back: the normal timeout applies again */
    e->grace_after_stall = false;
    set_deadline(lv, e);
}

size_t ns_liveness_expired(ns_liveness_t *lv, uint64_t now_ms, ns_live_entry_t **out, size_t max)
{
    size_t k = 0;
    /* Evicting entries stay in the heap until their unregister commits; push
     * them past now so they do not hide the ones behind them. */
    while (k < max && lv->n > 0 && lv->heap[0]->deadline_ms < now_ms) {
        ns_live_entry_t *e = lv->heap[0];
        if (!e->evicting) {
            e->evicting = true;
            out[k++] = e;
        }
        e->deadline_ms = UINT64_MAX;
        sift_down(lv, 0);
    }
    return k;
}

void ns_liveness_retry(ns_liveness_t *lv, ns_live_entry_t *e)
{
    e->evicting = false;
    set_deadline(lv, e);
}

size_t ns_liveness_by_conn(ns_liveness_t *lv, void *conn, ns_live_entry_t **out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < lv->n && k < max; i++) {
        ns_live_entry_t *e = lv->heap[i];
        if (e->conn == conn && !e->evicting) {
            e->evicting = true;
            out[k++] = e;
        }
    }
    return k;
}

bool ns_liveness_remove(ns_liveness_t *lv, const char *cluster, const char *addr)
{
    ns_live_entry_t *e = ns_liveness_get(lv, cluster, addr);
    if (e == NULL)
        return false;
    heap_remove(lv, e);
    const char *k = make_key(lv, cluster, addr);
    if (k)
        ns_strmap_del(&lv->by_key, k);
    entry_free(e);
    return true;
}

void ns_liveness_forget_conn(ns_liveness_t *lv, void *conn)
{
    for (size_t i = 0; i < lv->n; i++)
        if (lv->heap[i]->conn == conn)
            lv->heap[i]->conn = NULL;
}

void ns_liveness_foreach(ns_liveness_t *lv, void (*cb)(const ns_live_entry_t *e, void *ctx),
                         void *ctx)
{
    for (size_t i = 0; i < lv->n; i++)
        cb(lv->heap[i], ctx);
}
