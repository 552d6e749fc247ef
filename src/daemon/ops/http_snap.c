/* http_snap.c - the main loop's snapshot for the HTTP thread (http.h), the
 * broker states and the /brokers body.
 *
 * A broker address is, at time now (loop clock):
 *   grace     restored from the store at start-up and not heard from since
 *             (no registration or heartbeat), and its deadline not passed:
 *             the restart grace window keeps it;
 *   expiring  being unregistered, past its deadline, or silent for more than
 *             half its heartbeat timeout (two missed 30 s heartbeats with the
 *             default 120 s timeout);
 *   live      otherwise.
 * The snapshot holds times, not states: the HTTP thread works out states and
 * ages when it answers, so they are exact even though the snapshot is up to
 * a second old. Data versions and topic counts come from the store; they are
 * read again only when the writer has committed something since. */
#include <stdlib.h>
#include <string.h>

#include "ns/err.h"
#include "ns/log.h"
#include "cmd/dispatch.h"
#include "core/liveness.h"
#include "core/writer.h"
#include "net/ioloop.h"
#include "ops/http_int.h"

const char *ns_bstate_name(ns_bstate_t s)
{
    static const char *const names[] = {"live", "grace", "expiring"};
    return s < NS_BROKER_STATE_N ? names[s] : "unknown";
}

ns_bstate_t ns_snap_broker_state(const ns_snap_broker_t *b, uint64_t now_ms)
{
    if (b->evicting || now_ms > b->deadline_ms)
        return NS_BROKER_EXPIRING;
    if (b->grace_until_ms != 0)
        return NS_BROKER_GRACE;
    uint64_t age = now_ms > b->last_update_ms ? now_ms - b->last_update_ms : 0;
    if (b->timeout_ms > 0 && age > (uint64_t)b->timeout_ms / 2)
        return NS_BROKER_EXPIRING;
    return NS_BROKER_LIVE;
}

void ns_snap_grace(const ns_snap_t *s, uint64_t now_ms, size_t *waiting, uint64_t *remaining_ms)
{
    *waiting = 0;
    *remaining_ms = 0;
    for (size_t i = 0; s && i < s->n_brokers; i++) {
        const ns_snap_broker_t *b = &s->brokers[i];
        if (ns_snap_broker_state(b, now_ms) != NS_BROKER_GRACE)
            continue;
        (*waiting)++;
        if (b->deadline_ms - now_ms > *remaining_ms)
            *remaining_ms = b->deadline_ms - now_ms;
    }
}

/* ---- building (main loop) ---- */

typedef struct {
    ns_snap_broker_t *rows;
    size_t n, cap;
    ns_buf_t pool; /* strings, NUL-terminated; rows hold offsets until done */
    bool oom;
} collect_t;

static size_t pool_add(collect_t *c, const char *s)
{
    size_t off = c->pool.len;
    if (ns_buf_append(&c->pool, s ? s : "", strlen(s ? s : "") + 1) != NS_OK)
        c->oom = true;
    return off;
}

static void collect_cb(const ns_live_entry_t *e, void *ctx)
{
    collect_t *c = ctx;
    if (c->oom)
        return;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        ns_snap_broker_t *r = realloc(c->rows, cap * sizeof *r);
        if (r == NULL) {
            c->oom = true;
            return;
        }
        c->rows = r;
        c->cap = cap;
    }
    ns_snap_broker_t *b = &c->rows[c->n++];
    memset(b, 0, sizeof *b);
    /* offsets for now: the pool may still move */
    b->cluster = (const char *)(uintptr_t)pool_add(c, e->cluster);
    b->addr = (const char *)(uintptr_t)pool_add(c, e->addr);
    b->broker_name = (const char *)(uintptr_t)pool_add(c, e->broker_name);
    b->broker_id = e->broker_id;
    b->timeout_ms = e->timeout_ms;
    b->last_update_ms = e->last_update_ms;
    b->grace_until_ms = e->grace_until_ms;
    b->deadline_ms = e->deadline_ms;
    b->evicting = e->evicting;
}

