/* test_java_edges.c - edge cases where namesrvd answers what the Java 5.3.3
 * NameServer answers, through the real binary:
 *  - GET_ROUTEINFO_BY_TOPIC without `topic`: TOPIC_NOT_EXIST for "null"
 *    (ClientRequestProcessor prints the null topic, then FAQUrl's text);
 *  - BROKER_HEARTBEAT and QUERY_DATA_VERSION without clusterName or
 *    brokerAddr: SYSTEM_ERROR with the NullPointerException text Java's
 *    live-table key throws;
 *  - REGISTER_TOPIC_IN_NAMESRV naming an unknown broker: a new topic is not
 *    registered at all, an existing one merges up to the unknown broker;
 *    SUCCESS either way (RouteInfoManager.registerTopic), also without a
 *    topic at all (its table throws on the null key and Java logs it);
 *  - a registration body without a DataVersion (or without its timestamp):
 *    Java's `new DataVersion()`, counter 0 and the registration time.
 * And three of the differences docs/protocol.md ("What it serves") lists as deliberate: an
 * UNREGISTER_BROKER naming another broker id than the registered one is
 * ignored; a closed connection unregisters every broker it registered; an
 * UPDATE_NAMESRV_CONFIG value that does not parse is refused. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

#define CALL_MS 20000

#define FAQ "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
#define NPE(field)                                                                                 \
    "java.lang.NullPointerException: Cannot invoke \"String.length()\" because \"this." field      \
    "\" is null, org.apache.rocketmq.namesrv.routeinfo.BrokerAddrInfo.hashCode("                   \
    "RouteInfoManager.java:1161)"

typedef struct {
    nstest_fx_t *fx;
    ns_client_t *c;
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    void *inner = NULL;
    if (f == NULL || nstest_fx_setup(&inner, "edges", NULL) != 0) {
        free(f);
        return -1;
    }
    f->fx = inner;
    f->c = nstest_connect(&f->fx->srv);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    if (f->c)
        ns_client_close(f->c);
    void *inner = f->fx;
    nstest_fx_teardown(&inner);
    free(f);
    return 0;
}

/* code with kv and body -> want_code and want_remark (NULL: none). */
static void expect_reply(fx_t *f, int code, const char *const *kv, const char *body, int want_code,
                         const char *want_remark)
{
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    nstest_call(f->c, code, kv, body, body ? strlen(body) : 0, NS_VERSION_V5_3_3, CALL_MS, &m);
    if (m.cmd.code != want_code)
        fail_msg("request %d: code %d (%s), expected %d", code, m.cmd.code,
                 m.cmd.remark ? m.cmd.remark : "", want_code);
    if (want_remark == NULL && m.cmd.remark != NULL)
        fail_msg("request %d: remark '%s', Java sends none", code, m.cmd.remark);
    if (want_remark)
        assert_string_equal(m.cmd.remark ? m.cmd.remark : "(none)", want_remark);
    ns_cmd_msg_free(&m);
}

/* GET_ROUTEINFO_BY_TOPIC: the route body, NULL when TOPIC_NOT_EXIST. */
static char *route(fx_t *f, const char *topic)
{
    const char *kv[] = {"topic", topic, NULL};
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    nstest_call(f->c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, NULL, 0, NS_VERSION_V5_3_3, CALL_MS, &m);
    char *body =
        m.cmd.code == NS_RSP_SUCCESS ? strndup((const char *)m.cmd.body, m.cmd.body_len) : NULL;
    if (m.cmd.code != NS_RSP_SUCCESS)
        assert_int_equal(m.cmd.code, NS_RSP_TOPIC_NOT_EXIST);
    ns_cmd_msg_free(&m);
    return body;
}

static void register_broker(fx_t *f, const char *name, const char *addr, const char *body)
{
    const char *kv[] = {"brokerAddr",
                        addr,
                        "brokerId",
                        "0",
                        "brokerName",
                        name,
                        "clusterName",
                        "EC",
                        "haServerAddr",
                        "127.0.0.1:99",
                        "enableActingMaster",
                        "false",
                        NULL};
    expect_reply(f, NS_REQ_REGISTER_BROKER, kv, body, NS_RSP_SUCCESS, NULL);
}

#define TOPIC(name, perm, q)                                                                       \
    "\"" name "\":{\"perm\":" #perm ",\"readQueueNums\":" #q ",\"topicName\":\"" name              \
    "\",\"topicSysFlag\":0,\"writeQueueNums\":" #q "}"
#define BODY(dv, topics)                                                                           \
    "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{" dv                                \
    "\"topicConfigTable\":{" topics "}}}"
#define DV1 "\"dataVersion\":{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000000},"

/* ====================================================================== */

