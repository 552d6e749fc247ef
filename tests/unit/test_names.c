/* test_names.c - name checks, the \u0000 and lone-surrogate rewrites and
 * the filtering of bad topics out of a register body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
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
    assert_null(ns_name_problem("\xe2\x80\xae"
                                "x",
                                4)); /* bidi: shown escaped, not refused */
    /* invalid UTF-8, and C1 controls, are refused */
    assert_non_null(strstr(ns_name_problem("ab\xc0\xaf", 4), "overlong"));
    assert_non_null(strstr(ns_name_problem("broker-\x80", 8), "stray continuation"));
    assert_non_null(strstr(ns_name_problem("\xed\xa0\x80", 3), "surrogate"));
    assert_non_null(strstr(ns_name_problem("\xf4\x90\x80\x80", 4), "U+10FFFF"));
    assert_non_null(strstr(ns_name_problem("abcdefgh\xc2\x9b"
                                           "1m",
                                           12),
                           "control"));
    /* names are scanned a word at a time: every position of every byte,
     * among fillers on both sides of the bounds */
    static const unsigned char fill[] = {0x20, 0x21, 0x7e};
    for (size_t n = 1; n <= 24; n++) {
        char name[24];
        for (size_t f = 0; f < sizeof fill; f++)
            for (int c = 0; c < 256; c++) {
                bool bad = c < 0x20 || c >= 0x7f; /* a lone byte above 0x7f is not UTF-8 */
                for (size_t at = 0; at < n; at++) {
                    memset(name, fill[f], n);
                    name[at] = (char)c;
                    assert_int_equal(ns_name_problem(name, n) != NULL, bad);
                }
            }
    }
}

/* The rule byte by byte: no C0 control or DEL, and, with any byte above
 * 0x7f, valid UTF-8 (ns_utf8_valid, tested against RFC 3629 in
 * test_utf8.c) without a C1 control (C2 80..C2 9F). */
static bool ref_bad(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] == 0x7f || (s[i] == 0xc2 && i + 1 < n && s[i + 1] <= 0x9f))
            return true;
    return !ns_utf8_valid((const char *)s, n);
}

/* The word-at-a-time check against the rule byte by byte: every byte value
 * at every place of names 1..24 bytes long (the tail word too), the rest of
 * the name being any of a few harmless bytes or a two-byte character. */
static void test_name_problem_every_byte(void **state)
{
    (void)state;
    static const unsigned char fill[] = {'a', ' ', 0xc3, 0x7e, 0x21};
    unsigned char name[24];
    for (size_t f = 0; f < sizeof fill; f++)
        for (size_t n = 1; n <= sizeof name; n++)
            for (size_t at = 0; at < n; at++)
                for (int b = 0; b < 256; b++) {
                    memset(name, fill[f], n);
                    if (fill[f] == 0xc3) /* "é" repeated, the odd byte last */
                        for (size_t i = 1; i < n; i += 2)
                            name[i] = 0xa9;
                    name[at] = (unsigned char)b;
                    bool bad = ref_bad(name, n);
                    if ((ns_name_problem((const char *)name, n) != NULL) != bad)
                        fail_msg("byte 0x%02x at %zu of %zu (fill 0x%02x): %s", b, at, n, fill[f],
                                 bad ? "passed" : "refused");
                }
}

static void test_nul_escape_rewrite(void **state)
{
    (void)state;
    char s[] = "{\"a\\u0000b\":\"\\\\u0000\",\"c\":\"x\\u0000\"}";
    size_t n = strlen(s);
    assert_int_equal(ns_json_fix_escapes((uint8_t *)s, n), n); /* same length */
    /* the escaped backslash is not an escape */
    assert_string_equal(s, "{\"a\\u0001b\":\"\\\\u0000\",\"c\":\"x\\u0001\"}");
}

/* A lone surrogate escape (high or low) becomes its 3 UTF-8 bytes; a pair,
 * an escaped backslash and text outside strings are left alone. */
