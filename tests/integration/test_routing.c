/* test_routing.c - routing scenarios through the real namesrvd, every answer
 * checked against the exact body the Java 5.3.3 NameServer gives for that
 * situation (docs/protocol.md §4: compact, members sorted by name, bare integer
 * map keys in the legacy form and for version < 401, quoted keys in the
 * standard form). Java orders broker groups, topics and queue datas by hash;
 * our server orders them by name, so the expected bodies below list them
 * sorted by name. TopicList bodies are Java sets: where our order (broker by
 * broker) is not the sorted one they are compared as sets.
 *
 * Covered: two clusters, masters and slaves, topics on several brokers,
 * re-registration with the same / a new DataVersion, DELETE_TOPIC_IN_NAMESRV
 * with/without clusterName, UNREGISTER_BROKER of master then slave,
 * WIPE/ADD_WRITE_PERM, order-topic config, standard vs legacy routes,
 * GET_BROKER_CLUSTER_INFO, GET_TOPICS_BY_CLUSTER, QUERY_DATA_VERSION,
 * BROKER_HEARTBEAT, GET_BROKER_MEMBER_GROUP; compressed vs JSON bodies, bad
 * bodies (crc, truncation, inflate cap, negative lengths, bad JSON), kill -9
 * and restart, 100 000 topics in one registration, split registrations. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <zlib.h>

#include "nstest.h"
#include "nstest_json.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

#define CALL_TIMEOUT_MS 60000
#define WAIT_TIMEOUT_MS 10000
#define V_LEGACY 121 /* an old Java client */
#define V_4_9_7 407

/* ---- expected bodies, written as Java writes them ---- */

#define DV(counter) "{\"counter\":" #counter ",\"stateVersion\":0,\"timestamp\":1700000000000}"
/* QueueData: brokerName, perm, readQueueNums, topicSysFlag, writeQueueNums */
#define QD(b, perm, r, w, f)                                                                       \
    "{\"brokerName\":\"" b "\",\"perm\":" #perm ",\"readQueueNums\":" #r ",\"topicSysFlag\":" #f   \
    ",\"writeQueueNums\":" #w "}"
/* BrokerData; addrs is the inside of brokerAddrs, legacy or standard */
#define BD(b, cluster, addrs)                                                                      \
    "{\"brokerAddrs\":{" addrs "},\"brokerName\":\"" b "\",\"cluster\":\"" cluster                 \
    "\",\"enableActingMaster\":false}"
#define ROUTE(bds, qds)                                                                            \
    "{\"brokerDatas\":[" bds "],\"filterServerTable\":{},\"queueDatas\":[" qds "]}"
#define ROUTE_ORDER(bds, conf, qds)                                                                \
    "{\"brokerDatas\":[" bds "],\"filterServerTable\":{},\"orderTopicConf\":\"" conf               \
    "\",\"queueDatas\":[" qds "]}"
/* one brokerAddrs entry, standard ("0":"a") and legacy (0:"a") */
#define S(id, addr) "\"" #id "\":\"" addr "\""
#define L(id, addr) #id ":\"" addr "\""

#define A_M "10.0.1.1:10911"
#define A_M_HA "10.0.1.1:10912"
#define A_S "10.0.1.2:10911"
#define A_S_HA "10.0.1.2:10912"
#define B_M "10.0.2.1:10911"
#define C_M "10.0.3.1:10911"

#define EMPTY_CLUSTER_INFO "{\"brokerAddrTable\":{},\"clusterAddrTable\":{}}"
#define NO_ROUTE_REMARK(topic)                                                                     \
    "No topic route info in name server for the topic: " topic                                     \
    "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."

/* ---- fixture ---- */

typedef struct {
    char *dir;
    nstest_server_t srv;
    ns_client_t *c; /* the admin/client connection */
    /* freed / closed by teardown, so a failing test leaks nothing */
    void *owned[4];
    ns_client_t *owned_conn;
} fx_t;

static const char *const k_small_inflate_cap[] = {"--maxInflateBytes=65536", NULL};

