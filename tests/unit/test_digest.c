/* test_digest.c - the fleet digest (store/digest.c) on real LMDB stores:
 * the same state written in any order gives the same digest, every field a
 * client is served changes it and the local ones do not, undoing a change
 * restores it, the tree is navigable from the root to the leaves, verify
 * catches a stored node that drifted from the data, and the digest a
 * migration computes equals the one kept write by write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_store.h"
#include "ns/err.h"
#include "ns/fleet.h"
#include "ns/store.h"
#include "store/internal.h"

typedef struct {
    char *dir[2];
    ns_store_t *s[2];
    ns_registry_t *reg;
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    for (int i = 0; i < 2; i++) {
        f->dir[i] = nstest_tmpdir("digest");
        assert_int_equal(nstest_store_open(f->dir[i], 0, 0, &f->s[i]), NS_OK);
    }
    assert_int_equal(ns_registry_new(&f->reg), NS_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    ns_registry_free(f->reg);
    for (int i = 0; i < 2; i++) {
        ns_store_close(f->s[i]);
        nstest_rmtree(f->dir[i]);
        free(f->dir[i]);
    }
    free(f);
    return 0;
}

/* A broker registration, every field settable. */
typedef struct {
    const char *cluster, *name, *addr, *ha, *zone;
    int64_t id, timeout_ms, now_ms;
    bool acting;
    ns_dataversion_t dv;
    ns_topic_config_t topics[3];
    size_t n_topics;
    char *filters[1];
    size_t n_filters;
} reg_t;

static char topic_a[] = "TopicA", topic_b[] = "TopicB", topic_c[] = "TopicC";
static char filter_1[] = "10.0.0.9:40000";

static reg_t reg_default(const char *name, const char *addr)
{
    reg_t r = {"DefaultCluster", name,  addr, "",     NULL, 0, 30000, 1000, false,
               {1, 0, 100},      {{0}}, 2,    {NULL}, 0};
    r.topics[0] = (ns_topic_config_t){topic_a, 4, 4, 6, 0};
    r.topics[1] = (ns_topic_config_t){topic_b, 8, 8, 6, 0};
    r.topics[2] = (ns_topic_config_t){topic_c, 2, 2, 6, 0};
    return r;
}

static void begin(fx_t *f, ns_store_t *s, ns_txn_t **t)
{
    assert_int_equal(ns_txn_begin(s, true, t), NS_OK);
    ns_registry_batch_reset(f->reg);
}

