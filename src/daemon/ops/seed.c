/* seed.c - seedFromPeers (seed.h): the pull of a peer's pages at start and
 * their apply in one write transaction, checked against the peer's digest. */
#include "ops/seed.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/server.h"
#include "ns/client.h"
#include "ns/clock.h"
#include "ns/config.h"
#include "ns/err.h"
#include "ns/log.h"
#include "ns/seed.h"
#include "ns/store.h"

#define PAGE_MAX_ITEMS 1000000 /* items a page may hold (a 4 MiB page holds far fewer) */
#define MAX_PEERS 64
#define ATTEMPTS 2 /* per peer: once more when it changed during the copy */

/* The outcome of the last start, for /metrics: 0 not tried, 1 seeded,
 * 2 started empty (no peer served), 3 not seeded (the store has data). */
static atomic_int seed_state;
static atomic_llong seed_ms, seed_items, seed_bytes, seed_refused;

/* One page as it came from the peer (raw body: re-read when applied, so
 * that memory holds the bytes once and no parsed tree of all of them). */
typedef struct page {
    struct page *next;
    ns_seed_section_t section;
    ns_buf_t body;
} page_t;

typedef struct {
    ns_server_t *srv;
    const char *peer;
    page_t *head, *tail;
    size_t bytes, items[NS_SEED_SECTIONS];
    ns_seed_info_t first, last;
    int64_t deadline_ms; /* ns_clock_mono_ms */
    bool recovered;      /* the store holds only what recover salvaged (NS_META_RECOVERED_FRESH) */
    char why[256];
} pull_t;

static void pages_free(pull_t *p)
{
    while (p->head) {
        page_t *n = p->head->next;
        ns_buf_free(&p->head->body);
        free(p->head);
        p->head = n;
    }
    p->tail = NULL;
    p->bytes = 0;
    memset(p->items, 0, sizeof p->items);
}

/* ---- the pull ---- */

static int connect_peer(const ns_config_t *cfg, const char *addr, int timeout_ms, ns_client_t **c,
                        char *why, size_t whylen)
{
    ns_client_tls_t tls = {cfg->tls_client_trust_cert_path,
                           cfg->tls_client_cert_path,
                           cfg->tls_client_key_path,
                           cfg->tls_client_key_password,
                           NULL,
                           false,
                           NULL,
                           0};
    const char *cwhy = NULL;
    int rc = ns_client_connect_addr_tls(addr, timeout_ms, cfg->peer_tls ? &tls : NULL, c, &cwhy);
    if (rc == NS_OK && cfg->peer_access_key && *cfg->peer_access_key)
        rc = ns_client_set_credentials(*c, cfg->peer_access_key,
                                       cfg->peer_secret_key ? cfg->peer_secret_key : "");
    if (rc != NS_OK)
        snprintf(why, whylen, "%s%s%s", ns_strerror(rc), cwhy && *cwhy ? ": " : "",
                 cwhy ? cwhy : "");
    return rc;
}

/* Checks the peer's first page against the rules of seed.h. NS_EREFUSED
 * (not in sync) or NS_ENOTFOUND (nothing to copy), with p->why. */
static int judge(pull_t *p, const ns_seed_info_t *i)
{
    if (i->unconfirmed > 0) {
        snprintf(p->why, sizeof p->why,
                 "not in sync: %lld of its broker addresses were restored and have not "
                 "registered with it since (up %lld ms, grace window %lld ms)",
                 (long long)i->unconfirmed, (long long)i->uptime_ms, (long long)i->grace_ms);
        return NS_EREFUSED;
    }
    if (i->leaves == 0) {
        snprintf(p->why, sizeof p->why, "it has nothing to copy (its digest is empty)");
        return NS_ENOTFOUND;
    }
    return NS_OK;
}

