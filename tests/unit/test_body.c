/* test_body.c - fastjson-shaped writers, fastjson normalisation and the small
 * JSON readers of include/ns/body.h, checked byte for byte against bodies the
 * Java 5.3.3 NameServer produced (tests/fixtures/vectors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "ns/body.h"
#include "ns/buf.h"
#include "ns/err.h"

/* ---- fixture helpers ------------------------------------------------------- */

/* Returns a heap, NUL-terminated copy of the body of a whole frame (length
 * prefix, header word, header, body). */
static char *frame_body(const uint8_t *f, size_t n, size_t *len)
{
    assert_true(n >= 8);
    uint32_t total = ns_be32_read(f);
    uint32_t hlen = ns_be32_read(f + 4) & 0xFFFFFFu;
    assert_int_equal(total + 4, n);
    assert_true(8 + (size_t)hlen <= n);
    size_t blen = n - 8 - hlen;
    char *b = malloc(blen + 1);
    assert_non_null(b);
    memcpy(b, f + 8 + hlen, blen);
    b[blen] = 0;
    *len = blen;
    return b;
}

/* Body of tests/fixtures/vectors/<name>. */
static char *vector_body(const char *name, size_t *len)
{
    char rel[256];
    size_t n = 0;
    snprintf(rel, sizeof rel, "vectors/%s", name);
    uint8_t *f = nstest_fixture(rel, &n);
    char *b = frame_body(f, n, len);
    free(f);
    return b;
}

/* Body of the request or response frame of step `step` in
 * vectors/scenarios/<file>. */
static char *scenario_body(const char *file, int step, bool response, size_t *len)
{
    char rel[256];
    size_t n = 0;
    char *body = NULL;
    snprintf(rel, sizeof rel, "vectors/scenarios/%s", file);
    uint8_t *text = nstest_fixture(rel, &n);
    char *save = NULL;
    text = realloc(text, n + 1);
    assert_non_null(text);
    text[n] = 0;
    for (char *line = strtok_r((char *)text, "\n", &save); line && !body;
         line = strtok_r(NULL, "\n", &save)) {
        cJSON *o = cJSON_Parse(line);
        assert_non_null(o);
        const cJSON *s = cJSON_GetObjectItem(o, "step");
        if (cJSON_IsNumber(s) && s->valueint == step) {
            const cJSON *hex = cJSON_GetObjectItem(o, response ? "response_hex" : "request_hex");
            assert_true(cJSON_IsString(hex));
            size_t flen = 0;
            uint8_t *frame = nstest_hex_decode(hex->valuestring, &flen);
            assert_non_null(frame);
            body = frame_body(frame, flen, len);
            free(frame);
        }
        cJSON_Delete(o);
    }
    free(text);
    if (body == NULL)
        fail_msg("step %d not found in %s", step, file);
    return body;
}

static void assert_bytes(const ns_buf_t *got, const char *exp, size_t n)
{
    if (got->len != n || memcmp(got->data, exp, n) != 0) {
        print_error("expected (%zu): %.*s\n", n, (int)n, exp);
        print_error("got      (%zu): %.*s\n", got->len, (int)got->len, (const char *)got->data);
        fail();
    }
}

static void assert_str(const ns_buf_t *got, const char *exp)
{
    assert_bytes(got, exp, strlen(exp));
}

/* ---- DataVersion ------------------------------------------------------------ */

static void test_dataversion_encode_matches_java(void **state)
{
    (void)state;
    size_t n = 0;
    char *exp = scenario_body("data-version.jsonl", 3, true, &n);
    ns_dataversion_t dv = {1, 0, 1700000000000LL};
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_json_dataversion_encode(&b, &dv), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    /* appends after existing content */
    ns_buf_reset(&b);
    ns_buf_append_str(&b, "x");
    ns_dataversion_t neg = {-5, 7, 0};
    assert_int_equal(ns_json_dataversion_encode(&b, &neg), NS_OK);
    assert_str(&b, "x{\"counter\":-5,\"stateVersion\":7,\"timestamp\":0}");
    ns_buf_free(&b);
}

static void test_dataversion_decode(void **state)
{
    (void)state;
    size_t n = 0;
    ns_dataversion_t dv;

    char *body = scenario_body("data-version.jsonl", 5, false, &n);
    assert_int_equal(ns_json_dataversion_decode((const uint8_t *)body, n, &dv), NS_OK);
    assert_int_equal(dv.counter, 1);
    assert_int_equal(dv.state_version, 0);
    assert_int_equal(dv.timestamp, 1700000000001LL);
    free(body);

    /* missing members are 0; unknown members, whitespace, numbers as strings */
    const char *t1 =
        " {\"counter\":\"42\", \"x\":{\"y\":[1,2]},\"timestamp\":\"9007199254740993\"} ";
    assert_int_equal(ns_json_dataversion_decode((const uint8_t *)t1, strlen(t1), &dv), NS_OK);
    assert_int_equal(dv.counter, 42);
    assert_int_equal(dv.state_version, 0);
    assert_int_equal(dv.timestamp, 9007199254740993LL);

    const char *t2 = "{\"counter\":3.0,\"stateVersion\":null,\"timestamp\":{\"$ref\":\"$\"}}";
    assert_int_equal(ns_json_dataversion_decode((const uint8_t *)t2, strlen(t2), &dv), NS_OK);
    assert_int_equal(dv.counter, 3);
    assert_int_equal(dv.state_version, 0);
    assert_int_equal(dv.timestamp, 0);

    const char *bad[] = {"",
                         "   ",
                         "[]",
                         "1",
                         "\"x\"",
                         "null",
                         "{",
                         "{\"counter\":\"abc\"}",
                         "{\"counter\":[1]}",
                         "{\"counter\":1e300}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        dv.counter = 77;
        assert_int_equal(ns_json_dataversion_decode((const uint8_t *)bad[i], strlen(bad[i]), &dv),
                         NS_EINVAL);
        assert_int_equal(dv.counter, 77); /* untouched on error */
    }
}

/* ---- TopicRouteData ----------------------------------------------------------- */