static void commit(fx_t *f, ns_txn_t *t)
{
    assert_int_equal(ns_registry_before_commit(f->reg, t), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
}

static void do_register(fx_t *f, ns_store_t *s, const reg_t *r)
{
    ns_regbody_t body;
    memset(&body, 0, sizeof body);
    body.topics = (ns_topic_config_t *)r->topics;
    body.n_topics = r->n_topics;
    body.data_version = r->dv;
    body.filter_servers = (char **)r->filters;
    body.n_filter_servers = r->n_filters;
    body.has_filter_server_list = true;
    ns_register_args_t a;
    memset(&a, 0, sizeof a);
    a.cluster = r->cluster;
    a.addr = r->addr;
    a.broker_name = r->name;
    a.broker_id = r->id;
    a.ha_addr = r->ha;
    a.zone_name = r->zone;
    a.heartbeat_timeout_ms = r->timeout_ms;
    a.enable_acting_master = r->acting;
    a.now_ms = r->now_ms;
    a.body = &body;
    ns_register_result_t res;
    ns_txn_t *t = NULL;
    begin(f, s, &t);
    assert_int_equal(ns_registry_register(f->reg, t, &a, &res), NS_OK);
    assert_false(res.failed);
    ns_register_result_free(&res);
    commit(f, t);
}

static void do_unregister(fx_t *f, ns_store_t *s, const char *cluster, const char *addr,
                          const char *name, int64_t id)
{
    ns_txn_t *t = NULL;
    bool removed = false;
    begin(f, s, &t);
    assert_int_equal(ns_registry_unregister(f->reg, t, cluster, addr, name, id, &removed, NULL),
                     NS_OK);
    assert_true(removed);
    commit(f, t);
}

static void kv(ns_store_t *s, const char *ns, const char *key, const char *val)
{
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(s, true, &t), NS_OK);
    if (val)
        assert_int_equal(ns_kv_put(t, ns, key, val), NS_OK);
    else
        assert_int_equal(ns_kv_del(t, ns, key), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
}

/* The root node of s (zero when empty); verify must find no drift. */
static ns_digest_sum_t root(ns_store_t *s)
{
    ns_txn_t *t = NULL;
    ns_digest_sum_t d;
    ns_buf_t report = NS_BUF_INIT;
    assert_int_equal(ns_txn_begin(s, false, &t), NS_OK);
    int rc = ns_digest_get(t, NULL, 0, &d);
    assert_true(rc == NS_OK || rc == NS_ENOTFOUND);
    int bad = ns_store_verify(t, &report);
    if (bad != 0)
        fail_msg("verify: %.*s", (int)report.len, (const char *)report.data);
    ns_txn_abort(t);
    ns_buf_free(&report);
    return d;
}

static bool same(ns_digest_sum_t a, ns_digest_sum_t b)
{
    return ns_digest_sum_eq(&a, &b);
}

/* Brokers, a slave, KV entries in one order on store 0 and in another on
 * store 1 (topics listed in another order too): equal digests. */
static void test_same_state_any_order(void **state)
{
    fx_t *f = *state;
    reg_t a = reg_default("broker-a", "10.0.0.1:10911");
    reg_t b = reg_default("broker-b", "10.0.0.2:10911");
    reg_t a1 = reg_default("broker-a", "10.0.0.3:10911");
    a1.id = 1;
    do_register(f, f->s[0], &a);
    do_register(f, f->s[0], &a1);
    do_register(f, f->s[0], &b);
    kv(f->s[0], "ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4");
    kv(f->s[0], "ORDER_TOPIC_CONFIG", "TopicB", "broker-b:8");
    kv(f->s[0], "other", "k", "v");
    assert_false(same(root(f->s[0]), root(f->s[1])));

    reg_t b_rev = b;
    b_rev.topics[0] = b.topics[2];
    b_rev.topics[2] = b.topics[0];
    b_rev.n_topics = 3;
    b.n_topics = 3; /* the same set: C, B, A */
    kv(f->s[1], "other", "k", "v");
    kv(f->s[1], "ORDER_TOPIC_CONFIG", "TopicB", "broker-b:8");
    do_register(f, f->s[1], &b_rev);
    do_register(f, f->s[1], &a);
    kv(f->s[1], "ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4");
    do_register(f, f->s[1], &a1);
    /* store 0 saw broker-b with two topics: give it the third as well */
    do_register(f, f->s[0], &b);
    ns_digest_sum_t r0 = root(f->s[0]), r1 = root(f->s[1]);
    assert_true(same(r0, r1));
    assert_true(r0.count > 0);
}

typedef void (*mutate_fn)(reg_t *r);
static void m_cluster(reg_t *r)
{
    r->cluster = "OtherCluster";
}
static void m_name(reg_t *r)
{
    r->name = "broker-z";
}
static void m_addr(reg_t *r)
{
    r->addr = "10.0.0.7:10911";
}
static void m_ha(reg_t *r)
{
    r->ha = "10.0.0.1:10912";
}
static void m_zone(reg_t *r)
{
    r->zone = "zone-1";
}
static void m_acting(reg_t *r)
{
    r->acting = true;
}
static void m_timeout(reg_t *r)
{
    r->timeout_ms = 60000;
}
static void m_dv_counter(reg_t *r)
{
    r->dv.counter++;
}
static void m_dv_state(reg_t *r)
{
    r->dv.state_version++;
}
static void m_dv_time(reg_t *r)
{
    r->dv.timestamp++;
}
static void m_filters(reg_t *r)
{
    r->filters[0] = filter_1;
    r->n_filters = 1;
}
static void m_perm(reg_t *r)
{
    r->topics[1].perm = 4;
}
static void m_rq(reg_t *r)
{
    r->topics[1].read_queue_nums = 3;
}
static void m_wq(reg_t *r)
{
    r->topics[1].write_queue_nums = 3;
}
static void m_sysflag(reg_t *r)
{
    r->topics[1].topic_sys_flag = 1;
}
static void m_topics(reg_t *r)
{
    r->n_topics = 3;
}
static void m_registered_at(reg_t *r)
{
    r->now_ms += 5000;
}

/* Every field of a registration that a client is served changes the
 * digest; when the broker registered (a local clock) does not. */
static void test_every_field_matters(void **state)
{
    fx_t *f = *state;
    static const struct {
        const char *what;
        mutate_fn fn;
        bool matters;
    } cases[] = {
        {"cluster", m_cluster, true},
        {"brokerName", m_name, true},
        {"address", m_addr, true},
        {"haAddr", m_ha, true},
        {"zone", m_zone, true},
        {"actingMaster", m_acting, true},
        {"timeout", m_timeout, true},
        {"dv.counter", m_dv_counter, true},
        {"dv.state", m_dv_state, true},
        {"dv.timestamp", m_dv_time, true},
        {"filters", m_filters, true},
        {"perm", m_perm, true},
        {"readQueues", m_rq, true},
        {"writeQueues", m_wq, true},
        {"sysflag", m_sysflag, true},
        {"a topic more", m_topics, true},
        {"registered_ms", m_registered_at, false},
    };
    reg_t base = reg_default("broker-a", "10.0.0.1:10911");
    do_register(f, f->s[0], &base);
    ns_digest_sum_t want = root(f->s[0]);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* a fresh store each time: the case alone, against the base */
        ns_store_close(f->s[1]);
        nstest_rmtree(f->dir[1]);
        assert_int_equal(nstest_store_open(f->dir[1], 0, 0, &f->s[1]), NS_OK);
        reg_t r = reg_default("broker-a", "10.0.0.1:10911");
        cases[i].fn(&r);
        do_register(f, f->s[1], &r);
        bool differs = !same(root(f->s[1]), want);
        if (differs != cases[i].matters)
            fail_msg("%s: the digest %s", cases[i].what, differs ? "changed" : "did not change");
    }
    /* and the KV parts: namespace, key and value each */
    kv(f->s[0], "ns", "key", "value");
    want = root(f->s[0]);
    const char *variants[][3] = {
        {"ns2", "key", "value"}, {"ns", "key2", "value"}, {"ns", "key", "value2"}};
    for (size_t i = 0; i < 3; i++) {
        kv(f->s[0], variants[i][0], variants[i][1], variants[i][2]);
        kv(f->s[0], "ns", "key", NULL);
        assert_false(same(root(f->s[0]), want));
        kv(f->s[0], variants[i][0], variants[i][1], NULL);
        kv(f->s[0], "ns", "key", "value");
        assert_true(same(root(f->s[0]), want));
    }
}

