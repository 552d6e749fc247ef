/* test_remoting_fast.c - the header fast paths (src/proto/remoting_fast.c)
 * against the general decoders: the shapes Java, Go, C++ and ali-ons
 * clients send must take the fast path, and every header, whether the fast
 * path takes it or not, must decode exactly as the general decoder decodes
 * it (same return code, same fields, same ext entries in the same order). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/buf.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/names.h"
#include "ns/remoting.h"

#define VECTORS_DIR NS_FIXTURES_DIR "/vectors"

/* A frame of the given type around [hdr, hdr+n), in an exactly sized heap
 * block (ASan sees any read past it). Caller frees. */
static uint8_t *frame_of(uint8_t type, const void *hdr, size_t n, size_t *len)
{
    uint8_t *f = malloc(8 + n);
    assert_non_null(f);
    ns_be32_write(f, (uint32_t)(4 + n));
    ns_be32_write(f + 4, (uint32_t)type << 24 | (uint32_t)n);
    if (n)
        memcpy(f + 8, hdr, n);
    *len = 8 + n;
    return f;
}

/* Decodes the frame three ways and asserts they agree; returns the fast
 * path's code (NS_EFALLBACK when it declined). With out, the general
 * decoder's result is left there (the caller frees it). */
static int agree_frame(const uint8_t *f, size_t len, ns_cmd_msg_t *out)
{
    ns_cmd_msg_t ref, fast, both;
    ns_cmd_msg_init(&ref);
    ns_cmd_msg_init(&fast);
    ns_cmd_msg_init(&both);
    int rc_ref = ns_remoting_decode_general(f, len, &ref);
    int rc_fast = ns_remoting_decode_fast(f, len, &fast);
    int rc_both = ns_remoting_decode(f, len, &both);
    assert_int_equal(rc_both, rc_ref);
    if (rc_ref == NS_OK)
        assert_true(ns_cmd_same(&both.cmd, &ref.cmd));
    if (rc_fast != NS_EFALLBACK) {
        assert_int_equal(rc_fast, rc_ref);
        if (rc_ref == NS_OK)
            assert_true(ns_cmd_same(&fast.cmd, &ref.cmd));
        if (rc_ref == NS_OK && fast.cmd.ext_names_ok) { /* its promise: the check would pass */
            char remark[256];
            assert_true(ns_names_check_header(&ref.cmd, remark, sizeof remark));
            for (size_t i = 0; i < ref.cmd.n_ext; i++)
                assert_null(ns_name_problem(ref.cmd.ext[i].val, ref.cmd.ext[i].val_len));
        }
    } else {
        assert_int_equal(fast.cmd.n_ext, 0);
        assert_null(fast.cmd.remark);
    }
    ns_cmd_msg_free(&fast);
    ns_cmd_msg_free(&both);
    if (out)
        *out = ref;
    else
        ns_cmd_msg_free(&ref);
    return rc_fast;
}

static int agree(uint8_t type, const void *hdr, size_t n, ns_cmd_msg_t *out)
{
    size_t len = 0;
    uint8_t *f = frame_of(type, hdr, n, &len);
    int rc = agree_frame(f, len, out);
    free(f);
    return rc;
}

static int agree_json(const char *hdr, ns_cmd_msg_t *out)
{
    return agree(NS_SERIALIZE_JSON, hdr, strlen(hdr), out);
}

/* The same command re-encoded with a binary header: must agree too. */
static int agree_as_binary(const ns_cmd_t *cmd)
{
    ns_buf_t b = NS_BUF_INIT;
    ns_cmd_t c = *cmd;
    c.serialize_type = NS_SERIALIZE_ROCKETMQ;
    assert_int_equal(ns_remoting_encode(&b, &c), NS_OK);
    int rc = agree_frame(b.data, b.len, NULL);
    ns_buf_free(&b);
    return rc;
}

/* ---- the clients' shapes ------------------------------------------------ */

