/* test_decode_linear.c - decoding a header costs time linear in its entries,
 * whose count a peer picks: 200,000 extFields entries, in each header form
 * (JSON fast path, JSON general path, RocketMQ binary), decode well within a
 * second, where a walk over the entries already stored per new entry takes
 * tens of seconds.
 * Duplicates still keep their first position and take the last value. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "ns/buf.h"
#include "ns/err.h"
#include "ns/remoting.h"

#define N_KEYS 200000
#define BUDGET_S 3.0 /* generous for ASan on a loaded 2-core machine */

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wraps a header into a frame in f (reset first). */
static void frame_of(ns_buf_t *f, uint8_t type, const ns_buf_t *hdr)
{
    ns_buf_reset(f);
    assert_int_equal(ns_buf_append_be32(f, (uint32_t)(4 + hdr->len)), NS_OK);
    assert_int_equal(ns_buf_append_be32(f, ((uint32_t)type << 24) | (uint32_t)hdr->len), NS_OK);
    assert_int_equal(ns_buf_append(f, hdr->data, hdr->len), NS_OK);
}

static void json_header(ns_buf_t *h, bool numeric)
{
    ns_buf_reset(h);
    assert_int_equal(ns_buf_append_str(h, "{\"code\":103,\"extFields\":{\"dup\":\"first\""), NS_OK);
    for (int i = 0; i < N_KEYS; i++)
        assert_int_equal(ns_buf_printf(h, numeric ? ",\"key%d\":%d" : ",\"key%d\":\"v%d\"", i, i),
                         NS_OK);
    assert_int_equal(ns_buf_append_str(h, ",\"dup\":\"last\"}}"), NS_OK);
}

static void bin_entry(ns_buf_t *h, const char *k, const char *v)
{
    assert_int_equal(ns_buf_append_be16(h, (uint16_t)strlen(k)), NS_OK);
    assert_int_equal(ns_buf_append_str(h, k), NS_OK);
    assert_int_equal(ns_buf_append_be32(h, (uint32_t)strlen(v)), NS_OK);
    assert_int_equal(ns_buf_append_str(h, v), NS_OK);
}

static void binary_header(ns_buf_t *h)
{
    ns_buf_t ext = NS_BUF_INIT;
    char k[32], v[32];
    bin_entry(&ext, "dup", "first");
    for (int i = 0; i < N_KEYS; i++) {
        snprintf(k, sizeof k, "key%d", i);
        snprintf(v, sizeof v, "v%d", i);
        bin_entry(&ext, k, v);
    }
    bin_entry(&ext, "dup", "last");
    ns_buf_reset(h);
    assert_int_equal(ns_buf_append_be16(h, 103), NS_OK);
    assert_int_equal(ns_buf_append_u8(h, 0), NS_OK);
    assert_int_equal(ns_buf_append_be16(h, 453), NS_OK);
    assert_int_equal(ns_buf_append_be32(h, 1), NS_OK);
    assert_int_equal(ns_buf_append_be32(h, 0), NS_OK);
    assert_int_equal(ns_buf_append_be32(h, 0), NS_OK); /* no remark */
    assert_int_equal(ns_buf_append_be32(h, (uint32_t)ext.len), NS_OK);
    assert_int_equal(ns_buf_append(h, ext.data, ext.len), NS_OK);
    ns_buf_free(&ext);
}

static void decode_in_budget(const ns_buf_t *frame, const char *what)
{
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    double t0 = cpu_now();
    int rc = ns_remoting_decode(frame->data, frame->len, &m);
    double dt = cpu_now() - t0;
    printf("# %s: %d entries decoded in %.3f s CPU\n", what, N_KEYS + 1, dt);
    assert_int_equal(rc, NS_OK);
    assert_true(dt < BUDGET_S);
    assert_int_equal(m.cmd.n_ext, N_KEYS + 1);
    assert_string_equal(m.cmd.ext[0].key, "dup");
    assert_string_equal(m.cmd.ext[0].val, "last");
    assert_string_equal(m.cmd.ext[N_KEYS].key, "key199999");
    assert_string_equal(ns_cmd_ext_get(&m.cmd, "dup"), "last");
    /* the msg is reused for a small header: nothing stale from the index */
    ns_buf_t h = NS_BUF_INIT, f = NS_BUF_INIT;
    assert_int_equal(ns_buf_append_str(&h, "{\"code\":1,\"extFields\":{\"a\":\"1\",\"a\":\"2\"}}"),
                     NS_OK);
    frame_of(&f, NS_SERIALIZE_JSON, &h);
    assert_int_equal(ns_remoting_decode(f.data, f.len, &m), NS_OK);
    assert_int_equal(m.cmd.n_ext, 1);
    assert_string_equal(m.cmd.ext[0].val, "2");
    ns_buf_free(&h);
    ns_buf_free(&f);
    ns_cmd_msg_free(&m);
}

/* A frame of the given serialisation (JSON with or without numbers, which
 * make the fast path give up) decodes within the budget. */
static void check_linear(uint8_t type, bool numbers, const char *what)
{
    ns_buf_t h = NS_BUF_INIT, f = NS_BUF_INIT;
    if (type == NS_SERIALIZE_JSON)
        json_header(&h, numbers);
    else
        binary_header(&h);
    frame_of(&f, type, &h);
    decode_in_budget(&f, what);
    ns_buf_free(&h);
    ns_buf_free(&f);
}

static void test_json_fast_path_linear(void **state)
{
    (void)state;
    check_linear(NS_SERIALIZE_JSON, false, "JSON fast path");
}

static void test_json_general_path_linear(void **state)
{
    (void)state;
    check_linear(NS_SERIALIZE_JSON, true, "JSON general path");
}

static void test_binary_linear(void **state)
{
    (void)state;
    check_linear(NS_SERIALIZE_ROCKETMQ, false, "RocketMQ binary");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_fast_path_linear),
        cmocka_unit_test(test_json_general_path_linear),
        cmocka_unit_test(test_binary_linear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