/* Undoing a change gives back the digest from before it. */
static void test_removal_restores(void **state)
{
    fx_t *f = *state;
    reg_t a = reg_default("broker-a", "10.0.0.1:10911");
    reg_t b = reg_default("broker-b", "10.0.0.2:10911");
    do_register(f, f->s[0], &a);
    kv(f->s[0], "ns", "k1", "v1");
    ns_digest_sum_t before = root(f->s[0]);
    /* a broker group with its topics, then gone */
    do_register(f, f->s[0], &b);
    assert_false(same(root(f->s[0]), before));
    do_unregister(f, f->s[0], "DefaultCluster", "10.0.0.2:10911", "broker-b", 0);
    assert_true(same(root(f->s[0]), before));
    /* a slave, then gone */
    reg_t a1 = reg_default("broker-a", "10.0.0.3:10911");
    a1.id = 1;
    do_register(f, f->s[0], &a1);
    assert_false(same(root(f->s[0]), before));
    do_unregister(f, f->s[0], "DefaultCluster", "10.0.0.3:10911", "broker-a", 1);
    assert_true(same(root(f->s[0]), before));
    /* a KV entry, changed, then put back; another one added and deleted */
    kv(f->s[0], "ns", "k1", "v2");
    assert_false(same(root(f->s[0]), before));
    kv(f->s[0], "ns", "k1", "v1");
    kv(f->s[0], "ns", "k2", "x");
    kv(f->s[0], "ns", "k2", NULL);
    assert_true(same(root(f->s[0]), before));
    /* a topic deleted and registered again as it was */
    ns_txn_t *t = NULL;
    begin(f, f->s[0], &t);
    assert_int_equal(ns_registry_delete_topic(f->reg, t, "TopicB", NULL), NS_OK);
    commit(f, t);
    assert_false(same(root(f->s[0]), before));
    a.dv.counter++;
    do_register(f, f->s[0], &a);
    a.dv.counter--;
    do_register(f, f->s[0], &a);
    assert_true(same(root(f->s[0]), before));
    /* write permission wiped and given back */
    int count = 0;
    begin(f, f->s[0], &t);
    assert_int_equal(ns_registry_write_perm(f->reg, t, "broker-a", false, &count), NS_OK);
    commit(f, t);
    assert_false(same(root(f->s[0]), before));
    begin(f, f->s[0], &t);
    assert_int_equal(ns_registry_write_perm(f->reg, t, "broker-a", true, &count), NS_OK);
    commit(f, t);
    assert_true(same(root(f->s[0]), before));
    /* everything gone: the empty digest */
    do_unregister(f, f->s[0], "DefaultCluster", "10.0.0.1:10911", "broker-a", 0);
    kv(f->s[0], "ns", "k1", NULL);
    ns_digest_sum_t empty = root(f->s[0]);
    assert_int_equal(empty.count, 0);
    assert_true(empty.lo == 0 && empty.hi == 0);
}