/* Every page of every section from c into p. */
static int pull_pages(pull_t *p, ns_client_t *c)
{
    const ns_config_t *cfg = p->srv->loop.cfg;
    ns_buf_t req = NS_BUF_INIT, resp = NS_BUF_INIT;
    ns_seed_request_t r = {NS_SEED_MEMBERS, {NULL, NULL}, SEED_PAGE_BYTES};
    ns_seed_page_t pg = {0};
    bool first = true;
    int rc = NS_OK;
    for (int s = 0; rc == NS_OK && s < NS_SEED_SECTIONS; s++) {
        r.section = (ns_seed_section_t)s;
        ns_seed_cursor_free(&r.after);
        for (bool more = true; rc == NS_OK && more;) {
            int64_t left = p->deadline_ms - ns_clock_mono_ms();
            int timeout = (int)(left < cfg->peer_timeout_ms ? left : cfg->peer_timeout_ms);
            if (timeout <= 0) {
                snprintf(p->why, sizeof p->why, "seedTimeoutMillis (%lld ms) ran out",
                         (long long)cfg->seed_timeout_ms);
                rc = NS_ETIMEDOUT;
                break;
            }
            ns_buf_reset(&req);
            ns_buf_reset(&resp);
            rc = ns_seed_request_encode(&req, &r);
            rc = rc ? rc : ns_seed_call(c, &req, timeout, &resp, p->why, sizeof p->why);
            if (rc != NS_OK)
                break;
            if ((rc = ns_seed_page_decode(resp.data, resp.len, r.section, PAGE_MAX_ITEMS, &pg)) !=
                NS_OK) {
                snprintf(p->why, sizeof p->why, "it answered %zu bytes that are not a %s page",
                         resp.len, ns_seed_section_name(r.section));
                rc = rc == NS_ENOMEM ? rc : NS_EINVAL;
                break;
            }
            if (pg.next.a && ns_seed_cursor_cmp(&pg.next, &r.after) <= 0) {
                snprintf(p->why, sizeof p->why, "its %s pages do not move forward",
                         ns_seed_section_name(r.section));
                rc = NS_EINVAL;
            } else if (first && (rc = judge(p, &pg.info)) == NS_OK) {
                p->first = pg.info;
            }
            first = false;
            p->last = pg.info;
            p->items[s] += pg.n;
            p->bytes += resp.len;
            if (rc == NS_OK && p->bytes > SEED_MAX_BYTES) {
                snprintf(p->why, sizeof p->why, "its pages exceed %u bytes", SEED_MAX_BYTES);
                rc = NS_ENOSPC;
            }
            page_t *kept = rc == NS_OK && pg.n > 0 ? calloc(1, sizeof *kept) : NULL;
            if (rc == NS_OK && pg.n > 0 && kept == NULL)
                rc = NS_ENOMEM;
            if (kept) { /* the raw body moves into the list */
                kept->section = r.section;
                kept->body = resp;
                ns_buf_init(&resp);
                if (p->tail)
                    p->tail->next = kept;
                else
                    p->head = kept;
                p->tail = kept;
            }
            more = pg.next.a != NULL;
            ns_seed_cursor_free(&r.after);
            r.after = pg.next; /* moved */
            memset(&pg.next, 0, sizeof pg.next);
            ns_seed_page_free(&pg);
        }
    }
    ns_seed_cursor_free(&r.after);
    ns_buf_free(&req);
    ns_buf_free(&resp);
    return rc;
}

/* ---- the apply (one write transaction) ---- */

typedef struct {
    pull_t *p;
    bool mismatch; /* the digests differ: nothing committed */
    char local[33];
    int64_t local_leaves;
    size_t merged;     /* kept entries merged back */
    struct kept *kept; /* the store's own KV entries, taken out while the copy is checked */
} apply_t;

/* A KV entry of the store's own (a recovered store's salvage), merged back
 * after the seed by version, so the peer's newer state wins and an entry
 * only this store has stays. */
typedef struct kept {
    struct kept *next;
    char *ns, *key, *val;
    ns_kvver_t ver;
} kept_t;

static void kept_free(kept_t *k)
{
    while (k) {
        kept_t *n = k->next;
        free(k->ns);
        free(k->key);
        free(k->val);
        free(k);
        k = n;
    }
}

static int keep_cb(const char *ns, const char *key, const char *val, size_t val_len,
                   const ns_kvver_t *ver, void *ctx)
{
    (void)val_len;
    apply_t *a = ctx;
    kept_t *k = calloc(1, sizeof *k);
    if (k == NULL)
        return NS_ENOMEM;
    k->next = a->kept;
    a->kept = k;
    k->ver = *ver;
    k->ver.deleted = false;
    k->ns = strdup(ns);
    k->key = strdup(key);
    k->val = strdup(val);
    return k->ns && k->key && k->val ? NS_OK : NS_ENOMEM;
}

/* Takes the store's own KV entries out of t (they leave the digest too),
 * kept in a->kept. */
static int take_own_kv(ns_txn_t *t, apply_t *a)
{
    int rc = ns_kv_iter_after(t, NULL, NULL, keep_cb, a);
    for (kept_t *k = a->kept; rc == NS_OK && k; k = k->next)
        rc = ns_kv_del(t, k->ns, k->key);
    return rc;
}

