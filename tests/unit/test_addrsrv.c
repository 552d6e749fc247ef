/* test_addrsrv.c - the address server's pure parts (ops/addrsrv.h): the
 * paths Java's pollers ask, this server's address, and the list answered
 * from the peers' state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ns/err.h"
#include "ops/addrsrv.h"

static void test_paths(void **state)
{
    (void)state;
    assert_true(ns_addrsrv_path("/rocketmq/nsaddr"));     /* the default subgroup */
    assert_true(ns_addrsrv_path("/rocketmq/nsaddr-u1"));  /* with a unit name */
    assert_true(ns_addrsrv_path("/rocketmq/othergroup")); /* any subgroup: one fleet */
    assert_false(ns_addrsrv_path("/rocketmq/"));
    assert_false(ns_addrsrv_path("/rocketmq"));
    assert_false(ns_addrsrv_path("/rocketmq/nsaddr/x"));
    assert_false(ns_addrsrv_path("/metrics"));
    assert_false(ns_addrsrv_path("/x/rocketmq/nsaddr"));
    assert_false(ns_addrsrv_path(NULL));
}

static void test_self_pick(void **state)
{
    (void)state;
    char out[NS_ADDRSRV_ADDR_MAX];
    assert_int_equal(ns_addrsrv_self_pick("ns1.example:9876", "0.0.0.0", 1234, out, sizeof out),
                     NS_OK);
    assert_string_equal(out, "ns1.example:9876"); /* advertised wins, port and all */
    assert_int_equal(ns_addrsrv_self_pick("", "127.0.0.1", 1234, out, sizeof out), NS_OK);
    assert_string_equal(out, "127.0.0.1:1234");
    assert_int_equal(ns_addrsrv_self_pick(NULL, "::1", 1234, out, sizeof out), NS_OK);
    assert_string_equal(out, "[::1]:1234");
    /* a wildcard bind: some interface address (or loopback), with the port */
    assert_int_equal(ns_addrsrv_self_pick(NULL, "0.0.0.0", 1234, out, sizeof out), NS_OK);
    assert_non_null(strstr(out, ":1234"));
    assert_null(strstr(out, "0.0.0.0"));
    assert_int_equal(ns_addrsrv_self_pick("nohost", "0.0.0.0", 1, out, sizeof out), NS_EINVAL);
    assert_int_equal(ns_addrsrv_self_pick("h:0", "0.0.0.0", 1, out, sizeof out), NS_EINVAL);
    assert_int_equal(ns_addrsrv_self_pick(NULL, "127.0.0.1", 1234, out, 8), NS_EINVAL);
}

static ns_peer_view_t peer(const char *addr, int self, bool checked, bool up)
{
    ns_peer_view_t v;
    memset(&v, 0, sizeof v);
    snprintf(v.addr, sizeof v.addr, "%s", addr);
    v.self = self;
    v.checked = checked;
    v.up = up;
    return v;
}

static void expect_body(const char *self, int port, const ns_peer_view_t *v, size_t n,
                        const char *want)
{
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_addrsrv_body(self, port, v, n, &b), NS_OK);
    assert_string_equal((const char *)b.data, want);
    ns_buf_free(&b);
}

static void test_body(void **state)
{
    (void)state;
    /* no peers: this server alone */
    expect_body("10.0.0.1:9876", 9876, NULL, 0, "10.0.0.1:9876");
    /* peers up or not checked yet are listed, down ones left out */
    ns_peer_view_t v[] = {peer("10.0.0.2:9876", 0, true, true),
                          peer("10.0.0.3:9876", 0, true, false),
                          peer("10.0.0.4:9876", -1, false, false)};
    expect_body("10.0.0.1:9876", 9876, v, 3, "10.0.0.1:9876;10.0.0.2:9876;10.0.0.4:9876");
    /* the whole list given to every server, itself included: its own order,
     * itself once, whatever the checks say of it */
    ns_peer_view_t w[] = {peer("10.0.0.2:9876", 0, true, true),
                          peer("10.0.0.1:9876", 1, false, false),
                          peer("10.0.0.3:9876", 0, true, true)};
    expect_body("10.0.0.1:9876", 9876, w, 3, "10.0.0.2:9876;10.0.0.1:9876;10.0.0.3:9876");
    /* before the checks know it: a loopback literal on our port is us */
    ns_peer_view_t x[] = {peer("127.0.0.1:5000", -1, false, false),
                          peer("127.0.0.1:5001", -1, true, false)};
    expect_body("127.0.0.1:5000", 5000, x, 2, "127.0.0.1:5000");
    /* a name the checks have not resolved yet on our port is not us; the
     * checks decide it */
    ns_peer_view_t y[] = {peer("ns1.example:5000", -1, false, false)};
    expect_body("10.0.0.1:5000", 5000, y, 1, "10.0.0.1:5000;ns1.example:5000");
    ns_peer_view_t z[] = {peer("ns1.example:5000", 1, true, false)};
    expect_body("10.0.0.1:5000", 5000, z, 1, "ns1.example:5000");
    /* self named by its advertised host on our port */
    ns_peer_view_t s[] = {peer("10.0.0.2:9876", 0, true, true),
                          peer("10.0.0.1:9876", -1, false, false)};
    expect_body("10.0.0.1:9876", 9876, s, 2, "10.0.0.2:9876;10.0.0.1:9876");
    /* every peer down: still this server */
    ns_peer_view_t d[] = {peer("10.0.0.2:9876", 0, true, false)};
    expect_body("10.0.0.1:9876", 9876, d, 1, "10.0.0.1:9876");
    /* appends to what the buffer holds */
    ns_buf_t b = NS_BUF_INIT;
    ns_buf_append_str(&b, "x");
    assert_int_equal(ns_addrsrv_body("a:1", 1, v, 2, &b), NS_OK);
    assert_string_equal((const char *)b.data, "xa:1;10.0.0.2:9876");
    ns_buf_free(&b);
}

static void test_answer(void **state)
{
    (void)state;
    ns_addrsrv_t a;
    ns_buf_t b = NS_BUF_INIT;
    ns_addrsrv_init(&a);
    /* before listening: 503, which a Java poller ignores */
    assert_int_equal(ns_addrsrv_answer(&a, false, NULL, "http://h/rocketmq/nsaddr", "1.2.3.4", &b),
                     503);
    ns_buf_reset(&b);
    assert_int_equal(ns_addrsrv_set_self(&a, "", "127.0.0.1", 4321), NS_OK);
    for (int i = 0; i < NS_ADDRSRV_LOGGED + 3; i++) { /* more URLs than logged: no growth */
        char url[64];
        snprintf(url, sizeof url, "http://h/rocketmq/g%d", i);
        assert_int_equal(ns_addrsrv_answer(&a, true, NULL, url, "1.2.3.4", &b), 200);
        assert_string_equal((const char *)b.data, "127.0.0.1:4321");
        ns_buf_reset(&b);
    }
    assert_int_equal(a.n_logged, NS_ADDRSRV_LOGGED);
    ns_addrsrv_render(&a, &b);
    assert_non_null(strstr((const char *)b.data, "namesrv_address_server_requests_total 19\n"));
    ns_buf_free(&b);
    /* a bad advertisedAddress falls back to the bind address */
    assert_int_equal(ns_addrsrv_set_self(&a, "bad", "127.0.0.2", 7), NS_OK);
    assert_string_equal(a.self, "127.0.0.2:7");
    ns_addrsrv_close(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_self_pick),
        cmocka_unit_test(test_body),
        cmocka_unit_test(test_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
