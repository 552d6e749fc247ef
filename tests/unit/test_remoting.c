/* test_remoting.c - unit tests for the frame codec (src/proto/remoting*.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ns/buf.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/remoting.h"

/* ---- helpers ------------------------------------------------------------ */

#define EXT(k, v)                                                                                  \
    {                                                                                              \
        (k), sizeof(k) - 1, (v), sizeof(v) - 1                                                     \
    }

/* A whole frame in its own exactly sized heap block (so ASan catches any
 * read past its end). Caller frees. */
static uint8_t *make_frame(uint8_t type, const void *hdr, size_t hdr_len, const void *body,
                           size_t body_len, size_t *frame_len)
{
    size_t n = 8 + hdr_len + body_len;
    uint8_t *f = malloc(n ? n : 1);
    assert_non_null(f);
    ns_be32_write(f, (uint32_t)(n - 4));
    ns_be32_write(f + 4, (uint32_t)type << 24 | (uint32_t)hdr_len);
    if (hdr_len)
        memcpy(f + 8, hdr, hdr_len);
    if (body_len)
        memcpy(f + 8 + hdr_len, body, body_len);
    *frame_len = n;
    return f;
}

/* Decodes a JSON header given as a C string (no body). */
static int decode_json_str(const char *hdr, ns_cmd_msg_t *m)
{
    size_t n = 0;
    uint8_t *f = make_frame(NS_SERIALIZE_JSON, hdr, strlen(hdr), NULL, 0, &n);
    int rc = ns_remoting_decode(f, n, m);
    free(f);
    return rc;
}

/* Asserts that the header part of an encoded frame equals want. */
static void assert_json_header(const ns_buf_t *b, const char *want, size_t body_len)
{
    size_t wl = strlen(want);
    assert_int_equal(b->len, 8 + wl + body_len);
    assert_int_equal(ns_be32_read(b->data), 4 + wl + body_len);
    assert_int_equal(ns_be32_read(b->data + 4), wl);
    assert_memory_equal(b->data + 8, want, wl);
}

static void assert_ext(const ns_cmd_t *c, size_t i, const char *k, const char *v)
{
    assert_true(i < c->n_ext);
    assert_string_equal(c->ext[i].key, k);
    assert_int_equal(c->ext[i].key_len, strlen(k));
    assert_string_equal(c->ext[i].val, v);
    assert_int_equal(c->ext[i].val_len, strlen(v));
}

/* Encodes the decoded command again and checks it reproduces frame. */
static void assert_reencodes(const ns_cmd_msg_t *m, const uint8_t *frame, size_t n)
{
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_remoting_encode(&b, &m->cmd), NS_OK);
    assert_int_equal(b.len, n);
    assert_memory_equal(b.data, frame, n);
    ns_buf_free(&b);
}

/* A binary (ROCKETMQ) header builder for malformed-input tests. */
typedef struct {
    uint8_t p[512];
    size_t n;
} bin_t;

static void bin_u8(bin_t *b, uint8_t v)
{
    assert_true(b->n < sizeof b->p);
    b->p[b->n++] = v;
}

static void bin_be16(bin_t *b, uint16_t v)
{
    bin_u8(b, (uint8_t)(v >> 8));
    bin_u8(b, (uint8_t)v);
}

static void bin_be32(bin_t *b, uint32_t v)
{
    bin_be16(b, (uint16_t)(v >> 16));
    bin_be16(b, (uint16_t)v);
}

static void bin_bytes(bin_t *b, const char *s)
{
    while (*s)
        bin_u8(b, (uint8_t)*s++);
}

/* code 105, JAVA, version 479, opaque 7, flag 0 */
static void bin_fixed(bin_t *b)
{
    b->n = 0;
    bin_be16(b, 105);
    bin_u8(b, 0);
    bin_be16(b, 479);
    bin_be32(b, 7);
    bin_be32(b, 0);
}

static int decode_bin(const bin_t *b, ns_cmd_msg_t *m)
{
    size_t n = 0;
    uint8_t *f = make_frame(NS_SERIALIZE_ROCKETMQ, b->p, b->n, NULL, 0, &n);
    int rc = ns_remoting_decode(f, n, m);
    free(f);
    return rc;
}

/* ---- encoding ------------------------------------------------------------ */

static void test_encode_success_response(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    ns_cmd_t c = {.code = 0,
                  .flag = NS_FLAG_RESPONSE,
                  .language = NS_LANG_JAVA,
                  .opaque = 42,
                  .version = 479,
                  .serialize_type = NS_SERIALIZE_JSON};
    assert_int_equal(ns_remoting_encode(&b, &c), NS_OK);
    assert_json_header(&b,
                       "{\"code\":0,\"flag\":1,\"language\":\"JAVA\",\"opaque\":42,"
                       "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
                       0);
    ns_buf_free(&b);
}

static void test_encode_error_response(void **state)
{
    (void)state;
    static const char remark[] = "No topic route info in name server for the topic: Foo\n"
                                 "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for "
                                 "further details.";
    ns_buf_t b = NS_BUF_INIT;
    ns_cmd_t c = {.code = 17,
                  .flag = 1,
                  .language = NS_LANG_JAVA,
                  .opaque = 42,
                  .version = 479,
                  .remark = remark,
                  .remark_len = sizeof remark - 1};
    assert_int_equal(ns_remoting_encode(&b, &c), NS_OK);
    assert_json_header(&b,
                       "{\"code\":17,\"flag\":1,\"language\":\"JAVA\",\"opaque\":42,\"remark\":"
                       "\"No topic route info in name server for the topic: Foo\\nSee "
                       "https://rocketmq.apache.org/docs/bestPractice/06FAQ for further "
                       "details.\",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
                       0);
    ns_buf_free(&b);
}

