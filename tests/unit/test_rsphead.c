/* test_rsphead.c - reply headers from templates (src/proto/rsphead.c) are
 * byte for byte what the full encoder writes, and a shape that cannot have a
 * template is encoded once per reply and evicts no template.
 *
 * rsphead.c is included with a smaller NS_RSP_HEAD_MAX (the hook its header
 * documents: no real shape is over 160 bytes, one with every number at its
 * widest is over 120) and with its calls of the full encoder counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ns/buf.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/remoting.h"

#define NS_RSP_HEAD_MAX 120
static unsigned n_encodes; /* full header encodes made inside rsphead.c */
static int counted_encode_header(ns_buf_t *out, const ns_cmd_t *c)
{
    n_encodes++;
    return ns_remoting_encode_header(out, c);
}
#define ns_remoting_encode_header counted_encode_header
#include "../../src/proto/rsphead.c"
#undef ns_remoting_encode_header

static const int32_t OPAQUES[] = {
    0,   1,    9,   10,        99,         100,        999,       1000,      12345, -1,
    -10, -100, -99, 999999999, 1000000000, -999999999, INT32_MAX, INT32_MIN, 7};

/* Encodes c through the cache and through the encoder; both must agree. */
static void same_bytes(ns_rsp_heads_t *h, const ns_cmd_t *c)
{
    ns_buf_t want = NS_BUF_INIT, got = NS_BUF_INIT;
    assert_int_equal(ns_buf_append(&got, "xy", 2), NS_OK); /* appends after what is there */
    assert_int_equal(ns_remoting_encode_header(&want, c), NS_OK);
    assert_int_equal(ns_rsp_heads_encode(h, &got, c), NS_OK);
    assert_int_equal(got.len, want.len + 2);
    assert_memory_equal(got.data + 2, want.data, want.len);
    assert_int_equal(got.data[got.len], 0);
    ns_buf_free(&want);
    ns_buf_free(&got);
}

static ns_cmd_t reply(int32_t code, uint8_t ser)
{
    ns_cmd_t c = {0};
    c.code = code;
    c.language = NS_LANG_JAVA;
    c.version = NS_VERSION_V5_3_3;
    c.flag = NS_FLAG_RESPONSE;
    c.serialize_type = ser;
    return c;
}

static void test_shapes_and_opaques(void **state)
{
    (void)state;
    ns_rsp_heads_t h;
    memset(&h, 0, sizeof h);
    static const uint8_t body[] = "{\"brokerDatas\":[]}";
    const int32_t codes[] = {NS_RSP_SUCCESS, NS_RSP_TOPIC_NOT_EXIST, NS_RSP_SYSTEM_ERROR, 1, 2, 3};
    for (int pass = 0; pass < 2; pass++) /* the second pass evicts and rebuilds slots */
        for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++)
            for (uint8_t ser = 0; ser < 2; ser++)
                for (size_t i = 0; i < sizeof OPAQUES / sizeof OPAQUES[0]; i++) {
                    ns_cmd_t c = reply(codes[k], ser);
                    c.opaque = OPAQUES[i];
                    c.body = i % 2 ? body : NULL;
                    c.body_len = i % 2 ? sizeof body - 1 : 0;
                    same_bytes(&h, &c);
                    c.version = NS_VERSION_V4_9_4; /* another shape */
                    same_bytes(&h, &c);
                }
}

static void test_remark_and_ext_bypass(void **state)
{
    (void)state;
    ns_rsp_heads_t h;
    memset(&h, 0, sizeof h);
    ns_ext_field_t ext[] = {{"k", 1, "v", 1}};
    for (uint8_t ser = 0; ser < 2; ser++) {
        ns_cmd_t c = reply(NS_RSP_SUCCESS, ser);
        c.opaque = 42;
        same_bytes(&h, &c); /* a template for the plain shape */
        c.remark = "no route";
        c.remark_len = 8;
        same_bytes(&h, &c);
        c.remark = NULL;
        c.remark_len = 0;
        c.has_ext = true;
        same_bytes(&h, &c); /* an empty extFields */
        c.ext = ext;
        c.n_ext = 1;
        same_bytes(&h, &c);
    }
}

static void test_bad_serialisation(void **state)
{
    (void)state;
    ns_rsp_heads_t h;
    memset(&h, 0, sizeof h);
    ns_buf_t out = NS_BUF_INIT;
    ns_cmd_t c = reply(NS_RSP_SUCCESS, 7);
    assert_int_equal(ns_rsp_heads_encode(&h, &out, &c), NS_EINVAL);
    assert_int_equal(out.len, 0);
    for (unsigned i = 0; i < NS_RSP_HEAD_SLOTS; i++)
        assert_false(h.slot[i].shape.used);
    for (unsigned i = 0; i < NS_RSP_NOTPL_SLOTS; i++) /* an error is not a shape */
        assert_false(h.notpl[i].used);
    ns_buf_free(&out);
}

/* The widest shape (134 bytes) cannot have a template under this test's
 * limit: each of its replies is one full encode, and the templates of four
 * other shapes stay where they are. */
static void test_no_template_shape(void **state)
{
    (void)state;
    ns_rsp_heads_t h;
    memset(&h, 0, sizeof h);
    for (unsigned i = 0; i < NS_RSP_HEAD_SLOTS; i++) {
        ns_cmd_t c = reply(NS_RSP_SUCCESS + (int32_t)i, NS_SERIALIZE_JSON);
        same_bytes(&h, &c);
    }
    ns_rsp_head_t kept[NS_RSP_HEAD_SLOTS];
    memcpy(kept, h.slot, sizeof kept);
    ns_cmd_t wide = reply(INT32_MIN, NS_SERIALIZE_JSON);
    wide.flag = INT32_MIN;
    wide.version = INT32_MIN;
    wide.language = NS_LANG_NODE_JS;
    for (int i = 0; i < 3; i++) {
        wide.opaque = 1000 + i;
        n_encodes = 0;
        same_bytes(&h, &wide);
        /* the first reply tries a template (opaque 0 and 1), then encodes */
        assert_int_equal(n_encodes, i == 0 ? 3 : 1);
        assert_memory_equal(h.slot, kept, sizeof kept);
    }
    for (unsigned i = 0; i < NS_RSP_HEAD_SLOTS; i++) { /* still served from templates */
        ns_cmd_t c = reply(NS_RSP_SUCCESS + (int32_t)i, NS_SERIALIZE_JSON);
        c.opaque = 77;
        n_encodes = 0;
        same_bytes(&h, &c);
        assert_int_equal(n_encodes, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes_and_opaques),
        cmocka_unit_test(test_remark_and_ext_bypass),
        cmocka_unit_test(test_bad_serialisation),
        cmocka_unit_test(test_no_template_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
