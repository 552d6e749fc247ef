/* test_buf.c - the growable byte buffer's formatters (src/base/buf.c): decimal
 * integers written without printf, and ns_buf_printf in one pass or two. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ns/buf.h"
#include "ns/err.h"

static void expect_dec(int64_t v, const char *want)
{
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_buf_append_str(&b, "x="), NS_OK);
    assert_int_equal(ns_buf_append_i64_dec(&b, v), NS_OK);
    char full[32];
    snprintf(full, sizeof full, "x=%s", want);
    assert_string_equal((const char *)b.data, full);
    assert_int_equal(b.len, strlen(full));
    ns_buf_free(&b);
}

static void test_i64_dec(void **state)
{
    (void)state;
    expect_dec(0, "0");
    expect_dec(7, "7");
    expect_dec(9, "9");
    expect_dec(-1, "-1");
    expect_dec(-7, "-7");
    expect_dec(10, "10");
    ns_buf_t b = NS_BUF_INIT; /* a single digit into no room, then into the last byte's */
    assert_int_equal(ns_buf_append_i64_dec(&b, 5), NS_OK);
    while (b.cap > b.len + 2)
        assert_int_equal(ns_buf_append_u8(&b, 'x'), NS_OK);
    assert_int_equal(ns_buf_append_i64_dec(&b, 3), NS_OK);
    assert_int_equal(ns_buf_append_i64_dec(&b, 4), NS_OK);
    assert_int_equal(b.data[0], '5');
    assert_memory_equal(b.data + b.len - 2, "34", 3);
    ns_buf_free(&b);
    expect_dec(1234567890123LL, "1234567890123");
    expect_dec(INT64_MAX, "9223372036854775807");
    expect_dec(INT64_MIN, "-9223372036854775808");
}

static void test_i64_dec_matches_printf(void **state)
{
    (void)state;
    uint64_t x = 88172645463325252ull; /* xorshift: a spread of magnitudes */
    for (int i = 0; i < 2000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int64_t v = (int64_t)(x >> (i % 64));
        if (i & 1)
            v = -v;
        char want[32];
        snprintf(want, sizeof want, "%lld", (long long)v);
        expect_dec(v, want);
    }
}

static void expect_parse(const char *s, int want_rc, int64_t want)
{
    int64_t v = 12345;
    assert_int_equal(ns_parse_i64(s, strlen(s), &v), want_rc);
    assert_true(v == (want_rc == NS_OK ? want : 12345));
}

/* Strict decimal: sign, digits, every int64 and nothing past it. */
static void test_parse_i64(void **state)
{
    (void)state;
    expect_parse("0", NS_OK, 0);
    expect_parse("7", NS_OK, 7);
    expect_parse("-7", NS_OK, -7);
    expect_parse("+42", NS_OK, 42);
    expect_parse("000123", NS_OK, 123);
    expect_parse("9223372036854775807", NS_OK, INT64_MAX);
    expect_parse("-9223372036854775808", NS_OK, INT64_MIN);
    expect_parse("9223372036854775808", NS_EINVAL, 0);
    expect_parse("-9223372036854775809", NS_EINVAL, 0);
    expect_parse("99999999999999999999", NS_EINVAL, 0);
    expect_parse("", NS_EINVAL, 0);
    expect_parse("-", NS_EINVAL, 0);
    expect_parse("+", NS_EINVAL, 0);
    expect_parse("1x", NS_EINVAL, 0);
    expect_parse(" 1", NS_EINVAL, 0);
    expect_parse("1.5", NS_EINVAL, 0);
    expect_parse("--1", NS_EINVAL, 0);
    expect_parse("0000000000000000000000000000001", NS_OK, 1); /* 31 characters */
    expect_parse("00000000000000000000000000000001", NS_EINVAL, 0);
    for (int64_t v = -1000; v <= 1000; v += 7) {
        char t[32];
        snprintf(t, sizeof t, "%lld", (long long)v);
        expect_parse(t, NS_OK, v);
    }
}

/* ns_dec_write writes exactly ns_dec_len bytes where it is told, around
 * every power of ten and the 32-bit boundary its two loops meet at. */
static void test_dec_write_in_place(void **state)
{
    (void)state;
    int64_t p10 = 1;
    for (int e = 0; e < 19; e++) {
        const int64_t vs[] = {p10 - 1, p10, p10 + 1, -p10, -(p10 - 1), (int64_t)UINT32_MAX + e - 9};
        p10 = e < 18 ? p10 * 10 : p10; /* 10^18 is the last power of ten an int64_t holds */
        for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
            char want[32];
            int n = snprintf(want, sizeof want, "%lld", (long long)vs[i]);
            uint8_t out[32];
            memset(out, '#', sizeof out);
            assert_int_equal(ns_dec_len(vs[i]), (size_t)n);
            ns_dec_write(out + 1, vs[i], (size_t)n);
            assert_memory_equal(out + 1, want, (size_t)n);
            assert_int_equal(out[0], '#');
            assert_int_equal(out[n + 1], '#');
        }
    }
}

static void test_printf_one_and_two_passes(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    /* empty buffer: no room, measured then written */
    assert_int_equal(ns_buf_printf(&b, "%s-%d", "abc", 42), NS_OK);
    assert_string_equal((const char *)b.data, "abc-42");
    assert_int_equal(b.len, 6);
    /* fits in the capacity left: written in one pass, still terminated */
    assert_true(b.cap > b.len + 4);
    assert_int_equal(ns_buf_printf(&b, "%c", 'z'), NS_OK);
    assert_string_equal((const char *)b.data, "abc-42z");
    /* does not fit: grows and the whole text arrives */
    char big[300];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = 0;
    assert_int_equal(ns_buf_printf(&b, "[%s]", big), NS_OK);
    assert_int_equal(b.len, 7 + 2 + 299);
    assert_int_equal(b.data[7], '[');
    assert_int_equal(b.data[b.len - 1], ']');
    assert_int_equal(b.data[b.len], 0);
    assert_int_equal(strspn((const char *)b.data + 8, "q"), 299);
    ns_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_i64_dec),
        cmocka_unit_test(test_i64_dec_matches_printf),
        cmocka_unit_test(test_parse_i64),
        cmocka_unit_test(test_dec_write_in_place),
        cmocka_unit_test(test_printf_one_and_two_passes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