static void test_lone_surrogate_rewrite(void **state)
{
    (void)state;
    char s[] =
        "{\"t\":\"a\\ud800b\",\"p\":\"\\uD83D\\uDE00\",\"l\":\"\\uDC01\",\"e\":\"\\\\ud800\","
        "\"h\":\"\\udbff\\u0041\"}";
    size_t n = ns_json_fix_escapes((uint8_t *)s, strlen(s));
    s[n] = 0;
    assert_string_equal(s, "{\"t\":\"a\xed\xa0\x80"
                           "b\",\"p\":\"\\uD83D\\uDE00\",\"l\":\"\xed\xb0\x81\","
                           "\"e\":\"\\\\ud800\",\"h\":\"\xed\xaf\xbf\\u0041\"}");
    /* what cJSON then reads is refused by the name rules */
    cJSON *o = cJSON_Parse(s);
    assert_non_null(o);
    const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(o, "t"));
    assert_non_null(strstr(ns_name_problem(t, strlen(t)), "surrogate"));
    const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(o, "p"));
    assert_null(ns_name_problem(p, strlen(p))); /* U+1F600 */
    cJSON_Delete(o);
}

/* A header value that is not a name only has to be valid UTF-8; the remark
 * names the field. */
static void test_header_utf8_values(void **state)
{
    (void)state;
    ns_ext_field_t ext[2] = {{"topic", 5, "T", 1}, {"value", 5, "line1\nline2 caf\xc3\xa9", 17}};
    ns_cmd_t cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.ext = ext;
    cmd.n_ext = 2;
    cmd.has_ext = true;
    char remark[200];
    assert_true(ns_names_check_header(&cmd, remark, sizeof remark));
    ext[1].val = "x\xc0\xaf";
    ext[1].val_len = 3;
    assert_false(ns_names_check_header(&cmd, remark, sizeof remark));
    assert_non_null(strstr(remark, "invalid value \"x\\xc0\\xaf\": is not valid UTF-8"));
    ext[1] = (ns_ext_field_t){"brokerName", 10, "b\xe2\x80", 3};
    assert_false(ns_names_check_header(&cmd, remark, sizeof remark));
    assert_non_null(strstr(remark, "invalid brokerName"));
    assert_non_null(strstr(remark, "truncated"));
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

/* Of topics A, B (bad) and C, only B is dropped, described as shown;
 * frees b. */
static void expect_b_dropped(ns_regbody_t *b, const char *shown)
{
    char first[128];
    assert_int_equal(ns_regbody_drop_bad_names(b, first, sizeof first), 1);
    assert_int_equal(b->n_topics, 2);
    assert_string_equal(b->topics[0].topic_name, "A");
    assert_string_equal(b->topics[1].topic_name, "C");
    if (strstr(first, shown) == NULL)
        fail_msg("'%s' not in '%s'", shown, first);
    ns_regbody_free(b);
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
    expect_b_dropped(&b, "B\\x01");
}

/* A JSON body whose one topic has a lone \ud800 (as fastjson reads it: a
 * Java String with an unpaired char) decodes, and only that topic is then
 * left out. */
static void test_regbody_lone_surrogate(void **state)
{
    (void)state;
    const char *json =
        "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
        "{\"counter\":1,\"timestamp\":1},\"topicConfigTable\":{"
        "\"A\":{\"perm\":6,\"readQueueNums\":1,\"topicName\":\"A\",\"writeQueueNums\":1},"
        "\"B\\ud800\":{\"perm\":6,\"readQueueNums\":1,\"topicName\":\"B\\ud800\","
        "\"writeQueueNums\":1},"
        "\"C\":{\"perm\":6,\"readQueueNums\":1,\"topicName\":\"C\",\"writeQueueNums\":1}}}}";
    ns_regbody_t b;
    assert_int_equal(ns_regbody_decode((const uint8_t *)json, strlen(json), 479, 1 << 20, &b),
                     NS_OK);
    assert_int_equal(b.n_topics, 3);
    expect_b_dropped(&b, "B\\xed\\xa0\\x80\" is not valid UTF-8: a surrogate");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_problem),       cmocka_unit_test(test_name_problem_every_byte),
        cmocka_unit_test(test_nul_escape_rewrite), cmocka_unit_test(test_lone_surrogate_rewrite),
        cmocka_unit_test(test_header_utf8_values), cmocka_unit_test(test_header_nul_and_check),
        cmocka_unit_test(test_regbody_drop),       cmocka_unit_test(test_regbody_lone_surrogate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