/* Merges the kept entries back into t after the copy (ns_kv_merge: only
 * where they order above what the peer sent, or the peer has no such key). */
static int merge_own_kv(ns_txn_t *t, apply_t *a, size_t *merged)
{
    int rc = NS_OK;
    *merged = 0;
    for (kept_t *k = a->kept; rc == NS_OK && k; k = k->next) {
        bool applied = false;
        if (!ns_kv_ns_exists(t, k->ns))
            rc = ns_kv_ns_create(t, k->ns);
        rc = rc ? rc : ns_kv_merge(t, k->ns, k->key, &k->ver, k->val, &applied);
        *merged += applied;
    }
    return rc;
}

static int apply_item(ns_txn_t *t, ns_seed_section_t s, const ns_seed_item_t *it, int64_t now)
{
    switch (s) {
    case NS_SEED_MEMBERS:
        return ns_cluster_add(t, it->s[0], it->s[1]);
    case NS_SEED_GROUPS: {
        ns_broker_addr_t addrs[64];
        ns_broker_addr_t *a = it->n_list <= 64 ? addrs : calloc(it->n_list, sizeof *a);
        if (a == NULL)
            return NS_ENOMEM;
        for (size_t i = 0; i < it->n_list; i++) {
            a[i].id = it->ids[i];
            a[i].addr = it->list[i];
        }
        /* the strings are the page's; ns_group_put only reads them */
        ns_group_rec_t g = {(char *)it->s[0], (char *)it->s[1], (char *)it->s[2], it->flag, a,
                            it->n_list};
        int rc = ns_group_put(t, &g);
        if (a != addrs)
            free(a);
        return rc;
    }
    case NS_SEED_LIVE: {
        ns_live_rec_t r = {(char *)it->s[0], (char *)it->s[1],
                           (char *)it->s[2], it->n[0],
                           (char *)it->s[3], {it->n[1], it->n[2], it->n[3]},
                           it->n[4],         (char **)it->list,
                           it->n_list,       now};
        return ns_live_put(t, &r);
    }
    case NS_SEED_QUEUES: {
        for (int i = 0; i < 4; i++)
            if (it->n[i] < INT32_MIN || it->n[i] > INT32_MAX)
                return NS_EINVAL;
        ns_queue_data_t q = {it->s[1], (int32_t)it->n[0], (int32_t)it->n[1], (int32_t)it->n[2],
                             (int32_t)it->n[3]};
        return ns_queue_put(t, it->s[0], &q);
    }
    case NS_SEED_KV: {
        ns_kvver_t v;
        bool applied = false;
        int rc = ns_kvver_parse(it->s[3], &v) ? NS_OK : NS_EINVAL;
        v.deleted = false;
        if (rc == NS_OK && !ns_kv_ns_exists(t, it->s[0]))
            rc = ns_kv_ns_create(t, it->s[0]);
        return rc ? rc : ns_kv_merge(t, it->s[0], it->s[1], &v, it->s[2], &applied);
    }
    default:
        return NS_EINVAL;
    }
}

static int apply_txn(ns_txn_t *t, void *ctx)
{
    apply_t *a = ctx;
    ns_registry_t *reg = a->p->srv->registry;
    ns_digest_sum_t root;
    int64_t now = ns_clock_wall_ms();
    int rc = (a->p->recovered ? ns_store_brokers_nonempty(t) : ns_store_topology_nonempty(t))
                 ? NS_EEXIST
                 : NS_OK;
    ns_registry_batch_reset(reg);
    a->mismatch = false;
    kept_free(a->kept);
    a->kept = NULL;
    if (rc == NS_OK && a->p->recovered)
        rc = take_own_kv(t, a);
    for (page_t *pg = a->p->head; rc == NS_OK && pg; pg = pg->next) {
        ns_seed_page_t d;
        rc = ns_seed_page_decode(pg->body.data, pg->body.len, pg->section, PAGE_MAX_ITEMS, &d);
        for (size_t i = 0; rc == NS_OK && i < d.n; i++)
            rc = apply_item(t, pg->section, &d.items[i], now);
        ns_seed_page_free(&d);
    }
    rc = rc ? rc : ns_registry_mark_all(reg, t);
    rc = rc ? rc : ns_registry_before_commit(reg, t);
    ns_registry_batch_reset(reg);
    rc = rc ? rc : ns_digest_root(t, &root);
    if (rc == NS_OK) {
        ns_digest_hex(&root, a->local);
        a->local_leaves = root.count;
        a->mismatch = strcmp(a->local, a->p->last.digest) != 0 || root.count != a->p->last.leaves;
    }
    if (rc == NS_OK && a->mismatch)
        return NS_EREFUSED;
    rc = rc ? rc : merge_own_kv(t, a, &a->merged);
    return rc ? rc : ns_meta_del(t, NS_META_RECOVERED_FRESH);
}