static const struct {
    const char *who, *hdr;
    int language, version, opaque;
    size_t n_ext;
    bool remark;
} SHAPES[] = {
    {"java", /* tests/fixtures/vectors/uncompressed-GET_ROUTEINFO_BY_TOPIC-req-1.bin */
     "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":0,\"language\":\"JAVA\","
     "\"opaque\":42,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
     NS_LANG_JAVA, 479, 42, 1, false},
    {"go", /* docs/protocol.md §1.4: declaration order, empty remark */
     "{\"code\":105,\"language\":\"GO\",\"version\":317,\"opaque\":3,\"flag\":0,\"remark\":\"\","
     "\"extFields\":{\"topic\":\"TopicTest\"}}",
     NS_LANG_GO, 317, 3, 1, true},
    {"cpp", /* docs/protocol.md §1.4: ACL keys always present, trailing newline */
     "{\"code\":105,\"extFields\":{\"AccessKey\":\"\",\"OnsChannel\":\"\",\"Signature\":\"\","
     "\"topic\":\"TopicTest\"},\"flag\":0,\"language\":\"CPP\",\"opaque\":5,\"remark\":\"\","
     "\"version\":333}\n",
     NS_LANG_CPP, 333, 5, 4, true},
    {"ali-ons", /* ali-ons RemotingCommand.buildHeader: JSON.stringify, no remark */
     "{\"code\":105,\"language\":\"JAVA\",\"opaque\":1,\"flag\":0,\"version\":121,"
     "\"extFields\":{\"topic\":\"TopicTest\"}}",
     NS_LANG_JAVA, 121, 1, 1, false},
};

static void client_shapes_take_the_fast_path(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        ns_cmd_msg_t m;
        assert_int_equal(agree_json(SHAPES[i].hdr, &m), NS_OK);
        assert_int_equal(m.cmd.code, NS_REQ_GET_ROUTEINFO_BY_TOPIC);
        assert_int_equal(m.cmd.language, SHAPES[i].language);
        assert_int_equal(m.cmd.version, SHAPES[i].version);
        assert_int_equal(m.cmd.opaque, SHAPES[i].opaque);
        assert_int_equal(m.cmd.flag, 0);
        assert_int_equal(m.cmd.n_ext, SHAPES[i].n_ext);
        assert_true(m.cmd.has_ext);
        assert_int_equal(m.cmd.remark != NULL, SHAPES[i].remark);
        assert_string_equal(ns_cmd_ext_get(&m.cmd, "topic"), "TopicTest");
        assert_int_equal(agree_as_binary(&m.cmd), NS_OK);
        ns_cmd_msg_free(&m);
    }
}

/* ext_names_ok: set only when every ext value is a name of ASCII (a byte
 * above 0x7f leaves the UTF-8 rules to the check). */
static bool names_ok_of(const char *topic)
{
    char hdr[600];
    size_t len = 0;
    snprintf(hdr, sizeof hdr, "{\"code\":105,\"extFields\":{\"topic\":\"%s\"},\"flag\":0}", topic);
    uint8_t *f = frame_of(NS_SERIALIZE_JSON, hdr, strlen(hdr), &len);
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    assert_int_equal(ns_remoting_decode_fast(f, len, &m), NS_OK);
    bool ok = m.cmd.ext_names_ok;
    ns_cmd_msg_free(&m);
    free(f);
    return ok;
}

static void names_vouched_for(void **state)
{
    (void)state;
    char t[300];
    assert_true(names_ok_of("TopicTest"));
    assert_true(names_ok_of("T"));
    assert_false(names_ok_of(""));
    assert_false(names_ok_of("T\x7f"));
    assert_false(names_ok_of("0123456789\x7f"));
    assert_false(names_ok_of("\x7f"
                             "0123456789"));
    memset(t, 'a', 255);
    t[255] = 0;
    assert_true(names_ok_of(t));
    t[254] = 0x7f; /* in the overlapping last word */
    assert_false(names_ok_of(t));
    t[254] = 'a';
    t[255] = 'a';
    t[256] = 0;
    assert_false(names_ok_of(t));
    /* a byte above 0x7f, valid UTF-8 or not, anywhere (tail word included):
     * never vouched for; every byte value at every place of 1..20 bytes */
    assert_false(names_ok_of("caf\xc3\xa9"));
    for (size_t n = 1; n <= 20; n++)
        for (size_t at = 0; at < n; at++)
            for (int b = 0x20; b < 256; b++) {
                if (b == '"' || b == '\\')
                    continue;
                memset(t, 'a', n);
                t[n] = 0;
                t[at] = (char)b;
                if (names_ok_of(t) != (b < 0x7f))
                    fail_msg("byte 0x%02x at %zu of %zu: %s", b, at, n,
                             b < 0x7f ? "not vouched for" : "vouched for");
            }
    /* a frame decoded by the general decoder is checked by dispatch as before */
    ns_cmd_msg_t m;
    assert_int_equal(agree_json("{\"code\":105,\"extFields\":{\"topic\":\"T\\u0041\"}}", &m),
                     NS_EFALLBACK);
    assert_false(m.cmd.ext_names_ok);
    ns_cmd_msg_free(&m);
}