static int setup(void **state)
{
    const char *const *args = *state; /* prestate: extra namesrvd arguments */
    fx_t *fx = calloc(1, sizeof *fx);
    if (fx == NULL)
        return -1;
    fx->dir = nstest_tmpdir("routing");
    if (fx->dir == NULL || nstest_server_start(&fx->srv, fx->dir, args) != 0) {
        free(fx->dir);
        free(fx);
        return -1;
    }
    fx->c = nstest_connect(&fx->srv);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    if (fx->c)
        ns_client_close(fx->c);
    if (fx->owned_conn)
        ns_client_close(fx->owned_conn);
    for (size_t i = 0; i < sizeof fx->owned / sizeof fx->owned[0]; i++)
        free(fx->owned[i]);
    nstest_server_stop(&fx->srv, SIGKILL);
    nstest_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

/* ---- requests ---- */

/* Sends code with ext pairs kv (NULL: no extFields) and an optional body at
 * the given request version; rsp must be initialised by the caller. */
static void request(ns_client_t *c, int code, const char *const *kv, const void *body, size_t n,
                    int version, ns_cmd_msg_t *rsp)
{
    nstest_call(c, code, kv, body, n, version, CALL_TIMEOUT_MS, rsp);
}

static char *body_dup(const ns_cmd_msg_t *m)
{
    char *s = strndup(m->cmd.body ? (const char *)m->cmd.body : "", m->cmd.body_len);
    assert_non_null(s);
    return s;
}

static bool body_is(const ns_cmd_msg_t *m, const char *want)
{
    if (want == NULL)
        return m->cmd.body_len == 0;
    return m->cmd.body_len == strlen(want) && memcmp(m->cmd.body, want, m->cmd.body_len) == 0;
}

static void fail_body(const char *what, const ns_cmd_msg_t *m, const char *want)
{
    char *got = body_dup(m);
    print_message("%s: unexpected body\n  expected: %s\n  actual:   %s\n", what,
                  want ? want : "(none)", got);
    free(got);
    fail_msg("%s: body differs from Java's", what);
}

/* code with kv -> want_code and exactly want_body (NULL = no body). */
static void expect_answer(ns_client_t *c, int code, const char *const *kv, int version,
                          int want_code, const char *want_body)
{
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    request(c, code, kv, NULL, 0, version, &m);
    char what[128];
    snprintf(what, sizeof what, "request %d (%s=%s)", code, kv && kv[0] ? kv[0] : "",
             kv && kv[0] ? kv[1] : "");
    if (m.cmd.code != want_code)
        fail_msg("%s: code %d (%s), expected %d", what, m.cmd.code,
                 m.cmd.remark ? m.cmd.remark : "", want_code);
    if (!body_is(&m, want_body))
        fail_body(what, &m, want_body);
    ns_cmd_msg_free(&m);
}

/* Same, but repeats until the answer matches (asynchronous effects). */
static void wait_answer(ns_client_t *c, int code, const char *const *kv, int want_code,
                        const char *want_body)
{
    int64_t deadline = nstest_mono_ms() + WAIT_TIMEOUT_MS;
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    for (;;) {
        request(c, code, kv, NULL, 0, NS_VERSION_V5_3_3, &m);
        if ((m.cmd.code == want_code && body_is(&m, want_body)) || nstest_mono_ms() > deadline)
            break;
        nstest_sleep_ms(20);
    }
    ns_cmd_msg_free(&m);
    expect_answer(c, code, kv, NS_VERSION_V5_3_3, want_code, want_body);
}

/* TopicList bodies are sets in Java: compared as sets. */
static void expect_topic_set(ns_client_t *c, int code, const char *const *kv, const char *want)
{
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    request(c, code, kv, NULL, 0, NS_VERSION_V5_3_3, &m);
    assert_int_equal(m.cmd.code, NS_RSP_SUCCESS);
    char why[1024] = "";
    if (!nstest_body_equiv((const uint8_t *)want, strlen(want), m.cmd.body, m.cmd.body_len, why,
                           sizeof why)) {
        print_message("%s\n", why);
        fail_body("topic list", &m, want);
    }
    ns_cmd_msg_free(&m);
}

static void expect_route_v(ns_client_t *c, const char *topic, int version, bool accept_std,
                           const char *want)
{
    const char *kv[] = {"topic", topic, accept_std ? "acceptStandardJsonOnly" : NULL, "true", NULL};
    expect_answer(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, version, NS_RSP_SUCCESS, want);
}

/* Standard route (version 479). */
static void expect_route(ns_client_t *c, const char *topic, const char *want)
{
    expect_route_v(c, topic, NS_VERSION_V5_3_3, false, want);
}

/* Legacy route (version 121). */
static void expect_route_legacy(ns_client_t *c, const char *topic, const char *want)
{
    expect_route_v(c, topic, V_LEGACY, false, want);
}

static void expect_no_route(ns_client_t *c, const char *topic)
{
    const char *kv[] = {"topic", topic, NULL};
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    request(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, NULL, 0, NS_VERSION_V5_3_3, &m);
    if (m.cmd.code != NS_RSP_TOPIC_NOT_EXIST)
        fail_body(topic, &m, "(TOPIC_NOT_EXIST)");
    char want[512];
    snprintf(want, sizeof want, NO_ROUTE_REMARK("%s"), topic);
    assert_non_null(m.cmd.remark);
    assert_string_equal(m.cmd.remark, want);
    assert_int_equal(m.cmd.body_len, 0);
    ns_cmd_msg_free(&m);
}

static void wait_route(ns_client_t *c, const char *topic, const char *want)
{
    const char *kv[] = {"topic", topic, NULL};
    wait_answer(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv,
                want ? NS_RSP_SUCCESS : NS_RSP_TOPIC_NOT_EXIST, want);
}

static void expect_cluster_info(ns_client_t *c, const char *want)
{
    expect_answer(c, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, NS_VERSION_V5_3_3, NS_RSP_SUCCESS, want);
}

static char *get_body(ns_client_t *c, int code, const char *const *kv, int version, int *code_out)
{
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    request(c, code, kv, NULL, 0, version, &m);
    if (code_out)
        *code_out = m.cmd.code;
    char *s = body_dup(&m);
    ns_cmd_msg_free(&m);
    return s;
}

static void put_kv(ns_client_t *c, const char *ns, const char *key, const char *val)
{
    const char *kv[] = {"namespace", ns, "key", key, "value", val, NULL};
    expect_answer(c, NS_REQ_PUT_KV_CONFIG, kv, NS_VERSION_V5_3_3, NS_RSP_SUCCESS, NULL);
}

static void update_config(ns_client_t *c, const char *props)
{
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    request(c, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, props, strlen(props), NS_VERSION_V5_3_3, &m);
    assert_int_equal(m.cmd.code, NS_RSP_SUCCESS);
    ns_cmd_msg_free(&m);
}

/* ---- brokers and registration bodies ---- */

typedef struct {
    const char *cluster, *name, *addr, *ha;
    int64_t id;
    ns_client_t *conn; /* its registration connection */
} broker_t;

typedef struct {
    const char *name;
    int rq, wq, perm, flag;
} tdef_t;

typedef enum {
    ENC_JSON,            /* JSON body, compressed=false */
    ENC_ZLIB,            /* 5.x compressed form (mapping section), compressed=true */
    ENC_ZLIB_FLAG_FALSE, /* the same bytes with compressed=false (5.x broker quirk) */
    ENC_ZLIB_4X,         /* 4.x compressed form (no mapping section), version 407 */
} enc_t;

#define NT(arr) (sizeof(arr) / sizeof((arr)[0]))

/* Fills b from t (the names are borrowed: release with regbody_release, not
 * ns_regbody_free). */
static void regbody_fill(ns_regbody_t *b, int64_t counter, const tdef_t *t, size_t n)
{
    memset(b, 0, sizeof *b);
    b->data_version.counter = counter;
    b->data_version.timestamp = 1700000000000LL;
    b->topics = calloc(n + 1, sizeof *b->topics);
    assert_non_null(b->topics);
    for (size_t i = 0; i < n; i++) {
        b->topics[i].topic_name = (char *)t[i].name;
        b->topics[i].read_queue_nums = t[i].rq;
        b->topics[i].write_queue_nums = t[i].wq;
        b->topics[i].perm = t[i].perm;
        b->topics[i].topic_sys_flag = t[i].flag;
    }
    b->n_topics = n;
    b->has_filter_server_list = true;
}

static void regbody_release(ns_regbody_t *b)
{
    free(b->topics);
    memset(b, 0, sizeof *b);
}

static void encode_body(ns_buf_t *out, const ns_regbody_t *b, enc_t enc)
{
    int rc = enc == ENC_JSON ? ns_regbody_encode_json(out, b)
                             : ns_regbody_encode_compressed(out, b, enc != ENC_ZLIB_4X);
    assert_int_equal(rc, NS_OK);
}

/* REGISTER_BROKER with the header a 5.x broker sends. crc: NULL = the right
 * CRC of body, else this text. */
static void register_raw(const broker_t *br, const void *body, size_t n, bool compressed,
                         int version, const char *crc, ns_cmd_msg_t *rsp)
{
    char id[32], crcbuf[32];
    snprintf(id, sizeof id, "%lld", (long long)br->id);
    snprintf(crcbuf, sizeof crcbuf, "%u", ns_body_crc32(body, n));
    /* clang-format off */
    const char *kv[] = {
        "bodyCrc32", crc ? crc : crcbuf,
        "brokerAddr", br->addr,
        "brokerId", id,
        "brokerName", br->name,
        "clusterName", br->cluster,
        "compressed", compressed ? "true" : "false",
        "enableActingMaster", "false",
        "haServerAddr", br->ha,
        "heartbeatTimeoutMillis", "120000",
        NULL};
    /* clang-format on */
    request(br->conn, NS_REQ_REGISTER_BROKER, kv, body, n, version, rsp);
}

static void register_body(const broker_t *br, const ns_regbody_t *b, enc_t enc, ns_cmd_msg_t *rsp)
{
    ns_buf_t body = NS_BUF_INIT;
    encode_body(&body, b, enc);
    register_raw(br, body.data, body.len, enc == ENC_ZLIB || enc == ENC_ZLIB_4X,
                 enc == ENC_ZLIB_4X ? V_4_9_7 : NS_VERSION_V5_3_3, NULL, rsp);
    ns_buf_free(&body);
}

/* Registers; the reply must be SUCCESS with the given masterAddr/haServerAddr
 * (NULL = none) and body (NULL = none). */
static void register_expect(const broker_t *br, int64_t counter, const tdef_t *t, size_t n,
                            enc_t enc, const char *master, const char *ha, const char *want_body)
{
    ns_regbody_t b;
    regbody_fill(&b, counter, t, n);
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    register_body(br, &b, enc, &m);
    if (m.cmd.code != NS_RSP_SUCCESS)
        fail_msg("register %s id %lld: code %d (%s)", br->name, (long long)br->id, m.cmd.code,
                 m.cmd.remark ? m.cmd.remark : "");
    assert_true(m.cmd.has_ext); /* Java: "extFields":{} at least */
    assert_int_equal(m.cmd.n_ext, (master ? 1 : 0) + (ha ? 1 : 0));
    if (master) {
        assert_non_null(ns_cmd_ext_get(&m.cmd, "masterAddr"));
        assert_string_equal(ns_cmd_ext_get(&m.cmd, "masterAddr"), master);
    }
    if (ha) {
        assert_non_null(ns_cmd_ext_get(&m.cmd, "haServerAddr"));
        assert_string_equal(ns_cmd_ext_get(&m.cmd, "haServerAddr"), ha);
    }
    if (!body_is(&m, want_body))
        fail_body("register reply", &m, want_body);
    ns_cmd_msg_free(&m);
    regbody_release(&b);
}

/* A master's registration: SUCCESS, "extFields":{}, no body. */
static void register_ok(const broker_t *br, int64_t counter, const tdef_t *t, size_t n, enc_t enc)
{
    register_expect(br, counter, t, n, enc, NULL, NULL, NULL);
}

/* The broker-identifying header of UNREGISTER_BROKER / QUERY_DATA_VERSION. */
#define BROKER_KV(br, id)                                                                          \
    "brokerAddr", (br)->addr, "brokerId", id, "brokerName", (br)->name, "clusterName", (br)->cluster

static void unregister(ns_client_t *c, const broker_t *br)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)br->id);
    const char *kv[] = {BROKER_KV(br, id), NULL};
    expect_answer(c, NS_REQ_UNREGISTER_BROKER, kv, NS_VERSION_V5_3_3, NS_RSP_SUCCESS, NULL);
}

static void connect_brokers(fx_t *fx, broker_t *brs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        brs[i].conn = nstest_connect(&fx->srv);
}

static void close_brokers(broker_t *brs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (brs[i].conn)
            ns_client_close(brs[i].conn);
        brs[i].conn = NULL;
    }
}

/* QUERY_DATA_VERSION with DataVersion {counter, 0, 1700000000000}. */
static void expect_query_dv(ns_client_t *c, const broker_t *br, int64_t counter,
                            const char *changed, const char *want_body)
{
    char id[32], dv[128];
    snprintf(id, sizeof id, "%lld", (long long)br->id);
    snprintf(dv, sizeof dv, "{\"counter\":%lld,\"stateVersion\":0,\"timestamp\":1700000000000}",
             (long long)counter);
    const char *kv[] = {BROKER_KV(br, id), NULL};
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    request(c, NS_REQ_QUERY_DATA_VERSION, kv, dv, strlen(dv), NS_VERSION_V5_3_3, &m);
    assert_int_equal(m.cmd.code, NS_RSP_SUCCESS);
    assert_int_equal(m.cmd.n_ext, 1);
    assert_non_null(ns_cmd_ext_get(&m.cmd, "changed"));
    assert_string_equal(ns_cmd_ext_get(&m.cmd, "changed"), changed);
    if (!body_is(&m, want_body))
        fail_body("QUERY_DATA_VERSION", &m, want_body);
    ns_cmd_msg_free(&m);
}

/* ====================================================================== */

/* Two clusters, masters and a slave, topics on several brokers. */
static const tdef_t k_a_topics[] = {
    {"TopicA", 8, 8, 6, 0}, {"TopicShared", 4, 4, 6, 0}, {"TopicUnit", 2, 2, 6, 1}};
static const tdef_t k_a_slave_topics[] = {{"TopicA", 8, 8, 6, 0},
                                          {"TopicShared", 4, 4, 6, 0},
                                          {"TopicUnit", 2, 2, 6, 1},
                                          {"TopicSlaveOnly", 1, 1, 6, 0}};
static const tdef_t k_b_topics[] = {{"TopicB", 4, 4, 6, 0}, {"TopicShared", 2, 2, 6, 0}};
static const tdef_t k_c_topics[] = {{"TopicC", 16, 16, 6, 0}, {"TopicShared", 8, 8, 4, 0}};

static void register_topology(fx_t *fx, broker_t *brs)
{
    connect_brokers(fx, brs, 4);
    register_ok(&brs[0], 1, k_a_topics, NT(k_a_topics), ENC_JSON);
    /* the slave learns its master's addresses; its own topics are ignored
     * (a slave below a live master is not the prime slave) */
    register_expect(&brs[1], 1, k_a_slave_topics, NT(k_a_slave_topics), ENC_JSON, A_M, A_M_HA,
                    NULL);
    register_ok(&brs[2], 1, k_b_topics, NT(k_b_topics), ENC_JSON);
    register_ok(&brs[3], 1, k_c_topics, NT(k_c_topics), ENC_JSON);
}