static void test_encode_ext_fields(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    /* order kept as given; values escaped like fastjson, non-ASCII raw */
    ns_ext_field_t ext[] = {
        EXT("topic", "TopicTest"),
        {"skipped", 7, NULL, 0},
        EXT("value", "say \"hi\"\\ \t\xc3\xbc \xe4\xb8\xad"),
        EXT("changed", "true"),
    };
    ns_cmd_t c;
    ns_cmd_request_init(&c, 105, ext, 4); /* JAVA, version 479 */
    c.opaque = 1;
    assert_int_equal(ns_remoting_encode(&b, &c), NS_OK);
    assert_json_header(&b,
                       "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\",\"value\":\"say "
                       "\\\"hi\\\"\\\\ \\t\xc3\xbc \xe4\xb8\xad\",\"changed\":\"true\"},"
                       "\"flag\":0,\"language\":\"JAVA\",\"opaque\":1,"
                       "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
                       0);

    /* has_ext with no entries: "extFields":{} */
    ns_buf_reset(&b);
    c.n_ext = 0;
    c.flag = 1;
    c.opaque = 4242;
    c.code = 0;
    assert_int_equal(ns_remoting_encode(&b, &c), NS_OK);
    assert_json_header(&b,
                       "{\"code\":0,\"extFields\":{},\"flag\":1,\"language\":\"JAVA\","
                       "\"opaque\":4242,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
                       0);
    ns_buf_free(&b);
}

/* ns_cmd_request_init: a Java 5.3.3 client's request, with or without
 * extFields; a stale command is wiped first. */
static void test_request_init(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    ns_ext_field_t ext[] = {ns_ext_field("topic", "TopicTest")};
    ns_cmd_t c = {.code = 7, .flag = 3, .opaque = 9, .remark = "stale", .remark_len = 5};
    ns_cmd_request_init(&c, 105, ext, 1);
    c.opaque = 5;
    assert_int_equal(ns_remoting_encode(&b, &c), NS_OK);
    assert_json_header(&b,
                       "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":0,"
                       "\"language\":\"JAVA\",\"opaque\":5,\"serializeTypeCurrentRPC\":"
                       "\"JSON\",\"version\":479}",
                       0);
    ns_buf_reset(&b);
    ns_cmd_request_init(&c, 206, NULL, 0);
    assert_int_equal(ns_remoting_encode(&b, &c), NS_OK);
    assert_json_header(&b,
                       "{\"code\":206,\"flag\":0,\"language\":\"JAVA\",\"opaque\":0,"
                       "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
                       0);
    ns_buf_free(&b);
}

static void test_encode_language_and_numbers(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    ns_cmd_t c = {.code = -1,
                  .flag = INT32_MIN,
                  .language = 99,
                  .opaque = INT32_MAX,
                  .version = 317,
                  .remark = "",
                  .remark_len = 0};
    assert_int_equal(ns_remoting_encode(&b, &c), NS_OK);
    assert_json_header(&b,
                       "{\"code\":-1,\"flag\":-2147483648,\"language\":\"OTHER\","
                       "\"opaque\":2147483647,\"remark\":\"\",\"serializeTypeCurrentRPC\":"
                       "\"JSON\",\"version\":317}",
                       0);
    ns_buf_reset(&b);
    c.language = NS_LANG_NODE_JS;
    c.remark = NULL;
    c.flag = 0;
    assert_int_equal(ns_remoting_encode(&b, &c), NS_OK);
    assert_non_null(strstr((const char *)b.data + 8, "\"language\":\"NODE_JS\""));
    ns_buf_free(&b);
}

static void test_encode_header_and_body(void **state)
{
    (void)state;
    static const uint8_t body[] = "{\"table\":{}}";
    ns_buf_t full = NS_BUF_INIT, head = NS_BUF_INIT;
    ns_cmd_t c = {.code = 0,
                  .flag = 1,
                  .opaque = 9,
                  .version = 479,
                  .body = body,
                  .body_len = sizeof body - 1};
    assert_int_equal(ns_remoting_encode(&full, &c), NS_OK);
    assert_int_equal(ns_remoting_encode_header(&head, &c), NS_OK);
    assert_int_equal(full.len, head.len + c.body_len);
    assert_memory_equal(full.data, head.data, head.len);
    assert_memory_equal(full.data + head.len, body, c.body_len);
    assert_int_equal(ns_be32_read(head.data), full.len - 4);

    /* appends after existing content */
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_buf_append(&b, "xyz", 3), NS_OK);
    assert_int_equal(ns_remoting_encode(&b, &c), NS_OK);
    assert_int_equal(b.len, 3 + full.len);
    assert_memory_equal(b.data + 3, full.data, full.len);

    /* decoding gives the body back */
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    assert_int_equal(ns_remoting_decode(full.data, full.len, &m), NS_OK);
    assert_int_equal(m.cmd.body_len, sizeof body - 1);
    assert_ptr_equal(m.cmd.body, full.data + head.len);
    ns_cmd_msg_free(&m);
    ns_buf_free(&b);
    ns_buf_free(&full);
    ns_buf_free(&head);
}

static void test_encode_bad_serialize_type(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_buf_append(&b, "ab", 2), NS_OK);
    ns_cmd_t c = {.code = 1, .serialize_type = 2};
    assert_int_equal(ns_remoting_encode(&b, &c), NS_EINVAL);
    assert_int_equal(ns_remoting_encode_header(&b, &c), NS_EINVAL);
    assert_int_equal(b.len, 2);
    ns_buf_free(&b);
}