/* ---- every captured frame ----------------------------------------------- */

static bool is_request(const char *name)
{
    return strstr(name, "-req-") != NULL;
}

static void vectors_agree(void **state)
{
    (void)state;
    DIR *d = opendir(VECTORS_DIR);
    size_t files = 0, requests = 0, fast = 0;
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name), len = 0;
        char path[1024];
        uint8_t *data = NULL;
        if (n < 4 || strcmp(e->d_name + n - 4, ".bin") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", VECTORS_DIR, e->d_name);
        assert_int_equal(nstest_read_file(path, &data, &len), 0);
        ns_cmd_msg_t m;
        int rc = agree_frame(data, len, &m);
        assert_int_equal(m.cmd.serialize_type, NS_SERIALIZE_JSON);
        if (is_request(e->d_name)) { /* what clients and brokers send */
            if (rc != NS_OK)
                fail_msg("%s: the fast path declined (%d)", e->d_name, rc);
            requests++;
        }
        fast += rc == NS_OK;
        /* and the same command with a binary header */
        m.cmd.body = NULL;
        m.cmd.body_len = 0;
        assert_int_equal(agree_as_binary(&m.cmd), NS_OK);
        ns_cmd_msg_free(&m);
        free(data);
        files++;
    }
    closedir(d);
    assert_true(files >= 45);
    assert_true(requests >= 20);
    print_message("%zu frames, %zu requests; the fast path took %zu\n", files, requests, fast);
}

/* ---- JSON edge cases ---------------------------------------------------- */

/* Each must decode as the general decoder does; fast = whether the fast
 * path is expected to take it. */
