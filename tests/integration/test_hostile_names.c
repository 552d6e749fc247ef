/* test_hostile_names.c - names a peer controls, through the real namesrvd:
 * a NUL (\u0000 in JSON) must not cut a topic name short and merge it into
 * another; a name over 255 bytes (ns/names.h) must not fail the broker's
 * whole registration with "internal error". A registration with bad topics
 * (a lone \ud800 among them) registers the good ones and names the bad one
 * in its remark; a bad broker, cluster, topic or KV name in a header is
 * refused with INVALID_PARAMETER and a remark naming the field, invalid
 * UTF-8 in any header value too, so /brokers stays valid JSON. What is
 * stored and valid (a bidi override in a name, ESC and newlines in a KV
 * value) is escaped in the log and in every namesrvctl text output, and
 * exact in its --json output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/model.h"
#include "ns/utf8.h"

#define TIMEOUT_MS 10000

/* JSON RegisterBrokerBody with the given topics; then every "@NUL@" in the
 * text becomes the six characters \u0000, every "@SUR@" a lone \ud800. */
static void json_body(ns_buf_t *out, const char *const *topics, size_t n)
{
    ns_buf_t tmp = NS_BUF_INIT;
    nstest_regbody_names(&tmp, topics, n);
    ns_buf_reset(out);
    for (size_t i = 0; i < tmp.len;) {
        if (tmp.len - i >= 5 && memcmp(tmp.data + i, "@NUL@", 5) == 0) {
            assert_int_equal(ns_buf_append_str(out, "\\u0000"), NS_OK);
            i += 5;
        } else if (tmp.len - i >= 5 && memcmp(tmp.data + i, "@SUR@", 5) == 0) {
            assert_int_equal(ns_buf_append_str(out, "\\ud800"), NS_OK);
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

/* ---- invalid UTF-8 at the door ---- */

/* One of each kind of invalid UTF-8, in a name that is otherwise fine. */
static const char *const bad_utf8[] = {
    "ov\xc0\xaf"
    "er",                   /* overlong '/' */
    "st\x80ray",            /* a continuation byte that starts nothing */
    "su\xed\xa0\x80rr",     /* U+D800 encoded in UTF-8 */
    "hi\xf4\x90\x80\x80gh", /* above U+10FFFF */
};

/* A request with a binary (ROCKETMQ) header: its strings go as raw bytes,
 * where the JSON encoder would write invalid UTF-8 as \uFFFD. */
static ns_cmd_msg_t call_binary(ns_client_t *c, int code, const char *const *kv, const void *body,
                                size_t n)
{
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    nstest_cmd(&cmd, ext, code, kv);
    cmd.serialize_type = NS_SERIALIZE_ROCKETMQ;
    cmd.version = NS_VERSION_V5_3_3;
    cmd.body = body;
    cmd.body_len = n;
    ns_cmd_msg_init(&rsp);
    if (ns_client_call(c, &cmd, TIMEOUT_MS, &rsp) != NS_OK)
        fail_msg("request %d with a binary header got no answer", code);
    return rsp;
}

/* Refused with INVALID_PARAMETER, the remark naming field and problem. */
static void expect_refused(ns_cmd_msg_t rsp, const char *field, const char *why)
{
    char remark[400], want[64];
    nstest_remark(&rsp, remark, sizeof remark);
    snprintf(want, sizeof want, "invalid %s \"", field);
    if (rsp.cmd.code != NS_RSP_INVALID_PARAMETER || strstr(remark, want) == NULL ||
        strstr(remark, why) == NULL)
        fail_msg("%s: want INVALID_PARAMETER (%s), got %d: %s", field, why, rsp.cmd.code, remark);
    assert_true(ns_utf8_valid(remark, strlen(remark))); /* the remark shows it escaped */
    ns_cmd_msg_free(&rsp);
}

/* Refused with INVALID_PARAMETER and this remark. */
static void expect_refused_body(ns_cmd_msg_t rsp, const char *remark_want)
{
    char remark[400];
    nstest_remark(&rsp, remark, sizeof remark);
    if (rsp.cmd.code != NS_RSP_INVALID_PARAMETER || strstr(remark, remark_want) == NULL)
        fail_msg("want INVALID_PARAMETER (%s), got %d: %s", remark_want, rsp.cmd.code, remark);
    ns_cmd_msg_free(&rsp);
}

/* Registers by binary header; fields[i] replaced by value. */
static ns_cmd_msg_t register_binary(ns_client_t *c, const char *field, const char *value)
{
    const char *topics[] = {"U1", "U2"}; /* one topic alone would be an increment */
    ns_buf_t body = NS_BUF_INIT;
    json_body(&body, topics, 2);
    char crc[16];
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(body.data, body.len));
    const char *kv[] = {"bodyCrc32",
                        crc,
                        "brokerAddr",
                        "10.0.8.1:10911",
                        "brokerId",
                        "0",
                        "brokerName",
                        "utf8-broker",
                        "clusterName",
                        "Utf8Cluster",
                        "haServerAddr",
                        "10.0.8.1:10912",
                        "__ZONE_NAME",
                        "zone-a",
                        NULL};
    for (size_t i = 0; kv[i]; i += 2)
        if (strcmp(kv[i], field) == 0)
            kv[i + 1] = value;
    ns_cmd_msg_t rsp = call_binary(c, NS_REQ_REGISTER_BROKER, kv, body.data, body.len);
    ns_buf_free(&body);
    return rsp;
}

/* A JSON header written as a Java client writes it, with raw bytes in the
 * topic: the fast JSON decoder's path, which must not vouch for them. */
static ns_cmd_msg_t route_raw_json(ns_client_t *c, const char *topic)
{
    ns_buf_t hdr = NS_BUF_INIT, frame = NS_BUF_INIT;
    ns_buf_printf(&hdr,
                  "{\"code\":105,\"extFields\":{\"topic\":\"%s\"},\"flag\":0,\"language\":\"JAVA\","
                  "\"opaque\":77,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
                  topic);
    ns_buf_append_be32(&frame, (uint32_t)(4 + hdr.len));
    ns_buf_append_be32(&frame, (uint32_t)hdr.len);
    ns_buf_append(&frame, hdr.data, hdr.len);
    assert_int_equal(ns_client_send_raw(c, frame.data, frame.len), NS_OK);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_recv(c, TIMEOUT_MS, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.opaque, 77);
    ns_buf_free(&hdr);
    ns_buf_free(&frame);
    return rsp;
}

typedef struct {
    nstest_fx_t base;
    int http_port;
} http_fx_t;

static int setup_http(void **state)
{
    if (nstest_fx_setup_sized(state, sizeof(http_fx_t), "names-utf8") != 0)
        return -1;
    http_fx_t *fx = *state;
    return nstest_server_start_http(&fx->base.srv, fx->base.dir, NULL, &fx->http_port);
}

/* /brokers parses as JSON and is valid UTF-8. */
static void expect_brokers_json(int http_port)
{
    char *body = NULL;
    assert_int_equal(nstest_http_get(http_port, "/brokers", &body), 200);
    if (!ns_utf8_valid(body, strlen(body)))
        fail_msg("/brokers is not valid UTF-8: %s", body);
    cJSON *j = cJSON_Parse(body);
    if (j == NULL)
        fail_msg("/brokers is not valid JSON: %s", body);
    cJSON_Delete(j);
    free(body);
}

static void test_invalid_utf8_refused_at_the_door(void **state)
{
    http_fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->base.srv);
    static const char *const fields[] = {"brokerName", "clusterName", "brokerAddr", "haServerAddr",
                                         "__ZONE_NAME"};
    static const char *const why[] = {"overlong", "stray continuation", "surrogate",
                                      "above U+10FFFF"};
    for (size_t b = 0; b < sizeof bad_utf8 / sizeof bad_utf8[0]; b++) {
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
            expect_refused(register_binary(c, fields[f], bad_utf8[b]), fields[f], why[b]);
        const char *route[] = {"topic", bad_utf8[b], NULL};
        expect_refused(call_binary(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, route, NULL, 0), "topic",
                       why[b]);
        expect_refused(route_raw_json(c, bad_utf8[b]), "topic", why[b]);
        const char *kv[] = {"namespace", "ns", "key", "k", "value", bad_utf8[b], NULL};
        expect_refused(call_binary(c, NS_REQ_PUT_KV_CONFIG, kv, NULL, 0), "value", why[b]);
        const char *kvk[] = {"namespace", bad_utf8[b], "key", "k", "value", "v", NULL};
        expect_refused(call_binary(c, NS_REQ_PUT_KV_CONFIG, kvk, NULL, 0), "namespace", why[b]);
        const char *user[] = {"userAccessKey", bad_utf8[b], "userSecretKey", "secret-1", "role",
                              "client",        NULL};
        expect_refused(call_binary(c, NS_REQ_NS_USER_ADD, user, NULL, 0), "userAccessKey", why[b]);
    }
    /* the settings: written to the file and shown, so UTF-8 too */
    const char *cfg = "productEnvName=env\xc0\xaf\n";
    expect_refused_body(
        nstest_call_msg(c, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, cfg, strlen(cfg), TIMEOUT_MS),
        "invalid body: is not valid UTF-8: an overlong sequence");
    /* a C1 control is a control character: refused in a name */
    expect_refused(register_binary(c, "brokerName",
                                   "csi\xc2\x9b"
                                   "31m"),
                   "brokerName", "control character");

    /* what is valid UTF-8 is registered, and /brokers stays JSON */
    ns_cmd_msg_t rsp = register_binary(c, "brokerName", "caf\xc3\xa9-\xe2\x80\xae-broker");
    char remark[300];
    nstest_remark(&rsp, remark, sizeof remark);
    if (rsp.cmd.code != NS_RSP_SUCCESS)
        fail_msg("a valid UTF-8 broker name refused: %d %s", rsp.cmd.code, remark);
    ns_cmd_msg_free(&rsp);
    /* the HTTP thread's snapshot is up to a second old: polled, 10 s at most */
    char *body = NULL;
    for (int64_t until = nstest_mono_ms() + TIMEOUT_MS;; nstest_sleep_ms(100)) {
        free(body);
        assert_int_equal(nstest_http_get(fx->http_port, "/brokers", &body), 200);
        if (strstr(body, "caf\xc3\xa9-\xe2\x80\xae-broker") || nstest_mono_ms() > until)
            break;
    }
    assert_non_null(strstr(body, "caf\xc3\xa9-\xe2\x80\xae-broker")); /* JSON: exact */
    free(body);
    expect_brokers_json(fx->http_port);
    ns_client_close(c);
}

/* A lone \ud800 in one topic of a JSON body: that topic is left out (its
 * name is not UTF-8), the others are registered, the remark says so. */
static void test_lone_surrogate_topic_left_out(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    const char *topics[] = {"SurA", "Bad@SUR@Topic", "SurB"};
    ns_buf_t body = NS_BUF_INIT;
    json_body(&body, topics, 3);
    assert_non_null(strstr((const char *)body.data, "Bad\\ud800Topic"));
    ns_cmd_msg_t rsp = register_with(c, "NamesCluster", "sur-broker", &body);
    char remark[300];
    nstest_remark(&rsp, remark, sizeof remark);
    if (rsp.cmd.code != NS_RSP_SUCCESS)
        fail_msg("registration refused: %d %s", rsp.cmd.code, remark);
    assert_non_null(strstr(remark, "1 topic(s) not registered"));
    assert_non_null(strstr(remark, "topic \"Bad\\xed\\xa0\\x80Topic\""));
    assert_non_null(strstr(remark, "surrogate"));
    ns_cmd_msg_free(&rsp);
    assert_int_equal(route_code(c, "SurA"), NS_RSP_SUCCESS);
    assert_int_equal(route_code(c, "SurB"), NS_RSP_SUCCESS);
    char *list = topic_list(c);
    assert_null(strstr(list, "Bad"));
    free(list);
    /* logged like the other left-out topics */
    assert_true(nstest_log_wait(&fx->srv, "1 topic(s) not registered: topic \"Bad\\xed\\xa0\\x80",
                                TIMEOUT_MS));
    ns_buf_free(&body);
    ns_client_close(c);
}

/* ---- what is stored is escaped where it is shown ---- */

#define BIDI "\xe2\x80\xae" /* U+202E RIGHT-TO-LEFT OVERRIDE */
#define ISO "\xe2\x81\xa6"  /* U+2066 LEFT-TO-RIGHT ISOLATE */
#define CSI "\xc2\x9b"      /* U+009B, C1 control sequence introducer */
#define SHOWN_VALUE "line1\\nFORGED \\x1b[31mred\\u009b"

/* No byte a terminal would act on, nor a raw C1 or bidi character; the
 * only newlines end lines, none of which starts with FORGED. */
static void expect_safe_text(const char *what, const char *out)
{
    const unsigned char *p = (const unsigned char *)out;
    for (size_t i = 0; p[i]; i++)
        if ((p[i] < 0x20 && p[i] != '\n') || p[i] == 0x7f)
            fail_msg("%s: byte 0x%02x raw at %zu:\n%s", what, p[i], i, out);
    if (strstr(out, BIDI) || strstr(out, ISO) || strstr(out, CSI) || strstr(out, "\nFORGED") ||
        !ns_utf8_valid(out, strlen(out)))
        fail_msg("%s: a raw C1, bidi or forged line in:\n%s", what, out);
}

static void ctl_expect(const char *what, const char *needle, const char *const *argv)
{
    char *out = NULL;
    int rc = nstest_ctl(60000, &out, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    expect_safe_text(what, out);
    if (needle && strstr(out, needle) == NULL)
        fail_msg("%s: expected '%s' in:\n%s", what, needle, out);
    free(out);
}

static void test_shown_escaped_in_log_and_ctl(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", fx->srv.port);
    /* valid names with a bidi override and isolate; a value with a newline,
     * ESC and a C1 control (KV values may hold any text, as in Java) */
    ns_topic_config_t tc[] = {{"Topic" BIDI "1", 4, 4, 6, 0}, {"Plain", 4, 4, 6, 0}};
    nstest_register_topics(c, "Cl" ISO "x", "evil" BIDI "b", "10.0.9.1:10911", "10.0.9.1:10912", tc,
                           2);
    const char *kv[] = {
        "namespace", "ns", "key", "k" BIDI, "value", "line1\nFORGED \x1b[31mred" CSI, NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_PUT_KV_CONFIG, kv, NULL, 0, TIMEOUT_MS),
                     NS_RSP_SUCCESS);

    /* a setting is stored and shown too (the properties text escapes \n) */
    assert_int_equal(nstest_config_update(c, "productEnvName=env\x1b[2J" BIDI "\n"),
                     NS_RSP_SUCCESS);
    const char *config[] = {"config", "get", "--ns", addr, NULL, NULL};
    ctl_expect("config get", "productEnvName=env\\x1b[2J\\u202e", config);

    const char *clusters[] = {"clusters", "--ns", addr, NULL, NULL, NULL};
    ctl_expect("clusters", "evil\\u202eb", clusters);
    const char *topics[] = {"topics", "--ns", addr, NULL, NULL, NULL};
    ctl_expect("topics", "Topic\\u202e1", topics);
    const char *route[] = {"route", "Topic" BIDI "1", "--ns", addr, NULL, NULL};
    ctl_expect("route", "Cl\\u2066x", route);
    const char *kvlist[] = {"kv", "list", "ns", "--ns", addr, NULL};
    ctl_expect("kv list", "k\\u202e=" SHOWN_VALUE, kvlist);
    const char *kvget[] = {"kv", "get", "ns", "k" BIDI, "--ns", addr};
    ctl_expect("kv get", SHOWN_VALUE, kvget);
    const char *audit[] = {"audit", "--data-dir", fx->srv.data, NULL, NULL, NULL};
    ctl_expect("audit", "evil\\u202eb", audit);
    const char *admin[] = {"audit", "--admin", "--data-dir", fx->srv.data, NULL, NULL};
    ctl_expect("audit --admin", "value=" SHOWN_VALUE, admin);

    /* --json stays exact */
    char *out = NULL;
    int rc = nstest_ctl(60000, &out, "kv", "list", "ns", "--ns", addr, "--json", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItem(j, "table"), "k" BIDI);
    assert_string_equal(cJSON_GetStringValue(v), "line1\nFORGED \x1b[31mred" CSI);
    cJSON_Delete(j);
    free(out);

    /* the log: escaped, never raw */
    assert_true(nstest_log_wait(&fx->srv, "evil\\u202eb", TIMEOUT_MS));
    char path[4200];
    snprintf(path, sizeof path, "%s/namesrvd.log", fx->dir);
    char *log = nstest_read_text(path);
    assert_non_null(log);
    expect_safe_text("namesrvd.log", log);
    free(log);

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
        cmocka_unit_test_setup_teardown(test_invalid_utf8_refused_at_the_door, setup_http,
                                        nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_lone_surrogate_topic_left_out, setup,
                                        nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_shown_escaped_in_log_and_ctl, setup,
                                        nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