struct names {
    char v[32][256];
    ns_digest_sum_t sum[32];
    size_t n;
};

static int child_cb(const char *name, const ns_digest_sum_t *sum, void *ctx)
{
    struct names *n = ctx;
    assert_true(n->n < 32);
    snprintf(n->v[n->n], sizeof n->v[0], "%s", name);
    n->sum[n->n++] = *sum;
    return 0;
}

static int leaf_cb(const char *name, const ns_digest_sum_t *h, const char *json, size_t len,
                   void *ctx)
{
    struct names *n = ctx;
    assert_true(n->n < 32);
    snprintf(n->v[n->n], sizeof n->v[0], "%s=%.*s", name, (int)len, json);
    n->sum[n->n++] = *h;
    return 0;
}

/* Buckets are the item's hash digits: the leaves of TopicB are found at
 * the path the store computes, with its queue data as JSON. */
static void test_item_leaves(void **state)
{
    fx_t *f = *state;
    reg_t a = reg_default("broker-a", "10.0.0.1:10911");
    reg_t a1 = reg_default("broker-a", "10.0.0.3:10911");
    a1.id = 1;
    do_register(f, f->s[0], &a);
    do_register(f, f->s[0], &a1);
    kv(f->s[0], "ns", "k", "v\"1");
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(f->s[0], false, &t), NS_OK);
    /* find TopicB's path by walking every bucket (the test does not know
     * the hash), checking each interior node is the sum of its children */
    const char *path[5] = {"t", NULL, NULL, NULL, NULL};
    struct names l1 = {.n = 0}, l2, l3, l4;
    bool found = false;
    assert_int_equal(ns_digest_children(t, path, 1, child_cb, &l1), NS_OK);
    for (size_t i = 0; i < l1.n && !found; i++) {
        path[1] = l1.v[i];
        l2.n = 0;
        assert_int_equal(ns_digest_children(t, path, 2, child_cb, &l2), NS_OK);
        for (size_t j = 0; j < l2.n && !found; j++) {
            path[2] = l2.v[j];
            l3.n = 0;
            assert_int_equal(ns_digest_children(t, path, 3, child_cb, &l3), NS_OK);
            for (size_t k = 0; k < l3.n && !found; k++) {
                path[3] = l3.v[k];
                l4.n = 0;
                assert_int_equal(ns_digest_children(t, path, 4, child_cb, &l4), NS_OK);
                for (size_t m = 0; m < l4.n && !found; m++)
                    if (strcmp(l4.v[m], "TopicB") == 0) {
                        path[4] = l4.v[m];
                        found = true;
                    }
            }
        }
    }
    assert_true(found);
    struct names leaves = {.n = 0};
    assert_int_equal(ns_digest_leaves(t, path, 5, leaf_cb, &leaves), NS_OK);
    assert_int_equal(leaves.n, 1);
    assert_string_equal(leaves.v[0], "queue broker-a={\"perm\":6,\"readQueueNums\":8,"
                                     "\"writeQueueNums\":8,\"topicSysFlag\":0}");
    /* a wrong bucket is refused, not answered from the data */
    const char *wrong[5] = {"t", path[1][0] == '0' ? "1" : "0", path[2], path[3], "TopicB"};
    assert_int_equal(ns_digest_leaves(t, wrong, 5, leaf_cb, &leaves), NS_EINVAL);
    /* the broker item: member, group and both addresses */
    const char *cpath[5] = {"c", NULL, NULL, NULL, NULL};
    struct names cl = {.n = 0};
    assert_int_equal(ns_digest_children(t, cpath, 1, child_cb, &cl), NS_OK);
    assert_int_equal(cl.n, 1);
    assert_string_equal(cl.v[0], "DefaultCluster");
    ns_digest_sum_t item = {0, 0, 0};
    found = false;
    cpath[1] = "DefaultCluster";
    struct names b1 = {.n = 0}, b2, b3;
    assert_int_equal(ns_digest_children(t, cpath, 2, child_cb, &b1), NS_OK);
    for (size_t i = 0; i < b1.n && !found; i++) {
        cpath[2] = b1.v[i];
        b2.n = 0;
        assert_int_equal(ns_digest_children(t, cpath, 3, child_cb, &b2), NS_OK);
        for (size_t j = 0; j < b2.n && !found; j++) {
            cpath[3] = b2.v[j];
            b3.n = 0;
            assert_int_equal(ns_digest_children(t, cpath, 4, child_cb, &b3), NS_OK);
            if (b3.n == 1 && strcmp(b3.v[0], "broker-a") == 0) {
                cpath[4] = b3.v[0];
                item = b3.sum[0];
                found = true;
            }
        }
    }
    assert_true(found);
    leaves.n = 0;
    assert_int_equal(ns_digest_leaves(t, cpath, 5, leaf_cb, &leaves), NS_OK);
    assert_int_equal(leaves.n, 4);
    assert_int_equal(item.count, 4);
    assert_string_equal(leaves.v[0], "member={}");
    assert_non_null(strstr(leaves.v[1], "group={\"zoneName\":null"));
    assert_non_null(strstr(leaves.v[2], "addr 10.0.0.1:10911="));
    assert_non_null(strstr(leaves.v[3], "addr 10.0.0.3:10911="));
    ns_digest_sum_t total = {0, 0, 0};
    for (size_t i = 0; i < leaves.n; i++) {
        uint64_t lo = total.lo + leaves.sum[i].lo;
        total.hi += leaves.sum[i].hi + (lo < total.lo);
        total.lo = lo;
        total.count++;
    }
    assert_true(ns_digest_sum_eq(&total, &item)); /* the item is its leaves' sum */
    ns_txn_abort(t);
}