/* ---- one peer, all peers ---- */

/* NS_OK: seeded. NS_EAGAIN: the peer changed during the copy. Else
 * refused, with p->why. */
static int seed_from(pull_t *p)
{
    ns_client_t *c = NULL;
    int64_t left = p->deadline_ms - ns_clock_mono_ms();
    int64_t timeout = p->srv->loop.cfg->peer_timeout_ms;
    int rc = connect_peer(p->srv->loop.cfg, p->peer, (int)(left < timeout ? left : timeout), &c,
                          p->why, sizeof p->why);
    rc = rc ? rc : pull_pages(p, c);
    ns_client_close(c);
    if (rc != NS_OK)
        return rc;
    if (strcmp(p->first.digest, p->last.digest) != 0) {
        snprintf(p->why, sizeof p->why, "its digest changed during the copy (%s, then %s)",
                 p->first.digest, p->last.digest);
        return NS_EAGAIN;
    }
    apply_t a = {p, false, "", 0, 0, NULL};
    rc = ns_store_write(p->srv->loop.store, apply_txn, &a);
    kept_free(a.kept);
    if (rc == NS_OK && p->recovered)
        NS_LOG_INFO("seedFromPeers: the KV config recover salvaged merged back by version: %zu "
                    "entries kept over the peer's (the rest are the peer's newer ones)",
                    a.merged);
    if (rc == NS_EREFUSED && a.mismatch) {
        snprintf(p->why, sizeof p->why,
                 "what it sent does not add up to its digest (%s with %lld leaves; ours %s with "
                 "%lld)",
                 p->last.digest, (long long)p->last.leaves, a.local, (long long)a.local_leaves);
        return NS_EAGAIN;
    }
    if (rc == NS_EINVAL)
        snprintf(p->why, sizeof p->why, "an item it sent cannot be stored");
    else if (rc != NS_OK)
        snprintf(p->why, sizeof p->why, "the store refused the seed: %s", ns_strerror(rc));
    return rc;
}

static int forget_txn(ns_txn_t *t, void *ctx)
{
    (void)ctx;
    return ns_meta_del(t, NS_META_RECOVERED_FRESH);
}

/* A start that does not seed forgets recover's mark: only the first start
 * after recover may seed the topology of a store holding KV config. */
static void forget_recovered(ns_server_t *srv)
{
    ns_txn_t *t = NULL;
    uint64_t v;
    if (ns_txn_begin(srv->loop.store, false, &t) != NS_OK)
        return;
    bool marked = ns_meta_get_u64(t, NS_META_RECOVERED_FRESH, &v) == NS_OK;
    ns_txn_abort(t);
    if (marked && ns_store_write(srv->loop.store, forget_txn, NULL) != NS_OK)
        NS_LOG_WARN("seedFromPeers: cannot clear the mark namesrvctl recover left in meta");
}

static void outcome(int state, int64_t t0)
{
    atomic_store(&seed_state, state);
    atomic_store(&seed_ms, ns_clock_mono_ms() - t0);
}