static const struct {
    const char *hdr;
    bool fast;
} JSON_EDGES[] = {
    {"{}", true},
    {" {\"code\" : 105 ,\t\"flag\":0 }\r\n", true},
    {"{\"code\":1,\"extFields\":{\"a\":\"1\"},\"extFields\":{\"b\":\"2\"}}", true},
    {"{\"code\":1,\"extFields\":{\"a\":\"1\",\"a\":\"2\",\"b\":\"3\"}}", true},
    {"{\"extFields\":{\"\":\"\"}}", true},
    {"{\"extFields\":{}}", true},
    {"{\"code\":007}", true},
    {"{\"code\":-0}", true},
    {"{\"code\":-2147483648,\"opaque\":2147483647}", true},
    {"{\"code\":1234567890}", true},
    {"{\"x\":\"y\",\"z\":5,\"code\":3}", true},
    {"{\"serializeTypeCurrentRPC\":\"ROCKETMQ\",\"code\":3}", true},
    {"{\"language\":\"GO\"}", true},
    {"{\"language\":\"NOPE\"}", true},
    {"{\"language\":\"JAVAX\"}", true},
    {"{\"remark\":\"\xc3\xa9t\xc3\xa9 long enough to span words\"}", true},
    {"{\"remark\":\"a\",\"remark\":\"bb\"}", true},
    {"{\"codex\":1,\"code\":2,\"flags\":3}", true},
    {"{\"extFields\":{\"topic\":\"0123456789abcdef0123456789abcdef\"}}", true},
    /* Java's member order (java_members), left at every member */
    {"{\"code\":105}", true},
    {"{\"code\":105,\"extFields\":{\"topic\":\"T\"}}", true},
    {"{\"code\":105,\"extFields\":{\"topic\":\"T\",\"acceptStandardJsonOnly\":\"true\"},"
     "\"flag\":0,\"language\":\"JAVA\",\"opaque\":1,\"serializeTypeCurrentRPC\":\"JSON\","
     "\"version\":479}",
     true},
    {"{\"code\":105,\"extFields\":{\"topic\":\"a\",\"b\":\"c\",\"topic\":\"d\"},\"flag\":0}", true},
    {"{\"code\":105,\"extFields\":{\"topic\":\"\"},\"flag\":0,\"language\":\"GO\",\"opaque\":1}",
     true},
    {"{\"code\":105,\"extFields\":{\"b\":\"c\"},\"flag\":0,\"language\":\"JAVA\",\"opaque\":1,"
     "\"remark\":\"r\",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":1}",
     true},
    {"{\"code\":105,\"extFields\":{\"topic\":\"T\"},\"flag\":0,\"language\":\"JAVA\",\"opaque\":1,"
     "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479,\"code\":7,\"extFields\":{}}",
     true},
    {"{\"code\":105,\"extFields\":{\"topic\":\"T\" },\"flag\": 0,\"language\":\"JAVA\",\"opaque\":"
     " -1,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":\t479 }",
     true},
    {"{\"code\":105,\"extFields\":{\"topic\":\"T\"},\"flag\":0,\"language\":\"JAVA\",\"opaque\":x}",
     false},
    {"{\"code\":105,\"extFields\":{\"topic\":\"a\\u0041\"},\"flag\":0}", false},
    {"{\"code\":105,\"extFields\":{\"topic\":\"T\",}}", false},
    {"{\"code\":105,\"extFields\":{\"topic\":\"T\"]}", false},
    {"{\"code\":1.5,\"extFields\":{\"topic\":\"T\"}}", false},
    /* DEL: a name's problem (ext_names_ok not set: agree_frame checks it), not the decoder's */
    {"{\"extFields\":{\"topic\":\"T\x7f\"}}", true},
    {"{\"extFields\":{\"topic\":\"0123456789\x7f\"}}", true},
    {"{\"extFields\":{\"topic\":\"01234567\x7f\"}}", true},
    {"{\"extFields\":{\"topic\":\"\x7f"
     "0123456789abcdef\"}}",
     true},
    {"{\"remark\":\"\x7f\"}", true},
    {"{\"code\":00000000007}", false},
    {"{\"code\":2147483648}", false},
    {"{\"code\":-2147483649}", false},
    {"{\"code\":1e2}", false},
    {"{\"code\":1.5}", false},
    {"{\"code\":\"105\"}", false},
    {"{\"code\":null}", false},
    {"{\"opaque\":true}", false},
    {"{\"remark\":\"x\",\"remark\":null}", false},
    {"{\"remark\":\"a\\nb\"}", false},
    {"{\"remark\":\"a\tb\"}", false},
    {"{\"extFields\":{\"topic\":\"T\\u0041\"}}", false},
    {"{\"extFields\":{\"topic\":\"T\\u0000\"}}", false},
    {"{\"extFields\":{\"n\":5,\"b\":true}}", false},
    {"{\"extFields\":null}", false},
    {"{\"extFields\":{\"o\":{\"p\":1}}}", false},
    {"{\"x\":{\"y\":1},\"code\":3}", false},
    {"{\"x\":[1,2],\"code\":3}", false},
    {"{\"co\\u0064e\":5}", false},
    {"\xef\xbb\xbf{\"code\":1}", false},
    {"{\"code\":1,}", false},
    {"{\"code\":1}x", false},
    {"{\"code\":1}\x01", false},
    {"{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"}", false},
    {"{\"remark\":\"abcdefghijklmnop", false},
    {"{\"code\":1 2}", false},
    {"[]", false},
    {"", false},
};

static void json_edges_agree(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof JSON_EDGES / sizeof JSON_EDGES[0]; i++) {
        int rc = agree_json(JSON_EDGES[i].hdr, NULL);
        if ((rc == NS_OK) != JSON_EDGES[i].fast)
            fail_msg("%s: fast path %d, expected %s", JSON_EDGES[i].hdr, rc,
                     JSON_EDGES[i].fast ? "taken" : "declined");
    }
}

/* Every prefix of every client shape, and every single-byte change of it:
 * the fast path may decline, never disagree. */
