/* test_registry.c - the route mutations of store/registry.c on a real LMDB
 * store: each step runs in one write transaction with the registry's
 * before-commit hook, as the writer runs it, and after each one the
 * materialised routes are read back and the invariant checker
 * (ns_store_verify) must find nothing.
 *
 * registry.c is compiled into this test with strdup replaced by one that
 * can fail its n-th call, so that a registration whose copy of a string
 * fails is seen to answer NS_ENOMEM, never NS_OK with the string left out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/err.h"
#include "ns/store.h"

static int strdup_calls;   /* strdup calls in registry.c since the last reset */
static int strdup_fail_at; /* the call that fails (1-based), 0 for none */

static char *failing_strdup(const char *s)
{
    if (++strdup_calls == strdup_fail_at)
        return NULL;
    return strdup(s);
}

#define strdup failing_strdup
#include "store/registry.c"
#undef strdup

typedef struct {
    char *dir;
    ns_store_t *store;
    ns_registry_t *reg;
    ns_topic_config_t topics[2];
    ns_regbody_t body;
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = nstest_tmpdir("registry");
    ns_store_opts_t o = {f->dir, 8u << 20, 64u << 20, NS_SYNC_NOSYNC, false, true, 0, 0};
    char err[256];
    assert_int_equal(ns_store_open(&o, &f->store, err, sizeof err), NS_OK);
    assert_int_equal(ns_registry_new(&f->reg), NS_OK);
    static char t1[] = "TopicA", t2[] = "TopicB";
    f->topics[0] = (ns_topic_config_t){t1, 4, 4, 6, 0};
    f->topics[1] = (ns_topic_config_t){t2, 8, 8, 6, 0};
    f->body.topics = f->topics;
    f->body.n_topics = 2;
    f->body.data_version = (ns_dataversion_t){1, 0, 1000};
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    ns_registry_free(f->reg);
    ns_store_close(f->store);
    nstest_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void args(fx_t *f, ns_register_args_t *a, const char *name, const char *addr, int64_t id)
{
    memset(a, 0, sizeof *a);
    a->cluster = "DefaultCluster";
    a->addr = addr;
    a->broker_name = name;
    a->broker_id = id;
    a->ha_addr = "";
    a->heartbeat_timeout_ms = 30000;
    a->audit_retention = 10;
    a->now_ms = 1000;
    a->body = &f->body;
}

/* The store has no invariant violation. */
static void verified(fx_t *f)
{
    ns_txn_t *t = NULL;
    ns_buf_t report = NS_BUF_INIT;
    assert_int_equal(ns_txn_begin(f->store, false, &t), NS_OK);
    int n = ns_store_verify(t, &report);
    if (n != 0)
        fprintf(stderr, "%.*s\n", (int)report.len, (const char *)report.data);
    assert_int_equal(n, 0);
    ns_txn_abort(t);
    ns_buf_free(&report);
}

static void begin(fx_t *f, ns_txn_t **t)
{
    assert_int_equal(ns_txn_begin(f->store, true, t), NS_OK);
    ns_registry_batch_reset(f->reg);
}

static void commit(fx_t *f, ns_txn_t *t)
{
    assert_int_equal(ns_registry_before_commit(f->reg, t), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    verified(f);
}

static void do_register(fx_t *f, const char *name, const char *addr, int64_t id,
                        ns_register_result_t *res)
{
    ns_txn_t *t = NULL;
    ns_register_args_t a;
    args(f, &a, name, addr, id);
    begin(f, &t);
    assert_int_equal(ns_registry_register(f->reg, t, &a, res), NS_OK);
    assert_false(res->failed);
    commit(f, t);
}

/* The standard-JSON route of topic, as a string (caller frees), or NULL. */
static char *route_of(fx_t *f, const char *topic)
{
    ns_txn_t *t = NULL;
    ns_slice_t r;
    size_t ins = 0;
    bool derive = false;
    char *out = NULL;
    assert_int_equal(ns_txn_begin(f->store, false, &t), NS_OK);
    int rc = ns_route_get(t, topic, true, &r, &ins, &derive);
    if (rc == NS_OK)
        out = strndup((const char *)r.ptr, r.len);
    else
        assert_int_equal(rc, NS_ENOTFOUND);
    ns_txn_abort(t);
    return out;
}

static void route_has(fx_t *f, const char *topic, const char *needle, bool expect)
{
    char *r = route_of(f, topic);
    assert_non_null(r);
    if ((strstr(r, needle) != NULL) != expect)
        fail_msg("route of %s: '%s' %s expected in %s", topic, needle, expect ? "" : "not", r);
    free(r);
}

static void test_register_materialises_every_topic(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    do_register(f, "broker-a", "10.0.0.1:10911", 0, &res);
    assert_false(res.conflict);
    assert_null(res.master_addr); /* the master itself */
    ns_register_result_free(&res);
    route_has(f, "TopicA", "\"brokerName\":\"broker-a\"", true);
    route_has(f, "TopicA", "\"readQueueNums\":4", true);
    route_has(f, "TopicB", "\"readQueueNums\":8", true);
    route_has(f, "TopicB", "10.0.0.1:10911", true);
    assert_null(route_of(f, "TopicC"));
}

static void test_unchanged_and_slave(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    ns_register_args_t a;
    ns_txn_t *t = NULL;
    do_register(f, "broker-a", "10.0.0.1:10911", 0, &res);
    ns_register_result_free(&res);
    /* the same registration again changes nothing, seen from a read txn */
    args(f, &a, "broker-a", "10.0.0.1:10911", 0);
    assert_int_equal(ns_txn_begin(f->store, false, &t), NS_OK);
    assert_true(ns_registry_unchanged(t, &a, &res));
    ns_register_result_free(&res);
    /* a slave is not "unchanged": it is not registered yet */
    args(f, &a, "broker-a", "10.0.0.2:10911", 1);
    assert_false(ns_registry_unchanged(t, &a, &res));
    ns_register_result_free(&res);
    ns_txn_abort(t);
    do_register(f, "broker-a", "10.0.0.2:10911", 1, &res);
    assert_non_null(res.master_addr); /* a slave learns its master */
    assert_string_equal(res.master_addr, "10.0.0.1:10911");
    ns_register_result_free(&res);
    route_has(f, "TopicA", "10.0.0.2:10911", true);
}

static void test_write_perm_counts_and_reencodes(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    ns_txn_t *t = NULL;
    int count = 0;
    do_register(f, "broker-a", "10.0.0.1:10911", 0, &res);
    ns_register_result_free(&res);
    begin(f, &t);
    assert_int_equal(ns_registry_write_perm(f->reg, t, "broker-a", false, &count), NS_OK);
    commit(f, t);
    assert_int_equal(count, 2);
    route_has(f, "TopicA", "\"perm\":4", true); /* read only: the route was re-encoded */
    begin(f, &t);
    assert_int_equal(ns_registry_write_perm(f->reg, t, "broker-a", true, &count), NS_OK);
    commit(f, t);
    assert_int_equal(count, 2);
    route_has(f, "TopicA", "\"perm\":6", true);
    begin(f, &t);
    assert_int_equal(ns_registry_write_perm(f->reg, t, "nobody", false, &count), NS_OK);
    ns_txn_abort(t);
    assert_int_equal(count, 0);
}

static void test_unregister_is_fenced_by_broker_id(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    ns_txn_t *t = NULL;
    bool removed = true;
    do_register(f, "broker-a", "10.0.0.1:10911", 0, &res);
    ns_register_result_free(&res);
    /* decided for id 1 while the address is the master (id 0): stale */
    begin(f, &t);
    assert_int_equal(ns_registry_unregister(f->reg, t, "DefaultCluster", "10.0.0.1:10911",
                                            "broker-a", 1, &removed, NULL),
                     NS_OK);
    commit(f, t);
    assert_false(removed);
    route_has(f, "TopicA", "10.0.0.1:10911", true);
    /* unknown brokers are a no-op */
    begin(f, &t);
    assert_int_equal(
        ns_registry_unregister(f->reg, t, "DefaultCluster", "10.9.9.9:1", NULL, -1, &removed, NULL),
        NS_OK);
    commit(f, t);
    assert_false(removed);
    begin(f, &t);
    assert_int_equal(ns_registry_unregister(f->reg, t, "DefaultCluster", "10.0.0.1:10911", NULL, 0,
                                            &removed, NULL),
                     NS_OK);
    commit(f, t);
    assert_true(removed);
    assert_null(route_of(f, "TopicA")); /* the last broker went: so did the routes */
    assert_null(route_of(f, "TopicB"));
}

/* An unregister that names another broker than the one the address
 * registered, or another cluster, removes nothing: the live record and the
 * group's address go together or not at all (commit() verifies I4/I5). */
static void test_unregister_names_the_registered_broker(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    ns_txn_t *t = NULL;
    bool removed = true;
    do_register(f, "broker-a", "10.0.0.1:10911", 0, &res);
    ns_register_result_free(&res);
    do_register(f, "broker-b", "10.0.0.2:10911", 0, &res);
    ns_register_result_free(&res);
    begin(f, &t);
    assert_int_equal(ns_registry_unregister(f->reg, t, "DefaultCluster", "10.0.0.2:10911",
                                            "broker-a", 0, &removed, NULL),
                     NS_OK);
    commit(f, t);
    assert_false(removed);
    route_has(f, "TopicA", "10.0.0.2:10911", true);
    begin(f, &t);
    assert_int_equal(ns_registry_unregister(f->reg, t, "OtherCluster", "10.0.0.1:10911", "broker-a",
                                            0, &removed, NULL),
                     NS_OK);
    commit(f, t);
    assert_false(removed);
    route_has(f, "TopicA", "10.0.0.1:10911", true);
    /* named right, it goes */
    begin(f, &t);
    assert_int_equal(ns_registry_unregister(f->reg, t, "DefaultCluster", "10.0.0.2:10911",
                                            "broker-b", 0, &removed, NULL),
                     NS_OK);
    commit(f, t);
    assert_true(removed);
    route_has(f, "TopicA", "10.0.0.2:10911", false);
}

/* An address registered under another broker name leaves its old group:
 * one address is one broker, and when it is unregistered no group keeps it
 * without a live record (I5). */
static void test_address_moves_to_another_group(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    ns_txn_t *t = NULL;
    bool removed = false;
    do_register(f, "broker-a", "10.0.0.1:10911", 0, &res);
    ns_register_result_free(&res);
    do_register(f, "broker-b", "10.0.0.1:10911", 0, &res);
    ns_register_result_free(&res);
    route_has(f, "TopicA", "\"brokerName\":\"broker-a\"", false);
    route_has(f, "TopicA", "\"brokerName\":\"broker-b\"", true);
    begin(f, &t);
    assert_int_equal(ns_registry_unregister(f->reg, t, "DefaultCluster", "10.0.0.1:10911",
                                            "broker-b", 0, &removed, NULL),
                     NS_OK);
    commit(f, t);
    assert_true(removed);
    assert_null(route_of(f, "TopicA"));
}

/* A group with thousands of topics goes (ns_queue_del_broker, through
 * cursors, last row first): its rows sit between two other groups' on
 * many pages of both tables; those stay whole, and verify (I6, the digest)
 * finds nothing. */
static void test_large_group_removed_between_others(void **state)
{
    fx_t *f = *state;
    enum { N = 3000 };
    static char names[N][24];
    ns_topic_config_t *tc = calloc(N, sizeof *tc);
    assert_non_null(tc);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "Big-%05d", i);
        tc[i] = (ns_topic_config_t){names[i], 4, 4, 6, 0};
    }
    f->body.topics = tc;
    ns_register_result_t res;
    const char *groups[3] = {"broker-a", "broker-b", "broker-c"};
    const char *addrs[3] = {"10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"};
    for (int g = 0; g < 3; g++) {
        f->body.n_topics = g == 1 ? N : N / 2; /* the middle group has every topic */
        do_register(f, groups[g], addrs[g], 0, &res);
        ns_register_result_free(&res);
    }
    ns_txn_t *t = NULL;
    bool removed = false;
    begin(f, &t);
    assert_int_equal(
        ns_registry_unregister(f->reg, t, "DefaultCluster", addrs[1], groups[1], 0, &removed, NULL),
        NS_OK);
    commit(f, t); /* verified: I6 and the digest */
    assert_true(removed);
    for (int i = 0; i < N; i += 7) {
        char *r = route_of(f, names[i]);
        if (i < N / 2) {
            assert_non_null(r);
            assert_non_null(strstr(r, "broker-a"));
            assert_non_null(strstr(r, "broker-c"));
            assert_null(strstr(r, "broker-b"));
        } else {
            assert_null(r); /* only broker-b had it */
        }
        free(r);
    }
    f->body.topics = f->topics;
    f->body.n_topics = 2;
    free(tc);
}