/* ---- JSON decoding ------------------------------------------------------- */

static void test_decode_java_example(void **state)
{
    (void)state;
    static const char hdr[] = "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":0,"
                              "\"language\":\"JAVA\",\"opaque\":42,"
                              "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}";
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    size_t n = 0;
    uint8_t *f = make_frame(NS_SERIALIZE_JSON, hdr, sizeof hdr - 1, NULL, 0, &n);
    assert_int_equal(ns_remoting_decode(f, n, &m), NS_OK);
    assert_int_equal(m.cmd.code, 105);
    assert_int_equal(m.cmd.language, NS_LANG_JAVA);
    assert_int_equal(m.cmd.version, 479);
    assert_int_equal(m.cmd.opaque, 42);
    assert_int_equal(m.cmd.flag, 0);
    assert_int_equal(m.cmd.serialize_type, NS_SERIALIZE_JSON);
    assert_null(m.cmd.remark);
    assert_true(m.cmd.has_ext);
    assert_int_equal(m.cmd.n_ext, 1);
    assert_ext(&m.cmd, 0, "topic", "TopicTest");
    assert_string_equal(ns_cmd_ext_get(&m.cmd, "topic"), "TopicTest");
    assert_null(ns_cmd_ext_get(&m.cmd, "topi"));
    assert_null(ns_cmd_ext_get(&m.cmd, "topicX"));
    assert_null(m.cmd.body);
    assert_int_equal(m.cmd.body_len, 0);
    assert_reencodes(&m, f, n);
    free(f);
    ns_cmd_msg_free(&m);
}

static void test_decode_go_example(void **state)
{
    (void)state;
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    assert_int_equal(
        decode_json_str("{\"code\":105,\"language\":\"GO\",\"version\":317,\"opaque\":3,"
                        "\"flag\":0,\"remark\":\"\",\"extFields\":{\"topic\":"
                        "\"TopicTest\"}}",
                        &m),
        NS_OK);
    assert_int_equal(m.cmd.code, 105);
    assert_int_equal(m.cmd.language, NS_LANG_GO);
    assert_int_equal(m.cmd.version, 317);
    assert_int_equal(m.cmd.opaque, 3);
    assert_int_equal(m.cmd.flag, 0);
    assert_non_null(m.cmd.remark);
    assert_string_equal(m.cmd.remark, "");
    assert_int_equal(m.cmd.remark_len, 0);
    assert_true(m.cmd.has_ext);
    assert_int_equal(m.cmd.n_ext, 1);
    assert_ext(&m.cmd, 0, "topic", "TopicTest");

    /* Go with no parameters sends an empty object */
    assert_int_equal(decode_json_str("{\"code\":106,\"language\":\"GO\",\"version\":317,"
                                     "\"opaque\":4,\"flag\":0,\"remark\":\"\",\"extFields\":{}}",
                                     &m),
                     NS_OK);
    assert_true(m.cmd.has_ext);
    assert_int_equal(m.cmd.n_ext, 0);
    assert_null(ns_cmd_ext_get(&m.cmd, "topic"));
    ns_cmd_msg_free(&m);
}

static void test_decode_cpp_example(void **state)
{
    (void)state;
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    assert_int_equal(
        decode_json_str("{\"code\":105,\"extFields\":{\"AccessKey\":\"\",\"OnsChannel\":"
                        "\"\",\"Signature\":\"\",\"topic\":\"TopicTest\"},\"flag\":0,"
                        "\"language\":\"CPP\",\"opaque\":5,\"remark\":\"\","
                        "\"version\":333}\n",
                        &m),
        NS_OK);
    assert_int_equal(m.cmd.code, 105);
    assert_int_equal(m.cmd.language, NS_LANG_CPP);
    assert_int_equal(m.cmd.version, 333);
    assert_int_equal(m.cmd.opaque, 5);
    assert_int_equal(m.cmd.n_ext, 4);
    assert_ext(&m.cmd, 0, "AccessKey", "");
    assert_ext(&m.cmd, 1, "OnsChannel", "");
    assert_ext(&m.cmd, 2, "Signature", "");
    assert_ext(&m.cmd, 3, "topic", "TopicTest");
    assert_string_equal(ns_cmd_ext_get(&m.cmd, "topic"), "TopicTest");
    assert_string_equal(ns_cmd_ext_get(&m.cmd, "Signature"), "");

    /* other trailing whitespace is fine too, garbage is not */
    assert_int_equal(decode_json_str(" {\"code\":1}\r\n\t ", &m), NS_OK);
    assert_int_equal(m.cmd.code, 1);
    assert_int_equal(decode_json_str("{\"code\":1}\nx", &m), NS_EINVAL);
    assert_int_equal(decode_json_str("{\"code\":1}{}", &m), NS_EINVAL);
    ns_cmd_msg_free(&m);
}

static void test_decode_scalar_ext_values(void **state)
{
    (void)state;
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    assert_int_equal(
        decode_json_str("{\"code\":103,\"extFields\":{\"brokerId\":5,\"compressed\":true,"
                        "\"oneway\":false,\"gone\":null,\"neg\":-12,\"big\":"
                        "12345678901,\"frac\":1.5,\"exp\":1e3,\"s\":\"x\",\"zero\":0}}",
                        &m),
        NS_OK);
    assert_int_equal(m.cmd.n_ext, 9);
    assert_ext(&m.cmd, 0, "brokerId", "5");
    assert_ext(&m.cmd, 1, "compressed", "true");
    assert_ext(&m.cmd, 2, "oneway", "false");
    assert_ext(&m.cmd, 3, "neg", "-12");
    assert_ext(&m.cmd, 4, "big", "12345678901");
    assert_ext(&m.cmd, 5, "frac", "1.5");
    assert_ext(&m.cmd, 6, "exp", "1000");
    assert_ext(&m.cmd, 7, "s", "x");
    assert_ext(&m.cmd, 8, "zero", "0");
    assert_null(ns_cmd_ext_get(&m.cmd, "gone"));
    ns_cmd_msg_free(&m);
}

