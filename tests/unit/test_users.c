/* test_users.c - the users table (store/users.c) on a fresh real store:
 * put/get/iterate/delete and what ns_user_validate refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/err.h"
#include "ns/store.h"

typedef struct {
    char *dir;
    ns_store_t *s;
} fx_t;

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof *fx);
    char err[256];
    fx->dir = nstest_tmpdir("users");
    ns_store_opts_t o = {fx->dir, 1 << 20, 64 << 20, NS_SYNC_NOSYNC, false, true, 0};
    if (fx->dir == NULL || ns_store_open(&o, &fx->s, err, sizeof err) != NS_OK)
        return -1;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    ns_store_close(fx->s);
    nstest_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

static ns_user_rec_t user(const char *ak, const char *sk, ns_role_t role)
{
    ns_user_rec_t u = {0};
    u.access_key = (char *)ak;
    u.secret = (char *)sk;
    u.role = role;
    u.enabled = true;
    u.allow = "";
    u.brokers = "";
    return u;
}

static int names_cb(const ns_user_rec_t *u, void *ctx)
{
    ns_buf_t *b = ctx;
    ns_buf_printf(b, "%s:%s:%d;", u->access_key, ns_role_name(u->role), u->enabled);
    return 0;
}

static void test_put_get_iter_del(void **state)
{
    fx_t *fx = *state;
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(fx->s, true, &t), NS_OK);
    ns_user_rec_t a = user("zed", "secret-z", NS_ROLE_CLIENT),
                  b = user("amy", "secret-a", NS_ROLE_BROKER);
    b.brokers = "C1/broker-a";
    b.allow = "10.0.0.0/8";
    b.enabled = false;
    b.created_ms = 5;
    b.updated_ms = 7;
    assert_int_equal(ns_user_put(t, &a), NS_OK);
    assert_int_equal(ns_user_put(t, &b), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);

    assert_int_equal(ns_txn_begin(fx->s, false, &t), NS_OK);
    ns_user_rec_t got;
    assert_int_equal(ns_user_get(t, "amy", &got), NS_OK);
    assert_string_equal(got.secret, "secret-a");
    assert_string_equal(got.brokers, "C1/broker-a");
    assert_string_equal(got.allow, "10.0.0.0/8");
    assert_int_equal(got.role, NS_ROLE_BROKER);
    assert_false(got.enabled);
    assert_int_equal(got.created_ms, 5);
    assert_int_equal(got.updated_ms, 7);
    ns_user_rec_free(&got);
    assert_int_equal(ns_user_get(t, "nobody", &got), NS_ENOTFOUND);
    ns_buf_t names = NS_BUF_INIT;
    assert_int_equal(ns_user_iter(t, names_cb, &names), NS_OK);
    assert_string_equal((const char *)names.data, "amy:broker:0;zed:client:1;");
    ns_buf_free(&names);
    ns_txn_abort(t);

    assert_int_equal(ns_txn_begin(fx->s, true, &t), NS_OK);
    assert_int_equal(ns_user_del(t, "zed"), NS_OK);
    assert_int_equal(ns_user_del(t, "zed"), NS_ENOTFOUND);
    assert_int_equal(ns_txn_commit(t), NS_OK);
}

static void test_validate(void **state)
{
    char err[160];
    ns_user_rec_t u = user("ok.key-1@x", "123456", NS_ROLE_ADMIN);
    assert_int_equal(ns_user_validate(&u, err, sizeof err), NS_OK);
    u.secret = "12345";
    assert_int_equal(ns_user_validate(&u, err, sizeof err), NS_EINVAL);
    assert_non_null(strstr(err, "secret"));
    u = user("bad key", "123456", NS_ROLE_ADMIN);
    assert_int_equal(ns_user_validate(&u, err, sizeof err), NS_EINVAL);
    u = user("", "123456", NS_ROLE_ADMIN);
    assert_int_equal(ns_user_validate(&u, err, sizeof err), NS_EINVAL);
    u = user("k", "123456", (ns_role_t)9);
    assert_int_equal(ns_user_validate(&u, err, sizeof err), NS_EINVAL);
    u = user("k", "123456", NS_ROLE_CLIENT);
    u.allow = "10.0.0.0/8; rm -rf";
    assert_int_equal(ns_user_validate(&u, err, sizeof err), NS_EINVAL);
    u.allow = "10.0.0.0/8, ::1";
    u.brokers = "C1/broker a";
    assert_int_equal(ns_user_validate(&u, err, sizeof err), NS_EINVAL);
    u.brokers = "C1/*,broker_b";
    assert_int_equal(ns_user_validate(&u, err, sizeof err), NS_OK);
    ns_role_t r;
    assert_int_equal(ns_role_parse("broker", &r), NS_OK);
    assert_int_equal(r, NS_ROLE_BROKER);
    assert_int_equal(ns_role_parse("root", &r), NS_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_get_iter_del, setup, teardown),
        cmocka_unit_test(test_validate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