static int audit_seq_cb(uint64_t seq, const char *json, size_t len, void *ctx)
{
    uint64_t *seqs = ctx;
    assert_true(seqs[0] < 15);
    seqs[++seqs[0]] = seq;
    assert_non_null(strstr(json, "\"brokerName\":\"broker-a\""));
    return 0;
}

/* The history keeps the newest auditRetention records (ns_audit_trim). */
static void test_history_kept_to_retention(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    ns_register_args_t a;
    for (int i = 0; i < 6; i++) {
        ns_txn_t *t = NULL;
        args(f, &a, "broker-a", "10.0.0.1:10911", 0);
        a.audit_retention = 3;
        f->body.data_version.counter = 1 + i; /* a new DataVersion each time */
        begin(f, &t);
        assert_int_equal(ns_registry_register(f->reg, t, &a, &res), NS_OK);
        ns_register_result_free(&res);
        commit(f, t);
    }
    f->body.data_version.counter = 1;
    uint64_t seqs[16] = {0};
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(f->store, false, &t), NS_OK);
    assert_int_equal(ns_audit_iter(t, audit_seq_cb, seqs), NS_OK);
    ns_txn_abort(t);
    assert_int_equal(seqs[0], 3);
    assert_int_equal(seqs[1], 4);
    assert_int_equal(seqs[3], 6);
}

