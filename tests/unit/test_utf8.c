/* test_utf8.c - strict UTF-8 and the escaping of shown text (ns/utf8.h),
 * against a reference written from RFC 3629's table of well-formed
 * sequences, and the JSON encoder's handling of invalid bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>
#include <cmocka.h>

#include "ns/buf.h"
#include "ns/err.h"
#include "ns/log.h"
#include "ns/utf8.h"

/* RFC 3629 table 3-7, row by row: lead range, second-byte range, total
 * length (following bytes 80..BF). */
static const struct {
    uint8_t lead_lo, lead_hi, second_lo, second_hi, len;
} rows[] = {
    {0xC2, 0xDF, 0x80, 0xBF, 2}, {0xE0, 0xE0, 0xA0, 0xBF, 3}, {0xE1, 0xEC, 0x80, 0xBF, 3},
    {0xED, 0xED, 0x80, 0x9F, 3}, {0xEE, 0xEF, 0x80, 0xBF, 3}, {0xF0, 0xF0, 0x90, 0xBF, 4},
    {0xF1, 0xF3, 0x80, 0xBF, 4}, {0xF4, 0xF4, 0x80, 0x8F, 4},
};

static size_t ref_seq(const uint8_t *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        if (s[0] < rows[r].lead_lo || s[0] > rows[r].lead_hi)
            continue;
        if (n < rows[r].len || s[1] < rows[r].second_lo || s[1] > rows[r].second_hi)
            return 0;
        for (size_t k = 2; k < rows[r].len; k++)
            if (s[k] < 0x80 || s[k] > 0xBF)
                return 0;
        return rows[r].len;
    }
    return 0;
}

static bool ref_valid(const uint8_t *s, size_t n)
{
    for (size_t i = 0, k; i < n; i += k)
        if ((k = ref_seq(s + i, n - i)) == 0)
            return false;
    return true;
}

/* Every sequence of up to three bytes, and four-byte sequences around
 * every boundary, against the reference; the validator's word-at-a-time
 * ASCII skip at every offset. */
static void test_valid_matches_reference(void **state)
{
    (void)state;
    uint8_t s[3];
    for (int b0 = 0; b0 < 256; b0++) {
        if (b0 > 0 && b0 < 0x7f)
            continue; /* one ASCII lead stands for all */
        for (int b1 = 0; b1 < 256; b1++)
            for (int b2 = 0; b2 < 256; b2++) {
                s[0] = (uint8_t)b0, s[1] = (uint8_t)b1, s[2] = (uint8_t)b2;
                for (size_t n = 1; n <= 3; n++)
                    if (ns_utf8_valid((const char *)s, n) != ref_valid(s, n))
                        fail_msg("%02x %02x %02x (%zu bytes)", s[0], s[1], s[2], n);
            }
    }
    static const uint8_t leads[] = {0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFF};
    for (size_t l = 0; l < sizeof leads; l++)
        for (int b1 = 0x70; b1 <= 0xC0; b1++)
            for (int b2 = 0x70; b2 <= 0xC0; b2 += 0x10)
                for (int b3 = 0x70; b3 <= 0xC0; b3 += 0x10) {
                    uint8_t q[4] = {leads[l], (uint8_t)b1, (uint8_t)b2, (uint8_t)b3};
                    assert_int_equal(ns_utf8_valid((const char *)q, 4), ref_valid(q, 4));
                }
    char text[40];
    for (size_t at = 0; at < 24; at++) {
        memset(text, 'a', sizeof text);
        text[at] = (char)0xC3;
        text[at + 1] = (char)0xA9; /* é */
        assert_true(ns_utf8_valid(text, 30));
        text[at + 1] = 'a'; /* truncated */
        assert_false(ns_utf8_valid(text, 30));
        assert_false(ns_utf8_valid(text, at + 1)); /* cut at the end */
    }
}