/* ClusterA: broker-a (master + slave id 1), broker-b; ClusterB: broker-c. */
static const broker_t k_topology[] = {
    {"ClusterA", "broker-a", A_M, A_M_HA, 0, NULL},
    {"ClusterA", "broker-a", A_S, A_S_HA, 1, NULL},
    {"ClusterA", "broker-b", B_M, "10.0.2.1:10912", 0, NULL},
    {"ClusterB", "broker-c", C_M, "10.0.3.1:10912", 0, NULL},
};

#define BD_A_STD BD("broker-a", "ClusterA", S(0, A_M) "," S(1, A_S))
#define BD_A_LEG BD("broker-a", "ClusterA", L(0, A_M) "," L(1, A_S))
#define BD_B_STD BD("broker-b", "ClusterA", S(0, B_M))
#define BD_B_LEG BD("broker-b", "ClusterA", L(0, B_M))
#define BD_C_STD BD("broker-c", "ClusterB", S(0, C_M))
#define BD_C_LEG BD("broker-c", "ClusterB", L(0, C_M))

#define CLUSTER_INFO_TOPOLOGY                                                                      \
    "{\"brokerAddrTable\":{\"broker-a\":" BD_A_LEG ",\"broker-b\":" BD_B_LEG                       \
    ",\"broker-c\":" BD_C_LEG "},\"clusterAddrTable\":{\"ClusterA\":[\"broker-a\","                \
    "\"broker-b\"],\"ClusterB\":[\"broker-c\"]}}"

static void test_two_clusters(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c;
    broker_t brs[NT(k_topology)];
    memcpy(brs, k_topology, sizeof brs);
    register_topology(fx, brs);

    const char *shared_std = ROUTE(
        BD_A_STD "," BD_B_STD "," BD_C_STD,
        QD("broker-a", 6, 4, 4, 0) "," QD("broker-b", 6, 2, 2, 0) "," QD("broker-c", 4, 8, 8, 0));
    const char *shared_leg = ROUTE(
        BD_A_LEG "," BD_B_LEG "," BD_C_LEG,
        QD("broker-a", 6, 4, 4, 0) "," QD("broker-b", 6, 2, 2, 0) "," QD("broker-c", 4, 8, 8, 0));
    expect_route(c, "TopicShared", shared_std);
    expect_route_legacy(c, "TopicShared", shared_leg);
    expect_route(c, "TopicA", ROUTE(BD_A_STD, QD("broker-a", 6, 8, 8, 0)));
    expect_route_legacy(c, "TopicA", ROUTE(BD_A_LEG, QD("broker-a", 6, 8, 8, 0)));
    expect_route(c, "TopicUnit", ROUTE(BD_A_STD, QD("broker-a", 6, 2, 2, 1)));
    expect_route(c, "TopicB", ROUTE(BD_B_STD, QD("broker-b", 6, 4, 4, 0)));
    expect_route(c, "TopicC", ROUTE(BD_C_STD, QD("broker-c", 6, 16, 16, 0)));
    expect_no_route(c, "TopicSlaveOnly");
    expect_no_route(c, "NoSuchTopic");

    expect_cluster_info(c, CLUSTER_INFO_TOPOLOGY);

    const char *ca[] = {"cluster", "ClusterA", NULL}, *cb[] = {"cluster", "ClusterB", NULL};
    const char *cx[] = {"cluster", "NoSuchCluster", NULL};
    expect_topic_set(c, NS_REQ_GET_TOPICS_BY_CLUSTER, ca,
                     "{\"topicList\":[\"TopicA\",\"TopicB\",\"TopicShared\",\"TopicUnit\"]}");
    expect_answer(c, NS_REQ_GET_TOPICS_BY_CLUSTER, cb, NS_VERSION_V5_3_3, NS_RSP_SUCCESS,
                  "{\"topicList\":[\"TopicC\",\"TopicShared\"]}");
    expect_answer(c, NS_REQ_GET_TOPICS_BY_CLUSTER, cx, NS_VERSION_V5_3_3, NS_RSP_SUCCESS,
                  "{\"topicList\":[]}");
    expect_answer(
        c, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, NS_VERSION_V5_3_3, NS_RSP_SUCCESS,
        "{\"topicList\":[\"TopicA\",\"TopicB\",\"TopicC\",\"TopicShared\",\"TopicUnit\"]}");
    expect_answer(c, NS_REQ_GET_UNIT_TOPIC_LIST, NULL, NS_VERSION_V5_3_3, NS_RSP_SUCCESS,
                  "{\"topicList\":[\"TopicUnit\"]}");

    /* member group: legacy keys, remark "not set any response code" */
    const char *mg[] = {"clusterName", "ClusterA", "brokerName", "broker-a", NULL};
    const char *mgx[] = {"clusterName", "ClusterA", "brokerName", "broker-zz", NULL};
    expect_answer(c, NS_REQ_GET_BROKER_MEMBER_GROUP, mg, NS_VERSION_V5_3_3, NS_RSP_SUCCESS,
                  "{\"brokerMemberGroup\":{\"brokerAddrs\":{" L(0, A_M) "," L(
                      1, A_S) "},\"brokerName\":\"broker-a\",\"cluster\":\"ClusterA\"}}");
    expect_answer(c, NS_REQ_GET_BROKER_MEMBER_GROUP, mgx, NS_VERSION_V5_3_3, NS_RSP_SUCCESS,
                  "{\"brokerMemberGroup\":{\"brokerAddrs\":{},\"brokerName\":\"broker-zz\","
                  "\"cluster\":\"ClusterA\"}}");
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    request(c, NS_REQ_GET_BROKER_MEMBER_GROUP, mg, NULL, 0, NS_VERSION_V5_3_3, &m);
    assert_non_null(m.cmd.remark);
    assert_string_equal(m.cmd.remark, "not set any response code");
    ns_cmd_msg_free(&m);

    /* a registration of the slave with the same DataVersion: same reply */
    register_expect(&brs[1], 1, k_a_slave_topics, NT(k_a_slave_topics), ENC_JSON, A_M, A_M_HA,
                    NULL);
    expect_no_route(c, "TopicSlaveOnly");
    close_brokers(brs, NT(brs));
}

/* Standard vs legacy: version 401 is the boundary, acceptStandardJsonOnly
 * switches an old client to standard; ids sort numerically ("2" < "10"). */
static void test_standard_vs_legacy(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c;
    broker_t brs[] = {
        {"ClusterN", "broker-n", "10.0.9.1:10911", "10.0.9.1:10912", 0, NULL},
        {"ClusterN", "broker-n", "10.0.9.10:10911", "10.0.9.10:10912", 10, NULL},
        {"ClusterN", "broker-n", "10.0.9.2:10911", "10.0.9.2:10912", 2, NULL},
    };
    const tdef_t t[] = {{"TopicN", 4, 4, 6, 0}, {"TopicN2", 4, 4, 6, 0}};
    connect_brokers(fx, brs, NT(brs));
    register_ok(&brs[0], 1, t, NT(t), ENC_JSON);
    register_expect(&brs[1], 1, t, NT(t), ENC_JSON, "10.0.9.1:10911", "10.0.9.1:10912", NULL);
    register_expect(&brs[2], 1, t, NT(t), ENC_JSON, "10.0.9.1:10911", "10.0.9.1:10912", NULL);

    const char *std =
        ROUTE(BD("broker-n", "ClusterN",
                 S(0, "10.0.9.1:10911") "," S(2, "10.0.9.2:10911") "," S(10, "10.0.9.10:10911")),
              QD("broker-n", 6, 4, 4, 0));
#define BD_N_LEG                                                                                   \
    BD("broker-n", "ClusterN",                                                                     \
       L(0, "10.0.9.1:10911") "," L(2, "10.0.9.2:10911") "," L(10, "10.0.9.10:10911"))
    const char *leg = ROUTE(BD_N_LEG, QD("broker-n", 6, 4, 4, 0));
    expect_route_v(c, "TopicN", NS_VERSION_V5_3_3, false, std);
    expect_route_v(c, "TopicN", NS_VERSION_V4_9_4, false, std);
    expect_route_v(c, "TopicN", NS_VERSION_V4_9_4 - 1, false, leg);
    expect_route_v(c, "TopicN", V_LEGACY, false, leg);
    expect_route_v(c, "TopicN", 317, false, leg); /* Go */
    expect_route_v(c, "TopicN", 333, false, leg); /* C++ */
    expect_route_v(c, "TopicN", V_LEGACY, true, std);
    expect_route_v(c, "TopicN", 0, true, std);
    /* cluster info is always legacy, whatever the request version */
#define CI_N                                                                                       \
    "{\"brokerAddrTable\":{\"broker-n\":" BD_N_LEG "},\"clusterAddrTable\":{\"ClusterN\":"         \
    "[\"broker-n\"]}}"
    expect_answer(c, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, V_LEGACY, NS_RSP_SUCCESS, CI_N);
    expect_cluster_info(c, CI_N);
#undef CI_N
    close_brokers(brs, NT(brs));
#undef BD_N_LEG
}

/* The store keeps only the standard form when the legacy one derives from
 * it; a non-ASCII name makes the forms differ elsewhere (\uXXXX against raw
 * UTF-8), so that route keeps both. Old and new clients get their own form
 * either way, also in one topic's route holding both kinds of broker. */