static void test_route_without_topic(void **state)
{
    fx_t *f = *state;
    expect_reply(f, NS_REQ_GET_ROUTEINFO_BY_TOPIC, NULL, NULL, NS_RSP_TOPIC_NOT_EXIST,
                 "No topic route info in name server for the topic: null" FAQ);
    const char *other[] = {"acceptStandardJsonOnly", "true", NULL};
    expect_reply(f, NS_REQ_GET_ROUTEINFO_BY_TOPIC, other, NULL, NS_RSP_TOPIC_NOT_EXIST,
                 "No topic route info in name server for the topic: null" FAQ);
}

static void test_heartbeat_missing_fields(void **state)
{
    fx_t *f = *state;
    const char *no_addr[] = {"clusterName", "EC", "brokerName", "b", NULL};
    expect_reply(f, NS_REQ_BROKER_HEARTBEAT, no_addr, NULL, NS_RSP_SYSTEM_ERROR, NPE("brokerAddr"));
    const char *no_cluster[] = {"brokerAddr", "127.0.0.1:1", "brokerName", "b", NULL};
    expect_reply(f, NS_REQ_BROKER_HEARTBEAT, no_cluster, NULL, NS_RSP_SYSTEM_ERROR,
                 NPE("clusterName"));
    expect_reply(f, NS_REQ_BROKER_HEARTBEAT, NULL, NULL, NS_RSP_SYSTEM_ERROR, NPE("clusterName"));
    /* QUERY_DATA_VERSION, the other heartbeat, runs into the same key */
    expect_reply(f, NS_REQ_QUERY_DATA_VERSION, no_addr, NULL, NS_RSP_SYSTEM_ERROR,
                 NPE("brokerAddr"));
    expect_reply(f, NS_REQ_QUERY_DATA_VERSION, no_cluster, NULL, NS_RSP_SYSTEM_ERROR,
                 NPE("clusterName"));
    /* brokerName is never read by Java: its absence is fine */
    const char *no_name[] = {"clusterName", "EC", "brokerAddr", "127.0.0.1:1", NULL};
    expect_reply(f, NS_REQ_BROKER_HEARTBEAT, no_name, NULL, NS_RSP_SUCCESS, NULL);
    /* a one-way heartbeat gets no answer either way; the connection lives */
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    nstest_cmd(&cmd, ext, NS_REQ_BROKER_HEARTBEAT, no_addr);
    cmd.flag = NS_FLAG_ONEWAY;
    cmd.opaque = 4242;
    assert_int_equal(ns_client_send(f->c, &cmd), NS_OK);
    expect_reply(f, NS_REQ_GET_ROUTEINFO_BY_TOPIC, NULL, NULL, NS_RSP_TOPIC_NOT_EXIST,
                 "No topic route info in name server for the topic: null" FAQ);
}

static void register_topic(fx_t *f, const char *topic, const char *queue_datas)
{
    char body[1024];
    snprintf(body, sizeof body, "{\"queueDatas\":[%s]}", queue_datas);
    const char *kv[] = {"topic", topic, NULL};
    expect_reply(f, NS_REQ_REGISTER_TOPIC_IN_NAMESRV, kv, body, NS_RSP_SUCCESS, NULL);
}

#define QD(b, perm, q)                                                                             \
    "{\"brokerName\":\"" b "\",\"perm\":" #perm ",\"readQueueNums\":" #q                           \
    ",\"topicSysFlag\":0,\"writeQueueNums\":" #q "}"
#define ROUTE_BA(qds)                                                                              \
    "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:40001\"},\"brokerName\":\"ba\","        \
    "\"cluster\":\"EC\",\"enableActingMaster\":false},{\"brokerAddrs\":{\"0\":"                    \
    "\"127.0.0.1:40002\"},\"brokerName\":\"bb\",\"cluster\":\"EC\",\"enableActingMaster\":false}"  \
    "],\"filterServerTable\":{},\"queueDatas\":[" qds "]}"

static void expect_route(fx_t *f, const char *topic, const char *want)
{
    char *got = route(f, topic);
    if (want == NULL && got != NULL)
        fail_msg("topic %s has a route, Java stores none: %s", topic, got);
    if (want && (got == NULL || strcmp(got, want) != 0))
        fail_msg("topic %s:\n  got  %s\n  want %s", topic, got ? got : "(none)", want);
    free(got);
}

