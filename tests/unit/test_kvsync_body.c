/* test_kvsync_body.c - the NS_KV_SYNC_GET bodies (include/ns/kvsync.h):
 * what a server answers decodes back; a peer's garbage, wrong states,
 * versions that do not parse, tombstones without a version and bodies
 * longer than asked are refused whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ns/err.h"
#include "ns/kvsync.h"

static int decode(const char *body, size_t max)
{
    ns_kvsync_entry_t *e = NULL;
    size_t n = 0;
    int rc = ns_kvsync_reply_decode((const uint8_t *)body, strlen(body), max, &e, &n);
    ns_kvsync_entries_free(e, n);
    return rc;
}

static void test_round_trip(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    const char *ns[] = {"N", "M\"x"}, *key[] = {"k", "\xc3\xa9"};
    assert_int_equal(ns_kvsync_keys_encode(&b, ns, key, 2), NS_OK);
    ns_kvsync_entry_t *k = NULL;
    size_t n = 0;
    assert_int_equal(ns_kvsync_keys_decode(b.data, b.len, &k, &n), NS_OK);
    assert_int_equal(n, 2);
    assert_string_equal(k[1].ns, "M\"x");
    assert_string_equal(k[1].key, "\xc3\xa9");
    ns_buf_reset(&b);
    ns_kvsync_entry_t out[3] = {
        {"N", "k", "va\"l", NS_KVSYNC_VALUE, {0x10000, 7, false}},
        {"N", "d", NULL, NS_KVSYNC_DELETED, {0x20000, 8, true}},
        {"N", "a", NULL, NS_KVSYNC_ABSENT, {0, 0, false}},
    };
    for (int i = 0; i < 3; i++)
        assert_int_equal(
            ns_kvsync_reply_entry(&b, i == 0, &out[i], out[i].value ? strlen(out[i].value) : 0),
            NS_OK);
    assert_int_equal(ns_kvsync_reply_end(&b, true), NS_OK);
    ns_kvsync_entry_t *e = NULL;
    assert_int_equal(ns_kvsync_reply_decode(b.data, b.len, 3, &e, &n), NS_OK);
    assert_int_equal(n, 3);
    assert_string_equal(e[0].value, "va\"l");
    assert_true(e[0].ver.hlc == 0x10000 && e[0].ver.server == 7 && !e[0].ver.deleted);
    assert_true(e[1].state == NS_KVSYNC_DELETED && e[1].ver.deleted && e[1].value == NULL);
    assert_true(e[2].state == NS_KVSYNC_ABSENT);
    ns_kvsync_entries_free(e, n);
    /* more entries than asked for: refused */
    assert_int_equal(ns_kvsync_reply_decode(b.data, b.len, 2, &e, &n), NS_EINVAL);
    assert_null(e);
    ns_kvsync_entries_free(k, 2);
    ns_buf_free(&b);
}

static void test_garbage_refused(void **state)
{
    (void)state;
    const char *v = "\"0000000000010000.0000000000000007\"";
    char buf[512];
    assert_int_equal(decode("", 4), NS_EINVAL);
    assert_int_equal(decode("not json", 4), NS_EINVAL);
    assert_int_equal(decode("{\"entries\":[]}", 4), NS_EINVAL);
    assert_int_equal(decode("{\"entries\":{}}", 4), NS_EINVAL);
    assert_int_equal(decode("{\"entries\":[1]}", 4), NS_EINVAL);
    /* an unknown state */
    snprintf(
        buf, sizeof buf,
        "{\"entries\":[{\"namespace\":\"N\",\"key\":\"k\",\"state\":\"maybe\",\"version\":%s}]}",
        v);
    assert_int_equal(decode(buf, 4), NS_EINVAL);
    /* a value without its value, or a value where none belongs */
    snprintf(
        buf, sizeof buf,
        "{\"entries\":[{\"namespace\":\"N\",\"key\":\"k\",\"state\":\"value\",\"version\":%s}]}",
        v);
    assert_int_equal(decode(buf, 4), NS_EINVAL);
    snprintf(
        buf, sizeof buf,
        "{\"entries\":[{\"namespace\":\"N\",\"key\":\"k\",\"state\":\"deleted\",\"version\":%s,"
        "\"value\":\"x\"}]}",
        v);
    assert_int_equal(decode(buf, 4), NS_EINVAL);
    snprintf(buf, sizeof buf,
             "{\"entries\":[{\"namespace\":\"N\",\"key\":\"k\",\"state\":\"value\",\"version\":%s,"
             "\"value\":5}]}",
             v);
    assert_int_equal(decode(buf, 4), NS_EINVAL);
    /* versions that do not parse; a tombstone at hlc 0 */
    assert_int_equal(decode("{\"entries\":[{\"namespace\":\"N\",\"key\":\"k\",\"state\":\"value\","
                            "\"version\":\"12\",\"value\":\"x\"}]}",
                            4),
                     NS_EINVAL);
    assert_int_equal(
        decode("{\"entries\":[{\"namespace\":\"N\",\"key\":\"k\",\"state\":\"deleted\","
               "\"version\":\"0000000000000000.0000000000000007\"}]}",
               4),
        NS_EINVAL);
    /* an absent entry with a version; a missing key */
    snprintf(
        buf, sizeof buf,
        "{\"entries\":[{\"namespace\":\"N\",\"key\":\"k\",\"state\":\"absent\",\"version\":%s}]}",
        v);
    assert_int_equal(decode(buf, 4), NS_EINVAL);
    assert_int_equal(decode("{\"entries\":[{\"namespace\":\"N\",\"state\":\"absent\"}]}", 4),
                     NS_EINVAL);
    /* the same, well formed */
    assert_int_equal(
        decode("{\"entries\":[{\"namespace\":\"N\",\"key\":\"k\",\"state\":\"absent\"}]}", 4),
        NS_OK);
}

static void test_request_bounds(void **state)
{
    (void)state;
    ns_kvsync_entry_t *k = NULL;
    size_t n = 0;
    ns_buf_t b = NS_BUF_INIT;
    const char *ns[NS_KVSYNC_MAX_KEYS + 1], *key[NS_KVSYNC_MAX_KEYS + 1];
    for (int i = 0; i <= NS_KVSYNC_MAX_KEYS; i++)
        ns[i] = key[i] = "x";
    assert_int_equal(ns_kvsync_keys_encode(&b, ns, key, NS_KVSYNC_MAX_KEYS + 1), NS_OK);
    assert_int_equal(ns_kvsync_keys_decode(b.data, b.len, &k, &n), NS_EINVAL);
    const char *bad[] = {"{}", "{\"entries\":[]}", "{\"entries\":[[\"a\"]]}",
                         "{\"entries\":[[\"a\",1]]}", "{\"entries\":[[\"a\",\"b\",\"c\"]]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(ns_kvsync_keys_decode((const uint8_t *)bad[i], strlen(bad[i]), &k, &n),
                         NS_EINVAL);
    ns_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_garbage_refused),
        cmocka_unit_test(test_request_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
