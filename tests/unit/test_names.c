/* test_names.c - name checks, log escaping, the \u0000 rewrite and the
 * filtering of bad topics out of a register body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ns/body.h"
#include "ns/buf.h"
#include "ns/err.h"
#include "ns/names.h"
#include "ns/remoting.h"

static void test_name_problem(void **state)
{
    (void)state;
    char big[300];
    memset(big, 'a', sizeof big);
    assert_null(ns_name_problem("TopicA", 6));
    assert_null(ns_name_problem(big, 255));
    assert_non_null(strstr(ns_name_problem(big, 256), "longer than 255"));
    assert_non_null(strstr(ns_name_problem("", 0), "empty"));
    assert_non_null(strstr(ns_name_problem("a\0b", 3), "NUL"));
    assert_non_null(ns_name_problem("a\nb", 3));
    assert_non_null(ns_name_problem("a\x7f", 2));
    assert_null(ns_name_problem("caf\xc3\xa9", 5)); /* UTF-8 is fine */
    /* names are scanned a word at a time: every position of every byte,
     * among fillers on both sides of the bounds */
    static const unsigned char fill[] = {0x20, 0x21, 0x7e, 0x80, 0xff};
    for (size_t n = 1; n <= 24; n++) {
        char name[24];
        for (size_t f = 0; f < sizeof fill; f++)
            for (int c = 0; c < 256; c++) {
                bool bad = c < 0x20 || c == 0x7f;
                for (size_t at = 0; at < n; at++) {
                    memset(name, fill[f], n);
                    name[at] = (char)c;
                    assert_int_equal(ns_name_problem(name, n) != NULL, bad);
                }
            }
    }
}

/* The word-at-a-time check against the rule byte by byte: every byte value
 * at every place of names 1..24 bytes long (the tail word too), the rest of
 * the name being any of a few harmless bytes. */
static void test_name_problem_every_byte(void **state)
{
    (void)state;
    static const unsigned char fill[] = {'a', ' ', 0x80, 0xff, 0x7e, 0x21};
    char name[24];
    for (size_t f = 0; f < sizeof fill; f++)
        for (size_t n = 1; n <= sizeof name; n++)
            for (size_t at = 0; at < n; at++)
                for (int b = 0; b < 256; b++) {
                    memset(name, fill[f], n);
                    name[at] = (char)b;
                    bool bad = b < 0x20 || b == 0x7f;
                    if ((ns_name_problem(name, n) != NULL) != bad)
                        fail_msg("byte 0x%02x at %zu of %zu (fill 0x%02x): %s", b, at, n, fill[f],
                                 bad ? "passed" : "refused");
                }
}

static void test_escape(void **state)
{
    (void)state;
    char out[64];
    assert_string_equal(ns_escape("a\nb\"c\\\x01", 7, out, sizeof out), "a\\nb\\\"c\\\\\\x01");
    char big[200];
    memset(big, 'x', sizeof big);
    ns_escape(big, sizeof big, out, 16);
    assert_int_equal(strlen(out), 15);
    assert_string_equal(out + 12, "...");
    assert_string_equal(ns_escape("abc", 3, out, 4), "abc"); /* exactly fits */
    assert_string_equal(ns_escape("abcd", 4, out, 4), "...");
    assert_string_equal(ns_escape("abcdef", 6, out, 6), "ab...");
    assert_string_equal(ns_escape("a\n", 2, out, 3), ""); /* not even "..." fits */
}

static void test_nul_escape_rewrite(void **state)
{
    (void)state;
    char s[] = "{\"a\\u0000b\":\"\\\\u0000\",\"c\":\"x\\u0000\"}";
    size_t n = ns_json_nul_to_soh((uint8_t *)s, strlen(s));
    assert_int_equal(n, 2); /* the escaped backslash is not an escape */
    assert_string_equal(s, "{\"a\\u0001b\":\"\\\\u0000\",\"c\":\"x\\u0001\"}");
}

static void test_header_nul_and_check(void **state)
{
    (void)state;
    const char hdr[] = "{\"code\":105,\"extFields\":{\"topic\":\"Good\\u0000Merged\"}}";
    ns_buf_t f = NS_BUF_INIT;
    ns_buf_append_be32(&f, (uint32_t)(4 + strlen(hdr)));
    ns_buf_append_be32(&f, (uint32_t)strlen(hdr));
    ns_buf_append_str(&f, hdr);
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    assert_int_equal(ns_remoting_decode(f.data, f.len, &m), NS_OK);
    const char *t = ns_cmd_ext_get(&m.cmd, "topic");
    assert_non_null(t);
    assert_int_equal(strlen(t), 11); /* not cut at the NUL */
    char remark[200];
    assert_false(ns_names_check_header(&m.cmd, remark, sizeof remark));
    assert_non_null(strstr(remark, "invalid topic \"Good\\x01Merged\""));
    ns_cmd_msg_free(&m);
    ns_buf_free(&f);
}

static void test_regbody_drop(void **state)
{
    (void)state;
    ns_regbody_t b;
    memset(&b, 0, sizeof b);
    b.topics = calloc(3, sizeof *b.topics);
    assert_non_null(b.topics);
    b.topics[0].topic_name = strdup("A");
    b.topics[1].topic_name = strdup("B\x01");
    b.topics[2].topic_name = strdup("C");
    b.n_topics = 3;
    char first[128];
    assert_int_equal(ns_regbody_drop_bad_names(&b, first, sizeof first), 1);
    assert_int_equal(b.n_topics, 2);
    assert_string_equal(b.topics[0].topic_name, "A");
    assert_string_equal(b.topics[1].topic_name, "C");
    assert_non_null(strstr(first, "B\\x01"));
    ns_regbody_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_problem),
        cmocka_unit_test(test_name_problem_every_byte),
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_nul_escape_rewrite),
        cmocka_unit_test(test_header_nul_and_check),
        cmocka_unit_test(test_regbody_drop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