static void test_register_topic_unknown_broker(void **state)
{
    fx_t *f = *state;
    register_broker(f, "ba", "127.0.0.1:40001",
                    BODY(DV1, TOPIC("TopicEA", 6, 4) "," TOPIC("TopicEB", 6, 4)));
    register_broker(f, "bb", "127.0.0.1:40002",
                    BODY(DV1, TOPIC("TopicEX", 6, 4) "," TOPIC("TopicEY", 6, 4)));
    /* a new topic naming an unknown broker anywhere: nothing at all */
    register_topic(f, "TopicNew1", QD("ba", 6, 8) "," QD("nobody", 6, 8));
    expect_route(f, "TopicNew1", NULL);
    register_topic(f, "TopicNew2", QD("nobody", 6, 8) "," QD("ba", 6, 8));
    expect_route(f, "TopicNew2", NULL);
    /* only known brokers: stored */
    register_topic(f, "TopicNew3", QD("ba", 6, 8) "," QD("bb", 4, 2));
    expect_route(f, "TopicNew3", ROUTE_BA(QD("ba", 6, 8) "," QD("bb", 4, 2)));
    /* an existing topic merges up to the first unknown broker */
    register_topic(f, "TopicEA", QD("bb", 6, 2) "," QD("nobody", 6, 8) "," QD("ba", 2, 1));
    expect_route(f, "TopicEA", ROUTE_BA(QD("ba", 6, 4) "," QD("bb", 6, 2)));
    register_topic(f, "TopicEA", QD("nobody", 6, 8) "," QD("ba", 2, 1));
    expect_route(f, "TopicEA", ROUTE_BA(QD("ba", 6, 4) "," QD("bb", 6, 2)));
    /* no topic at all: Java's table throws on the null key, logs it and
     * answers SUCCESS; a body that does not parse is its SYSTEM_ERROR */
    static const char one_qd[] = "{\"queueDatas\":[" QD("ba", 6, 8) "]}";
    expect_reply(f, NS_REQ_REGISTER_TOPIC_IN_NAMESRV, NULL, one_qd, NS_RSP_SUCCESS, NULL);
    expect_route(f, "null", NULL);
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    nstest_call(f->c, NS_REQ_REGISTER_TOPIC_IN_NAMESRV, NULL, "{", 1, NS_VERSION_V5_3_3, CALL_MS,
                &m);
    assert_int_equal(m.cmd.code, NS_RSP_SYSTEM_ERROR);
    ns_cmd_msg_free(&m);
}

