/* test_seed_page.c - the NS_SEED_PAGE bodies (include/ns/seed.h): a
 * request and a page of every section as the peer writes them decode back
 * item for item; cursors order as the store's keys; garbage, items of the
 * wrong shape, inexact numbers, a bad digest, a next cursor with no item
 * and more items than allowed are refused whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ns/err.h"
#include "ns/seed.h"

static const ns_seed_info_t info = {"0123456789abcdef0123456789abcdef", 42, 5000, 120000, 0};

static int decode(const char *body, ns_seed_section_t s, size_t max)
{
    ns_seed_page_t p;
    int rc = ns_seed_page_decode((const uint8_t *)body, strlen(body), s, max, &p);
    ns_seed_page_free(&p);
    return rc;
}

static void test_request_round_trip(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    ns_seed_request_t r = {NS_SEED_QUEUES, {"Topic\"A", "broker-a"}, 1 << 20}, d;
    assert_int_equal(ns_seed_request_encode(&b, &r), NS_OK);
    assert_int_equal(ns_seed_request_decode(b.data, b.len, &d), NS_OK);
    assert_int_equal(d.section, NS_SEED_QUEUES);
    assert_string_equal(d.after.a, "Topic\"A");
    assert_string_equal(d.after.b, "broker-a");
    assert_int_equal(d.max_bytes, 1 << 20);
    ns_seed_cursor_free(&d.after);
    /* the first page: no cursor; groups' cursor has one name */
    ns_seed_request_t g = {NS_SEED_GROUPS, {NULL, NULL}, 10};
    ns_buf_reset(&b);
    assert_int_equal(ns_seed_request_encode(&b, &g), NS_OK);
    assert_int_equal(ns_seed_request_decode(b.data, b.len, &d), NS_OK);
    assert_null(d.after.a);
    ns_buf_free(&b);
    static const char *const bad[] = {
        "",
        "{",
        "{\"section\":\"nope\",\"maxBytes\":1}",
        "{\"section\":\"kv\"}",
        "{\"section\":\"kv\",\"maxBytes\":0}",
        "{\"section\":\"kv\",\"maxBytes\":1.5}",
        "{\"section\":\"kv\",\"maxBytes\":1,\"after\":[\"a\"]}",
        "{\"section\":\"groups\",\"maxBytes\":1,\"after\":[\"a\",\"b\"]}",
        "{\"section\":\"kv\",\"maxBytes\":1,\"after\":[\"a\",2]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(ns_seed_request_decode((const uint8_t *)bad[i], strlen(bad[i]), &d),
                         NS_EINVAL);
}

/* A page of section s with the items written by fill, and next. */
static void page(ns_buf_t *b, void (*fill)(ns_buf_t *), const ns_seed_cursor_t *next)
{
    ns_buf_reset(b);
    assert_int_equal(ns_seed_reply_begin(b, &info), NS_OK);
    fill(b);
    assert_int_equal(ns_seed_reply_end(b, next), NS_OK);
}

static void fill_groups(ns_buf_t *b)
{
    ns_seed_item_begin(b, true);
    ns_seed_item_str(b, "broker-a", true);
    ns_seed_item_str(b, "C1", true);
    ns_seed_item_str(b, NULL, true);
    ns_seed_item_bool(b, true, true);
    ns_seed_item_raw(b, "[[0,\"10.0.0.1:10911\"],[1,\"10.0.0.2:10911\"]]", false);
    ns_seed_item_end(b);
    ns_seed_item_begin(b, false);
    ns_seed_item_str(b, "broker-b", true);
    ns_seed_item_str(b, "C1", true);
    ns_seed_item_str(b, "zone1", true);
    ns_seed_item_bool(b, false, true);
    ns_seed_item_raw(b, "[]", false);
    ns_seed_item_end(b);
}