/* A stored node changed behind the store's back is reported by verify,
 * and a rebuild puts it right. */
static void test_verify_catches_drift(void **state)
{
    fx_t *f = *state;
    reg_t a = reg_default("broker-a", "10.0.0.1:10911");
    do_register(f, f->s[0], &a);
    ns_digest_sum_t good = root(f->s[0]);
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(f->s[0], true, &t), NS_OK);
    uint8_t key = 0, val[24] = {1};
    MDB_val k = {1, &key}, v = {sizeof val, val};
    assert_int_equal(mdb_put(t->txn, t->s->dbi[NS_DB_DIGEST], &k, &v, 0), 0);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    ns_buf_t report = NS_BUF_INIT;
    assert_int_equal(ns_txn_begin(f->s[0], false, &t), NS_OK);
    assert_int_equal(ns_store_verify(t, &report), 1);
    assert_non_null(strstr((const char *)report.data, "digest"));
    ns_txn_abort(t);
    ns_buf_free(&report);
    assert_int_equal(ns_txn_begin(f->s[0], true, &t), NS_OK);
    assert_int_equal(ns_digest_rebuild(t), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    assert_true(same(root(f->s[0]), good));
    /* an item entry with no data behind it, and a node of the data missing:
     * the "t" node (depth 1) deleted */
    assert_int_equal(ns_txn_begin(f->s[0], true, &t), NS_OK);
    uint8_t stale[] = "\005t\0000\0000\0000\000NoSuchTopic";
    MDB_val sk = {sizeof stale - 1, stale}, sv = {0, (void *)""};
    uint8_t top[] = "\001t";
    MDB_val tk = {sizeof top - 1, top};
    assert_int_equal(mdb_put(t->txn, t->s->dbi[NS_DB_DIGEST], &sk, &sv, 0), 0);
    assert_int_equal(mdb_del(t->txn, t->s->dbi[NS_DB_DIGEST], &tk, NULL), 0);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    assert_int_equal(ns_txn_begin(f->s[0], false, &t), NS_OK);
    assert_int_equal(ns_store_verify(t, &report), 2);
    assert_non_null(strstr((const char *)report.data, "[t/0/0/0/NoSuchTopic] digest: stored node "
                                                      "has no leaf in the data"));
    assert_non_null(
        strstr((const char *)report.data, "[t] digest: node of the data is not stored"));
    ns_txn_abort(t);
    ns_buf_free(&report);
}

/* A store written before the digest existed gets, when it migrates, the
 * digest that writing the same data with it would have kept. */