/* One-broker route as in the register-json / register-compressed scenarios. */
static void check_single_route(const char *file, int step, bool standard, const char *bname,
                               const char *cluster, const char *addr, int r, int w, int perm)
{
    size_t n = 0;
    char *exp = scenario_body(file, step, true, &n);
    ns_broker_addr_t addrs[] = {{0, addr}};
    ns_broker_data_t bd = {cluster, bname, NULL, false, addrs, 1};
    ns_queue_data_t qd = {bname, perm, r, w, 0};
    ns_route_t route = {&bd, 1, &qd, 1, NULL, 0, NULL, NULL, 0, NULL};
    ns_buf_t b = NS_BUF_INIT;
    size_t at = 0;
    assert_int_equal(ns_json_route_encode(&b, &route, standard, &at), NS_OK);
    assert_bytes(&b, exp, n);
    assert_memory_equal(b.data + at, "\"queueDatas\":", 13);
    ns_buf_free(&b);
    free(exp);
}

static void test_route_single_broker_matches_java(void **state)
{
    (void)state;
    const char *rj = "register-json.jsonl", *rc = "register-compressed.jsonl";
    const char *j = "broker-j", *cj = "CorpusClusterJ", *aj = "127.0.0.1:30911";
    check_single_route(rj, 3, true, j, cj, aj, 8, 8, 6);
    check_single_route(rj, 4, false, j, cj, aj, 8, 8, 6);
    check_single_route(rj, 5, true, j, cj, aj, 8, 8, 6);
    check_single_route(rj, 6, true, j, cj, aj, 4, 2, 6);
    check_single_route(rj, 7, false, j, cj, aj, 4, 2, 6);
    check_single_route(rj, 10, false, j, cj, aj, 2, 2, 4);
    check_single_route(rj, 12, false, j, cj, aj, 8, 8, 6);
    check_single_route(rc, 2, true, "broker-z1", "CorpusClusterZ", "127.0.0.1:31911", 8, 8, 6);
    check_single_route(rc, 3, false, "broker-z1", "CorpusClusterZ", "127.0.0.1:31911", 8, 8, 6);

    size_t n = 0;
    char *exp = vector_body("uncompressed-GET_ROUTEINFO_BY_TOPIC-rsp-1.bin", &n);
    ns_broker_addr_t addrs[] = {{0, "127.0.0.1:10911"}};
    ns_broker_data_t bd = {"DefaultCluster", "broker-a", NULL, false, addrs, 1};
    ns_queue_data_t qd = {"broker-a", 6, 4, 4, 0};
    ns_route_t route = {&bd, 1, &qd, 1, NULL, 0, NULL, NULL, 0, NULL};
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_json_route_encode(&b, &route, true, NULL), NS_OK);
    assert_bytes(&b, exp, n);
    ns_buf_free(&b);
    free(exp);
}