static void test_legacy_stored_or_derived(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c;
    broker_t brs[] = {
        {"ClusterP", "broker-p", "10.0.8.1:10911", "10.0.8.1:10912", 0, NULL},
        {"Cluster\xe9\x9b\x86", "broker-u", "10.0.8.2:10911", "10.0.8.2:10912", 0, NULL},
    };
    const tdef_t t[] = {{"TopicP", 4, 4, 6, 0}, {"TopicShared", 2, 2, 6, 0}};
    const tdef_t u[] = {{"TopicU", 8, 8, 6, 0}, {"TopicShared", 2, 2, 6, 0}};
    connect_brokers(fx, brs, NT(brs));
    register_ok(&brs[0], 1, t, NT(t), ENC_JSON);
    register_ok(&brs[1], 1, u, NT(u), ENC_ZLIB);
#define BD_P_STD BD("broker-p", "ClusterP", S(0, "10.0.8.1:10911"))
#define BD_P_LEG BD("broker-p", "ClusterP", L(0, "10.0.8.1:10911"))
#define BD_U_STD BD("broker-u", "Cluster\\u96C6", S(0, "10.0.8.2:10911"))
#define BD_U_LEG BD("broker-u", "Cluster\xe9\x9b\x86", L(0, "10.0.8.2:10911"))
    expect_route_v(c, "TopicP", NS_VERSION_V5_3_3, false,
                   ROUTE(BD_P_STD, QD("broker-p", 6, 4, 4, 0)));
    expect_route_v(c, "TopicP", V_LEGACY, false, ROUTE(BD_P_LEG, QD("broker-p", 6, 4, 4, 0)));
    expect_route_v(c, "TopicU", NS_VERSION_V5_3_3, false,
                   ROUTE(BD_U_STD, QD("broker-u", 6, 8, 8, 0)));
    expect_route_v(c, "TopicU", V_LEGACY, false, ROUTE(BD_U_LEG, QD("broker-u", 6, 8, 8, 0)));
    expect_route_v(
        c, "TopicShared", NS_VERSION_V5_3_3, false,
        ROUTE(BD_P_STD "," BD_U_STD, QD("broker-p", 6, 2, 2, 0) "," QD("broker-u", 6, 2, 2, 0)));
    expect_route_v(
        c, "TopicShared", V_LEGACY, false,
        ROUTE(BD_P_LEG "," BD_U_LEG, QD("broker-p", 6, 2, 2, 0) "," QD("broker-u", 6, 2, 2, 0)));
#undef BD_P_STD
#undef BD_P_LEG
#undef BD_U_STD
#undef BD_U_LEG
    close_brokers(brs, NT(brs));
}

/* Re-registration: same DataVersion adds missing topics only, a new one
 * overwrites; QUERY_DATA_VERSION and BROKER_HEARTBEAT. */
static void test_data_version(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c;
    broker_t br = {"ClusterD", "broker-d", "10.0.4.1:10911", "10.0.4.1:10912", 0, NULL};
    broker_t unknown = {"ClusterD", "broker-d", "10.0.4.9:10911", "10.0.4.9:10912", 0, NULL};
#define BD_D BD("broker-d", "ClusterD", S(0, "10.0.4.1:10911"))
    connect_brokers(fx, &br, 1);

    expect_query_dv(br.conn, &br, 1, "true", NULL); /* before registering: no body */
    const tdef_t v1[] = {{"TopicX", 8, 8, 6, 0}, {"TopicZ", 1, 1, 6, 0}};
    register_ok(&br, 1, v1, NT(v1), ENC_JSON);
    expect_route(c, "TopicX", ROUTE(BD_D, QD("broker-d", 6, 8, 8, 0)));
    expect_query_dv(br.conn, &br, 1, "false", DV(1));
    expect_query_dv(br.conn, &br, 2, "true", DV(1));
    expect_query_dv(br.conn, &unknown, 1, "true", NULL);

    /* same DataVersion: TopicX is not overwritten, TopicY (missing) is added */
    const tdef_t v1b[] = {{"TopicX", 16, 16, 6, 0}, {"TopicY", 4, 4, 6, 0}};
    register_ok(&br, 1, v1b, NT(v1b), ENC_JSON);
    expect_route(c, "TopicX", ROUTE(BD_D, QD("broker-d", 6, 8, 8, 0)));
    expect_route(c, "TopicY", ROUTE(BD_D, QD("broker-d", 6, 4, 4, 0)));
    expect_query_dv(br.conn, &br, 1, "false", DV(1));

    /* new DataVersion: overwritten; topics absent from it are kept */
    const tdef_t v2[] = {{"TopicX", 16, 16, 6, 0}};
    register_ok(&br, 2, v2, NT(v2), ENC_JSON);
    expect_route(c, "TopicX", ROUTE(BD_D, QD("broker-d", 6, 16, 16, 0)));
    expect_route(c, "TopicY", ROUTE(BD_D, QD("broker-d", 6, 4, 4, 0)));
    expect_query_dv(br.conn, &br, 2, "false", DV(2));
    expect_query_dv(br.conn, &br, 1, "true", DV(2));

    /* heartbeats: SUCCESS without body or extFields; unknown brokers too;
     * one-way gets nothing; none touches the DataVersion */
    const char *hb[] = {"brokerAddr",  br.addr,    "brokerName", br.name,
                        "clusterName", br.cluster, NULL};
    const char *hbx[] = {"brokerAddr",  "10.9.9.9:1", "brokerName", "nobody",
                         "clusterName", "ClusterD",   NULL};
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    request(br.conn, NS_REQ_BROKER_HEARTBEAT, hb, NULL, 0, NS_VERSION_V5_3_3, &m);
    assert_int_equal(m.cmd.code, NS_RSP_SUCCESS);
    assert_false(m.cmd.has_ext);
    assert_int_equal(m.cmd.body_len, 0);
    request(br.conn, NS_REQ_BROKER_HEARTBEAT, hbx, NULL, 0, NS_VERSION_V5_3_3, &m);
    assert_int_equal(m.cmd.code, NS_RSP_SUCCESS);
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    nstest_cmd(&cmd, ext, NS_REQ_BROKER_HEARTBEAT, hb);
    cmd.flag = NS_FLAG_ONEWAY;
    cmd.opaque = 999999;
    assert_int_equal(ns_client_send(br.conn, &cmd), NS_OK);
    assert_int_equal(ns_client_recv(br.conn, 300, &m), NS_ETIMEDOUT);
    ns_cmd_msg_free(&m);
    expect_query_dv(br.conn, &br, 2, "false", DV(2));
    close_brokers(&br, 1);
#undef BD_D
}

/* DELETE_TOPIC_IN_NAMESRV with and without clusterName. */
static void test_delete_topic(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c;
    broker_t brs[NT(k_topology)];
    memcpy(brs, k_topology, sizeof brs);
    register_topology(fx, brs);

    /* with ClusterA: broker-a's and broker-b's queue data go, broker-c's stays */
    const char *d1[] = {"topic", "TopicShared", "clusterName", "ClusterA", NULL};
    expect_answer(c, NS_REQ_DELETE_TOPIC_IN_NAMESRV, d1, NS_VERSION_V5_3_3, NS_RSP_SUCCESS, NULL);
    expect_route(c, "TopicShared", ROUTE(BD_C_STD, QD("broker-c", 4, 8, 8, 0)));
    /* with a cluster that does not host the topic, or an unknown one: nothing */
    const char *d2[] = {"topic", "TopicA", "clusterName", "ClusterB", NULL};
    const char *d3[] = {"topic", "TopicA", "clusterName", "NoSuchCluster", NULL};
    expect_answer(c, NS_REQ_DELETE_TOPIC_IN_NAMESRV, d2, NS_VERSION_V5_3_3, NS_RSP_SUCCESS, NULL);
    expect_answer(c, NS_REQ_DELETE_TOPIC_IN_NAMESRV, d3, NS_VERSION_V5_3_3, NS_RSP_SUCCESS, NULL);
    expect_route(c, "TopicA", ROUTE(BD_A_STD, QD("broker-a", 6, 8, 8, 0)));
    /* the last queue data removed with a cluster: the topic is gone */
    const char *d4[] = {"topic", "TopicC", "clusterName", "ClusterB", NULL};
    expect_answer(c, NS_REQ_DELETE_TOPIC_IN_NAMESRV, d4, NS_VERSION_V5_3_3, NS_RSP_SUCCESS, NULL);
    expect_no_route(c, "TopicC");
    /* without clusterName: gone everywhere; unknown topic: still SUCCESS */
    const char *d5[] = {"topic", "TopicA", NULL};
    const char *d6[] = {"topic", "NoSuchTopic", NULL};
    expect_answer(c, NS_REQ_DELETE_TOPIC_IN_NAMESRV, d5, NS_VERSION_V5_3_3, NS_RSP_SUCCESS, NULL);
    expect_answer(c, NS_REQ_DELETE_TOPIC_IN_NAMESRV, d6, NS_VERSION_V5_3_3, NS_RSP_SUCCESS, NULL);
    expect_no_route(c, "TopicA");
    expect_answer(c, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, NS_VERSION_V5_3_3,
                  NS_RSP_SUCCESS, "{\"topicList\":[\"TopicB\",\"TopicShared\",\"TopicUnit\"]}");
    const char *ca[] = {"cluster", "ClusterA", NULL}, *cb[] = {"cluster", "ClusterB", NULL};
    expect_topic_set(c, NS_REQ_GET_TOPICS_BY_CLUSTER, ca,
                     "{\"topicList\":[\"TopicB\",\"TopicUnit\"]}");
    expect_answer(c, NS_REQ_GET_TOPICS_BY_CLUSTER, cb, NS_VERSION_V5_3_3, NS_RSP_SUCCESS,
                  "{\"topicList\":[\"TopicShared\"]}");
    /* brokers are untouched */
    expect_cluster_info(c, CLUSTER_INFO_TOPOLOGY);

    /* deletion is not remembered: a re-registration (same DataVersion) brings
     * the missing topics back */
    register_ok(&brs[0], 1, k_a_topics, NT(k_a_topics), ENC_JSON);
    expect_route(c, "TopicA", ROUTE(BD_A_STD, QD("broker-a", 6, 8, 8, 0)));
    expect_route(
        c, "TopicShared",
        ROUTE(BD_A_STD "," BD_C_STD, QD("broker-a", 6, 4, 4, 0) "," QD("broker-c", 4, 8, 8, 0)));
    close_brokers(brs, NT(brs));
}