static void test_migration_computes_it(void **state)
{
    fx_t *f = *state;
    ns_store_close(f->s[0]);
    nstest_rmtree(f->dir[0]);
    ns_store_opts_t o = {f->dir[0], 0, 0, NS_SYNC_NOSYNC, false, true, 8, 0};
    char err[256];
    assert_int_equal(ns_store_open(&o, &f->s[0], err, sizeof err), NS_OK);
    assert_int_equal(ns_store_schema_version(f->s[0]), 8);
    reg_t a = reg_default("broker-a", "10.0.0.1:10911");
    reg_t b = reg_default("broker-b", "10.0.0.2:10911");
    do_register(f, f->s[0], &a);
    do_register(f, f->s[0], &b);
    kv(f->s[0], "ns", "k", "v");
    ns_store_close(f->s[0]);
    o.target_schema = 0;
    assert_int_equal(ns_store_open(&o, &f->s[0], err, sizeof err), NS_OK);
    do_register(f, f->s[1], &b);
    kv(f->s[1], "ns", "k", "v");
    do_register(f, f->s[1], &a);
    ns_digest_sum_t r0 = root(f->s[0]);
    assert_true(r0.count > 0);
    assert_true(same(r0, root(f->s[1])));
}

/* Serves the FLEET_DIGEST reply of store i, as a server would. */
static int fetch_store(void *ctx, size_t i, const ns_buf_t *req, ns_buf_t *resp, const char **why)
{
    fx_t *f = ctx;
    ns_fleet_path_t paths[NS_FLEET_MAX_PATHS];
    size_t n = 0;
    char *names = NULL;
    ns_txn_t *t = NULL;
    if (i >= 2) {
        *why = "connection refused";
        return NS_ECONN;
    }
    int rc = ns_fleet_paths_decode(req->data, req->len, paths, &n, &names);
    rc = rc ? rc : ns_txn_begin(f->s[i], false, &t);
    rc = rc ? rc : ns_digest_reply(t, paths, n, resp);
    ns_txn_abort(t);
    free(names);
    return rc;
}

static const ns_fleet_diff_t *find_diff(const ns_fleet_report_t *r, const char *item,
                                        const char *leaf)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->d[i].item, item) == 0 && strcmp(r->d[i].leaf, leaf) == 0)
            return &r->d[i];
    return NULL;
}

/* The diff over two stores names exactly what differs and where: a broker
 * group on one only, a topic's queue numbers, a KV value; equal stores
 * agree after one request each; a third server that cannot be reached is
 * left out and said so. */
static void test_diff_names_what_differs(void **state)
{
    fx_t *f = *state;
    reg_t a = reg_default("broker-a", "10.0.0.1:10911");
    do_register(f, f->s[0], &a);
    do_register(f, f->s[1], &a);
    kv(f->s[0], "ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4");
    kv(f->s[1], "ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4");
    ns_fleet_report_t r;
    assert_int_equal(ns_fleet_diff(fetch_store, f, 2, 100, &r), NS_OK);
    assert_true(ns_fleet_agree(&r));
    assert_int_equal(r.requests, 2); /* the roots only */
    assert_string_equal(r.root[0], r.root[1]);
    ns_fleet_report_free(&r);

    reg_t b = reg_default("broker-b", "10.0.0.2:10911");
    do_register(f, f->s[1], &b); /* TopicA and TopicB */
    reg_t a2 = a;
    a2.dv.counter++;
    a2.topics[1].write_queue_nums = 16;
    do_register(f, f->s[0], &a2);
    kv(f->s[1], "ORDER_TOPIC_CONFIG", "TopicA", "broker-a:8");
    assert_int_equal(ns_fleet_diff(fetch_store, f, 3, 100, &r), NS_OK);
    assert_false(ns_fleet_agree(&r));
    assert_true(r.reached[0] && r.reached[1] && !r.reached[2]);
    assert_string_equal(r.error[2], "connection refused");
    const ns_fleet_diff_t *d = find_diff(&r, "DefaultCluster/broker-b", "member");
    assert_non_null(d);
    assert_null(d->values[0]);
    assert_string_equal(d->values[1], "{}");
    assert_non_null(find_diff(&r, "DefaultCluster/broker-b", "group"));
    assert_non_null(find_diff(&r, "DefaultCluster/broker-b", "addr 10.0.0.2:10911"));
    d = find_diff(&r, "DefaultCluster/broker-a", "addr 10.0.0.1:10911");
    assert_non_null(d); /* its data version */
    assert_non_null(strstr(d->values[0], "\"counter\":2"));
    assert_non_null(strstr(d->values[1], "\"counter\":1"));
    d = find_diff(&r, "TopicA", "queue broker-b"); /* broker-b's topic, on one only */
    assert_non_null(d);
    assert_null(d->values[0]);
    d = find_diff(&r, "TopicB", "queue broker-a");
    assert_non_null(d);
    assert_non_null(strstr(d->values[0], "\"writeQueueNums\":16"));
    assert_non_null(strstr(d->values[1], "\"writeQueueNums\":8"));
    d = find_diff(&r, "ORDER_TOPIC_CONFIG/TopicA", "value");
    assert_non_null(d);
    assert_string_equal(d->values[0], "\"broker-a:4\"");
    assert_string_equal(d->values[1], "\"broker-a:8\"");
    assert_int_equal(r.items[NS_FLEET_BROKER], 2);
    assert_int_equal(r.items[NS_FLEET_TOPIC], 2);
    assert_int_equal(r.items[NS_FLEET_KV], 1);
    assert_non_null(find_diff(&r, "TopicB", "queue broker-b"));
    assert_int_equal(r.n, 8);
    ns_buf_t json = NS_BUF_INIT;
    const char *names[3] = {"s0", "s1", "s2"};
    assert_int_equal(ns_fleet_report_json(&r, names, &json), NS_OK);
    assert_non_null(strstr((const char *)json.data, "\"agree\":false"));
    ns_buf_free(&json);
    ns_fleet_report_free(&r);
}

