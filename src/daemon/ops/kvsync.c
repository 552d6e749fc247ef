/* kvsync.c - KV anti-entropy (kvsync.h): the pull on the peer check
 * thread, the inbox, the merge and sweep ops of the writer. */
#include "ops/kvsync.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "core/server.h"
#include "ns/clock.h"
#include "ns/config.h"
#include "ns/err.h"
#include "ns/kvsync.h"
#include "ns/log.h"

#define SWEEP_MAX 10000       /* tombstones removed by one sweep op */
#define SWEEP_PERIOD_MS 60000 /* how often tombstones are swept */
#define SWEEP_FIRST_MS 1000   /* the first sweep (the gauge's first value) */

/* Entries pulled from one peer in one request, waiting for the writer. */
typedef struct batch {
    struct batch *next;
    char *peer;
    ns_kvsync_entry_t *e;
    size_t n, bytes;
} batch_t;

struct ns_kvsync {
    ns_server_t *srv;
    atomic_bool on;     /* kvSync, set by its apply hook */
    int64_t timeout_ms; /* peerTimeoutMillis */
    uv_async_t wake;    /* the inbox has batches */
    uv_timer_t sweep;   /* the tombstone sweep */
    int open_handles;   /* freed when both are closed */
    bool sweeping;      /* a sweep op in flight (loop thread) */
    pthread_mutex_t mu; /* the inbox */
    batch_t *head, *tail;
    size_t inbox_bytes;
    atomic_uint_fast64_t pulled, refused, failed, dropped, requests;
    atomic_size_t tombstones;
};

static void batch_free(batch_t *b)
{
    if (b == NULL)
        return;
    ns_kvsync_entries_free(b->e, b->n);
    free(b->peer);
    free(b);
}

/* ---- the writer's side: merge and sweep (submitted on the main loop) ---- */

typedef struct {
    ns_kvsync_t *ks;
    batch_t *b;
    size_t applied; /* rebuilt by every run of apply */
    size_t first;   /* index of the first entry applied */
} merge_t;

static int merge_apply(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    merge_t *m = (merge_t *)w->payload;
    int rc = NS_OK;
    m->applied = 0;
    for (size_t i = 0; rc == NS_OK && i < m->b->n; i++) {
        const ns_kvsync_entry_t *e = &m->b->e[i];
        bool applied = false;
        rc = ns_kv_merge(txn, e->ns, e->key, &e->ver, e->value, &applied);
        if (rc == NS_OK && applied && m->applied++ == 0)
            m->first = i;
    }
    return rc;
}

static int merge_done(ns_wreq_t *w, int rc)
{
    merge_t *m = (merge_t *)w->payload;
    if (rc != NS_OK) {
        NS_LOG_WARN("kvsync: %zu entries from %s not merged: %s; pulled again at the next check",
                    m->b->n, m->b->peer, ns_strerror(rc));
    } else if (m->applied > 0) {
        const ns_kvsync_entry_t *e = &m->b->e[m->first];
        atomic_fetch_add(&m->ks->pulled, m->applied);
        NS_LOG_INFO("kvsync: took %zu of %zu entries from %s (first %s/%s, %s)", m->applied,
                    m->b->n, m->b->peer, e->ns, e->key, e->ver.deleted ? "deleted" : "value");
    }
    return NS_OK; /* nobody to answer */
}

static void merge_free(void *payload)
{
    batch_free(((merge_t *)payload)->b);
}

static const ns_wreq_ops_t merge_ops = {merge_apply, merge_done, merge_free};

typedef struct {
    ns_kvsync_t *ks;
    int64_t before_ms;
    size_t removed, left;
} sweep_t;

static int sweep_apply(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    sweep_t *s = (sweep_t *)w->payload;
    return ns_kv_tombstones_sweep(txn, s->before_ms, SWEEP_MAX, &s->removed, &s->left);
}

static int sweep_done(ns_wreq_t *w, int rc)
{
    sweep_t *s = (sweep_t *)w->payload;
    s->ks->sweeping = false;
    if (rc != NS_OK) {
        NS_LOG_WARN("kvsync: tombstone sweep failed: %s", ns_strerror(rc));
        return NS_OK;
    }
    atomic_store(&s->ks->tombstones, s->left);
    if (s->removed > 0)
        NS_LOG_INFO("kvsync: %zu tombstones older than kvTombstoneRetentionMillis removed, %zu "
                    "kept",
                    s->removed, s->left);
    return NS_OK;
}