/* UNREGISTER_BROKER of the master, then of the slave. */
static void test_unregister_master_then_slave(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c;
    broker_t brs[NT(k_topology)];
    memcpy(brs, k_topology, sizeof brs);
    register_topology(fx, brs);

    unregister(brs[0].conn, &brs[0]);
    /* the group keeps its slave; queue data stays with the broker name */
    wait_route(c, "TopicA",
               ROUTE(BD("broker-a", "ClusterA", S(1, A_S)), QD("broker-a", 6, 8, 8, 0)));
    expect_route_legacy(c, "TopicA",
                        ROUTE(BD("broker-a", "ClusterA", L(1, A_S)), QD("broker-a", 6, 8, 8, 0)));
    expect_route(c, "TopicShared",
                 ROUTE(BD("broker-a", "ClusterA", S(1, A_S)) "," BD_B_STD "," BD_C_STD,
                       QD("broker-a", 6, 4, 4, 0) "," QD("broker-b", 6, 2, 2,
                                                         0) "," QD("broker-c", 4, 8, 8, 0)));
    expect_cluster_info(
        c, "{\"brokerAddrTable\":{\"broker-a\":" BD(
               "broker-a", "ClusterA",
               L(1, A_S)) ",\"broker-b\":" BD_B_LEG ",\"broker-c\":" BD_C_LEG
                          "},\"clusterAddrTable\":{\"ClusterA\":[\"broker-a\",\"broker-b\"],"
                          "\"ClusterB\":[\"broker-c\"]}}");
    const char *mg[] = {"clusterName", "ClusterA", "brokerName", "broker-a", NULL};
    expect_answer(c, NS_REQ_GET_BROKER_MEMBER_GROUP, mg, NS_VERSION_V5_3_3, NS_RSP_SUCCESS,
                  "{\"brokerMemberGroup\":{\"brokerAddrs\":{" L(
                      1, A_S) "},\"brokerName\":\"broker-a\",\"cluster\":\"ClusterA\"}}");
    /* the slave re-registers: no master, so no masterAddr/haServerAddr */
    register_expect(&brs[1], 1, k_a_topics, NT(k_a_topics), ENC_JSON, NULL, NULL, NULL);

    unregister(brs[1].conn, &brs[1]);
    wait_route(c, "TopicA", NULL);
    expect_no_route(c, "TopicUnit");
    expect_route(
        c, "TopicShared",
        ROUTE(BD_B_STD "," BD_C_STD, QD("broker-b", 6, 2, 2, 0) "," QD("broker-c", 4, 8, 8, 0)));
    expect_cluster_info(c, "{\"brokerAddrTable\":{\"broker-b\":" BD_B_LEG ",\"broker-c\":" BD_C_LEG
                           "},\"clusterAddrTable\":{\"ClusterA\":[\"broker-b\"],"
                           "\"ClusterB\":[\"broker-c\"]}}");
    expect_answer(c, NS_REQ_GET_BROKER_MEMBER_GROUP, mg, NS_VERSION_V5_3_3, NS_RSP_SUCCESS,
                  "{\"brokerMemberGroup\":{\"brokerAddrs\":{},\"brokerName\":\"broker-a\","
                  "\"cluster\":\"ClusterA\"}}");

    /* the last brokers go: empty tables */
    unregister(brs[2].conn, &brs[2]);
    unregister(brs[3].conn, &brs[3]);
    wait_answer(c, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, NS_RSP_SUCCESS, EMPTY_CLUSTER_INFO);
    expect_no_route(c, "TopicShared");
    expect_answer(c, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, NS_VERSION_V5_3_3,
                  NS_RSP_SUCCESS, "{\"topicList\":[]}");
    close_brokers(brs, NT(brs));
}

/* WIPE_WRITE_PERM_OF_BROKER / ADD_WRITE_PERM_OF_BROKER and their counts. */
static void expect_perm_count(ns_client_t *c, int code, const char *broker, const char *hdr,
                              const char *count)
{
    const char *kv[] = {"brokerName", broker, NULL};
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    request(c, code, kv, NULL, 0, NS_VERSION_V5_3_3, &m);
    assert_int_equal(m.cmd.code, NS_RSP_SUCCESS);
    assert_int_equal(m.cmd.n_ext, 1);
    assert_non_null(ns_cmd_ext_get(&m.cmd, hdr));
    assert_string_equal(ns_cmd_ext_get(&m.cmd, hdr), count);
    assert_int_equal(m.cmd.body_len, 0);
    ns_cmd_msg_free(&m);
}

static void test_write_perm(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c;
    broker_t brs[] = {
        {"ClusterP", "broker-p", "10.0.5.1:10911", "10.0.5.1:10912", 0, NULL},
        {"ClusterP", "broker-q", "10.0.5.2:10911", "10.0.5.2:10912", 0, NULL},
    };
    const tdef_t p[] = {{"TopicP1", 8, 8, 6, 0}, {"TopicP2", 4, 4, 7, 0}, {"TopicP3", 2, 2, 4, 0}};
    const tdef_t q[] = {{"TopicP1", 4, 4, 6, 0}, {"TopicQ", 4, 4, 6, 0}};
#define BD_P BD("broker-p", "ClusterP", S(0, "10.0.5.1:10911"))
#define BD_Q BD("broker-q", "ClusterP", S(0, "10.0.5.2:10911"))
    connect_brokers(fx, brs, NT(brs));
    register_ok(&brs[0], 1, p, NT(p), ENC_JSON);
    register_ok(&brs[1], 1, q, NT(q), ENC_JSON);

    expect_perm_count(c, NS_REQ_WIPE_WRITE_PERM_OF_BROKER, "broker-p", "wipeTopicCount", "3");
    expect_route(c, "TopicP1",
                 ROUTE(BD_P "," BD_Q, QD("broker-p", 4, 8, 8, 0) "," QD("broker-q", 6, 4, 4, 0)));
    expect_route(c, "TopicP2", ROUTE(BD_P, QD("broker-p", 5, 4, 4, 0)));
    expect_route(c, "TopicP3", ROUTE(BD_P, QD("broker-p", 4, 2, 2, 0)));
    expect_perm_count(c, NS_REQ_WIPE_WRITE_PERM_OF_BROKER, "broker-zz", "wipeTopicCount", "0");
    /* a periodic re-registration (same DataVersion) does not undo it */
    register_ok(&brs[0], 1, p, NT(p), ENC_JSON);
    expect_route(c, "TopicP2", ROUTE(BD_P, QD("broker-p", 5, 4, 4, 0)));

    expect_perm_count(c, NS_REQ_ADD_WRITE_PERM_OF_BROKER, "broker-p", "addTopicCount", "3");
    expect_route(c, "TopicP1",
                 ROUTE(BD_P "," BD_Q, QD("broker-p", 6, 8, 8, 0) "," QD("broker-q", 6, 4, 4, 0)));
    expect_route(c, "TopicP2", ROUTE(BD_P, QD("broker-p", 6, 4, 4, 0)));
    expect_route(c, "TopicP3", ROUTE(BD_P, QD("broker-p", 6, 2, 2, 0)));
    expect_perm_count(c, NS_REQ_ADD_WRITE_PERM_OF_BROKER, "broker-q", "addTopicCount", "2");
    expect_perm_count(c, NS_REQ_ADD_WRITE_PERM_OF_BROKER, "broker-zz", "addTopicCount", "0");

    /* wiped, then a new DataVersion restores the broker's own perms */
    expect_perm_count(c, NS_REQ_WIPE_WRITE_PERM_OF_BROKER, "broker-p", "wipeTopicCount", "3");
    register_ok(&brs[0], 2, p, NT(p), ENC_JSON);
    expect_route(c, "TopicP1",
                 ROUTE(BD_P "," BD_Q, QD("broker-p", 6, 8, 8, 0) "," QD("broker-q", 6, 4, 4, 0)));
    expect_route(c, "TopicP2", ROUTE(BD_P, QD("broker-p", 7, 4, 4, 0)));
    expect_route(c, "TopicP3", ROUTE(BD_P, QD("broker-p", 4, 2, 2, 0)));
    close_brokers(brs, NT(brs));
#undef BD_P
#undef BD_Q
}