static int cmp_broker(const void *a, const void *b)
{
    const ns_snap_broker_t *x = a, *y = b;
    int c = strcmp(x->cluster, y->cluster);
    return c ? c : strcmp(x->addr, y->addr);
}

static int count_cb(const char *name, void *ctx)
{
    (*(uint64_t *)ctx)++;
    return 0;
}

typedef struct {
    uint64_t n;
    char prev[256]; /* the last cluster seen: pairs come sorted by cluster */
} clusters_t;

static int cluster_cb(const char *cluster, const char *broker, void *ctx)
{
    clusters_t *c = ctx;
    if (strcmp(cluster, c->prev) != 0) {
        c->n++;
        snprintf(c->prev, sizeof c->prev, "%s", cluster);
    }
    return 0;
}

/* Data version and topics of b from the store, or from prev. */
static void store_fields(ns_snap_broker_t *b, ns_txn_t *txn, const ns_snap_t *prev)
{
    if (prev && prev->n_brokers > 0) {
        const ns_snap_broker_t *o =
            bsearch(b, prev->brokers, prev->n_brokers, sizeof *b, cmp_broker);
        if (o && strcmp(o->broker_name, b->broker_name) == 0) {
            b->stored = o->stored;
            b->dv = o->dv;
            b->topics = o->topics;
            return;
        }
    }
    if (txn == NULL)
        return;
    ns_live_rec_t rec = {0};
    if (ns_live_get(txn, b->cluster, b->addr, &rec) == NS_OK) {
        b->stored = true;
        b->dv = rec.dv;
        ns_live_rec_free(&rec);
    }
    ns_queue_iter_broker(txn, b->broker_name, count_cb, &b->topics);
}

static void store_totals(ns_snap_t *s, ns_server_t *srv, ns_txn_t *txn)
{
    size_t map = 0, used = 0;
    ns_store_map_usage(srv->loop.store, &map, &used);
    s->map_size_bytes = map;
    s->map_used_bytes = used;
    ns_store_readers(srv->loop.store, &s->readers, &s->readers_max);
    if (txn == NULL)
        return;
    size_t n = 0;
    if (ns_route_count(txn, &n) == NS_OK)
        s->topics = n;
    n = 0;
    if (ns_kv_count(txn, &n) == NS_OK)
        s->kv_keys = n;
    clusters_t c = {0, ""};
    ns_cluster_iter(txn, cluster_cb, &c);
    s->clusters = c.n;
}

ns_snap_t *ns_snap_build(ns_server_t *srv, const ns_snap_t *prev)
{
    collect_t c = {0};
    ns_snap_t *s = calloc(1, sizeof *s);
    ns_txn_t *txn = NULL;
    if (s == NULL)
        return NULL;
    atomic_init(&s->refs, 1);
    ns_liveness_foreach(srv->liveness, collect_cb, &c);
    if (c.oom)
        goto fail;
    s->pool = (char *)ns_buf_steal(&c.pool, NULL);
    for (size_t i = 0; i < c.n; i++) {
        ns_snap_broker_t *b = &c.rows[i];
        b->cluster = s->pool + (uintptr_t)b->cluster;
        b->addr = s->pool + (uintptr_t)b->addr;
        b->broker_name = s->pool + (uintptr_t)b->broker_name;
    }
    if (c.n > 1)
        qsort(c.rows, c.n, sizeof *c.rows, cmp_broker);
    s->brokers = c.rows;
    s->n_brokers = c.n;
    c.rows = NULL;
    s->writer_done = srv->writer ? ns_writer_done_count(srv->writer) : 0;
    bool reuse = prev && prev->writer_done == s->writer_done && srv->writer &&
                 ns_writer_pending(srv->writer) == 0;
    s->store_ok = ns_read_begin(&srv->loop, &txn) == NS_OK;
    if (!s->store_ok)
        txn = NULL;
    for (size_t i = 0; i < s->n_brokers; i++)
        store_fields(&s->brokers[i], txn, reuse ? prev : NULL);
    store_totals(s, srv, txn);
    if (txn)
        ns_read_end(&srv->loop);
    return s;
fail:
    free(c.rows);
    ns_buf_free(&c.pool);
    free(s);
    return NULL;
}