static void test_decode_defaults_and_leniency(void **state)
{
    (void)state;
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    /* missing keys -> 0 / absent */
    assert_int_equal(decode_json_str("{}", &m), NS_OK);
    assert_int_equal(m.cmd.code, 0);
    assert_int_equal(m.cmd.flag, 0);
    assert_int_equal(m.cmd.opaque, 0);
    assert_int_equal(m.cmd.version, 0);
    assert_int_equal(m.cmd.language, NS_LANG_JAVA);
    assert_null(m.cmd.remark);
    assert_false(m.cmd.has_ext);
    assert_int_equal(m.cmd.n_ext, 0);

    /* unknown keys ignored, extFields null, remark null, unknown language */
    assert_int_equal(decode_json_str("{\"code\":106,\"foo\":{\"a\":[1,2]},\"extFields\":null,"
                                     "\"remark\":null,\"language\":\"COBOL\",\"bar\":[],"
                                     "\"serializeTypeCurrentRPC\":\"ROCKETMQ\",\"flag\":2}",
                                     &m),
                     NS_OK);
    assert_int_equal(m.cmd.code, 106);
    assert_int_equal(m.cmd.flag, NS_FLAG_ONEWAY);
    assert_int_equal(m.cmd.language, NS_LANG_OTHER);
    assert_int_equal(m.cmd.serialize_type, NS_SERIALIZE_JSON);
    assert_null(m.cmd.remark);
    assert_false(m.cmd.has_ext);

    /* every known language name */
    for (int i = 0; i <= 13; i++) {
        char hdr[64];
        snprintf(hdr, sizeof hdr, "{\"language\":\"%s\"}", ns_language_name(i));
        assert_int_equal(decode_json_str(hdr, &m), NS_OK);
        assert_int_equal(m.cmd.language, i);
    }
    /* numbers given as strings, language as an ordinal */
    assert_int_equal(decode_json_str("{\"code\":\"105\",\"opaque\":-3,\"language\":9}", &m), NS_OK);
    assert_int_equal(m.cmd.code, 105);
    assert_int_equal(m.cmd.opaque, -3);
    assert_int_equal(m.cmd.language, NS_LANG_GO);

    /* JSON escapes in strings come out as UTF-8, remark with newline */
    assert_int_equal(decode_json_str("{\"remark\":\"a\\nb\\u00fc\\ud83d\\ude00\\\"\","
                                     "\"extFields\":{\"k\\t\":\"\\/v\"}}",
                                     &m),
                     NS_OK);
    assert_string_equal(m.cmd.remark, "a\nb\xc3\xbc\xf0\x9f\x98\x80\"");
    assert_int_equal(m.cmd.remark_len, strlen(m.cmd.remark));
    assert_ext(&m.cmd, 0, "k\t", "/v");

    /* duplicate ext keys: last value wins (Java HashMap), first position kept */
    assert_int_equal(decode_json_str("{\"extFields\":{\"a\":\"1\",\"b\":\"2\",\"a\":\"3\"}}", &m),
                     NS_OK);
    assert_int_equal(m.cmd.n_ext, 2);
    assert_ext(&m.cmd, 0, "a", "3");
    assert_ext(&m.cmd, 1, "b", "2");
    ns_cmd_msg_free(&m);
}

static void test_decode_malformed_json(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        " ",
        "{",
        "}",
        "[]",
        "5",
        "\"x\"",
        "null",
        "{\"code\":}",
        "{\"code\":105,}",
        "{\"code\":105",
        "{'code':105}",
        "{\"code\":\"abc\"}",
        "{\"code\":1e10}",
        "{\"opaque\":2147483648}",
        "{\"version\":-2147483649}",
        "{\"code\":true}",
        "{\"code\":[1]}",
        "{\"extFields\":[\"a\"]}",
        "{\"extFields\":\"x\"}",
        "{\"extFields\":5}",
        "{\"language\":{}}",
        "{\"extFields\":{\"a\":\"b\"}",
        "{\"remark\":\"unterminated}",
        "{\"code\":1}}",
    };
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = decode_json_str(bad[i], &m);
        if (rc != NS_EINVAL)
            fail_msg("header '%s': got %d, want NS_EINVAL", bad[i], rc);
        assert_int_equal(m.cmd.n_ext, 0);
        assert_null(m.cmd.remark);
    }
    /* an embedded NUL ends the JSON text: the rest is not whitespace */
    static const char nul_hdr[] = "{\"code\":1}\0\0";
    size_t n = 0;
    uint8_t *f = make_frame(NS_SERIALIZE_JSON, nul_hdr, sizeof nul_hdr - 1, NULL, 0, &n);
    assert_int_equal(ns_remoting_decode(f, n, &m), NS_EINVAL);
    free(f);
    ns_cmd_msg_free(&m);
}

/* Enough numeric values (which grow when turned into text) to make the
 * arena move during a decode: every pointer must still be right. */