/* ORDER_TOPIC_CONFIG + orderMessageEnable. */
static void test_order_topic(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c;
    broker_t br = {"ClusterO", "broker-o", "10.0.6.1:10911", "10.0.6.1:10912", 0, NULL};
    const tdef_t t[] = {{"TopicO1", 4, 4, 6, 0}, {"TopicO2", 4, 4, 6, 0}};
#define BD_O_STD BD("broker-o", "ClusterO", S(0, "10.0.6.1:10911"))
#define BD_O_LEG BD("broker-o", "ClusterO", L(0, "10.0.6.1:10911"))
    connect_brokers(fx, &br, 1);
    /* no ORDER_TOPIC_CONFIG namespace yet: no body */
    register_ok(&br, 1, t, NT(t), ENC_JSON);

    put_kv(c, NS_ORDER_TOPIC_CONFIG_NS, "TopicO1", "broker-o:4");
    register_expect(&br, 1, t, NT(t), ENC_JSON, NULL, NULL,
                    "{\"table\":{\"TopicO1\":\"broker-o:4\"}}");
    put_kv(c, NS_ORDER_TOPIC_CONFIG_NS, "TopicO0", "broker-o:8;broker-x:8");
    register_expect(
        &br, 2, t, NT(t), ENC_ZLIB, NULL, NULL,
        "{\"table\":{\"TopicO0\":\"broker-o:8;broker-x:8\",\"TopicO1\":\"broker-o:4\"}}");

    /* orderMessageEnable=false (default): no orderTopicConf */
    expect_route(c, "TopicO1", ROUTE(BD_O_STD, QD("broker-o", 6, 4, 4, 0)));
    update_config(c, "orderMessageEnable=true\n");
    expect_route(c, "TopicO1", ROUTE_ORDER(BD_O_STD, "broker-o:4", QD("broker-o", 6, 4, 4, 0)));
    expect_route_legacy(c, "TopicO1",
                        ROUTE_ORDER(BD_O_LEG, "broker-o:4", QD("broker-o", 6, 4, 4, 0)));
    expect_route(c, "TopicO2", ROUTE(BD_O_STD, QD("broker-o", 6, 4, 4, 0)));
    const char *get[] = {"namespace", NS_ORDER_TOPIC_CONFIG_NS, NULL};
    expect_answer(c, NS_REQ_GET_KVLIST_BY_NAMESPACE, get, NS_VERSION_V5_3_3, NS_RSP_SUCCESS,
                  "{\"table\":{\"TopicO0\":\"broker-o:8;broker-x:8\",\"TopicO1\":\"broker-o:4\"}}");
    update_config(c, "orderMessageEnable=false\n");
    expect_route(c, "TopicO1", ROUTE(BD_O_STD, QD("broker-o", 6, 4, 4, 0)));

    /* emptied namespace: the reply body is an empty table */
    const char *d0[] = {"namespace", NS_ORDER_TOPIC_CONFIG_NS, "key", "TopicO0", NULL};
    const char *d1[] = {"namespace", NS_ORDER_TOPIC_CONFIG_NS, "key", "TopicO1", NULL};
    expect_answer(c, NS_REQ_DELETE_KV_CONFIG, d0, NS_VERSION_V5_3_3, NS_RSP_SUCCESS, NULL);
    expect_answer(c, NS_REQ_DELETE_KV_CONFIG, d1, NS_VERSION_V5_3_3, NS_RSP_SUCCESS, NULL);
    register_expect(&br, 2, t, NT(t), ENC_JSON, NULL, NULL, "{\"table\":{}}");
    close_brokers(&br, 1);
#undef BD_O_STD
#undef BD_O_LEG
}

/* ---- bodies ---- */

static const tdef_t k_j_topics[] = {{"TopicJ1", 8, 8, 6, 0},
                                    {"TopicJ2", 4, 2, 4, 0},
                                    {"TopicJ3", 1, 1, 7, 0},
                                    {"TopicJ4", 2, 2, 6, 1}};
#define BD_J BD("broker-j", "ClusterJ", S(0, "10.0.7.1:10911"))

static char **snapshot_routes(ns_client_t *c, const tdef_t *t, size_t n)
{
    char **r = calloc(n + 1, sizeof *r);
    assert_non_null(r);
    for (size_t i = 0; i < n; i++) {
        const char *kv[] = {"topic", t[i].name, NULL};
        int code;
        r[i] = get_body(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, NS_VERSION_V5_3_3, &code);
        assert_int_equal(code, NS_RSP_SUCCESS);
    }
    return r;
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

/* The same configuration through JSON, compressed (5.x and 4.x layouts) and
 * compressed with the 5.x compressed=false quirk gives the same routes;
 * compressed bodies carry no topicSysFlag (it becomes 0). */
static void test_compressed_equals_json(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c;
    broker_t br = {"ClusterJ", "broker-j", "10.0.7.1:10911", "10.0.7.1:10912", 0, NULL};
    connect_brokers(fx, &br, 1);
    register_ok(&br, 3, k_j_topics, NT(k_j_topics), ENC_JSON);
    expect_route(c, "TopicJ2", ROUTE(BD_J, QD("broker-j", 4, 4, 2, 0)));
    expect_route(c, "TopicJ4", ROUTE(BD_J, QD("broker-j", 6, 2, 2, 1)));
    char **ref = snapshot_routes(c, k_j_topics, NT(k_j_topics) - 1);
    char *ci = get_body(c, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, NS_VERSION_V5_3_3, NULL);

    const enc_t encs[] = {ENC_ZLIB, ENC_ZLIB_FLAG_FALSE, ENC_ZLIB_4X};
    for (size_t e = 0; e < NT(encs); e++) {
        unregister(br.conn, &br);
        wait_answer(c, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, NS_RSP_SUCCESS, EMPTY_CLUSTER_INFO);
        expect_no_route(c, "TopicJ1");
        register_ok(&br, 3, k_j_topics, NT(k_j_topics), encs[e]);
        char **got = snapshot_routes(c, k_j_topics, NT(k_j_topics) - 1);
        for (size_t i = 0; i < NT(k_j_topics) - 1; i++)
            assert_string_equal(got[i], ref[i]);
        free_strv(got, NT(k_j_topics) - 1);
        expect_route(c, "TopicJ4", ROUTE(BD_J, QD("broker-j", 6, 2, 2, 0)));
        expect_cluster_info(c, ci);
        expect_query_dv(br.conn, &br, 3, "false", DV(3));
    }
    free_strv(ref, NT(k_j_topics) - 1);
    free(ci);
    close_brokers(&br, 1);
}

/* What must not change when a registration is refused. */
typedef struct {
    char *route, *cluster, *topics;
} snap_t;

static void snap_take(ns_client_t *c, snap_t *s)
{
    const char *kv[] = {"topic", "TopicJ1", NULL};
    s->route = get_body(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, NS_VERSION_V5_3_3, NULL);
    s->cluster = get_body(c, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, NS_VERSION_V5_3_3, NULL);
    s->topics =
        get_body(c, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, NS_VERSION_V5_3_3, NULL);
}

static void snap_free(snap_t *s)
{
    free(s->route);
    free(s->cluster);
    free(s->topics);
}

static void snap_expect_same(ns_client_t *c, const snap_t *ref, const char *what)
{
    snap_t now;
    snap_take(c, &now);
    if (strcmp(now.route, ref->route) || strcmp(now.cluster, ref->cluster) ||
        strcmp(now.topics, ref->topics)) {
        print_message("after %s:\n route %s\n   was %s\n cluster %s\n     was %s\n topics %s\n"
                      "    was %s\n",
                      what, now.route, ref->route, now.cluster, ref->cluster, now.topics,
                      ref->topics);
        fail_msg("%s changed the routes", what);
    }
    snap_free(&now);
}

/* Sends a bad registration from a new broker and from the registered one
 * (with a new DataVersion); both must answer SYSTEM_ERROR and change nothing. */
static void expect_refused(ns_client_t *c, broker_t *known, broker_t *fresh, const void *body,
                           size_t n, bool compressed, int version, const char *crc,
                           const char *remark, const snap_t *ref, const char *what)
{
    broker_t *brs[] = {fresh, known};
    for (size_t i = 0; i < 2; i++) {
        ns_cmd_msg_t m;
        ns_cmd_msg_init(&m);
        register_raw(brs[i], body, n, compressed, version, crc, &m);
        if (m.cmd.code != NS_RSP_SYSTEM_ERROR)
            fail_msg("%s (%s): code %d, expected SYSTEM_ERROR", what, brs[i]->name, m.cmd.code);
        assert_non_null(m.cmd.remark);
        if (strstr(m.cmd.remark, remark) == NULL)
            fail_msg("%s: remark \"%s\" does not mention \"%s\"", what, m.cmd.remark, remark);
        assert_int_equal(m.cmd.body_len, 0);
        ns_cmd_msg_free(&m);
        snap_expect_same(c, ref, what);
    }
    /* the known broker keeps its DataVersion */
    expect_query_dv(known->conn, known, 3, "false", DV(3));
}

static void put_be32(ns_buf_t *b, int32_t v)
{
    assert_int_equal(ns_buf_append_be32(b, (uint32_t)v), NS_OK);
}

/* zlib level 9 of raw, as a broker compresses. */
static void zlib_compress(const ns_buf_t *raw, ns_buf_t *out)
{
    uLongf n = compressBound((uLong)raw->len);
    assert_int_equal(ns_buf_reserve(out, n), NS_OK);
    assert_int_equal(compress2(out->data + out->len, &n, raw->data, (uLong)raw->len, 9), Z_OK);
    out->len += n;
}

/* How many bytes a (possibly truncated) zlib stream inflates to. */
static size_t inflated_len(const uint8_t *p, size_t n)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(inflateInit(&zs), Z_OK);
    uint8_t out[65536];
    size_t total = 0;
    zs.next_in = (Bytef *)p;
    zs.avail_in = (uInt)n;
    for (;;) {
        zs.next_out = out;
        zs.avail_out = sizeof out;
        int zr = inflate(&zs, Z_SYNC_FLUSH);
        total += sizeof out - zs.avail_out;
        if (zr != Z_OK || (zs.avail_in == 0 && zs.avail_out != 0))
            break;
    }
    inflateEnd(&zs);
    return total;
}

/* A decompressed body with one topic, with one of its lengths replaced. */
enum { NEG_DV, NEG_TOPIC, NEG_FS, NEG_MAP };
static void build_negative(ns_buf_t *out, int which)
{
    ns_buf_t raw = NS_BUF_INIT;
    const char *dv = DV(9), *line = "TopicJ1 4 4 6 SINGLE_TAG {}";
    put_be32(&raw, which == NEG_DV ? -1 : (int32_t)strlen(dv));
    if (which != NEG_DV)
        ns_buf_append_str(&raw, dv);
    put_be32(&raw, 1);
    put_be32(&raw, which == NEG_TOPIC ? -5 : (int32_t)strlen(line));
    if (which != NEG_TOPIC)
        ns_buf_append_str(&raw, line);
    put_be32(&raw, which == NEG_FS ? -2 : 2);
    if (which != NEG_FS)
        ns_buf_append_str(&raw, "[]");
    put_be32(&raw, 1); /* one mapping */
    put_be32(&raw, which == NEG_MAP ? -3 : 2);
    ns_buf_append_str(&raw, "{}");
    zlib_compress(&raw, out);
    ns_buf_free(&raw);
}