/* Identity conflicts between servers: each holds a side the other does not
 * (a name in two clusters, an address under two names, an id at two
 * addresses). A registration one server lacks, or a view that contains
 * the other's, is a difference and no conflict. */
static void test_diff_conflicts(void **state)
{
    fx_t *f = *state;
    reg_t a0 = reg_default("broker-a", "10.0.0.1:10911"), a1 = a0;
    a0.cluster = "C1";
    a1.cluster = "C2";
    reg_t b = reg_default("broker-b", "10.0.0.2:10911"), c = reg_default("broker-c", b.addr);
    reg_t d0 = reg_default("broker-d", "10.0.0.3:10911"), d1 = d0;
    d1.addr = "10.0.0.4:10911";
    reg_t e = reg_default("broker-e", "10.0.0.5:10911"), e1 = e; /* a slave on one only */
    e1.addr = "10.0.0.6:10911";
    e1.id = 1;
    const reg_t *on0[] = {&a0, &b, &d0, &e, &e1}, *on1[] = {&a1, &c, &d1, &e};
    for (size_t i = 0; i < 5; i++)
        do_register(f, f->s[0], on0[i]);
    for (size_t i = 0; i < 4; i++)
        do_register(f, f->s[1], on1[i]);
    ns_fleet_report_t r;
    assert_int_equal(ns_fleet_diff(fetch_store, f, 2, 100, &r), NS_OK);
    assert_false(ns_fleet_agree(&r));
    const ns_fleet_diff_t *x = find_diff(&r, "brokerName broker-a", "clusterName");
    assert_non_null(x);
    assert_int_equal(x->kind, NS_FLEET_CONFLICT);
    assert_string_equal(x->values[0], "[\"C1\"]");
    assert_string_equal(x->values[1], "[\"C2\"]");
    x = find_diff(&r, "brokerAddr 10.0.0.2:10911", "brokerName");
    assert_non_null(x);
    assert_string_equal(x->values[0], "[\"broker-b\"]");
    assert_string_equal(x->values[1], "[\"broker-c\"]");
    x = find_diff(&r, "DefaultCluster/broker-d brokerId 0", "brokerAddr");
    assert_non_null(x);
    assert_string_equal(x->values[0], "[\"10.0.0.3:10911\"]");
    assert_string_equal(x->values[1], "[\"10.0.0.4:10911\"]");
    assert_null(find_diff(&r, "DefaultCluster/broker-e brokerId 1", "brokerAddr"));
    assert_null(find_diff(&r, "brokerAddr 10.0.0.1:10911", "brokerName"));
    assert_int_equal(r.items[NS_FLEET_CONFLICT], 3);
    assert_int_equal(ns_fleet_items(&r), r.items[NS_FLEET_BROKER] + r.items[NS_FLEET_TOPIC]);
    assert_int_equal(r.d[r.n - 1].kind, NS_FLEET_CONFLICT); /* sorted last */
    ns_buf_t json = NS_BUF_INIT;
    const char *names[2] = {"s0", "s1"};
    assert_int_equal(ns_fleet_report_json(&r, names, &json), NS_OK);
    assert_non_null(strstr((const char *)json.data, "\"conflicts\":3"));
    assert_non_null(strstr((const char *)json.data, "{\"kind\":\"conflict\""));
    ns_buf_free(&json);
    ns_fleet_report_free(&r);

    /* store 1 learns store 0's side too: its view contains store 0's */
    const reg_t *more[] = {&a0, &b, &d0, &e1};
    for (size_t i = 0; i < 4; i++)
        do_register(f, f->s[1], more[i]);
    assert_int_equal(ns_fleet_diff(fetch_store, f, 2, 100, &r), NS_OK);
    assert_false(ns_fleet_agree(&r));
    assert_int_equal(r.items[NS_FLEET_CONFLICT], 0);
    ns_fleet_report_free(&r);
}