static void test_decode_arena_growth_and_reuse(void **state)
{
    (void)state;
    ns_buf_t hdr = NS_BUF_INIT;
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    assert_int_equal(ns_buf_append_str(&hdr, "{\"remark\":\"first\",\"extFields\":{"), NS_OK);
    for (int i = 0; i < 300; i++)
        assert_int_equal(ns_buf_printf(&hdr, "%s\"k%d\":1e18", i ? "," : "", i), NS_OK);
    assert_int_equal(ns_buf_append_str(&hdr, "},\"code\":7}"), NS_OK);
    assert_int_equal(decode_json_str((const char *)hdr.data, &m), NS_OK);
    assert_int_equal(m.cmd.code, 7);
    assert_string_equal(m.cmd.remark, "first");
    assert_int_equal(m.cmd.n_ext, 300);
    for (int i = 0; i < 300; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        assert_ext(&m.cmd, (size_t)i, k, "1000000000000000000");
    }
    assert_string_equal(ns_cmd_ext_get(&m.cmd, "k299"), "1000000000000000000");

    /* reuse for a small frame: nothing stale remains */
    assert_int_equal(decode_json_str("{\"code\":8,\"extFields\":{\"x\":\"y\"}}", &m), NS_OK);
    assert_int_equal(m.cmd.code, 8);
    assert_null(m.cmd.remark);
    assert_int_equal(m.cmd.n_ext, 1);
    assert_ext(&m.cmd, 0, "x", "y");
    assert_null(ns_cmd_ext_get(&m.cmd, "k0"));

    /* a failed decode leaves an empty command */
    assert_int_equal(decode_json_str("{\"code\":9,\"extFields\":{\"x\":\"y\"", &m), NS_EINVAL);
    assert_int_equal(m.cmd.code, 0);
    assert_int_equal(m.cmd.n_ext, 0);
    assert_null(m.cmd.ext);
    ns_buf_free(&hdr);
    ns_cmd_msg_free(&m);
}

/* ---- binary header ------------------------------------------------------- */

static void test_binary_round_trip(void **state)
{
    (void)state;
    static const uint8_t body[] = {0x78, 0x9c, 0x00, 0x01};
    ns_ext_field_t ext[] = {
        EXT("namespace", "CORPUS_KV"),
        {"skipped", 7, NULL, 0},
        EXT("key", "k1"),
        EXT("value", "v\xc3\xbc \"q\""),
    };
    ns_cmd_t c = {.code = 101,
                  .language = NS_LANG_CPP,
                  .version = 479,
                  .opaque = 0x12345678,
                  .flag = NS_FLAG_ONEWAY,
                  .serialize_type = NS_SERIALIZE_ROCKETMQ,
                  .remark = "hello\nworld",
                  .remark_len = 11,
                  .has_ext = true,
                  .ext = ext,
                  .n_ext = 4,
                  .body = body,
                  .body_len = sizeof body};
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_remoting_encode(&b, &c), NS_OK);

    /* exact layout (§1.5) */
    size_t hdr_len = 21 + 11 + (2 + 9 + 4 + 9) + (2 + 3 + 4 + 2) + (2 + 5 + 4 + 7);
    assert_int_equal(b.len, 8 + hdr_len + sizeof body);
    assert_int_equal(ns_be32_read(b.data), 4 + hdr_len + sizeof body);
    assert_int_equal(ns_be32_read(b.data + 4), 1u << 24 | hdr_len);
    static const uint8_t fixed[] = {0x00, 0x65, 0x01, 0x01, 0xdf, 0x12, 0x34, 0x56, 0x78,
                                    0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x0b};
    assert_memory_equal(b.data + 8, fixed, sizeof fixed);
    assert_memory_equal(b.data + 8 + 17, "hello\nworld", 11);
    assert_int_equal(ns_be32_read(b.data + 8 + 28), hdr_len - 32);
    assert_memory_equal(b.data + 8 + 32,
                        "\x00\x09namespace\x00\x00\x00\x09"
                        "CORPUS_KV",
                        24);

    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    assert_int_equal(ns_remoting_decode(b.data, b.len, &m), NS_OK);
    assert_int_equal(m.cmd.code, 101);
    assert_int_equal(m.cmd.language, NS_LANG_CPP);
    assert_int_equal(m.cmd.version, 479);
    assert_int_equal(m.cmd.opaque, 0x12345678);
    assert_int_equal(m.cmd.flag, NS_FLAG_ONEWAY);
    assert_int_equal(m.cmd.serialize_type, NS_SERIALIZE_ROCKETMQ);
    assert_string_equal(m.cmd.remark, "hello\nworld");
    assert_int_equal(m.cmd.remark_len, 11);
    assert_true(m.cmd.has_ext);
    assert_int_equal(m.cmd.n_ext, 3);
    assert_ext(&m.cmd, 0, "namespace", "CORPUS_KV");
    assert_ext(&m.cmd, 1, "key", "k1");
    assert_ext(&m.cmd, 2, "value", "v\xc3\xbc \"q\"");
    assert_int_equal(m.cmd.body_len, sizeof body);
    assert_memory_equal(m.cmd.body, body, sizeof body);
    assert_reencodes(&m, b.data, b.len);

    /* no remark, no ext: the minimal 21-byte header */
    ns_buf_reset(&b);
    ns_cmd_t c2 = {.code = 9999,
                   .language = NS_LANG_JAVA,
                   .version = 479,
                   .opaque = 11,
                   .serialize_type = NS_SERIALIZE_ROCKETMQ};
    assert_int_equal(ns_remoting_encode(&b, &c2), NS_OK);
    assert_int_equal(b.len, 8 + 21);
    assert_int_equal(ns_remoting_decode(b.data, b.len, &m), NS_OK);
    assert_int_equal(m.cmd.code, 9999);
    assert_null(m.cmd.remark);
    assert_false(m.cmd.has_ext);
    assert_int_equal(m.cmd.n_ext, 0);
    assert_null(m.cmd.body);
    assert_reencodes(&m, b.data, b.len);

    /* an empty remark is written as length 0 and reads back as no remark */
    ns_buf_reset(&b);
    c2.remark = "";
    assert_int_equal(ns_remoting_encode(&b, &c2), NS_OK);
    assert_int_equal(b.len, 8 + 21);
    assert_int_equal(ns_remoting_decode(b.data, b.len, &m), NS_OK);
    assert_null(m.cmd.remark);

    /* code and version are shorts on the wire */
    ns_buf_reset(&b);
    c2.code = -2;
    c2.version = -5;
    assert_int_equal(ns_remoting_encode(&b, &c2), NS_OK);
    assert_int_equal(ns_remoting_decode(b.data, b.len, &m), NS_OK);
    assert_int_equal(m.cmd.code, -2);
    assert_int_equal(m.cmd.version, -5);
    ns_cmd_msg_free(&m);
    ns_buf_free(&b);
}