static void json_mutations_agree(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {'"', '\\', ':', ',', '{', '}', ' ', '0', '-', 'e', 0, 0x1f};
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        const char *h = SHAPES[i].hdr;
        size_t n = strlen(h);
        char *copy = malloc(n);
        assert_non_null(copy);
        for (size_t cut = 0; cut <= n; cut++)
            agree(NS_SERIALIZE_JSON, h, cut, NULL);
        for (size_t at = 0; at < n; at++) {
            for (size_t b = 0; b < sizeof bytes; b++) {
                memcpy(copy, h, n);
                copy[at] = (char)bytes[b];
                agree(NS_SERIALIZE_JSON, copy, n, NULL);
            }
        }
        free(copy);
    }
}

/* Past NS_HDR_EXT_INDEX_MIN (16) entries the fast path switches to the
 * shared hash index and still decodes the header (a big flat header must
 * not go to cJSON: its tree costs ~100 bytes per entry); duplicates keep
 * their first position and their last value. */
static void many_ext_entries(void **state)
{
    (void)state;
    ns_buf_t h = NS_BUF_INIT;
    static const int counts[] = {15, 16, 17, 18, 100, 5000};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int n = counts[c];
        ns_buf_reset(&h);
        assert_int_equal(ns_buf_append_str(&h, "{\"extFields\":{"), NS_OK);
        for (int i = 0; i < n; i++)
            assert_int_equal(ns_buf_printf(&h, "%s\"k%d\":\"v%d\"", i ? "," : "", i, i), NS_OK);
        assert_int_equal(ns_buf_printf(&h, ",\"k0\":\"last\",\"k%d\":\"end\"}}", n - 1), NS_OK);
        ns_cmd_msg_t m;
        assert_int_equal(agree(NS_SERIALIZE_JSON, h.data, h.len, &m), NS_OK);
        assert_int_equal(m.cmd.n_ext, (size_t)n);
        assert_string_equal(m.cmd.ext[0].val, "last");
        assert_string_equal(m.cmd.ext[n - 1].val, "end");
        assert_int_equal(agree_as_binary(&m.cmd), NS_OK);
        ns_cmd_msg_free(&m);
    }
    /* a second extFields after a big first one replaces it */
    ns_buf_reset(&h);
    assert_int_equal(ns_buf_append_str(&h, "{\"extFields\":{"), NS_OK);
    for (int i = 0; i < 40; i++)
        assert_int_equal(ns_buf_printf(&h, "%s\"k%d\":\"v\"", i ? "," : "", i), NS_OK);
    assert_int_equal(ns_buf_append_str(&h, "},\"extFields\":{\"k3\":\"a\",\"k3\":\"b\"}}"), NS_OK);
    ns_cmd_msg_t m;
    assert_int_equal(agree(NS_SERIALIZE_JSON, h.data, h.len, &m), NS_OK);
    assert_int_equal(m.cmd.n_ext, 1);
    assert_string_equal(ns_cmd_ext_get(&m.cmd, "k3"), "b");
    ns_cmd_msg_free(&m);
    ns_buf_free(&h);
}

/* ---- binary edge cases -------------------------------------------------- */

/* A binary header: the fixed fields, then remark and ext block as given. */
static size_t bin_header(uint8_t *h, int32_t rlen, const void *rem, const void *ext, size_t elen,
                         int32_t elen_field)
{
    size_t n = 0;
    const uint8_t fixed[13] = {0, 105, 0, 0x01, 0xdf, 0, 0, 0, 7, 0, 0, 0, 0};
    memcpy(h, fixed, 13);
    n = 13;
    ns_be32_write(h + n, (uint32_t)rlen);
    n += 4;
    if (rlen > 0) {
        memcpy(h + n, rem, (size_t)rlen);
        n += (size_t)rlen;
    }
    ns_be32_write(h + n, (uint32_t)elen_field);
    n += 4;
    memcpy(h + n, ext, elen);
    return n + elen;
}