static const ns_wreq_ops_t sweep_ops = {sweep_apply, sweep_done, NULL};

static void sweep_cb(uv_timer_t *t)
{
    ns_kvsync_t *ks = t->data;
    ns_server_t *srv = ks->srv;
    if (ks->sweeping || srv->loop.stopping || srv->writer == NULL)
        return;
    ns_wreq_t *w = ns_wreq_new(&sweep_ops, sizeof(sweep_t));
    if (w == NULL)
        return;
    sweep_t *s = (sweep_t *)w->payload;
    s->ks = ks;
    s->before_ms = ns_clock_wall_ms() - srv->loop.cfg->kv_tombstone_retention_ms;
    ks->sweeping = true;
    ns_wreq_submit(srv, w, NULL);
}

/* Main loop: the inbox's batches become merge ops, in the order pulled. */
static void wake_cb(uv_async_t *a)
{
    ns_kvsync_t *ks = a->data;
    pthread_mutex_lock(&ks->mu);
    batch_t *b = ks->head;
    ks->head = ks->tail = NULL;
    ks->inbox_bytes = 0;
    pthread_mutex_unlock(&ks->mu);
    while (b) {
        batch_t *next = b->next;
        ns_wreq_t *w = ks->srv->loop.stopping || ks->srv->writer == NULL
                           ? NULL
                           : ns_wreq_new(&merge_ops, sizeof(merge_t));
        b->next = NULL;
        if (w == NULL) {
            batch_free(b);
        } else {
            merge_t *m = (merge_t *)w->payload;
            m->ks = ks;
            m->b = b;
            w->op.bytes = b->bytes;
            ns_wreq_submit(ks->srv, w, NULL);
        }
        b = next;
    }
}

/* ---- the pull (peer check thread) ---- */

/* A digest name that stands for a longer one ("#" and 32 hex digits,
 * store/digest.c): the entry cannot be named to the peer. */
static bool hashed_name(const char *s, size_t n)
{
    return n == 33 && s[0] == '#';
}

/* Queues b for the writer, or drops it when the inbox is full. */
static void enqueue(ns_kvsync_t *ks, batch_t *b)
{
    bool fits;
    pthread_mutex_lock(&ks->mu);
    fits = ks->inbox_bytes + b->bytes <= KVSYNC_INBOX_BYTES;
    if (fits) {
        if (ks->tail)
            ks->tail->next = b;
        else
            ks->head = b;
        ks->tail = b;
        ks->inbox_bytes += b->bytes;
    }
    pthread_mutex_unlock(&ks->mu);
    if (fits) {
        uv_async_send(&ks->wake);
    } else {
        atomic_fetch_add(&ks->dropped, b->n);
        NS_LOG_WARN("kvsync: %zu entries from %s dropped: the merge inbox is full (%u bytes); "
                    "pulled again at the next check",
                    b->n, b->peer, KVSYNC_INBOX_BYTES);
        batch_free(b);
    }
}

/* Checks a reply against the keys asked for and keeps what may be merged.
 * NS_EINVAL: the reply names other keys (garbage, all of it refused). */
static int keep_entries(ns_kvsync_t *ks, const char *peer, const char *const *ns,
                        const char *const *key, size_t n, ns_kvsync_entry_t *e, size_t got,
                        batch_t *b)
{
    int64_t now = ns_clock_wall_ms();
    if (got != n)
        return NS_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(e[i].ns, ns[i]) != 0 || strcmp(e[i].key, key[i]) != 0)
            return NS_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (e[i].state == NS_KVSYNC_ABSENT)
            continue; /* the peer has nothing: it pulls ours */
        if (ns_kvver_too_new(e[i].ver.hlc, now, KVSYNC_MAX_AHEAD_MS)) {
            atomic_fetch_add(&ks->refused, 1);
            NS_LOG_WARN("kvsync: %s/%s from %s refused: its version is %lld ms ahead of this "
                        "server's clock (more than %lld)",
                        e[i].ns, e[i].key, peer, (long long)(ns_kvver_wall_ms(e[i].ver.hlc) - now),
                        (long long)KVSYNC_MAX_AHEAD_MS);
            continue;
        }
        b->e[b->n] = e[i];
        memset(&e[i], 0, sizeof e[i]); /* moved into b */
        b->bytes += sizeof *b->e + strlen(b->e[b->n].ns) + strlen(b->e[b->n].key) +
                    (b->e[b->n].value ? strlen(b->e[b->n].value) : 0);
        b->n++;
    }
    return NS_OK;
}