static void test_decode_and_problem(void **state)
{
    (void)state;
    uint32_t cp = 0;
    assert_int_equal(ns_utf8_decode((const uint8_t *)"\xe2\x80\xae", 3, &cp), 3);
    assert_int_equal(cp, 0x202E);
    assert_int_equal(ns_utf8_decode((const uint8_t *)"\xf4\x8f\xbf\xbf", 4, &cp), 4);
    assert_int_equal(cp, 0x10FFFF);
    assert_int_equal(ns_utf8_decode((const uint8_t *)"\xc2\x9b", 2, &cp), 2);
    assert_int_equal(cp, 0x9B);
    assert_null(ns_utf8_problem("caf\xc3\xa9", 5));
    assert_non_null(strstr(ns_utf8_problem("\xc0\xaf", 2), "overlong"));
    assert_non_null(strstr(ns_utf8_problem("\xe0\x80\xaf", 3), "overlong"));
    assert_non_null(strstr(ns_utf8_problem("\xf0\x80\x80\xaf", 4), "overlong"));
    assert_non_null(strstr(ns_utf8_problem("a\x80", 2), "stray continuation"));
    assert_non_null(strstr(ns_utf8_problem("\xed\xa0\x80", 3), "surrogate"));
    assert_non_null(strstr(ns_utf8_problem("\xed\xbf\xbf", 3), "surrogate"));
    assert_non_null(strstr(ns_utf8_problem("\xf4\x90\x80\x80", 4), "above U+10FFFF"));
    assert_non_null(strstr(ns_utf8_problem("\xf5\x80\x80\x80", 4), "above U+10FFFF"));
    assert_non_null(strstr(ns_utf8_problem("\xe2\x80", 2), "truncated"));
    assert_non_null(strstr(ns_utf8_problem("\xe2\x80x", 3), "truncated"));
    assert_non_null(strstr(ns_utf8_problem("\xff", 1), "never uses"));
    assert_true(ns_utf8_problem("x\xc3", 2) != NULL);
}

static void test_escape_text(void **state)
{
    (void)state;
    char out[128];
    /* C0 and DEL: \n \r \t or \xHH */
    assert_string_equal(ns_escape("a\nb\r\t\x1b[2J\x7f", 10, 0, out, sizeof out),
                        "a\\nb\\r\\t\\x1b[2J\\x7f");
    /* C1 (CSI U+009B), bidi override and isolate, line separator: \uHHHH */
    assert_string_equal(ns_escape("x\xc2\x9b"
                                  "31m",
                                  6, 0, out, sizeof out),
                        "x\\u009b31m");
    assert_string_equal(ns_escape("\xe2\x80\xae"
                                  "cod.exe",
                                  10, 0, out, sizeof out),
                        "\\u202ecod.exe");
    assert_string_equal(ns_escape("\xe2\x81\xa6z\xe2\x81\xa9", 7, 0, out, sizeof out),
                        "\\u2066z\\u2069");
    assert_string_equal(ns_escape("\xe2\x80\xa8", 3, 0, out, sizeof out), "\\u2028");
    /* valid UTF-8 around them stays as it is; invalid bytes one by one */
    assert_string_equal(ns_escape("caf\xc3\xa9 \xe2\x80\xab", 9, 0, out, sizeof out),
                        "caf\xc3\xa9 \\u202b");
    assert_string_equal(ns_escape("\xc0\xaf\xed\xa0\x80\xff", 6, 0, out, sizeof out),
                        "\\xc0\\xaf\\xed\\xa0\\x80\\xff");
    /* the neighbours of the escaped ranges are left alone */
    assert_string_equal(
        ns_escape("\xc2\xa0\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xaa", 11, 0, out, sizeof out),
        "\xc2\xa0\\u2029\xe2\x80\xaf\xe2\x81\xaa");
    /* flags */
    assert_string_equal(ns_escape("a\\\"b", 4, 0, out, sizeof out), "a\\\"b");
    assert_string_equal(ns_escape("a\\\"b", 4, NS_ESC_BACKSLASH, out, sizeof out), "a\\\\\"b");
    assert_string_equal(ns_escape("a\\\"b", 4, NS_ESC_BACKSLASH | NS_ESC_QUOTE, out, sizeof out),
                        "a\\\\\\\"b");
}