static void test_delete_and_register_topic(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    ns_txn_t *t = NULL;
    do_register(f, "broker-a", "10.0.0.1:10911", 0, &res);
    ns_register_result_free(&res);
    do_register(f, "broker-b", "10.0.0.3:10911", 0, &res);
    ns_register_result_free(&res);
    begin(f, &t);
    assert_int_equal(ns_registry_delete_topic(f->reg, t, "TopicA", "OtherCluster"), NS_OK);
    commit(f, t);
    route_has(f, "TopicA", "broker-a", true); /* another cluster: untouched */
    begin(f, &t);
    assert_int_equal(ns_registry_delete_topic(f->reg, t, "TopicA", NULL), NS_OK);
    commit(f, t);
    assert_null(route_of(f, "TopicA"));
    route_has(f, "TopicB", "broker-b", true);
    ns_queue_data_t q = {"broker-b", 6, 2, 2, 0};
    begin(f, &t);
    assert_int_equal(ns_registry_register_topic(f->reg, t, "TopicNew", &q, 1), NS_OK);
    commit(f, t);
    route_has(f, "TopicNew", "\"brokerName\":\"broker-b\"", true);
    route_has(f, "TopicNew", "\"readQueueNums\":2", true);
    route_has(f, "TopicNew", "broker-a", false);
}