/* Server 0 is store 0; server 1 answers whatever garbage[which] says. */
static const char *garbage_reply;
static int fetch_garbage(void *ctx, size_t i, const ns_buf_t *req, ns_buf_t *resp, const char **why)
{
    if (i == 0)
        return fetch_store(ctx, 0, req, resp, why);
    return ns_buf_append_str(resp, garbage_reply);
}

/* A server that answers something that is not a digest (not JSON, the
 * wrong number of nodes, nodes of the wrong shape) is left out, not
 * believed: the diff names it unreachable and compares nothing with it. */
static void test_diff_garbage_peer(void **state)
{
    fx_t *f = *state;
    reg_t a = reg_default("broker-a", "10.0.0.1:10911");
    do_register(f, f->s[0], &a);
    static const char *const replies[] = {
        "not json", "{\"nodes\":[]}", "{\"nodes\":[1,2]}", "{\"nodes\":7}",
        "{\"nodes\":[{\"path\":[],\"hash\":5,\"children\":{\"x\":1}}]}"};
    for (size_t k = 0; k < sizeof replies / sizeof replies[0]; k++) {
        ns_fleet_report_t r;
        garbage_reply = replies[k];
        assert_int_equal(ns_fleet_diff(fetch_garbage, f, 2, 100, &r), NS_OK);
        if (k < 4) {
            assert_false(r.reached[1]);
            assert_non_null(r.error[1]);
        } else {
            /* a node that decodes but holds nothing usable: no children
             * to compare, so what store 0 has is all "absent" there */
            assert_true(r.reached[1]);
            assert_true(r.n == 0 || r.d[0].values[1] == NULL);
        }
        assert_true(r.reached[0]);
        ns_fleet_report_free(&r);
    }
}

/* Request bodies: what a server accepts and what it refuses. */
static void test_paths_decode(void **state)
{
    (void)state;
    ns_fleet_path_t p[NS_FLEET_MAX_PATHS];
    size_t n = 0;
    char *names = NULL;
    assert_int_equal(ns_fleet_paths_decode(NULL, 0, p, &n, &names), NS_OK);
    assert_int_equal(n, 1);
    assert_int_equal(p[0].depth, 0);
    const char *ok = "{\"paths\":[[],[\"t\",\"3\"]]}";
    assert_int_equal(ns_fleet_paths_decode((const uint8_t *)ok, strlen(ok), p, &n, &names), NS_OK);
    assert_int_equal(n, 2);
    assert_int_equal(p[1].depth, 2);
    assert_string_equal(p[1].v[1], "3");
    free(names);
    const char *bad[] = {"{", "{\"paths\":1}", "{\"paths\":[[1]]}", "{\"paths\":[[\"\"]]}",
                         "{\"paths\":[[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(
            ns_fleet_paths_decode((const uint8_t *)bad[i], strlen(bad[i]), p, &n, &names),
            NS_EINVAL);
    ns_buf_t many = NS_BUF_INIT;
    ns_buf_append_str(&many, "{\"paths\":[[]");
    for (int i = 0; i < NS_FLEET_MAX_PATHS; i++)
        ns_buf_append_str(&many, ",[]");
    ns_buf_append_str(&many, "]}");
    assert_int_equal(ns_fleet_paths_decode(many.data, many.len, p, &n, &names), NS_EINVAL);
    ns_buf_free(&many);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_state_any_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_field_matters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removal_restores, setup, teardown),
        cmocka_unit_test_setup_teardown(test_item_leaves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_catches_drift, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migration_computes_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diff_names_what_differs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diff_conflicts, setup, teardown),
        cmocka_unit_test(test_paths_decode),
        cmocka_unit_test_setup_teardown(test_diff_garbage_peer, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
