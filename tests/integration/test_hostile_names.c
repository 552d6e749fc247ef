/* test_hostile_names.c - names a peer controls, through the real namesrvd,
 * where hostile ones must do no harm: a NUL (\u0000 in JSON) must not cut a
 * topic name short and merge it into another; a name over 255 bytes
 * (ns/names.h) must not fail the broker's whole registration with
 * "internal error". A registration
 * with bad topics registers the good ones and names the bad one in its
 * remark; a bad broker, cluster, topic or KV name in a header is refused
 * with INVALID_PARAMETER and a remark naming the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/model.h"

#define TIMEOUT_MS 10000

/* JSON RegisterBrokerBody with the given topics; then every "@NUL@" in the
 * text becomes the six characters \u0000. */
static void json_body(ns_buf_t *out, const char *const *topics, size_t n)
{
    ns_buf_t tmp = NS_BUF_INIT;
    nstest_regbody_names(&tmp, topics, n);
    ns_buf_reset(out);
    for (size_t i = 0; i < tmp.len;) {
        if (tmp.len - i >= 5 && memcmp(tmp.data + i, "@NUL@", 5) == 0) {
            assert_int_equal(ns_buf_append_str(out, "\\u0000"), NS_OK);
            i += 5;
        } else {
            assert_int_equal(ns_buf_append_u8(out, tmp.data[i]), NS_OK);
            i++;
        }
    }
    ns_buf_free(&tmp);
}

static ns_cmd_msg_t register_with(ns_client_t *c, const char *cluster, const char *name,
                                  const ns_buf_t *body)
{
    char crc[16];
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(body->data, body->len));
    const char *kv[] = {"bodyCrc32",  crc,          "brokerAddr",   "10.0.7.1:10911", "brokerId",
                        "0",          "brokerName", name,           "clusterName",    cluster,
                        "compressed", "false",      "haServerAddr", "10.0.7.1:10912", NULL};
    return nstest_call_msg(c, NS_REQ_REGISTER_BROKER, kv, body->data, body->len, TIMEOUT_MS);
}

static char *topic_list(ns_client_t *c)
{
    ns_cmd_msg_t rsp =
        nstest_call_msg(c, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, NULL, 0, TIMEOUT_MS);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    char *out = strndup((const char *)rsp.cmd.body, rsp.cmd.body_len);
    ns_cmd_msg_free(&rsp);
    return out;
}

static int route_code(ns_client_t *c, const char *topic)
{
    const char *kv[] = {"topic", topic, NULL};
    ns_cmd_msg_t rsp = nstest_call_msg(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, NULL, 0, TIMEOUT_MS);
    int code = rsp.cmd.code;
    ns_cmd_msg_free(&rsp);
    return code;
}

static char *long_name(char c, size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, c, n);
    s[n] = 0;
    return s;
}

static void test_nul_and_long_topics_refused_alone(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    char *big = long_name('L', 600); /* over LMDB's 511-byte key limit */
    const char *topics[] = {"GoodA", "GoodA@NUL@Merged", big, "GoodB"};
    ns_buf_t body = NS_BUF_INIT;
    json_body(&body, topics, 4);
    ns_cmd_msg_t rsp = register_with(c, "NamesCluster", "names-broker", &body);
    if (rsp.cmd.code != NS_RSP_SUCCESS)
        fail_msg("registration failed: %d %s", rsp.cmd.code, rsp.cmd.remark ? rsp.cmd.remark : "");
    /* the remark says what was left out and why */
    assert_non_null(rsp.cmd.remark);
    assert_non_null(strstr(rsp.cmd.remark, "2 topic(s) not registered"));
    assert_non_null(strstr(rsp.cmd.remark, "NUL or control character"));
    ns_cmd_msg_free(&rsp);

    /* the good topics are routed; nothing was merged or stored for the bad */
    assert_int_equal(route_code(c, "GoodA"), NS_RSP_SUCCESS);
    assert_int_equal(route_code(c, "GoodB"), NS_RSP_SUCCESS);
    char *list = topic_list(c);
    assert_non_null(strstr(list, "\"GoodA\""));
    assert_non_null(strstr(list, "\"GoodB\""));
    assert_null(strstr(list, "Merged"));
    assert_null(strstr(list, "LLLL"));
    free(list);

    /* asking for the long topic: refused with a remark naming the field */
    const char *kv[] = {"topic", big, NULL};
    rsp = nstest_call_msg(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, NULL, 0, TIMEOUT_MS);
    assert_int_equal(rsp.cmd.code, NS_RSP_INVALID_PARAMETER);
    assert_non_null(strstr(rsp.cmd.remark, "invalid topic"));
    assert_non_null(strstr(rsp.cmd.remark, "longer than 255 bytes"));
    ns_cmd_msg_free(&rsp);
    ns_buf_free(&body);
    free(big);
    ns_client_close(c);
}

static void test_bad_header_names_named(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    const char *topics[] = {"T1", "T2"};
    ns_buf_t body = NS_BUF_INIT;
    json_body(&body, topics, 2);
    char *big = long_name('b', 511);

    ns_cmd_msg_t rsp = register_with(c, "NamesCluster", big, &body);
    assert_int_equal(rsp.cmd.code, NS_RSP_INVALID_PARAMETER);
    assert_non_null(strstr(rsp.cmd.remark, "invalid brokerName"));
    ns_cmd_msg_free(&rsp);
    rsp = register_with(c, big, "fine-broker", &body);
    assert_int_equal(rsp.cmd.code, NS_RSP_INVALID_PARAMETER);
    assert_non_null(strstr(rsp.cmd.remark, "invalid clusterName"));
    ns_cmd_msg_free(&rsp);
    rsp = register_with(c, "NamesCluster", "tab\tbroker", &body);
    assert_int_equal(rsp.cmd.code, NS_RSP_INVALID_PARAMETER);
    assert_non_null(strstr(rsp.cmd.remark, "NUL or control character"));
    ns_cmd_msg_free(&rsp);

    /* KV: namespace and key are stored as one LMDB key */
    const char *kv[] = {"namespace", "ns", "key", big, "value", "v", NULL};
    rsp = nstest_call_msg(c, NS_REQ_PUT_KV_CONFIG, kv, NULL, 0, TIMEOUT_MS);
    assert_int_equal(rsp.cmd.code, NS_RSP_INVALID_PARAMETER);
    assert_non_null(strstr(rsp.cmd.remark, "invalid key"));
    ns_cmd_msg_free(&rsp);

    /* 255 bytes is still fine, for every field */
    char *ok = long_name('k', 255);
    const char *kv2[] = {"namespace", ok, "key", ok, "value", "v", NULL};
    rsp = nstest_call_msg(c, NS_REQ_PUT_KV_CONFIG, kv2, NULL, 0, TIMEOUT_MS);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    ns_cmd_msg_free(&rsp);
    rsp = register_with(c, ok, ok, &body);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    ns_cmd_msg_free(&rsp);
    assert_int_equal(route_code(c, "T1"), NS_RSP_SUCCESS);

    free(ok);
    free(big);
    ns_buf_free(&body);
    ns_client_close(c);
}

static int setup(void **state)
{
    return nstest_fx_setup(state, "names", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nul_and_long_topics_refused_alone, setup,
                                        nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_bad_header_names_named, setup, nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