/* An aborted batch leaves no trace, and a batch reset forgets its marks:
 * the next commit re-encodes only what it changed itself. */
static void test_abort_then_mark_all(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    ns_register_args_t a;
    ns_txn_t *t = NULL;
    args(f, &a, "broker-a", "10.0.0.1:10911", 0);
    begin(f, &t);
    assert_int_equal(ns_registry_register(f->reg, t, &a, &res), NS_OK);
    ns_register_result_free(&res);
    ns_txn_abort(t);
    assert_null(route_of(f, "TopicA"));
    do_register(f, "broker-a", "10.0.0.1:10911", 0, &res);
    ns_register_result_free(&res);
    /* what restore does: every route again from the tables */
    begin(f, &t);
    assert_int_equal(ns_route_del(t, "TopicA"), NS_OK);
    assert_int_equal(ns_registry_mark_all(f->reg, t), NS_OK);
    commit(f, t);
    route_has(f, "TopicA", "broker-a", true);
}

/* Registers name/addr/id (acting: enableActingMaster) and returns the 905
 * the registration calls for, or NULL. */
static ns_minid_change_t *reg_change(fx_t *f, const char *name, const char *addr, int64_t id,
                                     bool acting, const char *ha)
{
    ns_register_args_t a;
    ns_register_result_t res;
    ns_txn_t *t = NULL;
    args(f, &a, name, addr, id);
    a.enable_acting_master = acting;
    a.ha_addr = ha;
    begin(f, &t);
    assert_int_equal(ns_registry_register(f->reg, t, &a, &res), NS_OK);
    commit(f, t);
    ns_minid_change_t *c = res.minid_change;
    res.minid_change = NULL;
    ns_register_result_free(&res);
    return c;
}