static void test_binary_null_entries_and_trailing(void **state)
{
    (void)state;
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    bin_t b;
    bin_fixed(&b);
    bin_be32(&b, 0); /* no remark */
    bin_be32(&b, 2 + 1 + 4 + 0 + 2 + 0 + 4 + 1 + 2 + 1 + 4 + 1);
    bin_be16(&b, 1); /* "a" -> "" (null value: dropped) */
    bin_bytes(&b, "a");
    bin_be32(&b, 0);
    bin_be16(&b, 0); /* "" -> "x" (null key: dropped) */
    bin_be32(&b, 1);
    bin_bytes(&b, "x");
    bin_be16(&b, 1); /* "t" -> "y" */
    bin_bytes(&b, "t");
    bin_be32(&b, 1);
    bin_bytes(&b, "y");
    bin_bytes(&b, "junk"); /* after the ext block: ignored like Java does */
    assert_int_equal(decode_bin(&b, &m), NS_OK);
    assert_int_equal(m.cmd.code, 105);
    assert_int_equal(m.cmd.opaque, 7);
    assert_true(m.cmd.has_ext);
    assert_int_equal(m.cmd.n_ext, 1);
    assert_ext(&m.cmd, 0, "t", "y");
    ns_cmd_msg_free(&m);
}

static void test_binary_bad_lengths(void **state)
{
    (void)state;
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    bin_t b;

    /* negative remark length */
    bin_fixed(&b);
    bin_be32(&b, 0xFFFFFFFFu);
    bin_be32(&b, 0);
    assert_int_equal(decode_bin(&b, &m), NS_EINVAL);
    /* INT32_MIN remark length */
    bin_fixed(&b);
    bin_be32(&b, 0x80000000u);
    bin_be32(&b, 0);
    assert_int_equal(decode_bin(&b, &m), NS_EINVAL);
    /* remark longer than the header */
    bin_fixed(&b);
    bin_be32(&b, 5);
    bin_bytes(&b, "abcd");
    assert_int_equal(decode_bin(&b, &m), NS_EINVAL);
    /* remark fits but no room for extLength */
    bin_fixed(&b);
    bin_be32(&b, 2);
    bin_bytes(&b, "ab");
    bin_be16(&b, 0);
    assert_int_equal(decode_bin(&b, &m), NS_EINVAL);
    /* negative ext length */
    bin_fixed(&b);
    bin_be32(&b, 0);
    bin_be32(&b, 0xFFFFFFF0u);
    assert_int_equal(decode_bin(&b, &m), NS_EINVAL);
    /* ext length beyond the header */
    bin_fixed(&b);
    bin_be32(&b, 0);
    bin_be32(&b, 100);
    bin_be16(&b, 1);
    bin_bytes(&b, "a");
    bin_be32(&b, 1);
    bin_bytes(&b, "b");
    assert_int_equal(decode_bin(&b, &m), NS_EINVAL);
    /* negative key length */
    bin_fixed(&b);
    bin_be32(&b, 0);
    bin_be32(&b, 8);
    bin_be16(&b, 0xFFFF);
    bin_be32(&b, 0);
    bin_be16(&b, 0);
    assert_int_equal(decode_bin(&b, &m), NS_EINVAL);
    /* negative value length */
    bin_fixed(&b);
    bin_be32(&b, 0);
    bin_be32(&b, 8);
    bin_be16(&b, 1);
    bin_bytes(&b, "a");
    bin_be32(&b, 0xFFFFFFFFu);
    bin_u8(&b, 0);
    assert_int_equal(decode_bin(&b, &m), NS_EINVAL);
    /* key running past the ext block (though inside the header) */
    bin_fixed(&b);
    bin_be32(&b, 0);
    bin_be32(&b, 4);
    bin_be16(&b, 6);
    bin_bytes(&b, "abcdef");
    bin_be32(&b, 1);
    bin_bytes(&b, "v");
    assert_int_equal(decode_bin(&b, &m), NS_EINVAL);
    /* value running past the ext block */
    bin_fixed(&b);
    bin_be32(&b, 0);
    bin_be32(&b, 8);
    bin_be16(&b, 1);
    bin_bytes(&b, "a");
    bin_be32(&b, 2);
    bin_bytes(&b, "vv");
    assert_int_equal(decode_bin(&b, &m), NS_EINVAL);
    /* half an entry at the end of the block */
    bin_fixed(&b);
    bin_be32(&b, 0);
    bin_be32(&b, 1);
    bin_u8(&b, 0);
    assert_int_equal(decode_bin(&b, &m), NS_EINVAL);
    /* header shorter than the fixed part */
    bin_fixed(&b);
    assert_int_equal(decode_bin(&b, &m), NS_EINVAL);
    assert_int_equal(m.cmd.n_ext, 0);
    ns_cmd_msg_free(&m);
}

