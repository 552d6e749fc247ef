/* test_store.c - every table of the LMDB store against a real, fresh store
 * per test (include/ns/store.h, store/keys.h): meta, kv, clusters, groups,
 * live records, queues and their reverse index, routes, mappings, audit;
 * reusable read transactions, map growth, backup,
 * the directory lock. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_store.h"
#include "ns/err.h"
#include "ns/store.h"

/* A count that must succeed. */
static size_t count_of(int (*count)(ns_txn_t *, size_t *), ns_txn_t *t)
{
    size_t n = 0;
    assert_int_equal(count(t, &n), NS_OK);
    return n;
}

typedef nstest_store_fx_t fx_t;

static int setup(void **state)
{
    return nstest_store_fx_setup(state, "store", 0, 0);
}

static int teardown(void **state)
{
    return nstest_store_fx_teardown(state);
}

static ns_txn_t *wbegin(fx_t *fx)
{
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(fx->s, true, &t), NS_OK);
    return t;
}

static ns_txn_t *rbegin(fx_t *fx)
{
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(fx->s, false, &t), NS_OK);
    return t;
}

/* A collected list of strings, joined as "a,b,c" for easy comparison. */
typedef struct {
    ns_buf_t b;
    int n;
    int stop_after; /* 0 = never stop */
} names_t;

static void names_add(names_t *l, const char *s)
{
    if (l->b.len)
        ns_buf_append_u8(&l->b, ',');
    ns_buf_append_str(&l->b, s);
    l->n++;
}

static const char *names_str(names_t *l)
{
    return l->b.data ? (const char *)l->b.data : "";
}

static int name_cb(const char *name, void *ctx)
{
    names_t *l = ctx;
    names_add(l, name);
    return l->stop_after && l->n >= l->stop_after ? 42 : 0;
}

static bool slice_eq(ns_slice_t v, const char *s)
{
    return v.len == strlen(s) && memcmp(v.ptr, s, v.len) == 0;
}

/* ---- meta ---- */