/* One request of up to NS_KVSYNC_MAX_KEYS keys. Non-zero: close c. */
static int pull_chunk(ns_kvsync_t *ks, const char *peer, ns_client_t *c, const char *const *ns,
                      const char *const *key, size_t n)
{
    ns_buf_t req = NS_BUF_INIT, resp = NS_BUF_INIT;
    ns_kvsync_entry_t *e = NULL;
    size_t got = 0;
    char why[200] = "";
    batch_t *b = calloc(1, sizeof *b);
    int rc = b ? NS_OK : NS_ENOMEM, close = 0;
    if (rc == NS_OK &&
        ((b->peer = strdup(peer)) == NULL || (b->e = calloc(n, sizeof *b->e)) == NULL))
        rc = NS_ENOMEM;
    rc = rc ? rc : ns_kvsync_keys_encode(&req, ns, key, n);
    if (rc != NS_OK)
        goto out;
    atomic_fetch_add(&ks->requests, 1);
    rc = ns_kvsync_call(c, &req, (int)ks->timeout_ms, &resp, why, sizeof why);
    if (rc != NS_OK) {
        atomic_fetch_add(&ks->failed, 1);
        NS_LOG_WARN("kvsync: cannot pull %zu entries from %s: %s", n, peer, why);
        close = 1;
        goto out;
    }
    rc = ns_kvsync_reply_decode(resp.data, resp.len, n, &e, &got);
    rc = rc ? rc : keep_entries(ks, peer, ns, key, n, e, got, b);
    if (rc == NS_EINVAL) {
        atomic_fetch_add(&ks->refused, n);
        NS_LOG_WARN("kvsync: %s answered %zu bytes that are not the %zu entries asked for; "
                    "all refused",
                    peer, resp.len, n);
        close = 1;
    } else if (rc == NS_OK && b->n > 0) {
        enqueue(ks, b);
        b = NULL;
    }
out:
    ns_kvsync_entries_free(e, got);
    batch_free(b);
    ns_buf_free(&req);
    ns_buf_free(&resp);
    return close;
}

int ns_kvsync_pull(void *ctx, const char *peer, ns_client_t *c, const ns_fleet_report_t *r)
{
    ns_kvsync_t *ks = ctx;
    const char *ns[NS_KVSYNC_MAX_KEYS], *key[NS_KVSYNC_MAX_KEYS];
    char *names[NS_KVSYNC_MAX_KEYS] = {NULL};
    size_t n = 0, pulled = 0;
    int close = 0;
    if (ks == NULL || !atomic_load(&ks->on) || r->items[NS_FLEET_KV] == 0)
        return 0;
    for (size_t i = 0; i <= r->n && pulled < KVSYNC_MAX_PULL && !close; i++) {
        const ns_fleet_diff_t *d = i < r->n ? &r->d[i] : NULL;
        /* a KV item differs once per leaf: one entry, skipped when repeated */
        bool take =
            d && d->kind == NS_FLEET_KV && d->item && d->cluster_len < strlen(d->item) &&
            !(n > 0 && strcmp(d->item, r->d[i - 1].item) == 0 && r->d[i - 1].kind == NS_FLEET_KV);
        if (take) {
            char *copy = strdup(d->item);
            if (copy == NULL)
                break;
            copy[d->cluster_len] = 0;
            const char *k = copy + d->cluster_len + 1;
            if (hashed_name(copy, d->cluster_len) || hashed_name(k, strlen(k))) {
                free(copy);
                continue;
            }
            names[n] = copy;
            ns[n] = copy;
            key[n] = k;
            n++;
            pulled++;
        }
        if (n > 0 && (n == NS_KVSYNC_MAX_KEYS || d == NULL || pulled == KVSYNC_MAX_PULL)) {
            close = pull_chunk(ks, peer, c, ns, key, n);
            for (size_t j = 0; j < n; j++) {
                free(names[j]);
                names[j] = NULL;
            }
            n = 0;
        }
    }
    if (n > 0 && !close)
        close = pull_chunk(ks, peer, c, ns, key, n);
    for (size_t j = 0; j < n; j++)
        free(names[j]);
    return close;
}