/* Every shortening of the encoded c must fail cleanly: raw prefixes (the
 * length prefix no longer matches; the frame is incomplete to
 * ns_frame_peek), and prefixes whose length prefix and header length were
 * patched to describe a shorter, self-consistent frame. A binary header
 * cut short fails, a whole one with a shortened body decodes; any proper
 * prefix of a JSON object is invalid. Returns the whole frame decoded, in
 * *m (caller frees). */
static void check_truncations(const ns_cmd_t *c, ns_cmd_msg_t *m)
{
    bool binary = c->serialize_type == NS_SERIALIZE_ROCKETMQ;
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_remoting_encode(&b, c), NS_OK);
    size_t hdr_len = ns_be32_read(b.data + 4) & 0xFFFFFF;
    ns_cmd_msg_init(m);
    for (size_t k = 0; k < b.len; k++) {
        uint8_t *f = malloc(k ? k : 1);
        assert_non_null(f);
        memcpy(f, b.data, k);
        assert_int_equal(ns_remoting_decode(f, k, m), NS_EINVAL);
        size_t flen = 0;
        assert_int_equal(ns_frame_peek(f, k, NS_DEFAULT_MAX_FRAME_BYTES, &flen), NS_EAGAIN);
        if (k >= 8 && !binary) {
            ns_be32_write(f, (uint32_t)(k - 4));
            ns_be32_write(f + 4, (uint32_t)(k - 8));
            assert_int_equal(ns_remoting_decode(f, k, m), NS_EINVAL);
        } else if (k >= 8) {
            /* self-consistent frame, header cut short to min(k-8, hdr_len) */
            size_t h = k - 8 < hdr_len ? k - 8 : hdr_len;
            ns_be32_write(f, (uint32_t)(k - 4));
            ns_be32_write(f + 4, 1u << 24 | (uint32_t)h);
            assert_int_equal(ns_remoting_decode(f, k, m), h < hdr_len ? NS_EINVAL : NS_OK);
            /* header length pointing past the (shortened) frame */
            ns_be32_write(f + 4, 1u << 24 | (uint32_t)(k - 7));
            assert_int_equal(ns_remoting_decode(f, k, m), NS_EINVAL);
        }
        free(f);
    }
    assert_int_equal(ns_remoting_decode(b.data, b.len, m), NS_OK);
    ns_buf_free(&b);
}

/* A binary frame with a body, and a JSON one without. */
static void test_truncations(void **state)
{
    (void)state;
    ns_ext_field_t ext[] = {EXT("brokerName", "broker-a"), EXT("brokerId", "0")};
    ns_cmd_t c = {.code = 103,
                  .version = 479,
                  .opaque = 3,
                  .remark = "rm",
                  .remark_len = 2,
                  .serialize_type = NS_SERIALIZE_ROCKETMQ,
                  .has_ext = true,
                  .ext = ext,
                  .n_ext = 2,
                  .body = (const uint8_t *)"BODY",
                  .body_len = 4};
    ns_cmd_msg_t m;
    check_truncations(&c, &m);
    assert_int_equal(m.cmd.body_len, 4);
    ns_cmd_msg_free(&m);

    ns_ext_field_t jext[] = {EXT("topic", "T\xc3\xbc"), EXT("n", "1")};
    c.code = 105;
    c.remark = "a\tb";
    c.remark_len = 3;
    c.serialize_type = NS_SERIALIZE_JSON;
    c.ext = jext;
    c.body = NULL;
    c.body_len = 0;
    check_truncations(&c, &m);
    assert_string_equal(m.cmd.remark, "a\tb");
    ns_cmd_msg_free(&m);
}

/* ---- framing ------------------------------------------------------------- */

static void test_frame_peek(void **state)
{
    (void)state;
    uint8_t p[64] = {0};
    size_t len = 0;
    ns_be32_write(p, 20);
    /* fewer than 4 bytes */
    for (size_t n = 0; n < 4; n++)
        assert_int_equal(ns_frame_peek(p, n, 1024, &len), NS_EAGAIN);
    assert_int_equal(ns_frame_peek(NULL, 0, 1024, &len), NS_EAGAIN);
    /* partial */
    assert_int_equal(ns_frame_peek(p, 4, 1024, &len), NS_EAGAIN);
    assert_int_equal(ns_frame_peek(p, 23, 1024, &len), NS_EAGAIN);
    /* exactly complete, and with the next frame's bytes behind it */
    len = 0;
    assert_int_equal(ns_frame_peek(p, 24, 1024, &len), NS_OK);
    assert_int_equal(len, 24);
    len = 0;
    assert_int_equal(ns_frame_peek(p, 64, 1024, &len), NS_OK);
    assert_int_equal(len, 24);
    /* limit applies to frameLength + 4 */
    assert_int_equal(ns_frame_peek(p, 24, 24, &len), NS_OK);
    assert_int_equal(ns_frame_peek(p, 4, 23, &len), NS_ETOOBIG);
    ns_be32_write(p, NS_DEFAULT_MAX_FRAME_BYTES - 4);
    assert_int_equal(ns_frame_peek(p, 8, NS_DEFAULT_MAX_FRAME_BYTES, &len), NS_EAGAIN);
    ns_be32_write(p, NS_DEFAULT_MAX_FRAME_BYTES - 3);
    assert_int_equal(ns_frame_peek(p, 8, NS_DEFAULT_MAX_FRAME_BYTES, &len), NS_ETOOBIG);
    ns_be32_write(p, 0x7FFFFFFF);
    assert_int_equal(ns_frame_peek(p, 8, NS_DEFAULT_MAX_FRAME_BYTES, &len), NS_ETOOBIG);
    /* too small to hold the header word, or negative */
    for (uint32_t v = 0; v < 4; v++) {
        ns_be32_write(p, v);
        assert_int_equal(ns_frame_peek(p, 64, 1024, &len), NS_EINVAL);
    }
    ns_be32_write(p, 0xFFFFFFFFu);
    assert_int_equal(ns_frame_peek(p, 64, 1024, &len), NS_EINVAL);
    ns_be32_write(p, 0x80000000u);
    assert_int_equal(ns_frame_peek(p, 64, 1024, &len), NS_EINVAL);
    /* frameLength 4: header word only, a legal (if useless) frame length */
    ns_be32_write(p, 4);
    assert_int_equal(ns_frame_peek(p, 8, 1024, &len), NS_OK);
    assert_int_equal(len, 8);
}