static void test_meta(void **state)
{
    fx_t *fx = *state;
    assert_int_equal(ns_store_schema_version(fx->s), ns_store_latest_schema());
    assert_true(ns_store_latest_schema() >= 3);
    ns_txn_t *t = wbegin(fx);
    uint64_t v = 0;
    assert_int_equal(ns_meta_get_u64(t, "schema_version", &v), NS_OK);
    assert_int_equal(v, ns_store_latest_schema());
    assert_int_equal(ns_meta_get_u64(t, "nothing", &v), NS_ENOTFOUND);
    assert_int_equal(ns_meta_put_u64(t, "x", UINT64_C(0x0102030405060708)), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    t = rbegin(fx);
    assert_int_equal(ns_meta_get_u64(t, "x", &v), NS_OK);
    assert_true(v == UINT64_C(0x0102030405060708));
    ns_txn_abort(t);
    /* survives a reopen */
    ns_store_close(fx->s);
    assert_int_equal(nstest_store_open(fx->dir, 0, 0, &fx->s), NS_OK);
    t = rbegin(fx);
    assert_int_equal(ns_meta_get_u64(t, "x", &v), NS_OK);
    assert_true(v == UINT64_C(0x0102030405060708));
    ns_txn_abort(t);
    /* a read transaction cannot write */
    t = rbegin(fx);
    assert_int_not_equal(ns_meta_put_u64(t, "y", 1), NS_OK);
    ns_txn_abort(t);
}

/* ---- kv ---- */

typedef struct {
    names_t keys;
    names_t vals;
} kvs_t;

static int kv_cb(const char *key, const char *val, size_t len, void *ctx)
{
    kvs_t *k = ctx;
    assert_int_equal(strlen(val), len); /* NUL-terminated copy */
    names_add(&k->keys, key);
    names_add(&k->vals, val);
    return 0;
}

static void kvs_free(kvs_t *k)
{
    ns_buf_free(&k->keys.b);
    ns_buf_free(&k->vals.b);
}

/* v10: versions and tombstones (ns_kv_*_local, ns_kv_merge, the sweep),
 * the hlc kept across a reopen, and I10 holding through all of it. */
static void test_kv_versions(void **state)
{
    fx_t *fx = *state;
    ns_txn_t *t = wbegin(fx);
    ns_kvver_t a, b, c, st;
    ns_slice_t v;
    uint64_t sid = 0, sid2 = 0, hlc = 0;
    assert_int_equal(ns_kv_put_local(t, "N", "k", "v1", 5000, &a), NS_OK);
    assert_int_equal(ns_kv_server_id(t, &sid), NS_OK);
    assert_true(sid != 0 && a.server == sid && !a.deleted);
    assert_true(a.hlc == (uint64_t)5000 << 16);
    /* the wall clock steps back: the version still goes up */
    assert_int_equal(ns_kv_put_local(t, "N", "k", "v2", 4000, &b), NS_OK);
    assert_true(b.hlc == a.hlc + 1);
    assert_int_equal(ns_kv_get(t, "N", "k", &v), NS_OK);
    assert_int_equal(v.len, 2);
    /* a delete leaves a tombstone the reads never show */
    assert_int_equal(ns_kv_del_local(t, "N", "k", 6000, &c), NS_OK);
    assert_true(c.deleted && c.hlc == (uint64_t)6000 << 16);
    assert_int_equal(ns_kv_get(t, "N", "k", &v), NS_ENOTFOUND);
    assert_int_equal(count_of(ns_kv_count, t), 0);
    assert_int_equal(ns_kv_state_get(t, "N", "k", &st, &v), NS_OK);
    assert_true(st.deleted && st.hlc == c.hlc);
    assert_int_equal(ns_kv_state_get(t, "N", "never", &st, &v), NS_ENOTFOUND);
    assert_int_equal(ns_txn_commit(t), NS_OK);

    /* the hlc and the id survive a reopen: no version is handed out twice */
    ns_store_close(fx->s);
    fx->s = NULL;
    assert_int_equal(nstest_store_open(fx->dir, 0, 0, &fx->s), NS_OK);
    t = wbegin(fx);
    assert_int_equal(ns_kv_server_id(t, &sid2), NS_OK);
    assert_true(sid2 == sid);
    assert_int_equal(ns_kv_hlc_get(t, &hlc), NS_OK);
    assert_true(hlc == c.hlc);
    ns_kvver_t d;
    assert_int_equal(ns_kv_put_local(t, "N", "j", "x", 1, &d), NS_OK);
    assert_true(d.hlc == c.hlc + 1);

    /* merges: a peer that missed the delete cannot undo it */
    bool applied = true;
    ns_kvver_t older = {b.hlc, 99, false};
    assert_int_equal(ns_kv_merge(t, "N", "k", &older, "stale", &applied), NS_OK);
    assert_false(applied);
    assert_int_equal(ns_kv_get(t, "N", "k", &v), NS_ENOTFOUND);
    /* the same hlc as the tombstone from a greater server id wins; a value
     * of the tombstone's own version does not */
    ns_kvver_t tie = {c.hlc, sid, false};
    assert_int_equal(ns_kv_merge(t, "N", "k", &tie, "tie", &applied), NS_OK);
    assert_false(applied);
    ns_kvver_t newer = {c.hlc + 5, 1, false};
    assert_int_equal(ns_kv_merge(t, "N", "k", &newer, "back", &applied), NS_OK);
    assert_true(applied);
    assert_int_equal(ns_kv_get(t, "N", "k", &v), NS_OK);
    assert_memory_equal(v.ptr, "back", 4);
    assert_int_equal(ns_kv_version_get(t, "N", "k", &st), NS_OK);
    assert_true(st.hlc == newer.hlc && st.server == 1 && !st.deleted);
    /* a newer remote tombstone deletes; the same state again changes nothing */
    ns_kvver_t gone = {c.hlc + 6, 1, true};
    assert_int_equal(ns_kv_merge(t, "N", "k", &gone, NULL, &applied), NS_OK);
    assert_true(applied);
    assert_int_equal(ns_kv_get(t, "N", "k", &v), NS_ENOTFOUND);
    assert_int_equal(ns_kv_merge(t, "N", "k", &gone, NULL, &applied), NS_OK);
    assert_false(applied);
    /* an entry we never had is taken whatever its version */
    ns_kvver_t zero = {0, 0, false};
    assert_int_equal(ns_kv_merge(t, "M", "new", &zero, "z", &applied), NS_OK);
    assert_true(applied);
    assert_int_equal(ns_kv_version_get(t, "M", "new", &st), NS_ENOTFOUND); /* stays (0, 0) */
    /* nonsense is refused */
    ns_kvver_t bad = {0, 0, true};
    assert_int_equal(ns_kv_merge(t, "M", "new", &bad, NULL, &applied), NS_EINVAL);
    assert_int_equal(ns_kv_merge(t, "M", "new", &newer, NULL, &applied), NS_EINVAL);
    /* what was seen moves the local hlc on */
    ns_kvver_t far = {(uint64_t)900000 << 16, 7, false};
    assert_int_equal(ns_kv_merge(t, "M", "far", &far, "f", &applied), NS_OK);
    assert_int_equal(ns_kv_put_local(t, "M", "after", "a", 10, &d), NS_OK);
    assert_true(d.hlc == far.hlc + 1);
    /* a plain put over a tombstone leaves (0, 0), not a live tombstone */
    assert_int_equal(ns_kv_put(t, "N", "k", "plain"), NS_OK);
    assert_int_equal(ns_kv_version_get(t, "N", "k", &st), NS_ENOTFOUND);
    assert_int_equal(ns_txn_commit(t), NS_OK);

    /* the sweep: tombstones older than the cut go, at most max at once */
    t = wbegin(fx);
    size_t removed = 0, left = 0;
    for (int i = 0; i < 5; i++) {
        char key[8];
        snprintf(key, sizeof key, "d%d", i);
        ns_kvver_t tv = {(uint64_t)(1000 + i) << 16, 3, true};
        assert_int_equal(ns_kv_merge(t, "S", key, &tv, NULL, &applied), NS_OK);
        assert_true(applied);
    }
    assert_int_equal(ns_kv_tombstones_sweep(t, 1003, 1, &removed, &left), NS_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(left, 4);
    assert_int_equal(ns_kv_tombstones_sweep(t, 1003, 100, &removed, &left), NS_OK);
    assert_int_equal(removed, 2);
    assert_int_equal(left, 2);
    assert_int_equal(ns_kv_state_get(t, "S", "d2", &st, &v), NS_ENOTFOUND);
    assert_int_equal(ns_kv_state_get(t, "S", "d3", &st, &v), NS_OK);
    assert_true(st.deleted);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    ns_buf_t report = NS_BUF_INIT;
    t = rbegin(fx);
    int bad_n = ns_store_verify(t, &report);
    if (bad_n != 0)
        fprintf(stderr, "%.*s", (int)report.len, (const char *)report.data);
    assert_int_equal(bad_n, 0);
    ns_txn_abort(t);
    ns_buf_free(&report);
}

static void test_kv(void **state)
{
    fx_t *fx = *state;
    ns_txn_t *t = wbegin(fx);
    ns_slice_t v;
    assert_false(ns_kv_ns_exists(t, "A"));
    assert_int_equal(ns_kv_get(t, "A", "k", &v), NS_ENOTFOUND);
    assert_int_equal(ns_kv_put(t, "A", "k2", "v2"), NS_OK);
    assert_int_equal(ns_kv_put(t, "A", "k1", "v1"), NS_OK);
    assert_int_equal(ns_kv_put(t, "A", "k3", ""), NS_OK); /* empty value */
    assert_int_equal(ns_kv_put(t, "AB", "k1", "other-namespace"), NS_OK);
    assert_int_equal(ns_kv_put(t, "0", "z", "first"), NS_OK);
    assert_true(ns_kv_ns_exists(t, "A"));
    assert_false(ns_kv_ns_exists(t, "B"));
    assert_int_equal(ns_txn_commit(t), NS_OK);

    t = rbegin(fx);
    assert_int_equal(ns_kv_get(t, "A", "k1", &v), NS_OK);
    assert_true(slice_eq(v, "v1"));
    assert_int_equal(ns_kv_get(t, "A", "k3", &v), NS_OK);
    assert_int_equal(v.len, 0);
    assert_int_equal(ns_kv_get(t, "AB", "k1", &v), NS_OK);
    assert_true(slice_eq(v, "other-namespace"));
    /* a namespace's iteration does not leak into a namespace it prefixes */
    kvs_t k = {{NS_BUF_INIT, 0, 0}, {NS_BUF_INIT, 0, 0}};
    assert_int_equal(ns_kv_iter(t, "A", kv_cb, &k), NS_OK);
    assert_string_equal(names_str(&k.keys), "k1,k2,k3");
    assert_string_equal(names_str(&k.vals), "v1,v2,");
    kvs_free(&k);
    memset(&k, 0, sizeof k);
    assert_int_equal(ns_kv_iter(t, "B", kv_cb, &k), NS_ENOTFOUND);
    assert_int_equal(k.keys.n, 0);
    names_t ns = {NS_BUF_INIT, 0, 0};
    assert_int_equal(ns_kv_ns_iter(t, name_cb, &ns), NS_OK);
    assert_string_equal(names_str(&ns), "0,A,AB");
    ns_buf_free(&ns.b);
    /* a callback's non-zero return stops the walk and is returned */
    names_t one = {NS_BUF_INIT, 0, 1};
    assert_int_equal(ns_kv_ns_iter(t, name_cb, &one), 42);
    assert_string_equal(names_str(&one), "0");
    ns_buf_free(&one.b);
    ns_txn_abort(t);

    /* overwrite, delete (absent is fine), empty namespace kept */
    t = wbegin(fx);
    assert_int_equal(ns_kv_put(t, "A", "k1", "v1-new"), NS_OK);
    assert_int_equal(ns_kv_get(t, "A", "k1", &v), NS_OK);
    assert_true(slice_eq(v, "v1-new"));
    assert_int_equal(ns_kv_del(t, "A", "k2"), NS_OK);
    assert_int_equal(ns_kv_del(t, "A", "k2"), NS_OK);
    assert_int_equal(ns_kv_del(t, "nope", "k2"), NS_OK);
    assert_int_equal(ns_kv_del(t, "AB", "k1"), NS_OK);
    assert_int_equal(ns_kv_ns_create(t, "E"), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);

    t = rbegin(fx);
    assert_int_equal(ns_kv_get(t, "A", "k2", &v), NS_ENOTFOUND);
    assert_true(ns_kv_ns_exists(t, "AB")); /* empty, still there */
    assert_true(ns_kv_ns_exists(t, "E"));
    memset(&k, 0, sizeof k);
    assert_int_equal(ns_kv_iter(t, "AB", kv_cb, &k), NS_OK);
    assert_int_equal(k.keys.n, 0);
    assert_int_equal(ns_kv_iter(t, "E", kv_cb, &k), NS_OK);
    assert_int_equal(k.keys.n, 0);
    assert_int_equal(ns_kv_iter(t, "A", kv_cb, &k), NS_OK);
    assert_string_equal(names_str(&k.keys), "k1,k3");
    assert_string_equal(names_str(&k.vals), "v1-new,");
    kvs_free(&k);
    ns_txn_abort(t);
}

/* ---- clusters ---- */

typedef struct {
    names_t l;
} pairs_t;

static int pair_cb(const char *a, const char *b, void *ctx)
{
    pairs_t *p = ctx;
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s/%s", a, b);
    names_add(&p->l, tmp);
    return 0;
}

static void test_clusters(void **state)
{
    fx_t *fx = *state;
    ns_txn_t *t = wbegin(fx);
    assert_int_equal(ns_cluster_exists(t, "c"), NS_ENOTFOUND);
    assert_int_equal(ns_cluster_add(t, "c", "b2"), NS_OK);
    assert_int_equal(ns_cluster_add(t, "c", "b1"), NS_OK);
    assert_int_equal(ns_cluster_add(t, "c", "b1"), NS_OK); /* a set: once */
    assert_int_equal(ns_cluster_add(t, "c2", "b3"), NS_OK);
    assert_int_equal(ns_cluster_add(t, "a", "b9"), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);

    t = rbegin(fx);
    assert_int_equal(ns_cluster_exists(t, "c"), NS_OK);
    assert_int_equal(ns_cluster_exists(t, "c2"), NS_OK);
    assert_int_equal(ns_cluster_exists(t, "b"), NS_ENOTFOUND);
    assert_int_equal(ns_cluster_exists(t, ""), NS_ENOTFOUND); /* not a prefix match of "c" */
    assert_int_equal(ns_cluster_has(t, "c", "b1"), NS_OK);
    assert_int_equal(ns_cluster_has(t, "c", "b3"), NS_ENOTFOUND);
    assert_int_equal(ns_cluster_has(t, "c2", "b1"), NS_ENOTFOUND);
    pairs_t p = {{NS_BUF_INIT, 0, 0}};
    assert_int_equal(ns_cluster_iter(t, pair_cb, &p), NS_OK);
    assert_string_equal(names_str(&p.l), "a/b9,c/b1,c/b2,c2/b3");
    ns_buf_free(&p.l.b);
    names_t n = {NS_BUF_INIT, 0, 0};
    assert_int_equal(ns_cluster_brokers_iter(t, "c", name_cb, &n), NS_OK);
    assert_string_equal(names_str(&n), "b1,b2");
    ns_buf_free(&n.b);
    memset(&n, 0, sizeof n);
    assert_int_equal(ns_cluster_brokers_iter(t, "zzz", name_cb, &n), NS_OK);
    assert_int_equal(n.n, 0);
    ns_txn_abort(t);

    t = wbegin(fx);
    assert_int_equal(ns_cluster_del(t, "c", "b1"), NS_OK);
    assert_int_equal(ns_cluster_del(t, "c", "b1"), NS_OK);
    assert_int_equal(ns_cluster_exists(t, "c"), NS_OK);
    assert_int_equal(ns_cluster_del(t, "c", "b2"), NS_OK);
    assert_int_equal(ns_cluster_exists(t, "c"), NS_ENOTFOUND); /* no members, no cluster */
    assert_int_equal(ns_cluster_exists(t, "c2"), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    t = rbegin(fx);
    memset(&p, 0, sizeof p);
    assert_int_equal(ns_cluster_iter(t, pair_cb, &p), NS_OK);
    assert_string_equal(names_str(&p.l), "a/b9,c2/b3");
    ns_buf_free(&p.l.b);
    ns_txn_abort(t);
}

/* ---- groups ---- */

static void test_group_helpers(void **state)
{
    (void)state;
    ns_group_rec_t g;
    memset(&g, 0, sizeof g);
    g.broker_name = strdup("b");
    g.cluster = strdup("c");
    assert_null(ns_group_addr_of(&g, 0));
    assert_int_equal(ns_group_set_addr(&g, 2, "h:2"), NS_OK);
    assert_int_equal(ns_group_set_addr(&g, 0, "h:0"), NS_OK);
    assert_int_equal(ns_group_set_addr(&g, 1, "h:1"), NS_OK);
    assert_int_equal(g.n_addrs, 3);
    for (size_t i = 0; i < g.n_addrs; i++)
        assert_int_equal(g.addrs[i].id, (int64_t)i); /* sorted by id */
    assert_string_equal(ns_group_addr_of(&g, 1), "h:1");
    assert_int_equal(ns_group_set_addr(&g, 1, "h:0"), NS_OK); /* replace */
    assert_int_equal(g.n_addrs, 3);
    assert_string_equal(ns_group_addr_of(&g, 1), "h:0");
    assert_int_equal(ns_group_remove_addr(&g, "h:0"), 2);
    assert_int_equal(g.n_addrs, 1);
    assert_int_equal(g.addrs[0].id, 2);
    assert_int_equal(ns_group_remove_addr(&g, "nope"), 0);
    assert_null(ns_group_addr_of(&g, 0));
    ns_broker_data_t view;
    ns_group_view(&g, &view);
    assert_ptr_equal(view.broker_name, g.broker_name);
    assert_ptr_equal(view.cluster, g.cluster);
    assert_null(view.zone_name);
    assert_int_equal(view.n_addrs, 1);
    assert_string_equal(view.addrs[0].addr, "h:2");
    ns_group_rec_free(&g);
    assert_null(g.addrs);
    ns_group_rec_free(&g); /* twice is harmless */
    ns_group_rec_free(NULL);
}

static void make_group(ns_group_rec_t *g, const char *name, const char *cluster, const char *zone,
                       bool acting, int n)
{
    memset(g, 0, sizeof *g);
    g->broker_name = strdup(name);
    g->cluster = strdup(cluster);
    g->zone_name = zone ? strdup(zone) : NULL;
    g->enable_acting_master = acting;
    for (int i = 0; i < n; i++) {
        char a[64];
        snprintf(a, sizeof a, "10.0.0.%d:10911", i + 1);
        assert_int_equal(ns_group_set_addr(g, i, a), NS_OK);
    }
}

typedef struct {
    names_t l;
    ns_group_rec_t kept; /* moved out of the iteration */
} groups_t;

static int group_cb(ns_group_rec_t *g, void *ctx)
{
    groups_t *gs = ctx;
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s@%s:%zu", g->broker_name, g->cluster, g->n_addrs);
    names_add(&gs->l, tmp);
    if (strcmp(g->broker_name, "b2") == 0) { /* keep this one */
        gs->kept = *g;
        memset(g, 0, sizeof *g);
    }
    return 0;
}

static void test_groups(void **state)
{
    fx_t *fx = *state;
    ns_group_rec_t g, got;
    ns_txn_t *t = wbegin(fx);
    assert_int_equal(ns_group_get(t, "b1", &got), NS_ENOTFOUND);
    make_group(&g, "b1", "c", "zoneA", true, 3);
    assert_int_equal(ns_group_put(t, &g), NS_OK);
    ns_group_rec_free(&g);
    make_group(&g, "b2", "c", NULL, false, 1);
    assert_int_equal(ns_group_put(t, &g), NS_OK);
    ns_group_rec_free(&g);
    make_group(&g, "b0", "d", NULL, false, 0);
    assert_int_equal(ns_group_put(t, &g), NS_OK);
    ns_group_rec_free(&g);
    assert_int_equal(ns_txn_commit(t), NS_OK);

    t = rbegin(fx);
    assert_int_equal(ns_group_get(t, "b1", &got), NS_OK);
    assert_string_equal(got.broker_name, "b1");
    assert_string_equal(got.cluster, "c");
    assert_string_equal(got.zone_name, "zoneA");
    assert_true(got.enable_acting_master);
    assert_int_equal(got.n_addrs, 3);
    assert_string_equal(ns_group_addr_of(&got, 0), "10.0.0.1:10911");
    assert_string_equal(ns_group_addr_of(&got, 2), "10.0.0.3:10911");
    ns_group_rec_free(&got);
    assert_int_equal(ns_group_get(t, "b2", &got), NS_OK);
    assert_null(got.zone_name);
    assert_false(got.enable_acting_master);
    assert_int_equal(got.n_addrs, 1);
    ns_group_rec_free(&got);
    assert_int_equal(ns_group_get(t, "b0", &got), NS_OK);
    assert_int_equal(got.n_addrs, 0);
    ns_group_rec_free(&got);
    groups_t gs;
    memset(&gs, 0, sizeof gs);
    assert_int_equal(ns_group_iter(t, group_cb, &gs), NS_OK);
    assert_string_equal(names_str(&gs.l), "b0@d:0,b1@c:3,b2@c:1");
    ns_txn_abort(t);
    /* the record moved out of the walk outlives its transaction */
    assert_string_equal(gs.kept.broker_name, "b2");
    assert_string_equal(ns_group_addr_of(&gs.kept, 0), "10.0.0.1:10911");
    ns_group_rec_free(&gs.kept);
    ns_buf_free(&gs.l.b);

    /* read-modify-write, then delete */
    t = wbegin(fx);
    assert_int_equal(ns_group_get(t, "b1", &got), NS_OK);
    assert_int_equal(ns_group_remove_addr(&got, "10.0.0.2:10911"), 1);
    assert_int_equal(ns_group_set_addr(&got, 5, "10.0.0.9:10911"), NS_OK);
    assert_int_equal(ns_group_put(t, &got), NS_OK);
    ns_group_rec_free(&got);
    assert_int_equal(ns_group_del(t, "b0"), NS_OK);
    assert_int_equal(ns_group_del(t, "b0"), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    t = rbegin(fx);
    assert_int_equal(ns_group_get(t, "b0", &got), NS_ENOTFOUND);
    assert_int_equal(ns_group_get(t, "b1", &got), NS_OK);
    assert_int_equal(got.n_addrs, 3);
    assert_null(ns_group_addr_of(&got, 1));
    assert_string_equal(ns_group_addr_of(&got, 5), "10.0.0.9:10911");
    assert_int_equal(got.addrs[2].id, 5);
    ns_group_rec_free(&got);
    ns_txn_abort(t);
}

/* ---- live ---- */

static int live_cb(const ns_live_rec_t *r, void *ctx)
{
    names_t *l = ctx;
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s|%s|%s|%zu", r->cluster, r->addr, r->broker_name,
             r->n_filter_servers);
    names_add(l, tmp);
    return 0;
}

static void test_live(void **state)
{
    fx_t *fx = *state;
    char *fs[] = {"f1:1", "f2:2"};
    ns_live_rec_t r = {
        "c", "10.0.0.1:10911", "b1", 0, "10.0.0.1:10912", {7, 3, 1700000000000}, 30000, fs, 2,
        1234};
    ns_live_rec_t r2 = {"c", "10.0.0.2:10911", "b1", 1, "", {1, 0, 5}, 120000, NULL, 0, 99};
    ns_live_rec_t r3 = {"a", "10.0.0.3:10911", "b9", 0, "x", {0, 0, 0}, 1, NULL, 0, 0};
    ns_live_rec_t got;
    ns_txn_t *t = wbegin(fx);
    assert_int_equal(ns_live_get(t, "c", "10.0.0.1:10911", &got), NS_ENOTFOUND);
    assert_int_equal(ns_live_put(t, &r), NS_OK);
    assert_int_equal(ns_live_put(t, &r2), NS_OK);
    assert_int_equal(ns_live_put(t, &r3), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);

    t = rbegin(fx);
    assert_int_equal(ns_live_get(t, "c", "10.0.0.1:10911", &got), NS_OK);
    assert_string_equal(got.cluster, "c");
    assert_string_equal(got.addr, "10.0.0.1:10911");
    assert_string_equal(got.broker_name, "b1");
    assert_int_equal(got.broker_id, 0);
    assert_string_equal(got.ha_addr, "10.0.0.1:10912");
    assert_true(ns_dataversion_equal(&got.dv, &r.dv));
    assert_int_equal(got.heartbeat_timeout_ms, 30000);
    assert_int_equal(got.registered_ms, 1234);
    assert_int_equal(got.n_filter_servers, 2);
    assert_string_equal(got.filter_servers[0], "f1:1");
    assert_string_equal(got.filter_servers[1], "f2:2");
    ns_live_rec_free(&got);
    assert_int_equal(ns_live_get(t, "c", "10.0.0.2:10911", &got), NS_OK);
    assert_int_equal(got.broker_id, 1);
    assert_string_equal(got.ha_addr, "");
    assert_int_equal(got.n_filter_servers, 0);
    ns_live_rec_free(&got);
    assert_int_equal(ns_live_get(t, "a", "10.0.0.1:10911", &got), NS_ENOTFOUND);
    names_t l = {NS_BUF_INIT, 0, 0};
    assert_int_equal(ns_live_iter(t, live_cb, &l), NS_OK);
    assert_string_equal(names_str(&l),
                        "a|10.0.0.3:10911|b9|0,c|10.0.0.1:10911|b1|2,c|10.0.0.2:10911|b1|0");
    ns_buf_free(&l.b);
    ns_txn_abort(t);

    t = wbegin(fx);
    assert_int_equal(ns_live_del(t, "c", "10.0.0.1:10911"), NS_OK);
    assert_int_equal(ns_live_del(t, "c", "10.0.0.1:10911"), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    t = rbegin(fx);
    assert_int_equal(ns_live_get(t, "c", "10.0.0.1:10911", &got), NS_ENOTFOUND);
    memset(&l, 0, sizeof l);
    assert_int_equal(ns_live_iter(t, live_cb, &l), NS_OK);
    assert_int_equal(l.n, 2);
    ns_buf_free(&l.b);
    ns_txn_abort(t);
}

/* ---- queues and broker_topics ---- */

static int queue_cb(const char *topic, const ns_queue_data_t *q, void *ctx)
{
    names_t *l = ctx;
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s/%s:%d.%d.%d.%d", topic, q->broker_name, q->perm,
             q->read_queue_nums, q->write_queue_nums, q->topic_sys_flag);
    names_add(l, tmp);
    return l->stop_after && l->n >= l->stop_after ? 7 : 0;
}

/* ns_queue_update: insert, no-op on the same record, replace on a change;
 * the reverse index follows (I6) and the store stays verifiable. */
static void test_queue_update(void **state)
{
    fx_t *fx = *state;
    ns_queue_data_t q = {"bA", 6, 8, 8, 0}, had = {0};
    bool existed = true, wrote = false;
    ns_txn_t *t = wbegin(fx);
    assert_int_equal(ns_queue_update(t, "T1", &q, &had, &existed, &wrote), NS_OK);
    assert_false(existed);
    assert_true(wrote);
    assert_int_equal(ns_queue_update(t, "T1", &q, &had, &existed, &wrote), NS_OK);
    assert_true(existed);
    assert_false(wrote);
    assert_int_equal(had.perm, 6);
    ns_queue_data_t q2 = {"bA", 4, 16, 8, 1};
    assert_int_equal(ns_queue_update(t, "T1", &q2, &had, &existed, &wrote), NS_OK);
    assert_true(existed);
    assert_true(wrote);
    assert_string_equal(had.broker_name, "bA");
    assert_int_equal(had.perm, 6);
    assert_int_equal(had.read_queue_nums, 8);
    assert_int_equal(had.topic_sys_flag, 0);
    assert_int_equal(ns_txn_commit(t), NS_OK);

    t = rbegin(fx);
    ns_queue_data_t got;
    assert_int_equal(ns_queue_get(t, "T1", "bA", &got), NS_OK);
    assert_int_equal(got.perm, 4);
    assert_int_equal(got.read_queue_nums, 16);
    assert_int_equal(got.topic_sys_flag, 1);
    names_t l = {NS_BUF_INIT, 0, 0};
    assert_int_equal(ns_queue_iter_broker(t, "bA", name_cb, &l), NS_OK);
    assert_string_equal(names_str(&l), "T1");
    ns_buf_free(&l.b);
    ns_txn_abort(t);
}

static void test_queues(void **state)
{
    fx_t *fx = *state;
    ns_queue_data_t qa = {"bA", 6, 8, 8, 0}, qb = {"bB", 4, 4, 2, 1}, qc = {"bA", 2, 1, 1, 3};
    ns_queue_data_t got;
    ns_txn_t *t = wbegin(fx);
    assert_false(ns_topic_exists(t, "T1"));
    assert_int_equal(count_of(ns_topic_count, t), 0);
    assert_int_equal(ns_queue_get(t, "T1", "bA", &got), NS_ENOTFOUND);
    assert_int_equal(ns_queue_put(t, "T1", &qb), NS_OK);
    assert_int_equal(ns_queue_put(t, "T1", &qa), NS_OK);
    assert_int_equal(ns_queue_put(t, "T10", &qc), NS_OK);
    assert_int_equal(ns_queue_put(t, "T0", &qa), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);

    t = rbegin(fx);
    assert_int_equal(ns_queue_get(t, "T1", "bB", &got), NS_OK);
    assert_string_equal(got.broker_name, "bB");
    assert_int_equal(got.perm, 4);
    assert_int_equal(got.read_queue_nums, 4);
    assert_int_equal(got.write_queue_nums, 2);
    assert_int_equal(got.topic_sys_flag, 1);
    assert_true(ns_topic_exists(t, "T1"));
    assert_true(ns_topic_exists(t, "T10"));
    assert_false(ns_topic_exists(t, "T")); /* only a prefix of real topics */
    assert_int_equal(count_of(ns_topic_count, t), 3);
    names_t l = {NS_BUF_INIT, 0, 0};
    assert_int_equal(ns_queue_iter_topic(t, "T1", queue_cb, &l), NS_OK);
    assert_string_equal(names_str(&l), "T1/bA:6.8.8.0,T1/bB:4.4.2.1");
    ns_buf_free(&l.b);
    memset(&l, 0, sizeof l);
    assert_int_equal(ns_topic_iter(t, queue_cb, &l), NS_OK); /* once each, first QueueData */
    assert_string_equal(names_str(&l), "T0/bA:6.8.8.0,T1/bA:6.8.8.0,T10/bA:2.1.1.3");
    ns_buf_free(&l.b);
    names_t stop = {NS_BUF_INIT, 0, 2};
    assert_int_equal(ns_topic_iter(t, queue_cb, &stop), 7);
    assert_int_equal(stop.n, 2);
    ns_buf_free(&stop.b);
    memset(&l, 0, sizeof l);
    assert_int_equal(ns_queue_iter_broker(t, "bA", name_cb, &l), NS_OK);
    assert_string_equal(names_str(&l), "T0,T1,T10");
    ns_buf_free(&l.b);
    memset(&l, 0, sizeof l);
    assert_int_equal(ns_queue_iter_broker(t, "bB", name_cb, &l), NS_OK);
    assert_string_equal(names_str(&l), "T1");
    ns_buf_free(&l.b);
    memset(&l, 0, sizeof l);
    assert_int_equal(ns_queue_iter_broker(t, "b", name_cb, &l), NS_OK);
    assert_int_equal(l.n, 0);
    ns_txn_abort(t);

    /* overwrite keeps one entry; delete removes both directions */
    t = wbegin(fx);
    ns_queue_data_t qa2 = {"bA", 2, 16, 16, 0};
    assert_int_equal(ns_queue_put(t, "T1", &qa2), NS_OK);
    assert_int_equal(ns_queue_del(t, "T1", "bB"), NS_OK);
    assert_int_equal(ns_queue_del(t, "T1", "bB"), NS_OK);
    assert_int_equal(ns_queue_del(t, "T10", "bA"), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    t = rbegin(fx);
    assert_false(ns_topic_exists(t, "T10"));
    assert_int_equal(count_of(ns_topic_count, t), 2);
    assert_int_equal(ns_queue_get(t, "T1", "bB", &got), NS_ENOTFOUND);
    assert_int_equal(ns_queue_get(t, "T1", "bA", &got), NS_OK);
    assert_int_equal(got.read_queue_nums, 16);
    memset(&l, 0, sizeof l);
    assert_int_equal(ns_queue_iter_topic(t, "T1", queue_cb, &l), NS_OK);
    assert_string_equal(names_str(&l), "T1/bA:2.16.16.0");
    ns_buf_free(&l.b);
    memset(&l, 0, sizeof l);
    assert_int_equal(ns_queue_iter_broker(t, "bB", name_cb, &l), NS_OK);
    assert_int_equal(l.n, 0);
    assert_int_equal(ns_queue_iter_broker(t, "bA", name_cb, &l), NS_OK);
    assert_string_equal(names_str(&l), "T0,T1");
    ns_buf_free(&l.b);
    ns_txn_abort(t);
}

/* ---- routes ---- */

static void test_routes(void **state)
{
    fx_t *fx = *state;
    ns_buf_t std = NS_BUF_INIT, legacy = NS_BUF_INIT, empty = NS_BUF_INIT;
    ns_buf_append_str(&std, "{\"brokerDatas\":[],\"queueDatas\":[]}");
    ns_buf_append_str(&legacy, "{\"brokerDatas\":[],\"filterServerTable\":{},\"queueDatas\":[]}");
    size_t std_ins = (size_t)(strstr((const char *)std.data, "\"queueDatas\"") - (char *)std.data);
    size_t legacy_ins =
        (size_t)(strstr((const char *)legacy.data, "\"queueDatas\"") - (char *)legacy.data);
    ns_slice_t v;
    size_t ins = 0;
    bool derive = true;
    ns_txn_t *t = wbegin(fx);
    assert_int_equal(count_of(ns_route_count, t), 0);
    assert_int_equal(ns_route_get(t, "T", true, &v, &ins, &derive), NS_ENOTFOUND);
    assert_int_equal(ns_route_put(t, "T", &std, std_ins, &legacy, legacy_ins), NS_OK);
    assert_int_equal(ns_route_put(t, "U", &empty, 0, &empty, 0), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);

    t = rbegin(fx);
    assert_int_equal(count_of(ns_route_count, t), 2);
    assert_int_equal(ns_route_get(t, "T", true, &v, &ins, &derive), NS_OK);
    assert_int_equal(v.len, std.len);
    assert_memory_equal(v.ptr, std.data, std.len);
    assert_int_equal(ins, std_ins);
    assert_memory_equal(v.ptr + ins, "\"queueDatas\"", 12);
    assert_int_equal(ns_route_get(t, "T", false, &v, &ins, &derive), NS_OK);
    assert_false(derive);
    assert_int_equal(v.len, legacy.len);
    assert_memory_equal(v.ptr, legacy.data, legacy.len);
    assert_int_equal(ins, legacy_ins);
    assert_memory_equal(v.ptr + ins, "\"queueDatas\"", 12);
    assert_int_equal(ns_route_get(t, "U", true, &v, &ins, &derive), NS_OK);
    assert_int_equal(v.len, 0);
    assert_int_equal(ns_route_get(t, "U", false, &v, &ins, &derive), NS_OK);
    assert_int_equal(v.len, 0);
    assert_int_equal(ns_route_get(t, "T1", false, &v, &ins, &derive), NS_ENOTFOUND);
    ns_txn_abort(t);

    /* replace with a longer value, then delete */
    t = wbegin(fx);
    ns_buf_t big = NS_BUF_INIT;
    for (int i = 0; i < 5000; i++)
        ns_buf_append_str(&big, "x");
    assert_int_equal(ns_route_put(t, "T", &big, 4999, &std, 3), NS_OK);
    assert_int_equal(ns_route_get(t, "T", true, &v, &ins, &derive), NS_OK);
    assert_int_equal(v.len, 5000);
    assert_int_equal(ins, 4999);
    assert_int_equal(ns_route_get(t, "T", false, &v, &ins, &derive), NS_OK);
    assert_int_equal(v.len, std.len);
    assert_int_equal(ins, 3);
    /* a route stored without its legacy form hands out the standard one */
    assert_int_equal(ns_route_put(t, "D", &std, std_ins, NULL, 0), NS_OK);
    assert_int_equal(ns_route_get(t, "D", true, &v, &ins, &derive), NS_OK);
    assert_false(derive);
    assert_int_equal(v.len, std.len);
    assert_int_equal(ns_route_get(t, "D", false, &v, &ins, &derive), NS_OK);
    assert_true(derive);
    assert_int_equal(v.len, std.len);
    assert_memory_equal(v.ptr, std.data, std.len);
    assert_int_equal(ins, std_ins);
    assert_int_equal(ns_route_del(t, "D"), NS_OK);
    assert_int_equal(ns_route_del(t, "U"), NS_OK);
    assert_int_equal(ns_route_del(t, "U"), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    t = rbegin(fx);
    assert_int_equal(count_of(ns_route_count, t), 1);
    assert_int_equal(ns_route_get(t, "U", true, &v, &ins, &derive), NS_ENOTFOUND);
    ns_txn_abort(t);
    ns_buf_free(&big);
    ns_buf_free(&std);
    ns_buf_free(&legacy);
    ns_buf_free(&empty);
}

/* ---- mappings ---- */

static int mapping_cb(const ns_mapping_info_t *m, void *ctx)
{
    names_t *l = ctx;
    char tmp[512];
    int n =
        snprintf(tmp, sizeof tmp, "%s/%s:%s:%d:%lld:%d:", m->topic, m->bname,
                 m->scope ? m->scope : "(null)", m->total_queues, (long long)m->epoch, m->dirty);
    for (size_t i = 0; i < m->n_curr_id_map && n > 0 && (size_t)n < sizeof tmp; i++)
        n += snprintf(tmp + n, sizeof tmp - (size_t)n, "%d>%d;", m->curr_id_map[i].logical,
                      m->curr_id_map[i].physical);
    names_add(l, tmp);
    return 0;
}

static void test_mappings(void **state)
{
    fx_t *fx = *state;
    ns_id_pair_t ids[] = {{0, 3}, {1, 4}};
    ns_mapping_info_t m1 = {"ST", "b1", "scopeX", 8, 5, true, ids, 2};
    ns_mapping_info_t m2 = {"ST", "b0", NULL, 2, -1, false, NULL, 0};
    ns_mapping_info_t m3 = {"ST2", "b1", "__global__", 1, 0, false, ids, 1};
    ns_txn_t *t = wbegin(fx);
    assert_int_equal(ns_mapping_put(t, &m1), NS_OK);
    assert_int_equal(ns_mapping_put(t, &m2), NS_OK);
    assert_int_equal(ns_mapping_put(t, &m3), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);

    t = rbegin(fx);
    names_t l = {NS_BUF_INIT, 0, 0};
    assert_int_equal(ns_mapping_iter_topic(t, "ST", mapping_cb, &l), NS_OK);
    assert_string_equal(names_str(&l), "ST/b0:(null):2:-1:0:,ST/b1:scopeX:8:5:1:0>3;1>4;");
    ns_buf_free(&l.b);
    memset(&l, 0, sizeof l);
    assert_int_equal(ns_mapping_iter(t, mapping_cb, &l), NS_OK);
    assert_string_equal(names_str(&l), "ST/b0:(null):2:-1:0:,ST/b1:scopeX:8:5:1:0>3;1>4;,"
                                       "ST2/b1:__global__:1:0:0:0>3;");
    ns_buf_free(&l.b);
    memset(&l, 0, sizeof l);
    assert_int_equal(ns_mapping_iter_topic(t, "S", mapping_cb, &l), NS_OK);
    assert_int_equal(l.n, 0);
    ns_txn_abort(t);

    /* overwrite */
    t = wbegin(fx);
    m1.epoch = 6;
    m1.n_curr_id_map = 0;
    assert_int_equal(ns_mapping_put(t, &m1), NS_OK);
    memset(&l, 0, sizeof l);
    assert_int_equal(ns_mapping_iter_topic(t, "ST", mapping_cb, &l), NS_OK);
    assert_string_equal(names_str(&l), "ST/b0:(null):2:-1:0:,ST/b1:scopeX:8:6:1:");
    ns_buf_free(&l.b);
    ns_txn_abort(t);
}

/* ---- audit ---- */

typedef struct {
    uint64_t seqs[512];
    int n;
    bool bad_text;
} audits_t;

static int audit_cb(uint64_t seq, const char *json, size_t len, void *ctx)
{
    audits_t *a = ctx;
    char want[64];
    snprintf(want, sizeof want, "{\"n\":%llu}", (unsigned long long)seq);
    if (len != strlen(want) || memcmp(json, want, len) != 0)
        a->bad_text = true;
    if (a->n < 512)
        a->seqs[a->n++] = seq;
    return 0;
}

static void audit_append(ns_txn_t *t, uint64_t want_seq)
{
    char json[64];
    uint64_t seq = 0;
    int n = snprintf(json, sizeof json, "{\"n\":%llu}", (unsigned long long)want_seq);
    assert_int_equal(ns_audit_append(t, json, (size_t)n, &seq), NS_OK);
    assert_true(seq == want_seq);
}

static void test_audit(void **state)
{
    fx_t *fx = *state;
    audits_t *a = calloc(1, sizeof *a);
    ns_txn_t *t = wbegin(fx);
    assert_int_equal(ns_audit_iter(t, audit_cb, a), NS_OK);
    assert_int_equal(a->n, 0);
    /* past 255 so that key order != little-endian order */
    for (uint64_t i = 1; i <= 300; i++)
        audit_append(t, i);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    t = rbegin(fx);
    assert_int_equal(ns_audit_iter(t, audit_cb, a), NS_OK);
    assert_int_equal(a->n, 300);
    assert_false(a->bad_text);
    for (int i = 0; i < 300; i++)
        assert_true(a->seqs[i] == (uint64_t)i + 1);
    uint64_t last = 0;
    assert_int_equal(ns_meta_get_u64(t, "audit_seq", &last), NS_OK);
    assert_true(last == 300);
    ns_txn_abort(t);

    /* delete the oldest ones; numbering never goes back */
    t = wbegin(fx);
    for (uint64_t i = 1; i <= 299; i++)
        assert_int_equal(ns_audit_del(t, i), NS_OK);
    assert_int_equal(ns_audit_del(t, 299), NS_OK);
    assert_int_equal(ns_audit_del(t, 300), NS_OK);
    audit_append(t, 301);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    t = rbegin(fx);
    memset(a, 0, sizeof *a);
    assert_int_equal(ns_audit_iter(t, audit_cb, a), NS_OK);
    assert_int_equal(a->n, 1);
    assert_true(a->seqs[0] == 301);
    assert_false(a->bad_text);
    ns_txn_abort(t);
    free(a);
}

/* ---- transactions ---- */

static void test_read_renew_reset(void **state)
{
    fx_t *fx = *state;
    ns_txn_t *slot = NULL, *t;
    ns_slice_t v;
    assert_int_equal(ns_txn_read_renew(fx->s, &slot), NS_OK); /* first call begins */
    assert_non_null(slot);
    ns_txn_t *first = slot;
    assert_int_equal(ns_kv_get(slot, "N", "k", &v), NS_ENOTFOUND);
    ns_txn_read_reset(slot);

    for (int i = 0; i < 5; i++) {
        char val[16];
        snprintf(val, sizeof val, "v%d", i);
        t = wbegin(fx);
        assert_int_equal(ns_kv_put(t, "N", "k", val), NS_OK);
        assert_int_equal(ns_txn_commit(t), NS_OK);
        /* a renewed handle is the same object and sees the newest commit */
        assert_int_equal(ns_txn_read_renew(fx->s, &slot), NS_OK);
        assert_ptr_equal(slot, first);
        assert_int_equal(ns_kv_get(slot, "N", "k", &v), NS_OK);
        assert_true(slice_eq(v, val));
        ns_txn_read_reset(slot);
    }

    /* a live read transaction keeps its snapshot while a writer commits */
    assert_int_equal(ns_txn_read_renew(fx->s, &slot), NS_OK);
    t = wbegin(fx);
    assert_int_equal(ns_kv_put(t, "N", "k", "later"), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    assert_int_equal(ns_kv_get(slot, "N", "k", &v), NS_OK);
    assert_true(slice_eq(v, "v4"));
    ns_txn_read_reset(slot);
    ns_txn_read_reset(slot); /* resetting a reset handle is harmless */
    assert_int_equal(ns_txn_read_renew(fx->s, &slot), NS_OK);
    assert_int_equal(ns_kv_get(slot, "N", "k", &v), NS_OK);
    assert_true(slice_eq(v, "later"));
    ns_txn_read_reset(slot);
    ns_txn_abort(slot); /* freed for good (after a reset) */

    /* and abort straight from the renewed state */
    slot = NULL;
    assert_int_equal(ns_txn_read_renew(fx->s, &slot), NS_OK);
    ns_txn_read_reset(slot);
    assert_int_equal(ns_txn_read_renew(fx->s, &slot), NS_OK);
    ns_txn_abort(slot);
    ns_txn_read_reset(NULL);
    ns_txn_abort(NULL);
}

/* Fills the store with 64 KiB values until a put reports NS_EMAPFULL (the
 * transaction is then aborted), committing every 4 values. Returns the
 * number of values committed. */
static int fill_until_full(ns_store_t *s, int start)
{
    static char val[65536];
    memset(val, 'v', sizeof val - 1);
    int i = start;
    for (;;) {
        ns_txn_t *t = NULL;
        assert_int_equal(ns_txn_begin(s, true, &t), NS_OK);
        int rc = NS_OK;
        for (int j = 0; j < 4 && rc == NS_OK; j++) {
            char key[32];
            snprintf(key, sizeof key, "k%06d", i + j);
            rc = ns_kv_put(t, "G", key, val);
        }
        if (rc == NS_OK)
            rc = ns_txn_commit(t);
        else
            ns_txn_abort(t);
        if (rc == NS_EMAPFULL)
            return i - start;
        assert_int_equal(rc, NS_OK);
        i += 4;
    }
}

static void test_grow(void **state)
{
    fx_t *fx = *state;
    ns_store_close(fx->s);
    fx->s = NULL;
    nstest_rmtree(fx->dir);
    const size_t mib = 1u << 20;
    assert_int_equal(nstest_store_open(fx->dir, mib, 4 * mib, &fx->s), NS_OK);
    size_t map = 0, used = 0;
    ns_store_map_usage(fx->s, &map, &used);
    assert_int_equal(map, mib);
    assert_true(used > 0 && used <= map);

    /* the server keeps a reset read handle across the writer's growth */
    ns_txn_t *slot = NULL;
    ns_slice_t v;
    assert_int_equal(ns_txn_read_renew(fx->s, &slot), NS_OK);
    assert_int_equal(ns_kv_get(slot, "G", "k000000", &v), NS_ENOTFOUND);
    ns_txn_read_reset(slot);

    int total = fill_until_full(fx->s, 0);
    assert_true(total > 0);
    assert_int_equal(ns_store_grow(fx->s), NS_OK); /* 1 -> 2 MiB */
    ns_store_map_usage(fx->s, &map, &used);
    assert_int_equal(map, 2 * mib);
    int more = fill_until_full(fx->s, total);
    assert_true(more > 0);
    total += more;
    char last[32];
    snprintf(last, sizeof last, "k%06d", total - 1);
    assert_int_equal(ns_txn_read_renew(fx->s, &slot), NS_OK); /* beyond the old map end */
    assert_int_equal(ns_kv_get(slot, "G", last, &v), NS_OK);
    assert_int_equal(v.len, 65535);
    ns_txn_read_reset(slot);
    ns_txn_abort(slot);
    assert_int_equal(ns_store_grow(fx->s), NS_OK); /* 2 -> 4 MiB */
    ns_store_map_usage(fx->s, &map, &used);
    assert_int_equal(map, 4 * mib);
    more = fill_until_full(fx->s, total);
    assert_true(more > 0);
    total += more;
    assert_int_equal(ns_store_grow(fx->s), NS_EMAPFULL); /* at the limit */
    ns_store_map_usage(fx->s, &map, &used);
    assert_int_equal(map, 4 * mib);
    assert_true(used <= map);

    /* everything committed is readable, also after a reopen */
    for (int pass = 0; pass < 2; pass++) {
        ns_txn_t *t = rbegin(fx);
        for (int i = 0; i < total; i++) {
            char key[32];
            snprintf(key, sizeof key, "k%06d", i);
            assert_int_equal(ns_kv_get(t, "G", key, &v), NS_OK);
            assert_int_equal(v.len, 65535);
        }
        ns_txn_abort(t);
        if (pass == 0) {
            ns_store_close(fx->s);
            /* reopened with a smaller mapSizeBytes, the map still holds
             * everything written (LMDB raises it to the used size) */
            assert_int_equal(nstest_store_open(fx->dir, mib, 4 * mib, &fx->s), NS_OK);
            ns_store_map_usage(fx->s, &map, &used);
            assert_true(map >= used && map > 2 * mib);
        }
    }
    printf("# grow: %d x 64 KiB values in a 4 MiB map\n", total);
}

static void test_backup(void **state)
{
    fx_t *fx = *state;
    char err[512], copydir[4200];
    ns_queue_data_t q = {"b1", 6, 4, 4, 0};
    ns_txn_t *t = wbegin(fx);
    for (int i = 0; i < 200; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%03d", i);
        assert_int_equal(ns_kv_put(t, "B", key, key), NS_OK);
    }
    assert_int_equal(ns_queue_put(t, "TopicB", &q), NS_OK);
    assert_int_equal(ns_audit_append(t, "{}", 2, NULL), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    /* deletions leave free pages; the copy is compacted */
    t = wbegin(fx);
    for (int i = 0; i < 100; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%03d", i);
        assert_int_equal(ns_kv_del(t, "B", key), NS_OK);
    }
    assert_int_equal(ns_txn_commit(t), NS_OK);

    snprintf(copydir, sizeof copydir, "%s/copy", fx->dir);
    assert_int_equal(ns_store_backup(fx->s, copydir, err, sizeof err), NS_OK);
    /* a write after the backup is not in the copy */
    t = wbegin(fx);
    assert_int_equal(ns_kv_put(t, "B", "after", "x"), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);

    ns_store_t *copy = NULL;
    assert_int_equal(nstest_store_open(copydir, 0, 0, &copy), NS_OK);
    assert_int_equal(ns_store_schema_version(copy), ns_store_latest_schema());
    assert_int_equal(ns_txn_begin(copy, false, &t), NS_OK);
    ns_slice_t v;
    for (int i = 0; i < 200; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%03d", i);
        int rc = ns_kv_get(t, "B", key, &v);
        if (i < 100) {
            assert_int_equal(rc, NS_ENOTFOUND);
        } else {
            assert_int_equal(rc, NS_OK);
            assert_true(slice_eq(v, key));
        }
    }
    assert_int_equal(ns_kv_get(t, "B", "after", &v), NS_ENOTFOUND);
    assert_true(ns_topic_exists(t, "TopicB"));
    names_t l = {NS_BUF_INIT, 0, 0};
    assert_int_equal(ns_queue_iter_broker(t, "b1", name_cb, &l), NS_OK);
    assert_string_equal(names_str(&l), "TopicB");
    ns_buf_free(&l.b);
    uint64_t seq = 0;
    assert_int_equal(ns_meta_get_u64(t, "audit_seq", &seq), NS_OK);
    assert_true(seq == 1);
    ns_txn_abort(t);
    ns_store_close(copy);

    /* the copy also opens read-only (offline tools) */
    ns_store_opts_t ro = {copydir, 0, 0, NS_SYNC_FULL, true, false, 0, 0};
    assert_int_equal(ns_store_open(&ro, &copy, err, sizeof err), NS_OK);
    assert_int_equal(ns_txn_begin(copy, true, &t), NS_EINVAL);
    assert_int_equal(ns_txn_begin(copy, false, &t), NS_OK);
    assert_int_equal(ns_kv_get(t, "B", "k150", &v), NS_OK);
    ns_txn_abort(t);
    ns_store_close(copy);
}

/* The directory lock: a second opener is refused and told who holds it. */
static void test_lock(void **state)
{
    fx_t *fx = *state;
    char err[512], pid[32];
    assert_int_equal(ns_store_lock_holder(fx->dir), (long)getpid());
    ns_store_t *second = NULL;
    ns_store_opts_t o = {fx->dir, 0, 0, NS_SYNC_NOSYNC, false, true, 0, 0};
    assert_int_equal(ns_store_open(&o, &second, err, sizeof err), NS_ELOCKED);
    assert_null(second);
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    assert_non_null(strstr(err, pid));
    ns_store_close(fx->s);
    fx->s = NULL;
    assert_int_equal(ns_store_lock_holder(fx->dir), 0);
    assert_int_equal(nstest_store_open(fx->dir, 0, 0, &fx->s), NS_OK);
    /* read-only opening of a missing store */
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/missing", fx->dir);
    ns_store_opts_t ro = {missing, 0, 0, NS_SYNC_FULL, true, false, 0, 0};
    assert_int_equal(ns_store_open(&ro, &second, err, sizeof err), NS_EIO);
    assert_null(second);
    assert_true(strlen(err) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_meta, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kv_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clusters, setup, teardown),
        cmocka_unit_test(test_group_helpers),
        cmocka_unit_test_setup_teardown(test_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_update, setup, teardown),
        cmocka_unit_test_setup_teardown(test_routes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mappings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_renew_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
