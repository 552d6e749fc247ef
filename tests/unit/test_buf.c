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
    expect_dec(-7, "-7");
    expect_dec(10, "10");
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
        cmocka_unit_test(test_dec_write_in_place),
        cmocka_unit_test(test_printf_one_and_two_passes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