static void fill_live(ns_buf_t *b)
{
    ns_seed_item_begin(b, true);
    ns_seed_item_str(b, "C1", true);
    ns_seed_item_str(b, "10.0.0.1:10911", true);
    ns_seed_item_str(b, "broker-a", true);
    ns_seed_item_int(b, 0, true);
    ns_seed_item_str(b, NULL, true);
    ns_seed_item_int(b, 9007199254740991LL, true); /* the largest exact integer */
    ns_seed_item_int(b, -1, true);
    ns_seed_item_int(b, 1700000000000LL, true);
    ns_seed_item_int(b, 120000, true);
    ns_seed_item_raw(b, "[\"f1\",\"f2\"]", false);
    ns_seed_item_end(b);
}

static void fill_kv(ns_buf_t *b)
{
    ns_seed_item_begin(b, true);
    ns_seed_item_str(b, "ORDER_TOPIC_CONFIG", true);
    ns_seed_item_str(b, "T\xc3\xa9", true);
    ns_seed_item_str(b, "broker-a:4;\n\"q\"", true);
    ns_seed_item_str(b, "0000000000010000.0000000000000007", false);
    ns_seed_item_end(b);
}

static void fill_none(ns_buf_t *b)
{
    (void)b;
}

static void test_pages_round_trip(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    ns_seed_page_t p;
    ns_seed_cursor_t next = {"broker-b", NULL};

    page(&b, fill_groups, &next);
    assert_int_equal(ns_seed_page_decode(b.data, b.len, NS_SEED_GROUPS, 10, &p), NS_OK);
    assert_string_equal(p.info.digest, info.digest);
    assert_int_equal(p.info.leaves, 42);
    assert_int_equal(p.info.grace_ms, 120000);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.items[0].s[0], "broker-a");
    assert_null(p.items[0].s[2]);
    assert_true(p.items[0].flag);
    assert_int_equal(p.items[0].n_list, 2);
    assert_int_equal(p.items[0].ids[1], 1);
    assert_string_equal(p.items[0].list[1], "10.0.0.2:10911");
    assert_string_equal(p.items[1].s[2], "zone1");
    assert_int_equal(p.items[1].n_list, 0);
    assert_string_equal(p.next.a, "broker-b");
    assert_null(p.next.b);
    ns_seed_page_free(&p);

    page(&b, fill_live, NULL);
    assert_int_equal(ns_seed_page_decode(b.data, b.len, NS_SEED_LIVE, 10, &p), NS_OK);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.items[0].s[2], "broker-a");
    assert_null(p.items[0].s[3]);
    assert_int_equal(p.items[0].n[1], 9007199254740991LL);
    assert_int_equal(p.items[0].n[2], -1);
    assert_int_equal(p.items[0].n[4], 120000);
    assert_int_equal(p.items[0].n_list, 2);
    assert_string_equal(p.items[0].list[1], "f2");
    assert_null(p.next.a);
    ns_seed_page_free(&p);

    page(&b, fill_kv, NULL);
    assert_int_equal(ns_seed_page_decode(b.data, b.len, NS_SEED_KV, 10, &p), NS_OK);
    assert_string_equal(p.items[0].s[1], "T\xc3\xa9");
    assert_string_equal(p.items[0].s[2], "broker-a:4;\n\"q\"");
    ns_seed_page_free(&p);

    /* an empty last page */
    page(&b, fill_none, NULL);
    assert_int_equal(ns_seed_page_decode(b.data, b.len, NS_SEED_MEMBERS, 10, &p), NS_OK);
    assert_int_equal(p.n, 0);
    ns_seed_page_free(&p);
    /* a page of one section is not one of another */
    page(&b, fill_kv, NULL);
    assert_int_equal(ns_seed_page_decode(b.data, b.len, NS_SEED_QUEUES, 10, &p), NS_EINVAL);
    ns_buf_free(&b);
}

#define HEAD                                                                                       \
    "{\"digest\":\"0123456789abcdef0123456789abcdef\",\"leaves\":1,\"uptimeMillis\":1,"            \
    "\"graceMillis\":1,\"unconfirmed\":0,"