static void test_bad_bodies(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c;
    broker_t known = {"ClusterJ", "broker-j", "10.0.7.1:10911", "10.0.7.1:10912", 0, NULL};
    broker_t fresh = {"ClusterX", "broker-x", "10.0.8.1:10911", "10.0.8.1:10912", 0, NULL};
    connect_brokers(fx, &known, 1);
    connect_brokers(fx, &fresh, 1);
    /* the inflate cap (64 KiB here) leaves ordinary bodies alone */
    register_ok(&known, 3, k_j_topics, NT(k_j_topics), ENC_ZLIB);
    expect_route(c, "TopicJ1", ROUTE(BD_J, QD("broker-j", 6, 8, 8, 0)));
    snap_t ref;
    snap_take(c, &ref);

    /* what the refused registrations would have changed */
    const tdef_t t2[] = {{"TopicJ1", 16, 16, 2, 0}, {"TopicNew", 4, 4, 6, 0}};
    ns_regbody_t b;
    regbody_fill(&b, 9, t2, NT(t2));
    ns_buf_t json = NS_BUF_INIT, z = NS_BUF_INIT, tmp = NS_BUF_INIT;
    encode_body(&json, &b, ENC_JSON);
    encode_body(&z, &b, ENC_ZLIB);
    char bad[32];
    snprintf(bad, sizeof bad, "%u", (ns_body_crc32(json.data, json.len) + 1) & 0x7FFFFFFF);
    expect_refused(c, &known, &fresh, json.data, json.len, false, NS_VERSION_V5_3_3, bad,
                   "crc32 not match", &ref, "wrong bodyCrc32 (JSON)");
    snprintf(bad, sizeof bad, "%u", ns_body_crc32(json.data, json.len)); /* of another body */
    expect_refused(c, &known, &fresh, z.data, z.len, true, NS_VERSION_V5_3_3, bad,
                   "crc32 not match", &ref, "wrong bodyCrc32 (compressed)");
    /* truncated zlib streams (missing data every reader needs), with a
     * matching CRC and with none */
    size_t full = inflated_len(z.data, z.len);
    assert_true(inflated_len(z.data, z.len - 8) < full);
    assert_true(inflated_len(z.data, z.len / 2) < full);
    expect_refused(c, &known, &fresh, z.data, z.len - 8, true, NS_VERSION_V5_3_3, NULL,
                   "Failed to decode RegisterBrokerBody", &ref, "truncated compressed body");
    expect_refused(c, &known, &fresh, z.data, z.len / 2, true, NS_VERSION_V5_3_3, "0",
                   "Failed to decode RegisterBrokerBody", &ref, "half a compressed body");
    /* a well-formed stream cut short inside the data (ends early) */
    ns_buf_t raw = NS_BUF_INIT;
    put_be32(&raw, (int32_t)strlen(DV(9)));
    ns_buf_append_str(&raw, DV(9));
    put_be32(&raw, 3); /* three topics announced, one present */
    put_be32(&raw, 18);
    ns_buf_append_str(&raw, "T 1 1 6 SINGLE_TAG");
    zlib_compress(&raw, &tmp);
    expect_refused(c, &known, &fresh, tmp.data, tmp.len, true, NS_VERSION_V5_3_3, NULL,
                   "Failed to decode RegisterBrokerBody", &ref, "stream ending early");
    ns_buf_free(&raw);
    ns_buf_reset(&tmp);
    regbody_release(&b);

    /* inflates past --maxInflateBytes=65536 */
    enum { MANY = 4000 };
    tdef_t *many = calloc(MANY, sizeof *many);
    char(*names)[32] = calloc(MANY, sizeof *names);
    assert_true(many && names);
    for (int i = 0; i < MANY; i++) {
        snprintf(names[i], sizeof names[i], "TopicInflate-%05d", i);
        many[i] = (tdef_t){names[i], 4, 4, 6, 0};
    }
    regbody_fill(&b, 9, many, MANY);
    encode_body(&tmp, &b, ENC_ZLIB);
    assert_true(tmp.len < 65536 && inflated_len(tmp.data, tmp.len) > 65536);
    expect_refused(c, &known, &fresh, tmp.data, tmp.len, true, NS_VERSION_V5_3_3, NULL,
                   "Failed to decode RegisterBrokerBody", &ref, "body inflating past the cap");
    ns_buf_reset(&tmp);
    regbody_release(&b);
    free(many);
    free(names);

    /* negative lengths inside the stream */
    const char *neg_what[] = {"negative DataVersion length", "negative topic line length",
                              "negative filter-server length", "negative mapping length"};
    for (int w = NEG_DV; w <= NEG_MAP; w++) {
        build_negative(&tmp, w);
        expect_refused(c, &known, &fresh, tmp.data, tmp.len, true, NS_VERSION_V5_3_3, NULL,
                       "Failed to decode RegisterBrokerBody", &ref, neg_what[w]);
        ns_buf_reset(&tmp);
    }

    /* malformed JSON bodies */
    const char *bad_json[] = {
        "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":9,",
        "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"topicConfigTable\":"
        "{\"TopicNew\":{\"readQueueNums\":4,,}}}}",
        "{\"filterServerList\":[\"x\"}",
        "{]",
    };
    for (size_t i = 0; i < NT(bad_json); i++)
        expect_refused(c, &known, &fresh, bad_json[i], strlen(bad_json[i]), false,
                       NS_VERSION_V5_3_3, NULL, "Failed to decode RegisterBrokerBody", &ref,
                       "malformed JSON body");

    expect_no_route(c, "TopicNew");
    /* and a good registration still works afterwards */
    register_ok(&fresh, 1, k_j_topics, 2, ENC_ZLIB);
    expect_route(c, "TopicJ1",
                 ROUTE(BD_J "," BD("broker-x", "ClusterX", S(0, "10.0.8.1:10911")),
                       QD("broker-j", 6, 8, 8, 0) "," QD("broker-x", 6, 8, 8, 0)));
    snap_free(&ref);
    ns_buf_free(&json);
    ns_buf_free(&z);
    ns_buf_free(&tmp);
    close_brokers(&known, 1);
    close_brokers(&fresh, 1);
}

/* ---- persistence ---- */

typedef struct {
    int code;
    const char *k1, *v1, *k2, *v2;
    int version;
} probe_t;

static const probe_t k_probes[] = {
    {NS_REQ_GET_ROUTEINFO_BY_TOPIC, "topic", "TopicShared", NULL, NULL, NS_VERSION_V5_3_3},
    {NS_REQ_GET_ROUTEINFO_BY_TOPIC, "topic", "TopicShared", NULL, NULL, V_LEGACY},
    {NS_REQ_GET_ROUTEINFO_BY_TOPIC, "topic", "TopicA", NULL, NULL, NS_VERSION_V5_3_3},
    {NS_REQ_GET_ROUTEINFO_BY_TOPIC, "topic", "TopicB", NULL, NULL, NS_VERSION_V5_3_3},
    {NS_REQ_GET_ROUTEINFO_BY_TOPIC, "topic", "TopicC", NULL, NULL, NS_VERSION_V5_3_3},
    {NS_REQ_GET_ROUTEINFO_BY_TOPIC, "topic", "TopicUnit", NULL, NULL, NS_VERSION_V5_3_3},
    {NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, NULL, NULL, NS_VERSION_V5_3_3},
    {NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, NULL, NULL, NULL, NS_VERSION_V5_3_3},
    {NS_REQ_GET_TOPICS_BY_CLUSTER, "cluster", "ClusterA", NULL, NULL, NS_VERSION_V5_3_3},
    {NS_REQ_GET_KVLIST_BY_NAMESPACE, "namespace", "ORDER_TOPIC_CONFIG", NULL, NULL,
     NS_VERSION_V5_3_3},
    {NS_REQ_GET_KVLIST_BY_NAMESPACE, "namespace", "MY_NS", NULL, NULL, NS_VERSION_V5_3_3},
    {NS_REQ_GET_BROKER_MEMBER_GROUP, "clusterName", "ClusterA", "brokerName", "broker-a",
     NS_VERSION_V5_3_3},
};

static char **probe_all(ns_client_t *c)
{
    char **v = calloc(NT(k_probes) + 1, sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < NT(k_probes); i++) {
        const probe_t *p = &k_probes[i];
        const char *kv[] = {p->k1, p->v1, p->k2, p->v2, NULL};
        int code;
        v[i] = get_body(c, p->code, p->k1 ? kv : NULL, p->version, &code);
        assert_int_equal(code, NS_RSP_SUCCESS);
    }
    return v;
}

