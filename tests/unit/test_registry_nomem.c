/* test_registry_nomem.c - a registration whose copy of a string fails
 * answers NS_ENOMEM, never NS_OK with the string left out (a group stored
 * without its zone, a slave answered without its master's HA address).
 *
 * store/registry.c is compiled into this test with strdup replaced by one
 * that fails on its n-th call; each registration is run once per call it
 * makes, failing that call, in a write transaction that is then aborted, so
 * every run starts from the same store. */
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
    ns_topic_config_t topics[2]; /* two: one alone would be an increment */
    ns_regbody_t body;
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = nstest_tmpdir("registry_nomem");
    ns_store_opts_t o = {f->dir, 8u << 20, 64u << 20, NS_SYNC_NOSYNC, false, true, 0};
    char err[256];
    assert_int_equal(ns_store_open(&o, &f->store, err, sizeof err), NS_OK);
    assert_int_equal(ns_registry_new(&f->reg), NS_OK);
    static char t1[] = "TopicA", t2[] = "TopicB";
    f->topics[0] = (ns_topic_config_t){t1, 4, 4, 6, 0};
    f->topics[1] = (ns_topic_config_t){t2, 8, 8, 6, 0};
    f->body.topics = f->topics;
    f->body.n_topics = 2;
    f->body.data_version = (ns_dataversion_t){1, 0, 1000};
    strdup_fail_at = 0;
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

static void args(fx_t *f, ns_register_args_t *a, const char *addr, int64_t id, const char *ha,
                 const char *zone)
{
    memset(a, 0, sizeof *a);
    a->cluster = "DefaultCluster";
    a->addr = addr;
    a->broker_name = "broker-a";
    a->broker_id = id;
    a->ha_addr = ha;
    a->zone_name = zone;
    a->heartbeat_timeout_ms = 30000;
    a->now_ms = 1000;
    a->body = &f->body;
}

/* Registers a with no failure and commits it. */
static void registered(fx_t *f, const ns_register_args_t *a)
{
    ns_txn_t *t = NULL;
    ns_register_result_t res;
    strdup_fail_at = 0;
    assert_int_equal(ns_txn_begin(f->store, true, &t), NS_OK);
    ns_registry_batch_reset(f->reg);
    assert_int_equal(ns_registry_register(f->reg, t, a, &res), NS_OK);
    ns_register_result_free(&res);
    assert_int_equal(ns_registry_before_commit(f->reg, t), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
}

/* Runs a once per strdup it makes, that call failing, and checks each run
 * answers NS_ENOMEM with an empty result; then once with none failing, which
 * must succeed. Returns the number of calls, and the clean run's result. */
static int each_copy_fails(fx_t *f, const ns_register_args_t *a, ns_register_result_t *ok)
{
    for (int k = 1;; k++) {
        ns_txn_t *t = NULL;
        ns_register_result_t res;
        strdup_calls = 0;
        strdup_fail_at = k;
        assert_int_equal(ns_txn_begin(f->store, true, &t), NS_OK);
        ns_registry_batch_reset(f->reg);
        int rc = ns_registry_register(f->reg, t, a, &res);
        ns_txn_abort(t);
        strdup_fail_at = 0;
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

/* A first registration copies the broker's name, its cluster and its zone. */
static void test_first_registration_with_zone(void **state)
{
    fx_t *f = *state;
    ns_register_args_t a;
    ns_register_result_t res;
    args(f, &a, "10.0.0.1:10911", 0, "", "zone-a");
    assert_int_equal(each_copy_fails(f, &a, &res), 3);
    ns_register_result_free(&res);
}

/* A slave copies its master's address and HA address into the reply. */
static void test_slave_learns_master(void **state)
{
    fx_t *f = *state;
    ns_register_args_t a;
    ns_register_result_t res;
    args(f, &a, "10.0.0.1:10911", 0, "10.0.0.1:10912", NULL);
    registered(f, &a);
    args(f, &a, "10.0.0.2:10911", 1, "10.0.0.2:10912", NULL);
    assert_int_equal(each_copy_fails(f, &a, &res), 2);
    assert_string_equal(res.master_addr, "10.0.0.1:10911");
    assert_string_equal(res.ha_addr, "10.0.0.1:10912");
    ns_register_result_free(&res);
}

/* An id below the group's smallest describes the 905: name, address, HA. */
static void test_lower_id_describes_notification(void **state)
{
    fx_t *f = *state;
    ns_register_args_t a;
    ns_register_result_t res;
    args(f, &a, "10.0.0.3:10911", 2, "", NULL);
    registered(f, &a);
    args(f, &a, "10.0.0.2:10911", 1, "10.0.0.2:10912", NULL);
    assert_int_equal(each_copy_fails(f, &a, &res), 3);
    assert_non_null(res.minid_change);
    assert_string_equal(res.minid_change->ha_broker_addr, "10.0.0.2:10912");
    ns_register_result_free(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_first_registration_with_zone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slave_learns_master, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lower_id_describes_notification, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
