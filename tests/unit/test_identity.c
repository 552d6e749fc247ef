/* test_identity.c - broker identity conflicts found at registration
 * (store/registry.c, on a real store): a brokerName already in another
 * cluster, an address registered under another brokerName, a
 * brokerName/brokerId held by another address. Each is reported with both
 * sides; with reject_identity_conflicts the registration writes nothing,
 * without it Java's last-writer-wins result is kept; a broker that
 * re-registers as it was is no conflict. */
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
#include "ns/store.h"

typedef struct {
    nstest_store_fx_t *fx;
    ns_registry_t *reg;
} fx_t;

static ns_topic_config_t topics[] = {{"TopicA", 4, 4, 6, 0}, {"TopicB", 8, 8, 6, 0}};

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    void *s = NULL;
    assert_non_null(f);
    assert_int_equal(nstest_store_fx_setup(&s, "identity", 0, 0), 0);
    f->fx = s;
    assert_int_equal(ns_registry_new(&f->reg), NS_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    void *s = f->fx;
    ns_registry_free(f->reg);
    nstest_store_fx_teardown(&s);
    free(f);
    return 0;
}

/* Registers (cluster, name, addr, id) in one write transaction; res is the
 * caller's to free. */
static void reg(fx_t *f, const char *cluster, const char *name, const char *addr, int64_t id,
                bool reject, ns_register_result_t *res)
{
    ns_regbody_t body;
    memset(&body, 0, sizeof body);
    body.topics = topics;
    body.n_topics = 2;
    body.data_version = (ns_dataversion_t){1, 0, 1000};
    ns_register_args_t a;
    memset(&a, 0, sizeof a);
    a.cluster = cluster;
    a.addr = addr;
    a.broker_name = name;
    a.broker_id = id;
    a.ha_addr = "";
    a.heartbeat_timeout_ms = 30000;
    a.now_ms = 1;
    a.reject_identity_conflicts = reject;
    a.body = &body;
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(f->fx->s, true, &t), NS_OK);
    ns_registry_batch_reset(f->reg);
    assert_int_equal(ns_registry_register(f->reg, t, &a, res), NS_OK);
    assert_int_equal(ns_registry_before_commit(f->reg, t), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
}

/* The address the store maps (name, id) to, or "" (static buffer). */
static const char *addr_of(fx_t *f, const char *name, int64_t id)
{
    static char out[64];
    ns_txn_t *t = NULL;
    ns_group_rec_t g;
    out[0] = 0;
    assert_int_equal(ns_txn_begin(f->fx->s, false, &t), NS_OK);
    if (ns_group_get(t, name, &g) == NS_OK) {
        const char *a = ns_group_addr_of(&g, id);
        snprintf(out, sizeof out, "%s", a ? a : "");
        ns_group_rec_free(&g);
    }
    ns_txn_abort(t);
    return out;
}

static void expect(const ns_register_result_t *res, ns_identity_conflict_t k, const char *held)
{
    assert_int_equal(res->identity, k);
    assert_non_null(res->identity_detail);
    assert_non_null(strstr(res->identity_detail, ns_identity_conflict_name(k)));
    assert_non_null(strstr(res->identity_detail, held));
}

static void test_no_conflict(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    reg(f, "c1", "b1", "10.0.0.1:10911", 0, true, &res);
    assert_int_equal(res.identity, NS_IDENTITY_OK);
    assert_null(res.identity_detail);
    ns_register_result_free(&res);
    /* the same again, and a slave of the same group: no conflict */
    reg(f, "c1", "b1", "10.0.0.1:10911", 0, true, &res);
    assert_int_equal(res.identity, NS_IDENTITY_OK);
    ns_register_result_free(&res);
    reg(f, "c1", "b1", "10.0.0.2:10911", 1, true, &res);
    assert_int_equal(res.identity, NS_IDENTITY_OK);
    ns_register_result_free(&res);
}

static void test_name_in_two_clusters(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    reg(f, "c1", "b1", "10.0.0.1:10911", 0, false, &res);
    ns_register_result_free(&res);
    reg(f, "c2", "b1", "10.0.0.5:10911", 0, true, &res);
    expect(&res, NS_IDENTITY_NAME_IN_OTHER_CLUSTER, "\"heldByCluster\":\"c1\"");
    assert_true(res.identity_rejected);
    assert_non_null(strstr(res.identity_detail, "\"clusterName\":\"c2\""));
    ns_register_result_free(&res);
    assert_string_equal(addr_of(f, "b1", 0), "10.0.0.1:10911"); /* refused: nothing written */
    /* warn: reported, and the registration goes on as Java's would */
    reg(f, "c2", "b1", "10.0.0.5:10911", 0, false, &res);
    expect(&res, NS_IDENTITY_NAME_IN_OTHER_CLUSTER, "c1");
    assert_false(res.identity_rejected);
    ns_register_result_free(&res);
    assert_string_equal(addr_of(f, "b1", 0), "10.0.0.5:10911");
}

static void test_addr_under_two_names(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    reg(f, "c1", "b1", "10.0.0.1:10911", 0, false, &res);
    ns_register_result_free(&res);
    reg(f, "c1", "b2", "10.0.0.1:10911", 0, true, &res);
    expect(&res, NS_IDENTITY_ADDR_UNDER_OTHER_NAME, "\"heldByBrokerName\":\"b1\"");
    assert_true(res.identity_rejected);
    ns_register_result_free(&res);
    assert_string_equal(addr_of(f, "b2", 0), "");
    reg(f, "c1", "b2", "10.0.0.1:10911", 0, false, &res);
    expect(&res, NS_IDENTITY_ADDR_UNDER_OTHER_NAME, "b1");
    ns_register_result_free(&res);
    assert_string_equal(addr_of(f, "b2", 0), "10.0.0.1:10911");
}

static void test_id_at_two_addrs(void **state)
{
    fx_t *f = *state;
    ns_register_result_t res;
    reg(f, "c1", "b1", "10.0.0.1:10911", 0, false, &res);
    ns_register_result_free(&res);
    reg(f, "c1", "b1", "10.0.0.9:10911", 0, true, &res);
    expect(&res, NS_IDENTITY_ID_AT_OTHER_ADDR, "\"heldByAddr\":\"10.0.0.1:10911\"");
    assert_true(res.identity_rejected);
    ns_register_result_free(&res);
    assert_string_equal(addr_of(f, "b1", 0), "10.0.0.1:10911");
    reg(f, "c1", "b1", "10.0.0.9:10911", 0, false, &res);
    expect(&res, NS_IDENTITY_ID_AT_OTHER_ADDR, "10.0.0.1:10911");
    ns_register_result_free(&res);
    assert_string_equal(addr_of(f, "b1", 0), "10.0.0.9:10911"); /* the last writer, as Java */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_conflict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_name_in_two_clusters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_addr_under_two_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_id_at_two_addrs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