static void test_garbage_refused(void **state)
{
    (void)state;
    assert_int_equal(decode(HEAD "\"items\":[[\"t\",\"b\",6,4,4,0]]}", NS_SEED_QUEUES, 10), NS_OK);
    static const char *const bad[] = {
        "",
        "{",
        "[]",
        HEAD "\"items\":[[\"t\",\"b\",6,4,4,0]]",                        /* cut */
        HEAD "\"items\":[[\"t\",\"b\",6,4,4]]}",                         /* short item */
        HEAD "\"items\":[[\"t\",\"b\",6,4,4,0,1]]}",                     /* long item */
        HEAD "\"items\":[[\"t\",null,6,4,4,0]]}",                        /* null name */
        HEAD "\"items\":[[\"t\",\"b\",6.5,4,4,0]]}",                     /* inexact */
        HEAD "\"items\":[[\"t\",\"b\",1e300,4,4,0]]}",                   /* too large */
        HEAD "\"items\":[[\"t\",\"b\",\"6\",4,4,0]]}",                   /* a string */
        HEAD "\"items\":{}}",                                            /* not a list */
        HEAD "\"items\":[],\"next\":[\"t\",\"b\"]}",                     /* next, no item */
        HEAD "\"items\":[[\"t\",\"b\",6,4,4,0]],\"next\":[\"t\"]}",      /* cursor length */
        HEAD "\"items\":[[\"t\",\"b\",6,4,4,0],[\"u\",\"b\",6,4,4,0]]}", /* over max */
        "{\"digest\":\"xyz\",\"leaves\":1,\"uptimeMillis\":1,\"graceMillis\":1,"
        "\"unconfirmed\":0,\"items\":[]}",                                /* digest */
        "{\"digest\":\"0123456789abcdef0123456789abcdef\",\"items\":[]}", /* no info */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t max = strstr(bad[i], "\"u\"") ? 1 : 10;
        if (decode(bad[i], NS_SEED_QUEUES, max) != NS_EINVAL)
            fail_msg("accepted: %s", bad[i]);
    }
    /* KV versions and group pairs are checked too */
    assert_int_equal(decode(HEAD "\"items\":[[\"n\",\"k\",\"v\",\"nope\"]]}", NS_SEED_KV, 10),
                     NS_EINVAL);
    assert_int_equal(decode(HEAD "\"items\":[[\"b\",\"c\",null,true,[[0]]]]}", NS_SEED_GROUPS, 10),
                     NS_EINVAL);
    assert_int_equal(decode(HEAD "\"items\":[[\"b\",\"c\",null,1,[]]]}", NS_SEED_GROUPS, 10),
                     NS_EINVAL);
}

static void test_cursor_order(void **state)
{
    (void)state;
    ns_seed_cursor_t none = {NULL, NULL}, a = {"a", "z"}, ab = {"ab", ""}, a2 = {"a", "zz"};
    assert_true(ns_seed_cursor_cmp(&none, &a) < 0);
    assert_true(ns_seed_cursor_cmp(&a, &none) > 0);
    assert_int_equal(ns_seed_cursor_cmp(&none, &none), 0);
    assert_true(ns_seed_cursor_cmp(&a, &ab) < 0); /* "a\0z" < "ab\0" as the store orders */
    assert_true(ns_seed_cursor_cmp(&a, &a2) < 0);
    assert_int_equal(ns_seed_cursor_cmp(&a2, &a2), 0);
    assert_int_equal(ns_seed_cursor_len(NS_SEED_GROUPS), 1);
    assert_int_equal(ns_seed_cursor_len(NS_SEED_KV), 2);
    assert_null(ns_seed_section_name(NS_SEED_SECTIONS));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_round_trip),
        cmocka_unit_test(test_pages_round_trip),
        cmocka_unit_test(test_garbage_refused),
        cmocka_unit_test(test_cursor_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