static void test_route_master_slave_matches_java(void **state)
{
    (void)state;
    ns_broker_addr_t addrs[] = {{0, "127.0.0.1:32911"}, {1, "127.0.0.1:32921"}};
    ns_broker_data_t bd = {"CorpusClusterMS", "broker-ms", NULL, false, addrs, 2};
    ns_queue_data_t qd = {"broker-ms", 6, 8, 8, 0};
    ns_route_t route = {&bd, 1, &qd, 1, NULL, 0, NULL, NULL, 0, NULL};
    ns_buf_t b = NS_BUF_INIT;
    size_t n = 0;

    char *exp = scenario_body("master-slave.jsonl", 3, true, &n);
    assert_int_equal(ns_json_route_encode(&b, &route, true, NULL), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    ns_buf_reset(&b);
    exp = scenario_body("master-slave.jsonl", 4, true, &n);
    assert_int_equal(ns_json_route_encode(&b, &route, false, NULL), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    /* the slave alone after the master left */
    ns_buf_reset(&b);
    bd.addrs = &addrs[1];
    bd.n_addrs = 1;
    exp = scenario_body("master-slave.jsonl", 10, true, &n);
    assert_int_equal(ns_json_route_encode(&b, &route, true, NULL), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);
    ns_buf_free(&b);
}

static void test_route_two_brokers_matches_java(void **state)
{
    (void)state;
    /* Java printed broker-z2 first (HashMap order); the caller decides order */
    ns_broker_addr_t a2[] = {{0, "127.0.0.1:31921"}}, a1[] = {{0, "127.0.0.1:31911"}};
    ns_broker_data_t bds[] = {{"CorpusClusterZ", "broker-z2", NULL, false, a2, 1},
                              {"CorpusClusterZ", "broker-z1", NULL, false, a1, 1}};
    ns_queue_data_t qds[] = {{"broker-z2", 6, 4, 4, 0}, {"broker-z1", 6, 8, 8, 0}};
    ns_route_t route = {bds, 2, qds, 2, NULL, 0, NULL, NULL, 0, NULL};
    ns_buf_t b = NS_BUF_INIT;
    size_t n = 0;
    char *exp = scenario_body("register-compressed.jsonl", 9, true, &n);
    assert_int_equal(ns_json_route_encode(&b, &route, true, NULL), NS_OK);
    assert_bytes(&b, exp, n);
    /* the writer's path: each broker encoded once, then spliced in, in both
     * forms, gives the same bytes as encoding the brokers in place */
    for (int standard = 0; standard <= 1; standard++) {
        ns_buf_t frag[2] = {NS_BUF_INIT, NS_BUF_INIT}, whole = NS_BUF_INIT;
        ns_slice_t json[2];
        for (int i = 0; i < 2; i++) {
            assert_int_equal(ns_json_broker_data_encode(&frag[i], &bds[i], standard), NS_OK);
            json[i].ptr = frag[i].data;
            json[i].len = frag[i].len;
        }
        size_t at_a = 0, at_b = 0;
        ns_buf_reset(&b);
        assert_int_equal(ns_json_route_encode(&whole, &route, standard, &at_a), NS_OK);
        route.broker_json = json;
        assert_int_equal(ns_json_route_encode(&b, &route, standard, &at_b), NS_OK);
        route.broker_json = NULL;
        assert_int_equal(b.len, whole.len);
        assert_memory_equal(b.data, whole.data, whole.len);
        assert_int_equal(at_a, at_b);
        ns_buf_free(&frag[0]);
        ns_buf_free(&frag[1]);
        ns_buf_free(&whole);
    }
    free(exp);
    ns_buf_free(&b);
}

static void test_route_order_conf_matches_java(void **state)
{
    (void)state;
    ns_broker_addr_t addrs[] = {{0, "127.0.0.1:35911"}};
    ns_broker_data_t bd = {"CorpusClusterO", "broker-o", NULL, false, addrs, 1};
    ns_queue_data_t qd = {"broker-o", 6, 4, 4, 0};
    ns_route_t route = {&bd, 1, &qd, 1, NULL, 0, NULL, NULL, 0, NULL};
    ns_buf_t b = NS_BUF_INIT, conf = NS_BUF_INIT, spliced = NS_BUF_INIT;
    size_t n = 0, at = 0;

    for (int step = 5; step <= 6; step++) {
        bool standard = step == 5; /* step 6 is the version-121 request */
        char *exp = scenario_body("order-topic.jsonl", step, true, &n);

        /* set in the route */
        route.order_topic_conf = "broker-o:4";
        ns_buf_reset(&b);
        assert_int_equal(ns_json_route_encode(&b, &route, standard, &at), NS_OK);
        assert_bytes(&b, exp, n);
        assert_memory_equal(b.data + at, "\"queueDatas\":", 13);

        /* spliced in by the caller at insert_at, after a prefix */
        route.order_topic_conf = NULL;
        ns_buf_reset(&b);
        ns_buf_append_str(&b, "PREFIX");
        assert_int_equal(ns_json_route_encode(&b, &route, standard, &at), NS_OK);
        assert_true(at > 6);
        assert_memory_equal(b.data + at, "\"queueDatas\":", 13);
        ns_buf_reset(&conf);
        assert_int_equal(ns_json_order_conf_member(&conf, "broker-o:4", standard), NS_OK);
        assert_str(&conf, "\"orderTopicConf\":\"broker-o:4\",");
        ns_buf_reset(&spliced);
        ns_buf_append(&spliced, b.data + 6, at - 6);
        ns_buf_append(&spliced, conf.data, conf.len);
        ns_buf_append(&spliced, b.data + at, b.len - at);
        assert_bytes(&spliced, exp, n);
        free(exp);
    }

    /* route without orderTopicConf (step 3) */
    char *exp = scenario_body("order-topic.jsonl", 3, true, &n);
    ns_buf_reset(&b);
    assert_int_equal(ns_json_route_encode(&b, &route, true, NULL), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);
    ns_buf_free(&b);
    ns_buf_free(&conf);
    ns_buf_free(&spliced);
}

static void test_route_empty_brokers_matches_java(void **state)
{
    (void)state;
    /* REGISTER_TOPIC_IN_NAMESRV bodies written by the Java admin */
    ns_queue_data_t qd = {"broker-p", 6, 4, 4, 0};
    ns_route_t route = {NULL, 0, &qd, 1, NULL, 0, NULL, NULL, 0, NULL};
    ns_buf_t b = NS_BUF_INIT;
    size_t n = 0;
    char *exp = scenario_body("perms-and-delete.jsonl", 16, false, &n);
    assert_int_equal(ns_json_route_encode(&b, &route, false, NULL), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    route.n_queues = 0;
    exp = scenario_body("perms-and-delete.jsonl", 20, false, &n);
    ns_buf_reset(&b);
    assert_int_equal(ns_json_route_encode(&b, &route, true, NULL), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);
    ns_buf_free(&b);
}

static void test_route_standard_vs_legacy(void **state)
{
    (void)state;
    ns_broker_addr_t addrs[] = {
        {2, "10.0.0.3:10911"}, {0, "10.0.0.1:10911"}, {1, NULL}, {10, "10.0.0.9:10911"}};
    ns_broker_data_t bd = {"C", "b", "zone-1", true, addrs, 4};
    const char *fs1[] = {"f1", "f2"}, *fs2[] = {"g"};
    ns_filter_entry_t filters[] = {{"10.0.0.3:10911", fs2, 1}, {"10.0.0.1:10911", fs1, 2}};
    ns_id_pair_t ids[] = {{1, 11}, {0, 10}};
    ns_mapping_info_t maps[] = {
        {"T", "b2", NULL, 2, 9007199254740992LL, true, ids, 2},
        {"T", "b1", "scope-x", 1, 5, false, NULL, 0},
    };
    ns_queue_data_t qd = {"b", 7, 1, 2, 3};
    ns_route_t route = {&bd, 1, &qd, 1, filters, 2, NULL, maps, 2, NULL};
    ns_buf_t b = NS_BUF_INIT;

    assert_int_equal(ns_json_route_encode(&b, &route, false, NULL), NS_OK);
    assert_str(
        &b,
        "{\"brokerDatas\":[{\"brokerAddrs\":{2:\"10.0.0.3:10911\",0:\"10.0.0.1:10911\","
        "10:\"10.0.0.9:10911\"},\"brokerName\":\"b\",\"cluster\":\"C\","
        "\"enableActingMaster\":true,\"zoneName\":\"zone-1\"}],"
        "\"filterServerTable\":{\"10.0.0.3:10911\":[\"g\"],\"10.0.0.1:10911\":[\"f1\",\"f2\"]},"
        "\"queueDatas\":[{\"brokerName\":\"b\",\"perm\":7,\"readQueueNums\":1,"
        "\"topicSysFlag\":3,\"writeQueueNums\":2}],"
        "\"topicQueueMappingByBroker\":{"
        "\"b2\":{\"bname\":\"b2\",\"currIdMap\":{1:11,0:10},\"dirty\":true,"
        "\"epoch\":9007199254740992,\"scope\":\"__global__\",\"topic\":\"T\",\"totalQueues\":2},"
        "\"b1\":{\"bname\":\"b1\",\"currIdMap\":{},\"dirty\":false,\"epoch\":5,"
        "\"scope\":\"scope-x\",\"topic\":\"T\",\"totalQueues\":1}}}");

    ns_buf_reset(&b);
    assert_int_equal(ns_json_route_encode(&b, &route, true, NULL), NS_OK);
    assert_str(
        &b, "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"10.0.0.1:10911\",\"2\":\"10.0.0.3:10911\","
            "\"10\":\"10.0.0.9:10911\"},\"brokerName\":\"b\",\"cluster\":\"C\","
            "\"enableActingMaster\":true,\"zoneName\":\"zone-1\"}],"
            "\"filterServerTable\":{\"10.0.0.1:10911\":[\"f1\",\"f2\"],\"10.0.0.3:10911\":[\"g\"]},"
            "\"queueDatas\":[{\"brokerName\":\"b\",\"perm\":7,\"readQueueNums\":1,"
            "\"topicSysFlag\":3,\"writeQueueNums\":2}],"
            "\"topicQueueMappingByBroker\":{"
            "\"b1\":{\"bname\":\"b1\",\"currIdMap\":{},\"dirty\":false,\"epoch\":5,"
            "\"scope\":\"scope-x\",\"topic\":\"T\",\"totalQueues\":1},"
            "\"b2\":{\"bname\":\"b2\",\"currIdMap\":{\"0\":10,\"1\":11},\"dirty\":true,"
            "\"epoch\":\"9007199254740992\",\"scope\":\"__global__\",\"topic\":\"T\","
            "\"totalQueues\":2}}}");

    /* a lone BrokerData, empty address map still written */
    ns_broker_data_t empty = {NULL, "x", NULL, false, NULL, 0};
    ns_buf_reset(&b);
    assert_int_equal(ns_json_broker_data_encode(&b, &empty, true), NS_OK);
    assert_str(&b, "{\"brokerAddrs\":{},\"brokerName\":\"x\",\"enableActingMaster\":false}");
    ns_buf_reset(&b);
    assert_int_equal(ns_json_broker_data_encode(&b, &bd, false), NS_OK);
    assert_str(&b, "{\"brokerAddrs\":{2:\"10.0.0.3:10911\",0:\"10.0.0.1:10911\","
                   "10:\"10.0.0.9:10911\"},\"brokerName\":\"b\",\"cluster\":\"C\","
                   "\"enableActingMaster\":true,\"zoneName\":\"zone-1\"}");
    ns_buf_free(&b);
}

/* Encodes route in both forms and checks what ns_json_route_legacy derives
 * from the standard one: *same tells whether it equals the real legacy form
 * (offsets included); the derivation never fails on our own encoder's output
 * unless it says NS_EINVAL. */
static void derive_legacy(const ns_route_t *route, bool *same)
{
    ns_buf_t std = NS_BUF_INIT, legacy = NS_BUF_INIT, out = NS_BUF_INIT;
    size_t std_ins = 0, legacy_ins = 0, ins = 0;
    assert_int_equal(ns_json_route_encode(&std, route, true, &std_ins), NS_OK);
    assert_int_equal(ns_json_route_encode(&legacy, route, false, &legacy_ins), NS_OK);
    ns_buf_append_str(&out, "prefix"); /* appends: earlier bytes are kept */
    int rc = ns_json_route_legacy(&out, std.data, std.len, std_ins, &ins);
    assert_true(rc == NS_OK || rc == NS_EINVAL);
    assert_memory_equal(out.data, "prefix", 6);
    *same = rc == NS_OK && out.len - 6 == legacy.len &&
            memcmp(out.data + 6, legacy.data, legacy.len) == 0 && ins == legacy_ins;
    ns_buf_free(&std);
    ns_buf_free(&legacy);
    ns_buf_free(&out);
}

static void test_route_legacy_derived(void **state)
{
    (void)state;
    bool same = false;
    /* master + slave in two brokers, orderTopicConf: only the keys differ */
    ns_broker_addr_t a1[] = {{0, "10.0.0.1:10911"}, {1, "10.0.0.2:10911"}};
    ns_broker_addr_t a2[] = {{0, "10.0.0.3:10911"}};
    ns_broker_data_t bds[] = {{"C", "b1", NULL, false, a1, 2}, {"C", "b2", "zone", true, a2, 1}};
    ns_queue_data_t qds[] = {{"b1", 6, 4, 4, 0}, {"b2", 6, 8, 8, 0}};
    ns_route_t route = {bds, 2, qds, 2, NULL, 0, "b1:4;b2:8", NULL, 0, NULL};
    derive_legacy(&route, &same);
    assert_true(same);
    /* no addresses at all, and names holding quotes, backslashes and the
     * very member name the scanner looks for */
    ns_broker_addr_t a3[] = {{0, "a\"b\\"}, {2, "{\"brokerAddrs\":{\"0\":\"x\"}"}};
    ns_broker_data_t odd[] = {{"C{\"brokerAddrs\":{", "b\\", NULL, false, a3, 2},
                              {"C", "e", NULL, false, NULL, 0}};
    ns_queue_data_t oq[] = {{"b\\", 6, 1, 1, 0}, {"e", 6, 1, 1, 0}};
    ns_route_t r2 = {odd, 2, oq, 2, NULL, 0, NULL, NULL, 0, NULL};
    derive_legacy(&r2, &same);
    assert_true(same);
    /* the forms differ elsewhere: non-ASCII is escaped only in the standard
     * form, and unsorted ids are sorted only there */
    ns_broker_addr_t a4[] = {{0, "10.0.0.1:10911"}};
    ns_broker_data_t utf[] = {{"\xe5\xa4\xa7", "b1", NULL, false, a4, 1}};
    ns_route_t r3 = {utf, 1, qds, 1, NULL, 0, NULL, NULL, 0, NULL};
    derive_legacy(&r3, &same);
    assert_false(same);
    ns_broker_addr_t a5[] = {{1, "10.0.0.2:10911"}, {0, "10.0.0.1:10911"}};
    ns_broker_data_t unsorted[] = {{"C", "b1", NULL, false, a5, 2}};
    ns_route_t r4 = {unsorted, 1, qds, 1, NULL, 0, NULL, NULL, 0, NULL};
    derive_legacy(&r4, &same);
    assert_false(same);
}

/* Whether each BrokerData of route derives alone, as the writer checks it
 * once per broker group. */
static bool brokers_derive(const ns_route_t *route)
{
    bool all = true;
    for (size_t i = 0; i < route->n_brokers && all; i++) {
        ns_buf_t std = NS_BUF_INIT, legacy = NS_BUF_INIT, out = NS_BUF_INIT;
        size_t ins = 0;
        assert_int_equal(ns_json_broker_data_encode(&std, &route->brokers[i], true), NS_OK);
        assert_int_equal(ns_json_broker_data_encode(&legacy, &route->brokers[i], false), NS_OK);
        all = ns_json_route_legacy(&out, std.data, std.len, 0, &ins) == NS_OK &&
              out.len == legacy.len && memcmp(out.data, legacy.data, legacy.len) == 0;
        ns_buf_free(&std);
        ns_buf_free(&legacy);
        ns_buf_free(&out);
    }
    return all;
}

/* ns_json_route_legacy_by_parts: whenever it and every BrokerData alone say
 * the legacy form derives, the whole route's does; it says no for what lies
 * outside the BrokerData objects and differs between the forms. */
static void test_route_legacy_by_parts(void **state)
{
    (void)state;
    ns_broker_addr_t a1[] = {{0, "10.0.0.1:10911"}, {1, "10.0.0.2:10911"}};
    ns_broker_addr_t odd_a[] = {{0, "a\"b\\"}, {2, "{\"brokerAddrs\":{\"0\":\"x\"}"}};
    ns_broker_addr_t unsorted_a[] = {{1, "10.0.0.2:10911"}, {0, "10.0.0.1:10911"}};
    ns_broker_data_t plain[] = {{"C", "b1", NULL, false, a1, 2}, {"C", "b2", "z", true, a1, 1}};
    ns_broker_data_t odd[] = {{"C{\"brokerAddrs\":{", "b\\", NULL, false, odd_a, 2}};
    ns_broker_data_t utf[] = {{"\xe5\xa4\xa7", "b1", NULL, false, a1, 1}};
    ns_broker_data_t unsorted[] = {{"C", "b1", NULL, false, unsorted_a, 2}};
    ns_queue_data_t qds[] = {{"b1", 6, 4, 4, 0}, {"b2", 6, 8, 8, 0}};
    ns_queue_data_t utf_q[] = {{"b1", 6, 4, 4, 0}, {"b\xc3\xa9", 6, 8, 8, 0}};
    ns_queue_data_t ctl_q[] = {{"b\t\x01\"", 6, 4, 4, 0}};
    const char *fs[] = {"f1"};
    ns_filter_entry_t filters[] = {{"10.0.0.1:10911", fs, 1}};
    ns_id_pair_t ids[] = {{0, 10}};
    ns_mapping_info_t maps[] = {
        {"T", "b1", NULL, 1, 5, false, ids, 1}}; /* {"0":10} against {0:10} */
    const struct {
        ns_route_t route;
        bool by_parts; /* what ns_json_route_legacy_by_parts must answer */
    } cases[] = {
        {{plain, 2, qds, 2, NULL, 0, NULL, NULL, 0, NULL}, true},
        {{plain, 2, qds, 2, NULL, 0, "b1:4;b2:8", NULL, 0, NULL}, true},
        {{odd, 1, ctl_q, 1, NULL, 0, NULL, NULL, 0, NULL}, true},
        {{utf, 1, qds, 1, NULL, 0, NULL, NULL, 0, NULL}, true},      /* its BrokerData says no */
        {{unsorted, 1, qds, 1, NULL, 0, NULL, NULL, 0, NULL}, true}, /* the same */
        {{plain, 2, utf_q, 2, NULL, 0, NULL, NULL, 0, NULL}, false},
        {{plain, 2, qds, 2, NULL, 0, "b\xc3\xa9:4", NULL, 0, NULL}, false},
        {{plain, 2, qds, 2, filters, 1, NULL, NULL, 0, NULL}, false},
        {{plain, 2, qds, 2, NULL, 0, NULL, maps, 1, NULL}, false},
    };
    size_t derived = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const ns_route_t *r = &cases[i].route;
        bool by_parts = ns_json_route_legacy_by_parts(r), same = false;
        assert_int_equal(by_parts, cases[i].by_parts);
        derive_legacy(r, &same);
        if (by_parts && brokers_derive(r)) {
            assert_true(same);
            derived++;
        }
    }
    assert_int_equal(derived, 3);
    /* where it says no, the route's derivation is wrong indeed (but for the
     * filter server and the orderTopicConf, where it is only cautious) */
    bool same = true;
    derive_legacy(&cases[5].route, &same);
    assert_false(same);
    derive_legacy(&cases[8].route, &same);
    assert_false(same);
}

static void test_route_legacy_refuses_unknown_shapes(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"brokerDatas\":[{\"brokerAddrs\":{\"x\":\"a\"}}", /* key not a number */
        "[{\"brokerAddrs\":{0:\"a\"}}",                      /* already bare */
        "[{\"brokerAddrs\":{\"0\":1}}",                      /* value not a string */
        "[{\"brokerAddrs\":{\"0\":\"a",                      /* truncated value */
        "[{\"brokerAddrs\":{\"0\":\"a\",}}",                 /* trailing comma */
        "[{\"brokerAddrs\":{",                               /* truncated object */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ns_buf_t out = NS_BUF_INIT;
        size_t ins = 0;
        ns_buf_append_str(&out, "kept");
        assert_int_equal(
            ns_json_route_legacy(&out, (const uint8_t *)bad[i], strlen(bad[i]), 0, &ins),
            NS_EINVAL);
        assert_int_equal(out.len, 4);
        assert_string_equal((const char *)out.data, "kept");
        ns_buf_free(&out);
    }
    /* text without brokerAddrs is copied as it is */
    ns_buf_t out = NS_BUF_INIT;
    size_t ins = 0;
    const char *plain = "{\"queueDatas\":[]}";
    assert_int_equal(ns_json_route_legacy(&out, (const uint8_t *)plain, strlen(plain), 1, &ins),
                     NS_OK);
    assert_string_equal((const char *)out.data, plain);
    assert_int_equal(ins, 1);
    ns_buf_free(&out);
}

/* Mutated and truncated routes (seeded): the scanner reads only the bytes
 * it is given (ASan checks), refuses or derives, and never moves the
 * orderTopicConf offset past the end. */
static void test_route_legacy_mutations(void **state)
{
    (void)state;
    static const char seed[] =
        "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"10.0.0.1:10911\",\"1\":\"a\\\"b\"},"
        "\"brokerName\":\"b1\",\"cluster\":\"C\",\"enableActingMaster\":false},"
        "{\"brokerAddrs\":{},\"brokerName\":\"x\"}],\"filterServerTable\":{},\"queueDatas\":[]}";
    static const char alphabet[] = "{}\":,\\0123456789ab-";
    const size_t n = sizeof seed - 1;
    uint64_t x = 88172645463325252ull;
    size_t derived = 0;
    for (int it = 0; it < 20000; it++) {
        uint8_t *buf = malloc(n);
        assert_non_null(buf);
        memcpy(buf, seed, n);
        size_t len = n;
        for (int m = 0; m < 1 + it % 4; m++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[x % n] = (uint8_t)alphabet[(x >> 20) % (sizeof alphabet - 1)];
        }
        if (it % 3 == 0)
            len = (size_t)(x >> 7) % (n + 1);
        ns_buf_t out = NS_BUF_INIT;
        size_t ins = 0;
        ns_buf_append_str(&out, "kept");
        int rc = ns_json_route_legacy(&out, buf, len, len / 2, &ins);
        assert_true(rc == NS_OK || rc == NS_EINVAL);
        if (rc == NS_OK) {
            derived++;
            assert_true(ins <= out.len - 4);
        } else {
            assert_int_equal(out.len, 4);
        }
        ns_buf_free(&out);
        free(buf);
    }
    assert_true(derived > 0);
}

static void test_route_ascii_escaping(void **state)
{
    (void)state;
    /* U+5927 and U+0439: hex digits only, so the test is independent of the
     * hex letter case */
    const char *name = "b\xe5\xa4\xa7\xd0\xb9\"\\";
    ns_broker_addr_t addrs[] = {{0, "h:1"}};
    ns_broker_data_t bd = {"c", name, NULL, false, addrs, 1};
    ns_queue_data_t qd = {name, 6, 1, 1, 0};
    ns_route_t route = {&bd, 1, &qd, 1, NULL, 0, "\xe5\xa4\xa7:1", NULL, 0, NULL};
    ns_buf_t b = NS_BUF_INIT;

    assert_int_equal(ns_json_route_encode(&b, &route, false, NULL), NS_OK);
    assert_str(&b,
               "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"h:1\"},\"brokerName\":"
               "\"b\xe5\xa4\xa7\xd0\xb9\\\"\\\\\",\"cluster\":\"c\",\"enableActingMaster\":false}],"
               "\"filterServerTable\":{},\"orderTopicConf\":\"\xe5\xa4\xa7:1\",\"queueDatas\":"
               "[{\"brokerName\":\"b\xe5\xa4\xa7\xd0\xb9\\\"\\\\\",\"perm\":6,\"readQueueNums\":1,"
               "\"topicSysFlag\":0,\"writeQueueNums\":1}]}");
    ns_buf_reset(&b);
    assert_int_equal(ns_json_route_encode(&b, &route, true, NULL), NS_OK);
    assert_str(&b, "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"h:1\"},\"brokerName\":"
                   "\"b\\u5927\\u0439\\\"\\\\\",\"cluster\":\"c\",\"enableActingMaster\":false}],"
                   "\"filterServerTable\":{},\"orderTopicConf\":\"\\u5927:1\",\"queueDatas\":"
                   "[{\"brokerName\":\"b\\u5927\\u0439\\\"\\\\\",\"perm\":6,\"readQueueNums\":1,"
                   "\"topicSysFlag\":0,\"writeQueueNums\":1}]}");
    ns_buf_reset(&b);
    assert_int_equal(ns_json_order_conf_member(&b, "\xd0\xb9", true), NS_OK);
    assert_str(&b, "\"orderTopicConf\":\"\\u0439\",");
    ns_buf_reset(&b);
    assert_int_equal(ns_json_order_conf_member(&b, "\xd0\xb9", false), NS_OK);
    assert_str(&b, "\"orderTopicConf\":\"\xd0\xb9\",");
    ns_buf_free(&b);
}

/* ---- ClusterInfo, TopicList, KVTable, member group ---------------------------- */

static void test_cluster_info_matches_java(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    size_t n = 0;

    char *exp = vector_body("uncompressed-GET_BROKER_CLUSTER_INFO-rsp-1.bin", &n);
    ns_broker_addr_t aa[] = {{0, "127.0.0.1:10911"}};
    ns_broker_data_t ba = {"DefaultCluster", "broker-a", NULL, false, aa, 1};
    const char *names_a[] = {"broker-a"};
    ns_cluster_entry_t ca = {"DefaultCluster", names_a, 1};
    assert_int_equal(ns_json_cluster_info_encode(&b, &ba, 1, &ca, 1), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    /* three brokers in Java's HashMap order */
    ns_broker_addr_t a2[] = {{0, "127.0.0.1:31921"}}, a3[] = {{0, "127.0.0.1:31931"}},
                     a1[] = {{0, "127.0.0.1:31911"}};
    ns_broker_data_t bz[] = {{"CorpusClusterZ", "broker-z2", NULL, false, a2, 1},
                             {"CorpusClusterZ", "broker-z3", NULL, false, a3, 1},
                             {"CorpusClusterZ", "broker-z1", NULL, false, a1, 1}};
    const char *names_z[] = {"broker-z2", "broker-z3", "broker-z1"};
    ns_cluster_entry_t cz = {"CorpusClusterZ", names_z, 3};
    exp = scenario_body("register-compressed.jsonl", 13, true, &n);
    ns_buf_reset(&b);
    assert_int_equal(ns_json_cluster_info_encode(&b, bz, 3, &cz, 1), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    /* master + slave */
    ns_broker_addr_t ams[] = {{0, "127.0.0.1:32911"}, {1, "127.0.0.1:32921"}};
    ns_broker_data_t bms = {"CorpusClusterMS", "broker-ms", NULL, false, ams, 2};
    const char *names_ms[] = {"broker-ms"};
    ns_cluster_entry_t cms = {"CorpusClusterMS", names_ms, 1};
    exp = scenario_body("master-slave.jsonl", 7, true, &n);
    ns_buf_reset(&b);
    assert_int_equal(ns_json_cluster_info_encode(&b, &bms, 1, &cms, 1), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    exp = scenario_body("master-slave.jsonl", 14, true, &n);
    ns_buf_reset(&b);
    assert_int_equal(ns_json_cluster_info_encode(&b, NULL, 0, NULL, 0), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);
    ns_buf_free(&b);
}

static void test_topic_list_matches_java(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    size_t n = 0;
    char *exp = vector_body("uncompressed-GET_ALL_TOPIC_LIST_FROM_NAMESERVER-rsp-1.bin", &n);
    const char *topics[] = {"RMQ_SYS_TRANS_HALF_TOPIC",
                            "BenchmarkTest",
                            "OFFSET_MOVED_EVENT",
                            "TBW102",
                            "rmq_sys_REVIVE_LOG_DefaultCluster",
                            "SELF_TEST_TOPIC",
                            "DefaultCluster",
                            "SCHEDULE_TOPIC_XXXX",
                            "DefaultCluster_REPLY_TOPIC",
                            "rmq_sys_wheel_timer",
                            "rmq_sys_SYNC_BROKER_MEMBER_broker-a",
                            "RMQ_SYS_TRANS_OP_HALF_TOPIC",
                            "TopicTest",
                            "broker-a"};
    assert_int_equal(ns_json_topic_list_encode(&b, topics, 14, NULL), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    const char *sys[] = {"CorpusClusterU", "broker-u1", "broker-u2"};
    exp = scenario_body("system-and-unit-topics.jsonl", 8, true, &n);
    ns_buf_reset(&b);
    assert_int_equal(ns_json_topic_list_encode(&b, sys, 3, "127.0.0.1:36911"), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    exp = scenario_body("system-and-unit-topics.jsonl", 1, true, &n);
    ns_buf_reset(&b);
    assert_int_equal(ns_json_topic_list_encode(&b, NULL, 0, NULL), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);
    ns_buf_free(&b);
}

static void test_kvtable_matches_java(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    size_t n = 0;
    char *exp = vector_body("uncompressed-GET_KVLIST_BY_NAMESPACE-rsp-1.bin", &n);
    const char *k1[] = {"k1"}, *v1[] = {"v1"};
    assert_int_equal(ns_json_kvtable_encode(&b, k1, v1, 1), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    /* escaping: quote, backslash, tab, raw UTF-8 */
    const char *k3[] = {"k1", "k2", "k3"};
    const char *v3[] = {"v1", "v2", "say \"hi\"\\ \t\xc3\xbc\xc3\x9f \xe4\xb8\xad\xe6\x96\x87 =x"};
    exp = scenario_body("kv.jsonl", 9, true, &n);
    ns_buf_reset(&b);
    assert_int_equal(ns_json_kvtable_encode(&b, k3, v3, 3), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    exp = scenario_body("kv.jsonl", 20, true, &n);
    ns_buf_reset(&b);
    assert_int_equal(ns_json_kvtable_encode(&b, NULL, NULL, 0), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    const char *ko[] = {"TopicO1", "TopicO2"}, *vo[] = {"broker-o:4", "broker-o:2"};
    exp = scenario_body("order-topic.jsonl", 11, true, &n);
    ns_buf_reset(&b);
    assert_int_equal(ns_json_kvtable_encode(&b, ko, vo, 2), NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);
    ns_buf_free(&b);
}

static void test_member_group_matches_java(void **state)
{
    (void)state;
    ns_buf_t b = NS_BUF_INIT;
    size_t n = 0;
    ns_broker_addr_t addrs[] = {{0, "127.0.0.1:32911"}, {1, "127.0.0.1:32921"}};

    char *exp = scenario_body("master-slave.jsonl", 5, true, &n);
    assert_int_equal(ns_json_member_group_encode(&b, "CorpusClusterMS", "broker-ms", addrs, 2),
                     NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    exp = scenario_body("master-slave.jsonl", 6, true, &n);
    ns_buf_reset(&b);
    assert_int_equal(ns_json_member_group_encode(&b, "CorpusClusterMS", "nobroker", NULL, 0),
                     NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);

    exp = scenario_body("master-slave.jsonl", 11, true, &n);
    ns_buf_reset(&b);
    assert_int_equal(ns_json_member_group_encode(&b, "CorpusClusterMS", "broker-ms", &addrs[1], 1),
                     NS_OK);
    assert_bytes(&b, exp, n);
    free(exp);
    ns_buf_free(&b);
}

/* ---- ns_fastjson_normalize ------------------------------------------------------ */

static void check_norm(const char *in, const char *exp)
{
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_fastjson_normalize((const uint8_t *)in, strlen(in), &b), NS_OK);
    assert_str(&b, exp);
    assert_int_equal(b.data[b.len], 0);
    cJSON *j = cJSON_Parse((const char *)b.data);
    if (exp[0] == '{' || exp[0] == '[')
        assert_non_null(j);
    cJSON_Delete(j);
    ns_buf_free(&b);
}

static void test_normalize(void **state)
{
    (void)state;
    check_norm("{0:\"a\",1:\"b\"}", "{\"0\":\"a\",\"1\":\"b\"}");
    check_norm("{\"currIdMap\":{0:0,1:1}}", "{\"currIdMap\":{\"0\":0,\"1\":1}}");
    check_norm("{ -1 : 2 ,\n 10:[1,2,{3:4}]}", "{ \"-1\" : 2 ,\n \"10\":[1,2,{\"3\":4}]}");
    check_norm("[1,2,{0:[3,4]},5]", "[1,2,{\"0\":[3,4]},5]");
    /* text inside strings is untouched, escapes handled */
    check_norm("{\"a\":\"{0:1}\",\"b\\\"{0:\":\"x\\\\\",1:2}",
               "{\"a\":\"{0:1}\",\"b\\\"{0:\":\"x\\\\\",\"1\":2}");
    /* already strict JSON is unchanged */
    check_norm("{\"brokerAddrs\":{\"0\":\"h:1\"},\"n\":-1.5e3}",
               "{\"brokerAddrs\":{\"0\":\"h:1\"},\"n\":-1.5e3}");
    check_norm("{}", "{}");
    check_norm("", "");
    check_norm("42", "42");
    /* stray closers do not underflow */
    check_norm("}]{0:1", "}]{\"0\":1");

    /* unterminated strings */
    const char *bad[] = {"{\"a", "{\"a\\\"}", "\"", "{\"a\":\"b\\"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ns_buf_t b = NS_BUF_INIT;
        ns_buf_append_str(&b, "keep");
        assert_int_equal(ns_fastjson_normalize((const uint8_t *)bad[i], strlen(bad[i]), &b),
                         NS_EINVAL);
        assert_str(&b, "keep");
        ns_buf_free(&b);
    }

    /* appends after existing content; deep nesting is fine */
    ns_buf_t b = NS_BUF_INIT, in = NS_BUF_INIT;
    for (int i = 0; i < 100000; i++)
        ns_buf_append_str(&in, "{0:");
    ns_buf_append_str(&b, "pre");
    assert_int_equal(ns_fastjson_normalize(in.data, in.len, &b), NS_OK);
    assert_int_equal(b.len, 3 + in.len + 2 * 100000);
    assert_memory_equal(b.data, "pre{\"0\":{\"0\":", 13);
    ns_buf_free(&b);
    ns_buf_free(&in);
}

/* ---- QueueData reader ---------------------------------------------------------- */

static void test_queue_datas_decode(void **state)
{
    (void)state;
    ns_queue_data_t *q = NULL;
    size_t nq = 0, n = 0;

    char *body = scenario_body("perms-and-delete.jsonl", 16, false, &n);
    assert_int_equal(ns_json_queue_datas_decode((const uint8_t *)body, n, &q, &nq), NS_OK);
    assert_int_equal(nq, 1);
    assert_string_equal(q[0].broker_name, "broker-p");
    assert_int_equal(q[0].perm, 6);
    assert_int_equal(q[0].read_queue_nums, 4);
    assert_int_equal(q[0].write_queue_nums, 4);
    assert_int_equal(q[0].topic_sys_flag, 0);
    ns_queue_datas_free(q, nq);
    free(body);

    body = scenario_body("perms-and-delete.jsonl", 20, false, &n);
    assert_int_equal(ns_json_queue_datas_decode((const uint8_t *)body, n, &q, &nq), NS_OK);
    assert_int_equal(nq, 0);
    assert_null(q);
    free(body);

    /* legacy keys, old member name, coercions, nulls, unknown members */
    const char *t = "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"h:1\",1:\"h:2\"}}],\"queueDatas\":["
                    "{\"brokerName\":\"a\",\"perm\":\"7\",\"readQueueNums\":2,"
                    "\"writeQueueNums\":3.0,\"topicSynFlag\":1,\"x\":[{}]},null,"
                    "{\"brokerName\":12,\"topicSysFlag\":2},{\"perm\":4}]}";
    assert_int_equal(ns_json_queue_datas_decode((const uint8_t *)t, strlen(t), &q, &nq), NS_OK);
    assert_int_equal(nq, 3);
    assert_string_equal(q[0].broker_name, "a");
    assert_int_equal(q[0].perm, 7);
    assert_int_equal(q[0].read_queue_nums, 2);
    assert_int_equal(q[0].write_queue_nums, 3);
    assert_int_equal(q[0].topic_sys_flag, 1);
    assert_string_equal(q[1].broker_name, "12");
    assert_int_equal(q[1].topic_sys_flag, 2);
    assert_string_equal(q[2].broker_name, "");
    assert_int_equal(q[2].perm, 4);
    ns_queue_datas_free(q, nq);

    const char *empty[] = {"", " \n", "{}", "{\"queueDatas\":null}", "{\"queueDatas\":[]}"};
    for (size_t i = 0; i < sizeof empty / sizeof *empty; i++) {
        q = (ns_queue_data_t *)1;
        nq = 99;
        assert_int_equal(
            ns_json_queue_datas_decode((const uint8_t *)empty[i], strlen(empty[i]), &q, &nq),
            NS_OK);
        assert_null(q);
        assert_int_equal(nq, 0);
    }
    const char *bad[] = {"[]",
                         "x",
                         "{\"queueDatas\":{}}",
                         "{\"queueDatas\":[1]}",
                         "{\"queueDatas\":[{\"perm\":\"x\"}]}",
                         "{\"queueDatas\":[{\"perm\":4294967296}]}",
                         "{\"queueDatas\":["};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(
            ns_json_queue_datas_decode((const uint8_t *)bad[i], strlen(bad[i]), &q, &nq),
            NS_EINVAL);
        assert_null(q);
        assert_int_equal(nq, 0);
    }
    ns_queue_datas_free(NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dataversion_encode_matches_java),
        cmocka_unit_test(test_dataversion_decode),
        cmocka_unit_test(test_route_single_broker_matches_java),
        cmocka_unit_test(test_route_master_slave_matches_java),
        cmocka_unit_test(test_route_two_brokers_matches_java),
        cmocka_unit_test(test_route_order_conf_matches_java),
        cmocka_unit_test(test_route_empty_brokers_matches_java),
        cmocka_unit_test(test_route_standard_vs_legacy),
        cmocka_unit_test(test_route_legacy_derived),
        cmocka_unit_test(test_route_legacy_by_parts),
        cmocka_unit_test(test_route_legacy_refuses_unknown_shapes),
        cmocka_unit_test(test_route_legacy_mutations),
        cmocka_unit_test(test_route_ascii_escaping),
        cmocka_unit_test(test_cluster_info_matches_java),
        cmocka_unit_test(test_topic_list_matches_java),
        cmocka_unit_test(test_kvtable_matches_java),
        cmocka_unit_test(test_member_group_matches_java),
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_queue_datas_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