static void binary_edges_agree(void **state)
{
    (void)state;
    uint8_t h[256];
    /* key "topic" value "T", an entry with an empty value, a duplicate */
    static const uint8_t ext[] = {0, 5,   't', 'o', 'p', 'i', 'c', 0, 0, 0, 1, 'T', 0,
                                  1, 'e', 0,   0,   0,   0,        /* dropped */
                                  0, 0,   0,   0,   0,   1,   'x', /* dropped */
                                  0, 5,   't', 'o', 'p', 'i', 'c', 0, 0, 0, 2, 'U', 'V'};
    size_t n = bin_header(h, 2, "ok", ext, sizeof ext, (int32_t)sizeof ext);
    ns_cmd_msg_t m;
    assert_int_equal(agree(NS_SERIALIZE_ROCKETMQ, h, n, &m), NS_OK);
    assert_int_equal(m.cmd.n_ext, 1);
    assert_string_equal(ns_cmd_ext_get(&m.cmd, "topic"), "UV");
    assert_int_equal(m.cmd.remark_len, 2);
    ns_cmd_msg_free(&m);
    /* every prefix, every ext length field, bytes after the block */
    for (size_t cut = 0; cut <= n; cut++)
        agree(NS_SERIALIZE_ROCKETMQ, h, cut, NULL);
    for (int32_t el = -2; el <= (int32_t)sizeof ext + 2; el++) {
        size_t k = bin_header(h, 2, "ok", ext, sizeof ext, el);
        agree(NS_SERIALIZE_ROCKETMQ, h, k, NULL);
    }
    /* negative remark length; a key length with the sign bit set */
    n = bin_header(h, -1, NULL, ext, sizeof ext, (int32_t)sizeof ext);
    assert_int_equal(agree(NS_SERIALIZE_ROCKETMQ, h, n, NULL), NS_EFALLBACK);
    uint8_t big[32775 + 6 * 1000] = {0}; /* the rest: empty entries */
    big[0] = 0x80;
    big[1] = 0x01;
    size_t bn = 13 + 4 + 4 + sizeof big;
    uint8_t *bh = malloc(bn);
    assert_non_null(bh);
    bin_header(bh, 0, NULL, big, sizeof big, (int32_t)sizeof big);
    assert_int_equal(agree(NS_SERIALIZE_ROCKETMQ, bh, bn, NULL), NS_EFALLBACK);
    free(bh);
    /* each byte of the ext block changed */
    uint8_t copy[sizeof ext];
    for (size_t at = 0; at < sizeof ext; at++)
        for (int v = 0; v < 256; v += 51) {
            memcpy(copy, ext, sizeof ext);
            copy[at] = (uint8_t)v;
            n = bin_header(h, 0, NULL, copy, sizeof copy, (int32_t)sizeof copy);
            agree(NS_SERIALIZE_ROCKETMQ, h, n, NULL);
        }
}

/* ns_cmd_ext_get compares up to the key's NUL: prefixes, extensions and
 * embedded NULs (binary keys may hold them) must not match. */
static void ext_get_exact(void **state)
{
    (void)state;
    const ns_ext_field_t ext[] = {
        {NULL, 0, "skipped", 7}, {"to", 2, "short", 5},    {"topicX", 6, "long", 4},
        {"t\0pic", 5, "nul", 3}, {"topic", 5, "right", 5}, {"", 0, "empty", 5},
    };
    ns_cmd_t c;
    ns_cmd_request_init(&c, 105, ext, sizeof ext / sizeof ext[0]);
    assert_string_equal(ns_cmd_ext_get(&c, "topic"), "right");
    assert_string_equal(ns_cmd_ext_get(&c, "to"), "short");
    assert_string_equal(ns_cmd_ext_get(&c, "topicX"), "long");
    assert_string_equal(ns_cmd_ext_get(&c, ""), "empty");
    assert_null(ns_cmd_ext_get(&c, "t"));
    assert_null(ns_cmd_ext_get(&c, "topi"));
    assert_null(ns_cmd_ext_get(&c, "topicXY"));
    c.n_ext = 5;
    assert_null(ns_cmd_ext_get(&c, ""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(client_shapes_take_the_fast_path),
        cmocka_unit_test(names_vouched_for),
        cmocka_unit_test(vectors_agree),
        cmocka_unit_test(json_edges_agree),
        cmocka_unit_test(json_mutations_agree),
        cmocka_unit_test(many_ext_entries),
        cmocka_unit_test(binary_edges_agree),
        cmocka_unit_test(ext_get_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