static void test_escape_cut(void **state)
{
    (void)state;
    char out[64];
    const unsigned q = NS_ESC_BACKSLASH | NS_ESC_QUOTE;
    assert_string_equal(ns_escape("a\nb\"c\\\x01", 7, q, out, sizeof out), "a\\nb\\\"c\\\\\\x01");
    char big[200];
    memset(big, 'x', sizeof big);
    ns_escape(big, sizeof big, 0, out, 16);
    assert_int_equal(strlen(out), 15);
    assert_string_equal(out + 12, "...");
    assert_string_equal(ns_escape("abc", 3, 0, out, 4), "abc"); /* exactly fits */
    assert_string_equal(ns_escape("abcd", 4, 0, out, 4), "...");
    assert_string_equal(ns_escape("abcdef", 6, 0, out, 6), "ab...");
    assert_string_equal(ns_escape("a\n", 2, 0, out, 3), ""); /* not even "..." fits */
    /* never inside an escape or a character */
    assert_string_equal(ns_escape("ab\xe2\x80\xae"
                                  "cdef",
                                  9, 0, out, 10),
                        "ab...");
    assert_string_equal(ns_escape("ab\xc3\xa9"
                                  "cdefgh",
                                  10, 0, out, 8),
                        "ab\xc3\xa9...");
}

/* Whatever bytes come in, the escaped text is valid UTF-8 with no byte
 * below 0x20, no DEL, no C1 and no bidi control, and the buffer form
 * equals the fixed one. */
static void test_escape_always_safe(void **state)
{
    (void)state;
    uint32_t seed = 12345;
    for (int round = 0; round < 20000; round++) {
        char in[24], out[24 * 6 + 1];
        size_t n = (size_t)(round % 24);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            static const uint8_t pick[] = {0x00, 0x1b, 0x0a, 0x7f, 0x80, 0x9b, 0xbf, 0xc0,
                                           0xc2, 0xe2, 0x80, 0xae, 0x81, 0xa6, 0xed, 0xa0,
                                           0xf4, 0x90, 0xff, 'a',  '\\', '"',  0xc3, 0xa9};
            in[i] = (char)pick[(seed >> 16) % sizeof pick];
        }
        ns_escape(in, n, 0, out, sizeof out);
        size_t len = strlen(out);
        assert_true(ns_utf8_valid(out, len));
        uint32_t cp = 0;
        for (size_t i = 0, k; i < len; i += k) {
            k = ns_utf8_decode((const uint8_t *)out + i, len - i, &cp);
            assert_true(cp >= 0x20 && cp != 0x7f && !ns_utf8_is_c1(cp));
            assert_false((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069));
        }
        ns_buf_t b = NS_BUF_INIT;
        assert_int_equal(ns_buf_append_escaped(&b, in, n, 0), NS_OK);
        assert_int_equal(b.len, len);
        assert_memory_equal(b.data, out, len);
        ns_buf_free(&b);
    }
}

/* The JSON encoder writes invalid bytes as \uFFFD: the text always parses,
 * and valid UTF-8 (C1 and bidi included) comes back exact. */
static void test_json_str_invalid_bytes(void **state)
{
    (void)state;
    static const char *const in[] = {"a\xc0\xaf"
                                     "b",
                                     "\xed\xa0\x80", "x\xf4\x90\x80\x80", "\x80",
                                     "caf\xc3\xa9\xc2\x9b\xe2\x80\xae"};
    static const char *const want[] = {"a\xef\xbf\xbd\xef\xbf\xbd"
                                       "b",
                                       "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
                                       "x\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
                                       "\xef\xbf\xbd", "caf\xc3\xa9\xc2\x9b\xe2\x80\xae"};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        for (int ascii = 0; ascii < 2; ascii++) {
            ns_buf_t b = NS_BUF_INIT;
            assert_int_equal(ns_buf_append_json_str(&b, in[i], strlen(in[i]), ascii), NS_OK);
            assert_true(ns_utf8_valid((const char *)b.data, b.len));
            cJSON *v = cJSON_ParseWithLength((const char *)b.data, b.len);
            assert_non_null(v);
            assert_string_equal(cJSON_GetStringValue(v), want[i]);
            cJSON_Delete(v);
            ns_buf_free(&b);
        }
}

/* Exact escaping, in both forms, after what the buffer already holds: a
 * plain run copied at once, then escapes from wherever the first one is. */