static ns_minid_change_t *unreg_change(fx_t *f, const char *name, const char *addr, int64_t id)
{
    ns_minid_change_t *c = NULL;
    ns_txn_t *t = NULL;
    bool removed = false;
    begin(f, &t);
    assert_int_equal(
        ns_registry_unregister(f->reg, t, "DefaultCluster", addr, name, id, &removed, &c), NS_OK);
    commit(f, t);
    return c;
}

/* c is the 905 with these header values and exactly the recipients to
 * (comma-separated, in id order); freed. */
static void expect_change(ns_minid_change_t *c, int64_t min_id, const char *min_addr,
                          const char *offline, const char *ha, const char *to)
{
    assert_non_null(c);
    assert_int_equal(c->min_broker_id, min_id);
    assert_string_equal(c->min_broker_addr, min_addr);
    if (offline)
        assert_string_equal(c->offline_broker_addr ? c->offline_broker_addr : "(null)", offline);
    else
        assert_null(c->offline_broker_addr);
    if (ha)
        assert_string_equal(c->ha_broker_addr ? c->ha_broker_addr : "(null)", ha);
    else
        assert_null(c->ha_broker_addr);
    char got[256] = "";
    for (size_t i = 0; i < c->to.n; i++) {
        if (i)
            strcat(got, ",");
        strcat(got, c->to.v[i]);
    }
    assert_string_equal(got, to);
    ns_minid_change_free(c);
}

/* When Java's RouteInfoManager sends NOTIFY_MIN_BROKER_ID_CHANGE (905). */
static void test_min_broker_id_changes(void **state)
{
    fx_t *f = *state;
    /* a new group: the smallest id before counts as 0, so id 2 is no change */
    assert_null(reg_change(f, "g", "s2:1", 2, false, "s2:2"));
    /* 1 < 2: the others are told, with the registering broker's HA address */
    expect_change(reg_change(f, "g", "s1:1", 1, false, "s1:2"), 1, "s1:1", NULL, "s1:2", "s2:1");
    /* the same again, or a larger id: nothing */
    assert_null(reg_change(f, "g", "s1:1", 1, false, "s1:2"));
    assert_null(reg_change(f, "g", "s3:1", 3, false, "s3:2"));
    /* 0 < 1, the group not acting-master: registrations notify anyway */
    expect_change(reg_change(f, "g", "m:1", 0, false, "m:2"), 0, "m:1", NULL, "m:2",
                  "s1:1,s2:1,s3:1");
    /* an empty haServerAddr is not sent */
    assert_null(unreg_change(f, "g", "m:1", 0)); /* not acting-master: nobody */
    expect_change(reg_change(f, "g", "m:1", 0, false, ""), 0, "m:1", NULL, NULL, "s1:1,s2:1,s3:1");
    /* acting-master group: the smallest id going tells every member left */
    assert_null(reg_change(f, "g", "m:1", 0, true, "m:2"));
    expect_change(unreg_change(f, "g", "m:1", 0), 1, "s1:1", "m:1", NULL, "s1:1,s2:1,s3:1");
    /* a member that is not the smallest: nobody */
    assert_null(unreg_change(f, "g", "s3:1", 3));
    /* a fenced unregister (wrong id) and an unknown address: nobody */
    assert_null(unreg_change(f, "g", "s1:1", 7));
    assert_null(unreg_change(f, "g", "x:1", 1));
    /* the last two go: the first tells the last, the last tells nobody */
    expect_change(unreg_change(f, "g", "s1:1", 1), 2, "s2:1", "s1:1", NULL, "s2:1");
    assert_null(unreg_change(f, "g", "s2:1", 2));
    /* alone under a lower id (a slave promoted at its address): told itself */
    assert_null(reg_change(f, "solo", "p:1", 1, false, "p:2"));
    expect_change(reg_change(f, "solo", "p:1", 0, false, "p:2"), 0, "p:1", NULL, "p:2", "p:1");
}