static void test_decode_frame_errors(void **state)
{
    (void)state;
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    static const char hdr[] = "{\"code\":1}";
    size_t n = 0;
    uint8_t *f = make_frame(NS_SERIALIZE_JSON, hdr, sizeof hdr - 1, "xy", 2, &n);
    assert_int_equal(ns_remoting_decode(f, n, &m), NS_OK);
    assert_int_equal(m.cmd.body_len, 2);
    assert_memory_equal(m.cmd.body, "xy", 2);

    /* unknown serialize types */
    static const uint8_t types[] = {2, 3, 0x7F, 0x80, 0xFF};
    for (size_t i = 0; i < sizeof types; i++) {
        f[4] = types[i];
        assert_int_equal(ns_remoting_decode(f, n, &m), NS_EINVAL);
    }
    f[4] = 0;
    /* header length beyond the frame; exactly the frame is fine */
    ns_be32_write(f + 4, (uint32_t)(n - 8 + 1));
    assert_int_equal(ns_remoting_decode(f, n, &m), NS_EINVAL);
    ns_be32_write(f + 4, 0xFFFFFF);
    assert_int_equal(ns_remoting_decode(f, n, &m), NS_EINVAL);
    ns_be32_write(f + 4, (uint32_t)(n - 8));
    assert_int_equal(ns_remoting_decode(f, n, &m), NS_EINVAL); /* "{\"code\":1}xy" */
    ns_be32_write(f + 4, (uint32_t)(sizeof hdr - 1));
    assert_int_equal(ns_remoting_decode(f, n, &m), NS_OK);
    /* empty header */
    ns_be32_write(f + 4, 0);
    assert_int_equal(ns_remoting_decode(f, n, &m), NS_EINVAL);
    ns_be32_write(f + 4, 1u << 24);
    assert_int_equal(ns_remoting_decode(f, n, &m), NS_EINVAL);
    ns_be32_write(f + 4, (uint32_t)(sizeof hdr - 1));
    /* length prefix disagreeing with the frame size */
    ns_be32_write(f, (uint32_t)(n - 4 + 1));
    assert_int_equal(ns_remoting_decode(f, n, &m), NS_EINVAL);
    ns_be32_write(f, (uint32_t)(n - 4 - 1));
    assert_int_equal(ns_remoting_decode(f, n, &m), NS_EINVAL);
    ns_be32_write(f, 0xFFFFFFFFu);
    assert_int_equal(ns_remoting_decode(f, n, &m), NS_EINVAL);
    free(f);
    /* frames too short for a header word */
    uint8_t tiny[8] = {0, 0, 0, 4, 0, 0, 0, 0};
    for (size_t k = 0; k < 8; k++)
        assert_int_equal(ns_remoting_decode(tiny, k, &m), NS_EINVAL);
    assert_int_equal(ns_remoting_decode(tiny, 8, &m), NS_EINVAL); /* empty JSON header */
    ns_cmd_msg_free(&m);
}

static void test_ext_get(void **state)
{
    (void)state;
    ns_ext_field_t ext[] = {EXT("a", "1"), {NULL, 0, NULL, 0}, EXT("bb", "2"), EXT("a", "3")};
    ns_cmd_t c = {.ext = ext, .n_ext = 4, .has_ext = true};
    assert_string_equal(ns_cmd_ext_get(&c, "a"), "1");
    assert_string_equal(ns_cmd_ext_get(&c, "bb"), "2");
    assert_null(ns_cmd_ext_get(&c, "b"));
    assert_null(ns_cmd_ext_get(&c, ""));
    ns_cmd_t empty = {0};
    assert_null(ns_cmd_ext_get(&empty, "a"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_success_response),
        cmocka_unit_test(test_encode_error_response),
        cmocka_unit_test(test_encode_ext_fields),
        cmocka_unit_test(test_request_init),
        cmocka_unit_test(test_encode_language_and_numbers),
        cmocka_unit_test(test_encode_header_and_body),
        cmocka_unit_test(test_encode_bad_serialize_type),
        cmocka_unit_test(test_decode_java_example),
        cmocka_unit_test(test_decode_go_example),
        cmocka_unit_test(test_decode_cpp_example),
        cmocka_unit_test(test_decode_scalar_ext_values),
        cmocka_unit_test(test_decode_defaults_and_leniency),
        cmocka_unit_test(test_decode_malformed_json),
        cmocka_unit_test(test_decode_arena_growth_and_reuse),
        cmocka_unit_test(test_binary_round_trip),
        cmocka_unit_test(test_binary_null_entries_and_trailing),
        cmocka_unit_test(test_binary_bad_lengths),
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_frame_peek),
        cmocka_unit_test(test_decode_frame_errors),
        cmocka_unit_test(test_ext_get),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