static void test_json_str_escapes(void **state)
{
    (void)state;
    static const struct {
        const char *in, *raw, *ascii; /* ascii NULL: the same as raw */
    } cases[] = {
        {"", "\"\"", NULL},
        {"broker-a_1.2:10911", "\"broker-a_1.2:10911\"", NULL},
        {"a\"b\\c", "\"a\\\"b\\\\c\"", NULL},
        {"\"", "\"\\\"\"", NULL},
        {"end\\", "\"end\\\\\"", NULL},
        {"\n\r\t\b\f\x01\x1f\x7f~ ", "\"\\n\\r\\t\\b\\f\\u0001\\u001F\x7f~ \"", NULL},
        {"x\xc3\xa9y\"", "\"x\xc3\xa9y\\\"\"", "\"x\\u00E9y\\\"\""},
        {"\xf0\x9f\x98\x80!", "\"\xf0\x9f\x98\x80!\"", "\"\\uD83D\\uDE00!\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int ascii = 0; ascii < 2; ascii++) {
            const char *want = ascii && cases[i].ascii ? cases[i].ascii : cases[i].raw;
            ns_buf_t b = NS_BUF_INIT;
            assert_int_equal(ns_buf_append_str(&b, "pre"), NS_OK);
            assert_int_equal(ns_buf_append_json_str(&b, cases[i].in, strlen(cases[i].in), ascii),
                             NS_OK);
            assert_int_equal(b.len, 3 + strlen(want));
            assert_memory_equal(b.data, "pre", 3);
            assert_string_equal((const char *)b.data + 3, want); /* NUL-terminated too */
            ns_buf_free(&b);
        }
}

/* The plain-run scan reads eight bytes at a time: a byte to escape is found
 * at every offset of a word and of the tail, and bytes next to it (0x20,
 * 0x7f, '!', ']') are not taken for one. */
static void test_json_str_escape_offsets(void **state)
{
    (void)state;
    static const struct {
        char c;
        const char *esc;
    } special[] = {
        {'"', "\\\""}, {'\\', "\\\\"}, {'\n', "\\n"}, {'\x1f', "\\u001F"}, {'\x01', "\\u0001"}};
    char in[26], want[64];
    for (size_t k = 0; k < sizeof special / sizeof special[0]; k++)
        for (size_t at = 0; at < 25; at++) {
            for (size_t i = 0; i < 25; i++)
                in[i] = " \x7f!]a"[i % 5];
            in[at] = special[k].c;
            in[25] = 0;
            snprintf(want, sizeof want, "\"%.*s%s%s\"", (int)at, in, special[k].esc, in + at + 1);
            ns_buf_t b = NS_BUF_INIT;
            assert_int_equal(ns_buf_append_json_str(&b, in, 25, true), NS_OK);
            assert_string_equal((const char *)b.data, want);
            ns_buf_free(&b);
        }
}

/* The log's formatter: a peer's text in a line can neither end it nor
 * drive or reorder the terminal that shows the file. */
static void test_log_line_escaped(void **state)
{
    (void)state;
    char path[] = "/tmp/ns-test-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[200];
    assert_int_equal(ns_log_open_file(path, 0, 0, err, sizeof err), NS_OK);
    NS_LOG_WARN("peer text: %s|",
                "a\nFORGED \x1b[31m\xc2\x9b\xe2\x80\xae\xe2\x81\xa6\xc0\xaf caf\xc3\xa9");
    ns_log_close_file();
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512] = "", more[8];
    assert_non_null(fgets(line, sizeof line, f));
    assert_null(fgets(more, sizeof more, f)); /* one line */
    fclose(f);
    unlink(path);
    assert_non_null(strstr(
        line, "peer text: a\\nFORGED \\x1b[31m\\u009b\\u202e\\u2066\\xc0\\xaf caf\xc3\xa9|\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_matches_reference),
        cmocka_unit_test(test_decode_and_problem),
        cmocka_unit_test(test_escape_text),
        cmocka_unit_test(test_escape_cut),
        cmocka_unit_test(test_escape_always_safe),
        cmocka_unit_test(test_json_str_invalid_bytes),
        cmocka_unit_test(test_json_str_escapes),
        cmocka_unit_test(test_json_str_escape_offsets),
        cmocka_unit_test(test_log_line_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