/* ---- start, stop, metrics ---- */

static ns_kvsync_t *hook_ks; /* the server whose kvSync the apply hook sets */

static void kv_sync_applied(const ns_config_t *cfg)
{
    if (hook_ks) {
        atomic_store(&hook_ks->on, cfg->kv_sync);
        NS_LOG_INFO("kvsync: kvSync is now %s", cfg->kv_sync ? "on" : "off");
    }
}

static void handle_closed_cb(uv_handle_t *h)
{
    ns_kvsync_t *ks = h->data;
    if (--ks->open_handles > 0)
        return;
    pthread_mutex_destroy(&ks->mu);
    free(ks);
}

int ns_kvsync_server_start(ns_server_t *srv)
{
    const ns_config_t *cfg = srv->loop.cfg;
    ns_kvsync_t *ks = calloc(1, sizeof *ks);
    if (ks == NULL)
        return NS_ENOMEM;
    ks->srv = srv;
    ks->timeout_ms = cfg->peer_timeout_ms;
    atomic_store(&ks->on, cfg->kv_sync);
    pthread_mutex_init(&ks->mu, NULL);
    uv_async_init(srv->loop.uv, &ks->wake, wake_cb);
    uv_timer_init(srv->loop.uv, &ks->sweep);
    ks->wake.data = ks->sweep.data = ks;
    ks->open_handles = 2;
    uv_timer_start(&ks->sweep, sweep_cb, SWEEP_FIRST_MS, SWEEP_PERIOD_MS);
    uv_unref((uv_handle_t *)&ks->sweep);
    srv->kvsync = ks;
    hook_ks = ks;
    ns_config_set_hook("kvSync", kv_sync_applied);
    if (cfg->kv_sync)
        NS_LOG_INFO("kvsync: on; KV entries that differ from a peer are pulled at each check");
    return NS_OK;
}

void ns_kvsync_server_stop(ns_server_t *srv)
{
    ns_kvsync_t *ks = srv->kvsync;
    if (ks == NULL)
        return;
    ns_config_set_hook("kvSync", NULL);
    hook_ks = NULL;
    srv->kvsync = NULL;
    pthread_mutex_lock(&ks->mu);
    batch_t *b = ks->head;
    ks->head = ks->tail = NULL;
    pthread_mutex_unlock(&ks->mu);
    while (b) {
        batch_t *next = b->next;
        batch_free(b);
        b = next;
    }
    uv_timer_stop(&ks->sweep);
    uv_close((uv_handle_t *)&ks->wake, handle_closed_cb);
    uv_close((uv_handle_t *)&ks->sweep, handle_closed_cb);
}

static void family(ns_buf_t *out, const char *name, const char *type, const char *help, uint64_t v)
{
    ns_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
                  (unsigned long long)v);
}

void ns_kvsync_render(ns_kvsync_t *ks, ns_buf_t *out)
{
    if (ks == NULL)
        return;
    family(out, "namesrv_kv_sync_on", "gauge", "1 while kvSync is on", atomic_load(&ks->on));
    family(out, "namesrv_kv_sync_pulled_total", "counter",
           "KV entries taken from peers (their version ordered above this server's)",
           atomic_load(&ks->pulled));
    family(out, "namesrv_kv_sync_refused_total", "counter",
           "KV entries refused from peers: versions too far ahead, or replies that do not parse",
           atomic_load(&ks->refused));
    family(out, "namesrv_kv_sync_dropped_total", "counter",
           "KV entries pulled but dropped because the merge inbox was full",
           atomic_load(&ks->dropped));
    family(out, "namesrv_kv_sync_requests_total", "counter", "NS_KV_SYNC_GET requests sent",
           atomic_load(&ks->requests));
    family(out, "namesrv_kv_sync_failures_total", "counter",
           "NS_KV_SYNC_GET requests that failed (unreachable, timed out, refused)",
           atomic_load(&ks->failed));
    family(out, "namesrv_kv_tombstones", "gauge",
           "tombstones of deleted KV entries kept, as of the last sweep",
           atomic_load(&ks->tombstones));
}