/* Commits registration a (with no failure). */
static void registered(fx_t *f, const ns_register_args_t *a)
{
    ns_txn_t *t = NULL;
    ns_register_result_t res;
    begin(f, &t);
    assert_int_equal(ns_registry_register(f->reg, t, a, &res), NS_OK);
    ns_register_result_free(&res);
    commit(f, t);
}

/* Runs a once per strdup it makes, that call failing, in a transaction then
 * aborted: each run must answer NS_ENOMEM with an empty result. Then once
 * with none failing, which must succeed: its result goes to *ok. Returns the
 * number of calls. */
static int each_copy_fails(fx_t *f, const ns_register_args_t *a, ns_register_result_t *ok)
{
    for (int k = 1;; k++) {
        ns_txn_t *t = NULL;
        ns_register_result_t res;
        begin(f, &t);
        strdup_calls = 0;
        strdup_fail_at = k;
        int rc = ns_registry_register(f->reg, t, a, &res);
        strdup_fail_at = 0;
        ns_txn_abort(t);
        if (strdup_calls < k) { /* no call failed: the clean run */
            assert_int_equal(rc, NS_OK);
            *ok = res;
            return k - 1;
        }
        if (rc != NS_ENOMEM)
            fail_msg("strdup call %d of the registration failed, and it answered %s", k,
                     ns_strerror(rc));
        assert_null(res.master_addr);
        assert_null(res.ha_addr);
        assert_null(res.minid_change);
    }
}

/* A first registration copies the broker's name, its cluster and its zone
 * (a group must not be stored without the zone it was registered in). */
static void test_nomem_first_registration_with_zone(void **state)
{
    fx_t *f = *state;
    ns_register_args_t a;
    ns_register_result_t res;
    args(f, &a, "broker-a", "10.0.0.1:10911", 0);
    a.zone_name = "zone-a";
    assert_int_equal(each_copy_fails(f, &a, &res), 3);
    ns_register_result_free(&res);
}

/* A slave copies its master's address and HA address into its reply. */
static void test_nomem_slave_learns_master(void **state)
{
    fx_t *f = *state;
    ns_register_args_t a;
    ns_register_result_t res;
    args(f, &a, "broker-a", "10.0.0.1:10911", 0);
    a.ha_addr = "10.0.0.1:10912";
    registered(f, &a);
    args(f, &a, "broker-a", "10.0.0.2:10911", 1);
    assert_int_equal(each_copy_fails(f, &a, &res), 2);
    assert_string_equal(res.master_addr, "10.0.0.1:10911");
    assert_string_equal(res.ha_addr, "10.0.0.1:10912");
    ns_register_result_free(&res);
}

/* An id below the group's smallest describes the 905: name, address, HA. */
static void test_nomem_lower_id_describes_notification(void **state)
{
    fx_t *f = *state;
    ns_register_args_t a;
    ns_register_result_t res;
    args(f, &a, "broker-a", "10.0.0.3:10911", 2);
    registered(f, &a);
    args(f, &a, "broker-a", "10.0.0.2:10911", 1);
    a.ha_addr = "10.0.0.2:10912";
    assert_int_equal(each_copy_fails(f, &a, &res), 3);
    assert_non_null(res.minid_change);
    assert_string_equal(res.minid_change->ha_broker_addr, "10.0.0.2:10912");
    ns_register_result_free(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register_materialises_every_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unchanged_and_slave, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_perm_counts_and_reencodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unregister_is_fenced_by_broker_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unregister_names_the_registered_broker, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_address_moves_to_another_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_group_removed_between_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_kept_to_retention, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_and_register_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_then_mark_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_min_broker_id_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nomem_first_registration_with_zone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nomem_slave_learns_master, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nomem_lower_id_describes_notification, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