int ns_seed_at_start(ns_server_t *srv, char *err, size_t errlen)
{
    const ns_config_t *cfg = srv->loop.cfg;
    ns_txn_t *t = NULL;
    const char *what = NULL;
    char *list = NULL, *save = NULL;
    int64_t t0 = ns_clock_mono_ms();
    pull_t p;
    int rc;
    memset(&p, 0, sizeof p);
    p.srv = srv;
    p.deadline_ms = t0 + cfg->seed_timeout_ms;
    if (!cfg->seed_from_peers) {
        forget_recovered(srv);
        return NS_OK;
    }
    if ((rc = ns_txn_begin(srv->loop.store, false, &t)) != NS_OK) {
        snprintf(err, errlen, "seedFromPeers: cannot read the store: %s", ns_strerror(rc));
        return rc;
    }
    uint64_t mark;
    what = ns_store_topology_nonempty(t);
    p.recovered = what && ns_meta_get_u64(t, NS_META_RECOVERED_FRESH, &mark) == NS_OK &&
                  ns_store_brokers_nonempty(t) == NULL;
    ns_txn_abort(t);
    if (p.recovered) {
        NS_LOG_INFO("seedFromPeers: the store holds only the KV config namesrvctl recover "
                    "salvaged (no good backup); seeding its topology, the salvaged entries "
                    "merged back by version");
        what = NULL;
    }
    if (what) {
        forget_recovered(srv);
        NS_LOG_INFO("seedFromPeers: the store has data (table %s); it is served as it is, "
                    "never seeded over",
                    what);
        outcome(3, t0);
        return NS_OK;
    }
    if (cfg->peers == NULL || *cfg->peers == 0 || (list = strdup(cfg->peers)) == NULL) {
        NS_LOG_WARN("seedFromPeers: the store is empty but no peer is set (peers); starting "
                    "empty");
        forget_recovered(srv);
        outcome(2, t0);
        return NS_OK;
    }
    NS_LOG_INFO("seedFromPeers: the store is empty; copying it from a peer in sync (%s), "
                "within %lld ms",
                cfg->peers, (long long)cfg->seed_timeout_ms);
    rc = NS_ENOTFOUND;
    int tried = 0;
    for (char *a = strtok_r(list, ";, ", &save); a && rc != NS_OK && tried < MAX_PEERS;
         a = strtok_r(NULL, ";, ", &save), tried++) {
        p.peer = a;
        for (int i = 0; i < ATTEMPTS; i++) {
            rc = seed_from(&p);
            if (rc == NS_OK)
                break;
            pages_free(&p);
            atomic_fetch_add(&seed_refused, 1);
            NS_LOG_WARN("seedFromPeers: not seeded from %s: %s", a, p.why);
            if (rc != NS_EAGAIN || ns_clock_mono_ms() >= p.deadline_ms)
                break;
        }
        if (ns_clock_mono_ms() >= p.deadline_ms && rc != NS_OK)
            break;
    }
    if (rc == NS_OK) {
        size_t items = 0;
        for (int s = 0; s < NS_SEED_SECTIONS; s++)
            items += p.items[s];
        atomic_store(&seed_items, (long long)items);
        atomic_store(&seed_bytes, (long long)p.bytes);
        outcome(1, t0);
        NS_LOG_INFO("seedFromPeers: seeded from %s in %lld ms: %zu groups, %zu broker "
                    "addresses, %zu topic queue entries, %zu KV entries (%zu bytes; digest %s); "
                    "its brokers are kept for the grace window until they register here",
                    p.peer, (long long)(ns_clock_mono_ms() - t0), p.items[NS_SEED_GROUPS],
                    p.items[NS_SEED_LIVE], p.items[NS_SEED_QUEUES], p.items[NS_SEED_KV], p.bytes,
                    p.last.digest);
    } else {
        forget_recovered(srv);
        outcome(2, t0);
        NS_LOG_WARN("seedFromPeers: no peer could seed this server (%lld ms); starting empty, "
                    "brokers fill it as they register",
                    (long long)(ns_clock_mono_ms() - t0));
    }
    pages_free(&p);
    free(list);
    return NS_OK;
}

static void family(ns_buf_t *out, const char *name, const char *type, const char *help, long long v)
{
    ns_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", name, help, name, type, name, v);
}

void ns_seed_render(ns_buf_t *out)
{
    family(out, "namesrv_seed_state", "gauge",
           "seedFromPeers at the last start: 0 off, 1 seeded from a peer, 2 started empty (no "
           "peer could seed), 3 not seeded (the store had data)",
           atomic_load(&seed_state));
    ns_buf_printf(out,
                  "# HELP namesrv_seed_duration_seconds how long the seed at start took\n"
                  "# TYPE namesrv_seed_duration_seconds gauge\n"
                  "namesrv_seed_duration_seconds %.3f\n",
                  (double)atomic_load(&seed_ms) / 1000.0);
    family(out, "namesrv_seed_items", "gauge", "items copied by the seed at start",
           atomic_load(&seed_items));
    family(out, "namesrv_seed_bytes", "gauge", "bytes of pages copied by the seed at start",
           atomic_load(&seed_bytes));
    family(out, "namesrv_seed_refused_total", "counter",
           "attempts to seed from a peer that were given up (not in sync, unreachable, slow, "
           "garbage, or a copy that did not match its digest)",
           atomic_load(&seed_refused));
}