/* QUERY_DATA_VERSION's body for the broker at addr, as a cJSON object. */
static cJSON *stored_dv(fx_t *f, const char *name, const char *addr)
{
    const char *kv[] = {"brokerAddr", addr,          "brokerId", "0", "brokerName",
                        name,         "clusterName", "EC",       NULL};
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    nstest_call(f->c, NS_REQ_QUERY_DATA_VERSION, kv, NULL, 0, NS_VERSION_V5_3_3, CALL_MS, &m);
    assert_int_equal(m.cmd.code, NS_RSP_SUCCESS);
    cJSON *dv = cJSON_ParseWithLength((const char *)m.cmd.body, m.cmd.body_len);
    assert_non_null(dv);
    ns_cmd_msg_free(&m);
    return dv;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t member(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    assert_true(cJSON_IsNumber(v));
    return (int64_t)v->valuedouble;
}

/* Registers body and checks the stored DataVersion: counter, stateVersion
 * 0 and a timestamp taken during the registration. Returns the timestamp. */
static int64_t expect_default_dv(fx_t *f, const char *name, const char *addr, const char *body,
                                 int64_t counter)
{
    int64_t before = wall_ms();
    register_broker(f, name, addr, body);
    int64_t after = wall_ms();
    cJSON *dv = stored_dv(f, name, addr);
    assert_int_equal(member(dv, "counter"), counter);
    assert_int_equal(member(dv, "stateVersion"), 0);
    int64_t ts = member(dv, "timestamp");
    if (ts < before || ts > after)
        fail_msg("timestamp %lld not within the registration [%lld, %lld]", (long long)ts,
                 (long long)before, (long long)after);
    cJSON_Delete(dv);
    return ts;
}

static void test_default_data_version(void **state)
{
    fx_t *f = *state;
    /* no dataVersion in the wrapper */
    const char *body = BODY("", TOPIC("TopicD1", 6, 4) "," TOPIC("TopicD2", 6, 4));
    int64_t t1 = expect_default_dv(f, "bd", "127.0.0.1:40011", body, 0);
    nstest_wall_tick();
    /* the same bytes again: another registration, another time */
    int64_t t2 = expect_default_dv(f, "bd", "127.0.0.1:40011", body, 0);
    assert_true(t2 > t1);
    /* no body at all */
    expect_default_dv(f, "be", "127.0.0.1:40012", NULL, 0);
    /* a dataVersion without its timestamp keeps the rest */
    expect_default_dv(f, "bf", "127.0.0.1:40013",
                      BODY("\"dataVersion\":{\"counter\":7,\"stateVersion\":0},",
                           TOPIC("TopicD3", 6, 4) "," TOPIC("TopicD4", 6, 4)),
                      7);
    /* a full one is kept as sent */
    register_broker(f, "bg", "127.0.0.1:40014",
                    BODY(DV1, TOPIC("TopicD5", 6, 4) "," TOPIC("TopicD6", 6, 4)));
    cJSON *dv = stored_dv(f, "bg", "127.0.0.1:40014");
    assert_int_equal(member(dv, "timestamp"), 1700000000000LL);
    assert_int_equal(member(dv, "counter"), 1);
    cJSON_Delete(dv);
}

/* GET_BROKER_CLUSTER_INFO's body. */
static char *cluster_info(fx_t *f)
{
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    nstest_call(f->c, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, 0, NS_VERSION_V5_3_3, CALL_MS,
                &m);
    assert_int_equal(m.cmd.code, NS_RSP_SUCCESS);
    char *body = strndup((const char *)m.cmd.body, m.cmd.body_len);
    ns_cmd_msg_free(&m);
    return body;
}

static bool cluster_info_has(fx_t *f, const char *needle)
{
    char *info = cluster_info(f);
    bool has = strstr(info, needle) != NULL;
    free(info);
    return has;
}

#define TWO_TOPICS(a, b) BODY(DV1, TOPIC(a, 6, 4) "," TOPIC(b, 6, 4))

static void test_unregister_other_id_ignored(void **state)
{
    fx_t *f = *state;
    register_broker(f, "bw", "127.0.0.1:40021", TWO_TOPICS("TopicW1", "TopicW2"));
    const char *wrong[] = {"brokerAddr", "127.0.0.1:40021", "brokerId", "1", "brokerName",
                           "bw",         "clusterName",     "EC",       NULL};
    expect_reply(f, NS_REQ_UNREGISTER_BROKER, wrong, NULL, NS_RSP_SUCCESS, NULL);
    assert_true(cluster_info_has(f, "\"127.0.0.1:40021\""));
    char *r = route(f, "TopicW1");
    assert_non_null(r);
    free(r);
    const char *right[] = {"brokerAddr", "127.0.0.1:40021", "brokerId", "0", "brokerName",
                           "bw",         "clusterName",     "EC",       NULL};
    expect_reply(f, NS_REQ_UNREGISTER_BROKER, right, NULL, NS_RSP_SUCCESS, NULL);
    assert_false(cluster_info_has(f, "\"127.0.0.1:40021\""));
    assert_null(route(f, "TopicW1"));
}

static void test_close_unregisters_every_broker(void **state)
{
    fx_t *f = *state;
    ns_client_t *shared = nstest_connect(&f->fx->srv);
    ns_client_t *admin = f->c;
    f->c = shared; /* both registrations over one connection */
    register_broker(f, "bx", "127.0.0.1:40031", TWO_TOPICS("TopicX1", "TopicX2"));
    register_broker(f, "by", "127.0.0.1:40032", TWO_TOPICS("TopicY1", "TopicY2"));
    f->c = admin;
    assert_true(cluster_info_has(f, "\"127.0.0.1:40031\""));
    assert_true(cluster_info_has(f, "\"127.0.0.1:40032\""));
    ns_client_close(shared);
    int64_t deadline = nstest_mono_ms() + 10000;
    while ((cluster_info_has(f, "\"127.0.0.1:40031\"") ||
            cluster_info_has(f, "\"127.0.0.1:40032\"")) &&
           nstest_mono_ms() < deadline)
        nstest_sleep_ms(20);
    assert_false(cluster_info_has(f, "\"127.0.0.1:40031\""));
    assert_false(cluster_info_has(f, "\"127.0.0.1:40032\""));
}

static void test_update_config_bad_value_refused(void **state)
{
    fx_t *f = *state;
    static const char bad[] = "scanNotActiveBrokerInterval=soon";
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    nstest_call(f->c, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, bad, sizeof bad - 1, NS_VERSION_V5_3_3,
                CALL_MS, &m);
    assert_int_equal(m.cmd.code, NS_RSP_SYSTEM_ERROR);
    assert_non_null(m.cmd.remark);
    assert_non_null(strstr(m.cmd.remark, "scanNotActiveBrokerInterval"));
    ns_cmd_msg_free(&m);
    ns_cmd_msg_init(&m);
    nstest_call(f->c, NS_REQ_GET_NAMESRV_CONFIG, NULL, NULL, 0, NS_VERSION_V5_3_3, CALL_MS, &m);
    assert_int_equal(m.cmd.code, NS_RSP_SUCCESS);
    char *props = strndup((const char *)m.cmd.body, m.cmd.body_len);
    assert_non_null(strstr(props, "scanNotActiveBrokerInterval=5000"));
    free(props);
    ns_cmd_msg_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_route_without_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heartbeat_missing_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_register_topic_unknown_broker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_data_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unregister_other_id_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_unregisters_every_broker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_config_bad_value_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