ns_snap_t *ns_snap_get(ns_http_t *h)
{
    pthread_mutex_lock(&h->mu);
    ns_snap_t *s = h->snap;
    if (s)
        atomic_fetch_add(&s->refs, 1);
    pthread_mutex_unlock(&h->mu);
    return s;
}

void ns_snap_unref(ns_snap_t *s)
{
    if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    free(s->brokers);
    free(s->pool);
    free(s);
}

void ns_http_refresh(ns_server_t *srv)
{
    ns_http_t *h = srv->http;
    if (h == NULL)
        return;
    ns_snap_t *s = ns_snap_build(srv, h->snap); /* h->snap is only swapped by this thread */
    if (s == NULL) {
        NS_LOG_WARN("http: out of memory building the metrics snapshot; serving the last one");
        return;
    }
    pthread_mutex_lock(&h->mu);
    ns_snap_t *old = h->snap;
    h->snap = s;
    pthread_mutex_unlock(&h->mu);
    ns_snap_unref(old);
}

/* ---- /brokers ---- */

static void json_str(ns_buf_t *out, const char *key, const char *val, bool comma)
{
    ns_buf_printf(out, "%s\"%s\":", comma ? "," : "", key);
    ns_buf_append_json_str(out, val, strlen(val), false);
}

void ns_http_brokers_json(const ns_snap_t *s, uint64_t now_ms, ns_buf_t *out)
{
    ns_buf_append_str(out, "{\"brokers\":[");
    for (size_t i = 0; s && i < s->n_brokers; i++) {
        const ns_snap_broker_t *b = &s->brokers[i];
        ns_bstate_t st = ns_snap_broker_state(b, now_ms);
        uint64_t age = now_ms > b->last_update_ms ? now_ms - b->last_update_ms : 0;
        int64_t expires = (int64_t)b->deadline_ms - (int64_t)now_ms;
        ns_buf_append_str(out, i ? ",{" : "{");
        json_str(out, "cluster", b->cluster, false);
        json_str(out, "brokerName", b->broker_name, true);
        ns_buf_printf(out, ",\"brokerId\":%lld", (long long)b->broker_id);
        json_str(out, "address", b->addr, true);
        ns_buf_printf(out,
                      ",\"lastHeartbeatAgeMs\":%llu,\"timeoutMs\":%lld,\"expiresInMs\":%lld,"
                      "\"state\":\"%s\"",
                      (unsigned long long)age, (long long)b->timeout_ms, (long long)expires,
                      ns_bstate_name(st));
        if (b->stored)
            ns_buf_printf(out,
                          ",\"dataVersion\":{\"counter\":%lld,\"stateVersion\":%lld,"
                          "\"timestamp\":%lld}",
                          (long long)b->dv.counter, (long long)b->dv.state_version,
                          (long long)b->dv.timestamp);
        else
            ns_buf_append_str(out, ",\"dataVersion\":null");
        ns_buf_printf(out, ",\"topics\":%llu}", (unsigned long long)b->topics);
    }
    size_t waiting = 0;
    uint64_t remaining = 0;
    ns_snap_grace(s, now_ms, &waiting, &remaining);
    ns_buf_printf(out, "],\"count\":%zu,\"graceWaiting\":%zu,\"graceRemainingMs\":%llu}\n",
                  s ? s->n_brokers : 0, waiting, (unsigned long long)remaining);
}