static void test_restart_after_kill9(void **state)
{
    fx_t *fx = *state;
    broker_t brs[NT(k_topology)];
    memcpy(brs, k_topology, sizeof brs);
    register_topology(fx, brs);
    put_kv(fx->c, NS_ORDER_TOPIC_CONFIG_NS, "TopicA", "broker-a:8");
    put_kv(fx->c, "MY_NS", "k1", "v1");
    put_kv(fx->c, "MY_NS", "k2", "v2");
    expect_perm_count(fx->c, NS_REQ_WIPE_WRITE_PERM_OF_BROKER, "broker-c", "wipeTopicCount", "2");
    const char *del[] = {"topic", "TopicB", "clusterName", "ClusterA", NULL};
    expect_answer(fx->c, NS_REQ_DELETE_TOPIC_IN_NAMESRV, del, NS_VERSION_V5_3_3, NS_RSP_SUCCESS,
                  NULL);
    put_kv(fx->c, "MY_NS", "k3", "v3");
    const char *dk[] = {"namespace", "MY_NS", "key", "k3", NULL};
    expect_answer(fx->c, NS_REQ_DELETE_KV_CONFIG, dk, NS_VERSION_V5_3_3, NS_RSP_SUCCESS, NULL);
    /* TopicB comes back; the reply carries the ORDER_TOPIC_CONFIG table */
    register_expect(&brs[2], 1, k_b_topics, NT(k_b_topics), ENC_JSON, NULL, NULL,
                    "{\"table\":{\"TopicA\":\"broker-a:8\"}}");

    char **before = probe_all(fx->c);
    const char *shared_std = ROUTE(
        BD_A_STD "," BD_B_STD "," BD_C_STD,
        QD("broker-a", 6, 4, 4, 0) "," QD("broker-b", 6, 2, 2, 0) "," QD("broker-c", 4, 8, 8, 0));
    assert_string_equal(before[0], shared_std);
    assert_string_equal(before[4], ROUTE(BD_C_STD, QD("broker-c", 4, 16, 16, 0)));
    assert_string_equal(before[6], CLUSTER_INFO_TOPOLOGY);
    assert_string_equal(before[10], "{\"table\":{\"k1\":\"v1\",\"k2\":\"v2\"}}");

    /* kill -9 and restart on the same directory */
    nstest_server_stop(&fx->srv, SIGKILL);
    ns_client_close(fx->c); /* only now: a live server would unregister the brokers */
    fx->c = NULL;
    close_brokers(brs, NT(brs));
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, NULL), 0);
    fx->c = nstest_connect(&fx->srv);

    char **after = probe_all(fx->c);
    for (size_t i = 0; i < NT(k_probes); i++) {
        if (strcmp(before[i], after[i]) != 0)
            fail_msg("probe %zu (code %d %s) differs after restart:\n before %s\n after  %s", i,
                     k_probes[i].code, k_probes[i].v1 ? k_probes[i].v1 : "", before[i], after[i]);
    }
    const char *gk[] = {"namespace", "MY_NS", "key", "k1", NULL};
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    request(fx->c, NS_REQ_GET_KV_CONFIG, gk, NULL, 0, NS_VERSION_V5_3_3, &m);
    assert_int_equal(m.cmd.code, NS_RSP_SUCCESS);
    assert_string_equal(ns_cmd_ext_get(&m.cmd, "value"), "v1");
    ns_cmd_msg_free(&m);
    /* the stored DataVersions are kept: an unchanged broker is "unchanged" */
    connect_brokers(fx, brs, 1);
    expect_query_dv(brs[0].conn, &brs[0], 1, "false", DV(1));
    /* and the slave still learns its master */
    connect_brokers(fx, &brs[1], 1);
    register_expect(&brs[1], 1, k_a_topics, NT(k_a_topics), ENC_JSON, A_M, A_M_HA,
                    "{\"table\":{\"TopicA\":\"broker-a:8\"}}");
    free_strv(before, NT(k_probes));
    free_strv(after, NT(k_probes));
    close_brokers(brs, NT(brs));
}

/* ---- big registrations ---- */

typedef struct {
    tdef_t *t;
    char (*names)[32];
    size_t n;
} many_t;

/* n topics named <prefix><i, zero-padded to width> with q queues each. */
static void many_make(many_t *m, const char *prefix, int width, size_t n, int q)
{
    m->n = n;
    m->t = calloc(n, sizeof *m->t);
    m->names = calloc(n, sizeof *m->names);
    assert_true(m->t && m->names);
    for (size_t i = 0; i < n; i++) {
        snprintf(m->names[i], sizeof m->names[i], "%s%0*d", prefix, width, (int)i);
        m->t[i] = (tdef_t){m->names[i], q, q, 6, 0};
    }
}

static void many_free(many_t *m)
{
    free(m->t);
    free(m->names);
}

/* Number of topics in a TopicList answer; the answer must come within
 * LIST_TIMEOUT_MS even for 100 000 topics (it is built on the loop thread,
 * which serves nobody else meanwhile). */
#define LIST_TIMEOUT_MS 20000
static size_t topic_list_count(ns_client_t *c, int code, const char *const *kv)
{
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t m;
    nstest_cmd(&cmd, ext, code, kv);
    ns_cmd_msg_init(&m);
    int64_t t0 = nstest_mono_ms();
    int rc = ns_client_call(c, &cmd, LIST_TIMEOUT_MS, &m);
    if (rc != NS_OK)
        ns_cmd_msg_free(&m);
    if (rc != NS_OK)
        fail_msg("topic list %d: %s after %lld ms", code, ns_strerror(rc),
                 (long long)(nstest_mono_ms() - t0));
    assert_int_equal(m.cmd.code, NS_RSP_SUCCESS);
    char *body = body_dup(&m);
    ns_cmd_msg_free(&m);
    cJSON *o = cJSON_Parse(body);
    assert_non_null(o);
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "topicList");
    assert_true(cJSON_IsArray(l));
    size_t n = (size_t)cJSON_GetArraySize(l);
    cJSON_Delete(o);
    free(body);
    return n;
}

/* 100 000 topics in one compressed registration. */
static void test_100k_topics(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c;
    broker_t br = {"ClusterBig", "broker-big", "10.0.10.1:10911", "10.0.10.1:10912", 0, NULL};
#define BD_BIG BD("broker-big", "ClusterBig", S(0, "10.0.10.1:10911"))
    many_t m;
    many_make(&m, "BigTopic-", 6, 100000, 8);
    connect_brokers(fx, &br, 1);
    fx->owned[0] = m.t;
    fx->owned[1] = m.names;
    fx->owned_conn = br.conn;
    int64_t t0 = nstest_mono_ms();
    register_ok(&br, 1, m.t, m.n, ENC_ZLIB);
    print_message("100000-topic registration: %lld ms\n", (long long)(nstest_mono_ms() - t0));
    expect_route(c, "BigTopic-000000", ROUTE(BD_BIG, QD("broker-big", 6, 8, 8, 0)));
    expect_route(c, "BigTopic-050000", ROUTE(BD_BIG, QD("broker-big", 6, 8, 8, 0)));
    expect_route_legacy(c, "BigTopic-099999",
                        ROUTE(BD("broker-big", "ClusterBig", L(0, "10.0.10.1:10911")),
                              QD("broker-big", 6, 8, 8, 0)));
    expect_no_route(c, "BigTopic-100000");
    assert_int_equal(topic_list_count(c, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL), 100000);
    const char *kv[] = {"cluster", "ClusterBig", NULL};
    assert_int_equal(topic_list_count(c, NS_REQ_GET_TOPICS_BY_CLUSTER, kv), 100000);
    expect_query_dv(br.conn, &br, 1, "false", DV(1));
#undef BD_BIG
}

/* A registration split as 5.x brokers split it: chunks of 800 topics, all
 * with the same DataVersion; the first chunk is "changed", the later ones
 * only add missing topics. */
static void register_chunks(const broker_t *br, int64_t counter, const many_t *m, size_t chunk,
                            enc_t enc)
{
    for (size_t off = 0; off < m->n; off += chunk) {
        size_t n = m->n - off < chunk ? m->n - off : chunk;
        register_ok(br, counter, m->t + off, n, enc);
    }
}

static void test_split_registration(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c;
    broker_t br = {"ClusterS", "broker-s", "10.0.11.1:10911", "10.0.11.1:10912", 0, NULL};
#define BD_SPLIT BD("broker-s", "ClusterS", S(0, "10.0.11.1:10911"))
    many_t m;
    many_make(&m, "SplitTopic-", 5, 3500, 4);
    connect_brokers(fx, &br, 1);
    register_chunks(&br, 5, &m, 800, ENC_JSON);
    const char *kv[] = {"cluster", "ClusterS", NULL};
    assert_int_equal(topic_list_count(c, NS_REQ_GET_TOPICS_BY_CLUSTER, kv), 3500);
    const char *probe[] = {"SplitTopic-00000", "SplitTopic-00799", "SplitTopic-00800",
                           "SplitTopic-02400", "SplitTopic-03499"};
    for (size_t i = 0; i < NT(probe); i++)
        expect_route(c, probe[i], ROUTE(BD_SPLIT, QD("broker-s", 6, 4, 4, 0)));
    expect_query_dv(br.conn, &br, 5, "false", DV(5));

    /* the periodic split re-registration (same DataVersion) with other queue
     * counts overwrites nothing */
    many_t m8;
    many_make(&m8, "SplitTopic-", 5, 3500, 8);
    register_chunks(&br, 5, &m8, 800, ENC_ZLIB);
    for (size_t i = 0; i < NT(probe); i++)
        expect_route(c, probe[i], ROUTE(BD_SPLIT, QD("broker-s", 6, 4, 4, 0)));

    /* a new DataVersion: the first chunk overwrites its topics; the later
     * chunks (unchanged by then) only add missing ones, so they keep theirs */
    register_chunks(&br, 6, &m8, 800, ENC_JSON);
    expect_route(c, "SplitTopic-00000", ROUTE(BD_SPLIT, QD("broker-s", 6, 8, 8, 0)));
    expect_route(c, "SplitTopic-00799", ROUTE(BD_SPLIT, QD("broker-s", 6, 8, 8, 0)));
    expect_route(c, "SplitTopic-00800", ROUTE(BD_SPLIT, QD("broker-s", 6, 4, 4, 0)));
    expect_route(c, "SplitTopic-03499", ROUTE(BD_SPLIT, QD("broker-s", 6, 4, 4, 0)));
    assert_int_equal(topic_list_count(c, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL), 3500);
    many_free(&m);
    many_free(&m8);
    close_brokers(&br, 1);
#undef BD_SPLIT
}

#define T(f) cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_two_clusters),
        T(test_standard_vs_legacy),
        T(test_legacy_stored_or_derived),
        T(test_data_version),
        T(test_delete_topic),
        T(test_unregister_master_then_slave),
        T(test_write_perm),
        T(test_order_topic),
        T(test_compressed_equals_json),
        cmocka_unit_test_prestate_setup_teardown(test_bad_bodies, setup, teardown,
                                                 (void *)k_small_inflate_cap),
        T(test_restart_after_kill9),
        T(test_100k_topics),
        T(test_split_registration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
