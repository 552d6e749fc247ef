/* test_namesrvctl.c - the offline namesrvctl commands against real stores
 * written by a real namesrvd: dump/restore round trip of a large topology
 * (routes byte for byte, documents identical), broken documents, audit
 * history, hot backup under write load, verify/stat, import-kvconfig.
 * The online commands are in test_namesrvctl_online.c. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/store.h"

/* ---- helpers ---- */

/* Runs namesrvctl (nstest_ctl) with this file's time limit. */
#define ctl(...) nstest_ctl(240000, __VA_ARGS__)

static char *join(const char *dir, const char *name)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
    return p;
}

static char *read_text(const char *path, size_t *len)
{
    uint8_t *p = NULL;
    size_t n = 0;
    if (nstest_read_file(path, &p, &n) != 0)
        fail_msg("cannot read %s", path);
    char *s = realloc(p, n + 1);
    assert_non_null(s);
    s[n] = 0;
    if (len)
        *len = n;
    return s;
}

typedef struct {
    const char *cluster, *name, *addr, *zone;
    int64_t id;
    ns_dataversion_t dv;
    ns_topic_config_t *topics;
    size_t n_topics;
    char **filters;
    size_t n_filters;
    ns_mapping_info_t *maps;
    size_t n_maps;
} reg_t;

/* REGISTER_BROKER with a compressed body, as a 5.x broker sends it. */
static int register_broker(ns_client_t *c, const reg_t *r)
{
    ns_regbody_t body = {0};
    body.data_version = r->dv;
    body.topics = r->topics;
    body.n_topics = r->n_topics;
    body.filter_servers = r->filters;
    body.n_filter_servers = r->n_filters;
    body.has_filter_server_list = true;
    body.mappings = r->maps;
    body.n_mappings = r->n_maps;
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_regbody_encode_compressed(&b, &body, true), NS_OK);
    char id[32], crc[32], ha[128];
    snprintf(id, sizeof id, "%lld", (long long)r->id);
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(b.data, b.len));
    snprintf(ha, sizeof ha, "%s-ha", r->addr);
    const char *kv[] = {"brokerName",
                        r->name,
                        "brokerAddr",
                        r->addr,
                        "clusterName",
                        r->cluster,
                        "haServerAddr",
                        ha,
                        "brokerId",
                        id,
                        "enableActingMaster",
                        "false",
                        "compressed",
                        "true",
                        "bodyCrc32",
                        crc,
                        r->zone ? "__ZONE_NAME" : NULL,
                        r->zone,
                        NULL};
    int code = nstest_call_code(c, NS_REQ_REGISTER_BROKER, kv, b.data, b.len, 30000);
    ns_buf_free(&b);
    return code;
}

static void put_kv(ns_client_t *c, const char *ns, const char *k, const char *v)
{
    const char *kv[] = {"namespace", ns, "key", k, "value", v, NULL};
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    nstest_cmd(&cmd, ext, NS_REQ_PUT_KV_CONFIG, kv);
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &cmd, 10000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    ns_cmd_msg_free(&rsp);
}

/* Response code and a copy of the body of a request with version ver. */
static uint8_t *request(ns_client_t *c, int code, const char *const *kv, int ver, int *rcode,
                        size_t *len)
{
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    nstest_cmd(&cmd, ext, code, kv);
    cmd.version = ver;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &cmd, 10000, &rsp), NS_OK);
    *rcode = rsp.cmd.code;
    *len = rsp.cmd.body_len;
    uint8_t *body = malloc(rsp.cmd.body_len + 1);
    assert_non_null(body);
    if (rsp.cmd.body_len)
        memcpy(body, rsp.cmd.body, rsp.cmd.body_len);
    ns_cmd_msg_free(&rsp);
    return body;
}

/* ---- large topology: dump -> restore -> same routes, same document ---- */

#define N_BROKERS 100
#define PER_BROKER 100
#define N_SHARED 10
#define N_SLAVES 10

static void test_large_round_trip(void **state)
{
    char *dir_a = nstest_tmpdir("ctl-a"), *dir_b = nstest_tmpdir("ctl-b");
    char *data_a = join(dir_a, "data"), *data_b = join(dir_b, "data");
    char *d1 = join(dir_a, "dump1.json"), *d2 = join(dir_a, "dump2.json");
    nstest_server_t a, b;
    char *out = NULL;
    assert_int_equal(nstest_server_start(&a, dir_a, NULL), 0);
    ns_client_t *c = nstest_connect(&a); /* kept open: closing it would unregister */

    ns_topic_config_t *topics = calloc(PER_BROKER + N_SHARED, sizeof *topics);
    char names[PER_BROKER + N_SHARED][32];
    char *filters[] = {"10.9.0.1:30000", "10.9.0.2:30000"};
    ns_id_pair_t ids[] = {{0, 0}, {1, 1}};
    ns_mapping_info_t map = {"S-00", "broker-000", NULL, 2, 1700000000000LL, false, ids, 2};
    for (int i = 0; i < N_BROKERS + N_SLAVES; i++) {
        int bi = i % N_BROKERS;
        bool slave = i >= N_BROKERS;
        char name[32], cluster[32], addr[64];
        snprintf(name, sizeof name, "broker-%03d", bi);
        snprintf(cluster, sizeof cluster, "Cluster-%d", bi % 4);
        snprintf(addr, sizeof addr, "10.0.%d.%d:10911", slave ? 1 : 0, bi);
        for (int k = 0; k < PER_BROKER + N_SHARED; k++) {
            if (k < PER_BROKER)
                snprintf(names[k], sizeof names[k], "T-%03d-%03d", bi, k);
            else
                snprintf(names[k], sizeof names[k], "S-%02d", k - PER_BROKER);
            topics[k] = (ns_topic_config_t){names[k], 4 + (bi + k) % 5, 4 + (bi + k) % 5,
                                            (bi % 7 == 0) ? 4 : 6, 0};
        }
        reg_t r = {cluster,
                   name,
                   addr,
                   bi % 10 == 3 ? "zone-a" : NULL,
                   slave ? 1 : 0,
                   {bi + 1, 0, 1700000000000LL + bi},
                   topics,
                   PER_BROKER + N_SHARED,
                   bi == 0 ? filters : NULL,
                   bi == 0 ? 2 : 0,
                   bi == 0 && !slave ? &map : NULL,
                   bi == 0 && !slave ? 1 : 0};
        assert_int_equal(register_broker(c, &r), NS_RSP_SUCCESS);
    }
    for (int i = 0; i < 30; i++) {
        char k[32], v[64];
        snprintf(k, sizeof k, "key-%02d", i);
        snprintf(v, sizeof v, "value %d \"quoted\" ünïcode", i);
        put_kv(c, i % 3 == 0 ? "ORDER_TOPIC_CONFIG" : i % 3 == 1 ? "ns.one" : "ns two", k, v);
    }

    int64_t t0 = nstest_mono_ms();
    int rc =
        ctl(&out, "dump", "--data-dir", data_a, "-o", d1, "--no-timestamp", "--with-audit", NULL);
    int64_t dump_ms = nstest_mono_ms() - t0;
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "10010 topics");
    free(out);
    t0 = nstest_mono_ms();
    rc = ctl(&out, "restore", "--data-dir", data_b, "-i", d1, NULL);
    int64_t restore_ms = nstest_mono_ms() - t0;
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "restored 100 brokers, 110 registrations, 10010 topics, 1 mappings, "
                          "30 kv keys in 3 namespaces, 100 audit records");
    free(out);
    rc = ctl(&out, "verify", "--data-dir", data_b, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);

    /* a server on the restored store answers the very same bytes */
    assert_int_equal(nstest_server_start(&b, dir_b, NULL), 0);
    ns_client_t *cb = nstest_connect(&b);
    size_t compared = 0;
    for (int i = 0; i < N_BROKERS * PER_BROKER + N_SHARED + 1; i += 47) {
        char topic[32];
        if (i >= N_BROKERS * PER_BROKER)
            snprintf(topic, sizeof topic, "S-%02d", i % N_SHARED);
        else
            snprintf(topic, sizeof topic, "T-%03d-%03d", i / PER_BROKER, i % PER_BROKER);
        const int versions[] = {NS_VERSION_V5_3_3, 317};
        for (int v = 0; v < 2; v++) {
            const char *kv[] = {"topic", topic, NULL};
            int ca, cbc;
            size_t la, lb;
            uint8_t *ra = request(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, versions[v], &ca, &la);
            uint8_t *rb = request(cb, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, versions[v], &cbc, &lb);
            assert_int_equal(ca, NS_RSP_SUCCESS);
            assert_int_equal(cbc, NS_RSP_SUCCESS);
            assert_int_equal(la, lb);
            assert_memory_equal(ra, rb, la);
            free(ra);
            free(rb);
            compared++;
        }
    }
    const char *shared[] = {"topic", "S-00", NULL}; /* every broker, filters, a mapping */
    int ca, cbc;
    size_t la, lb;
    uint8_t *ra = request(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, shared, 479, &ca, &la);
    uint8_t *rb = request(cb, NS_REQ_GET_ROUTEINFO_BY_TOPIC, shared, 479, &cbc, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(ra, rb, la);
    assert_non_null(memmem(ra, la, "10.9.0.1:30000", 14));
    assert_non_null(memmem(ra, la, "topicQueueMappingByBroker", 25));
    assert_non_null(memmem(ra, la, "zone-a", 6));
    free(ra);
    free(rb);
    ra = request(c, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, 479, &ca, &la);
    rb = request(cb, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, 479, &cbc, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(ra, rb, la);
    free(ra);
    free(rb);

    /* dump -> restore -> dump gives the identical document */
    rc = ctl(&out, "dump", "--data-dir", data_b, "-o", d2, "--no-timestamp", "--with-audit", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    size_t l1, l2;
    char *t1 = read_text(d1, &l1), *t2 = read_text(d2, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(t1, t2, l1);
    printf("large topology (%d topics, %d brokers + %d slaves, %zu-byte document): "
           "dump %lld ms, restore %lld ms; %zu routes compared byte for byte\n",
           N_BROKERS * PER_BROKER + N_SHARED, N_BROKERS, N_SLAVES, l1, (long long)dump_ms,
           (long long)restore_ms, compared);
    free(t1);
    free(t2);

    ns_client_close(cb);
    ns_client_close(c);
    nstest_server_stop(&b, SIGKILL);
    nstest_server_stop(&a, SIGKILL);
    free(topics);
    free(d1);
    free(d2);
    free(data_a);
    free(data_b);
    nstest_rmtree(dir_a);
    nstest_rmtree(dir_b);
    free(dir_a);
    free(dir_b);
}

/* ---- broken documents change nothing and name the problem ---- */

static const char *base_doc =
    "{\"format\":\"namesrv-dump\",\"formatVersion\":1,\"schemaVersion\":3,"
    "\"clusters\":{\"C1\":[\"b1\"]},"
    "\"brokers\":[{\"brokerName\":\"b1\",\"cluster\":\"C1\",\"enableActingMaster\":false,"
    "\"addrs\":{\"0\":\"10.0.0.1:10911\"}}],"
    "\"registrations\":[{\"cluster\":\"C1\",\"brokerAddr\":\"10.0.0.1:10911\",\"brokerName\":"
    "\"b1\","
    "\"brokerId\":0,\"haServerAddr\":\"10.0.0.1:10912\",\"dataVersion\":{\"counter\":1,"
    "\"stateVersion\":0,\"timestamp\":1000},\"heartbeatTimeoutMillis\":120000,\"filterServers\":[]}"
    "],"
    "\"topics\":{\"T1\":[{\"brokerName\":\"b1\",\"perm\":6,\"readQueueNums\":4,\"writeQueueNums\":"
    "4,"
    "\"topicSysFlag\":0}]},"
    "\"mappings\":[],\"kv\":{\"NS\":{\"k\":\"v\"}}}";

/* Replaces (or with value NULL deletes) the member at a slash path. */
static char *mutate(const char *path, const char *value)
{
    cJSON *doc = cJSON_Parse(base_doc), *cur = doc, *parent = NULL;
    char *p = strdup(path), *save = NULL, *last = NULL;
    for (char *seg = strtok_r(p, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
        parent = cur;
        last = seg;
        cur = cJSON_IsArray(cur) ? cJSON_GetArrayItem(cur, atoi(seg))
                                 : cJSON_GetObjectItemCaseSensitive(cur, seg);
        assert_non_null(cur);
    }
    if (value == NULL && cJSON_IsArray(parent))
        cJSON_DeleteItemFromArray(parent, atoi(last));
    else if (value == NULL)
        cJSON_DeleteItemFromObjectCaseSensitive(parent, last);
    else if (cJSON_IsArray(parent))
        cJSON_ReplaceItemInArray(parent, atoi(last), cJSON_Parse(value));
    else
        cJSON_ReplaceItemInObjectCaseSensitive(parent, last, cJSON_Parse(value));
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    free(p);
    return text;
}

static void test_restore_broken_documents(void **state)
{
    static const struct {
        const char *path, *value, *expect;
    } cases[] = {
        {"formatVersion", "2", "$.formatVersion: unsupported version 2"},
        {"format", "\"other\"", "$.format: expected \"namesrv-dump\""},
        {"format", NULL, "$.format: missing"},
        {"brokers", NULL, "$.brokers: missing"},
        {"brokers/0/addrs", "[]", "$.brokers[0].addrs: expected an object"},
        {"brokers/0/brokerName", NULL, "$.brokers[0].brokerName: missing"},
        {"topics/T1/0/brokerName", "\"x\"", "$.topics.T1[0].brokerName: unknown broker 'x'"},
        {"registrations/0/dataVersion", NULL, "$.registrations[0].dataVersion: missing"},
        {"registrations/0/brokerName", "\"zz\"",
         "$.registrations[0].brokerName: unknown broker 'zz'"},
        {"registrations/0/brokerId", "1",
         "$.registrations[0].brokerId: broker 'b1' does not map id 1"},
        {"clusters/C1", "[\"b1\",\"ghost\"]", "$.clusters.C1[1]: unknown broker 'ghost'"},
        {"brokers/0/addrs", "{\"0\":\"10.0.0.1:10911\",\"1\":\"10.0.0.2:10911\"}",
         "$.brokers[0].addrs.1: no registration of 10.0.0.2:10911"},
        {"topics/T1", "[]", "$.topics.T1: expected a non-empty array"},
        {"topics/T1/0/readQueueNums", "\"abc\"",
         "$.topics.T1[0].readQueueNums: 'abc' is not an integer"},
        {"topics/T1/0/perm", "1.5", "$.topics.T1[0].perm: expected an integer"},
        {"kv/NS/k", "5", "$.kv.NS.k: expected a string, found a number"},
    };
    char *dir = nstest_tmpdir("ctl-broken"), *out = NULL;
    char *data = join(dir, "data"), *fresh = join(dir, "fresh"), *doc = join(dir, "doc.json");
    char *before = join(dir, "before.json"), *after = join(dir, "after.json");
    /* the base document is valid; a populated store to compare against */
    nstest_write_text(doc, base_doc);
    int rc = ctl(&out, "restore", "--data-dir", data, "-i", doc, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    rc = ctl(&out, "restore", "--data-dir", data, "-i", doc, NULL);
    NSTEST_EXPECT_RC(rc, 1, out);
    NSTEST_EXPECT_IN(out, "is not empty");
    free(out);
    assert_int_equal(
        ctl(NULL, "dump", "--data-dir", data, "-o", before, "--no-timestamp", "--with-audit", NULL),
        0);

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = mutate(cases[i].path, cases[i].value);
        nstest_write_text(doc, text);
        free(text);
        rc = ctl(&out, "restore", "--data-dir", data, "-i", doc, "--replace", NULL);
        NSTEST_EXPECT_RC(rc, 4, out);
        NSTEST_EXPECT_IN(out, cases[i].expect);
        NSTEST_EXPECT_IN(out, "nothing was restored");
        free(out);
        rc = ctl(&out, "restore", "--data-dir", fresh, "-i", doc, NULL);
        NSTEST_EXPECT_RC(rc, 4, out);
        free(out);
        assert_int_not_equal(access(fresh, F_OK), 0); /* not even created */
    }
    nstest_write_text(doc,
                      "{\"format\":\"namesrv-dump\",\n\"formatVersion\":1,\n  \"clusters\": {,}}");
    rc = ctl(&out, "restore", "--data-dir", data, "-i", doc, "--replace", NULL);
    NSTEST_EXPECT_RC(rc, 4, out);
    NSTEST_EXPECT_IN(out, "not valid JSON (line 3");
    free(out);

    assert_int_equal(
        ctl(NULL, "dump", "--data-dir", data, "-o", after, "--no-timestamp", "--with-audit", NULL),
        0);
    size_t l1, l2;
    char *t1 = read_text(before, &l1), *t2 = read_text(after, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(t1, t2, l1);
    free(t1);
    free(t2);

    /* a running server holds the directory: restore refuses and names it */
    nstest_server_t srv;
    assert_int_equal(nstest_server_start(&srv, dir, NULL), 0);
    nstest_write_text(doc, base_doc);
    rc = ctl(&out, "restore", "--data-dir", data, "-i", doc, "--replace", NULL);
    NSTEST_EXPECT_RC(rc, 3, out);
    char pid[64];
    snprintf(pid, sizeof pid, "held by process %d", srv.pid);
    NSTEST_EXPECT_IN(out, pid);
    free(out);
    nstest_server_stop(&srv, SIGTERM);
    rc = ctl(&out, "restore", "--data-dir", data, "-i", doc, "--replace", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);

    free(data);
    free(fresh);
    free(doc);
    free(before);
    free(after);
    nstest_rmtree(dir);
    free(dir);
}

/* ---- audit: the recorded history of a scripted registration sequence ---- */

static cJSON *find_list_topic(const cJSON *rec, const char *list, size_t want_n, size_t i)
{
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(rec, list);
    assert_true(cJSON_IsArray(l));
    assert_int_equal(cJSON_GetArraySize(l), want_n);
    return want_n ? cJSON_GetArrayItem(l, (int)i) : NULL;
}

static const char *topic_of(const cJSON *e)
{
    return cJSON_GetObjectItemCaseSensitive(e, "topic")->valuestring;
}

static double field(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static size_t count_lines(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void test_audit_history(void **state)
{
    char *dir = nstest_tmpdir("ctl-audit"), *data = NULL, *out = NULL;
    nstest_server_t srv;
    /* "removed" lists the topics a registration removed from the routes,
     * which happens with deleteTopicWithBrokerRegistration */
    const char *args[] = {"--deleteTopicWithBrokerRegistration=true", NULL};
    assert_int_equal(nstest_server_start(&srv, dir, args), 0);
    data = join(dir, "data");
    ns_client_t *c = nstest_connect(&srv);
    ns_topic_config_t t1 = {"T1", 4, 4, 6, 0}, t1b = {"T1", 8, 8, 6, 0}, t2 = {"T2", 4, 4, 6, 0},
                      t3 = {"T3", 2, 2, 6, 0}, x1 = {"X1", 1, 1, 6, 0}, x2 = {"X2", 1, 1, 6, 0};
    ns_topic_config_t s1[] = {t1, t2}, s2[] = {t1b, t2, t3}, s4[] = {t1b, t3}, s5[] = {t1b, t2, t3},
                      sb[] = {x1, x2};
    reg_t a = {"C", "broker-a", "10.0.0.1:10911", NULL, 0, {1, 0, 1000}, s1, 2, NULL, 0, NULL, 0};
    reg_t b = {"C", "broker-b", "10.0.0.2:10911", NULL, 0, {1, 0, 1500}, sb, 2, NULL, 0, NULL, 0};
    assert_int_equal(register_broker(c, &a), 0); /* 1: new, +T1 +T2 */
    nstest_wall_tick();                          /* each record a later time */
    a.dv = (ns_dataversion_t){2, 0, 2000};
    a.topics = s2;
    a.n_topics = 3;
    assert_int_equal(register_broker(c, &a), 0); /* 2: +T3 ~T1 */
    nstest_wall_tick();
    assert_int_equal(register_broker(c, &b), 0); /* 3: broker-b +X1 +X2 */
    nstest_wall_tick();
    assert_int_equal(register_broker(c, &a), 0); /* unchanged: no record */
    nstest_wall_tick();
    a.dv = (ns_dataversion_t){3, 0, 3000};
    a.topics = s4;
    a.n_topics = 2;
    assert_int_equal(register_broker(c, &a), 0); /* 4: -T2 */
    nstest_wall_tick();
    a.dv = (ns_dataversion_t){1, 0, 500};
    a.topics = s5;
    a.n_topics = 3;
    assert_int_equal(register_broker(c, &a), 0); /* 5: backwards, +T2 */

    int rc = ctl(&out, "audit", "--data-dir", data, "--json", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    printf("%s", out); /* the history under test, for the log */
    cJSON *rec[8] = {NULL};
    size_t n = 0;
    for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        assert_true(n < 8);
        rec[n] = cJSON_Parse(l);
        assert_non_null(rec[n]);
        assert_int_equal((int)field(rec[n], "seq", NULL), (int)n + 1);
        n++;
    }
    free(out);
    assert_int_equal(n, 5);
    /* 1 */
    assert_string_equal(cJSON_GetObjectItem(rec[0], "brokerName")->valuestring, "broker-a");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(rec[0], "oldVersion")));
    assert_int_equal((int)field(rec[0], "newVersion", "counter"), 1);
    assert_string_equal(topic_of(find_list_topic(rec[0], "added", 2, 0)), "T1");
    assert_string_equal(topic_of(find_list_topic(rec[0], "added", 2, 1)), "T2");
    find_list_topic(rec[0], "changed", 0, 0);
    find_list_topic(rec[0], "removed", 0, 0);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(rec[0], "backwards")));
    /* 2 */
    assert_int_equal((int)field(rec[1], "oldVersion", "counter"), 1);
    assert_int_equal((int)field(rec[1], "newVersion", "counter"), 2);
    assert_string_equal(topic_of(find_list_topic(rec[1], "added", 1, 0)), "T3");
    cJSON *ch = find_list_topic(rec[1], "changed", 1, 0);
    assert_string_equal(topic_of(ch), "T1");
    assert_int_equal((int)field(ch, "readQueueNums", NULL), 8);
    assert_int_equal((int)field(ch, "old", "readQueueNums"), 4);
    find_list_topic(rec[1], "removed", 0, 0);
    /* 3 */
    assert_string_equal(cJSON_GetObjectItem(rec[2], "brokerName")->valuestring, "broker-b");
    assert_string_equal(topic_of(find_list_topic(rec[2], "added", 2, 0)), "X1");
    /* 4: the unchanged re-registration left no record in between */
    assert_int_equal((int)field(rec[3], "oldVersion", "counter"), 2);
    assert_int_equal((int)field(rec[3], "newVersion", "counter"), 3);
    find_list_topic(rec[3], "added", 0, 0);
    find_list_topic(rec[3], "changed", 0, 0);
    assert_string_equal(topic_of(find_list_topic(rec[3], "removed", 1, 0)), "T2");
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(rec[3], "backwards")));
    /* 5: T2 comes back with the (backwards) version */
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(rec[4], "backwards")));
    assert_int_equal((int)field(rec[4], "newVersion", "timestamp"), 500);
    assert_string_equal(topic_of(find_list_topic(rec[4], "added", 1, 0)), "T2");
    find_list_topic(rec[4], "changed", 0, 0);
    find_list_topic(rec[4], "removed", 0, 0);
    char since3[32];
    snprintf(since3, sizeof since3, "%.0f", field(rec[2], "time", NULL));
    for (size_t i = 0; i < n; i++)
        cJSON_Delete(rec[i]);

    /* the table, filtered */
    rc = ctl(&out, "audit", "--data-dir", data, "--broker", "broker-a", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "4 of 5 record(s)");
    NSTEST_EXPECT_IN(out, "- -> 1/1000/0");
    NSTEST_EXPECT_IN(out, "+T1,T2");
    NSTEST_EXPECT_IN(out, "2/2000/0 -> 3/3000/0");
    NSTEST_EXPECT_IN(out, "~T1");
    NSTEST_EXPECT_IN(out, "-T2");
    assert_int_equal(count_lines(out, "BACKWARDS"), 1);
    assert_null(strstr(out, "broker-b"));
    free(out);
    rc = ctl(&out, "audit", "--data-dir", data, "--topic", "T2", "--json", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    assert_int_equal(count_lines(out, "\n"), 3);
    NSTEST_EXPECT_IN(out, "{\"seq\":1,");
    NSTEST_EXPECT_IN(out, "{\"seq\":4,");
    NSTEST_EXPECT_IN(out, "{\"seq\":5,");
    free(out);
    rc = ctl(&out, "audit", "--data-dir", data, "--since", since3, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "3 of 5 record(s)");
    free(out);
    rc = ctl(&out, "audit", "--data-dir", data, "--since", "2000-01-01T00:00:00Z", NULL);
    NSTEST_EXPECT_IN(out, "5 of 5 record(s)");
    free(out);
    rc = ctl(&out, "audit", "--data-dir", data, "--since", "2999-01-01", NULL);
    NSTEST_EXPECT_IN(out, "0 of 5 record(s)");
    free(out);
    rc = ctl(&out, "audit", "--data-dir", data, "--since", "yesterday", NULL);
    NSTEST_EXPECT_RC(rc, 2, out);
    free(out);

    ns_client_close(c);
    nstest_server_stop(&srv, SIGKILL);
    free(data);
    nstest_rmtree(dir);
    free(dir);
}

/* ---- backup while the server is being written to ---- */

typedef struct {
    int port;
    int stop; /* set by the test thread: read and written atomically */
    int puts;
} load_t;

static void *load_main(void *arg)
{
    load_t *l = arg;
    ns_client_t *c = NULL;
    if (ns_client_connect("127.0.0.1", l->port, 5000, &c) != NS_OK)
        return NULL;
    while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) {
        char k[32], v[64];
        snprintf(k, sizeof k, "k%d", l->puts);
        snprintf(v, sizeof v, "value-%d-%0*d", l->puts, 32, l->puts);
        const char *kv[] = {"namespace", l->puts % 2 ? "LOAD1" : "LOAD2", "key", k, "value", v,
                            NULL};
        ns_cmd_msg_t rsp;
        int rc = nstest_try_call(c, NS_REQ_PUT_KV_CONFIG, kv, 10000, &rsp);
        ns_cmd_msg_free(&rsp);
        if (rc != NS_OK)
            break;
        __atomic_add_fetch(&l->puts, 1, __ATOMIC_RELEASE);
    }
    ns_client_close(c);
    return NULL;
}

/* Waits (5 s at most) until the load has committed more than `after` puts. */
static int wait_puts(load_t *l, int after)
{
    int64_t until = nstest_mono_ms() + 5000;
    int n;
    while ((n = __atomic_load_n(&l->puts, __ATOMIC_ACQUIRE)) <= after && nstest_mono_ms() < until)
        nstest_sleep_ms(1);
    return n;
}

static void test_backup_under_load(void **state)
{
    char *dir = nstest_tmpdir("ctl-backup"), *out = NULL, *data = join(dir, "data");
    nstest_server_t srv;
    assert_int_equal(nstest_server_start(&srv, dir, NULL), 0);
    ns_client_t *c = nstest_connect(&srv);
    ns_topic_config_t tc[] = {{"BT1", 4, 4, 6, 0}, {"BT2", 4, 4, 6, 0}};
    reg_t r = {"C", "broker-x", "10.0.0.9:10911", NULL, 0, {1, 0, 1}, tc, 2, NULL, 0, NULL, 0};
    assert_int_equal(register_broker(c, &r), 0);
    load_t load = {srv.port, 0, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, load_main, &load), 0);
    int seen = wait_puts(&load, 0); /* the load is running */
    assert_true(seen > 0);
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "backup%d", i);
        char *bk = join(dir, name);
        int rc = ctl(&out, "backup", "--data-dir", data, "-o", bk, NULL);
        NSTEST_EXPECT_RC(rc, 0, out);
        NSTEST_EXPECT_IN(out, "consistent");
        free(out);
        rc = ctl(&out, "verify", "--data-dir", bk, NULL);
        NSTEST_EXPECT_RC(rc, 0, out);
        free(out);
        rc = ctl(&out, "stat", "--data-dir", bk, "--json", NULL);
        NSTEST_EXPECT_RC(rc, 0, out);
        cJSON *st = cJSON_Parse(out);
        assert_non_null(st);
        assert_int_equal((int)cJSON_GetObjectItem(st, "topics")->valuedouble, 2);
        assert_true(cJSON_GetObjectItem(st, "kvKeys")->valuedouble > 0);
        cJSON_Delete(st);
        free(out);
        if (i == 2) { /* a second backup into the same directory is refused */
            rc = ctl(&out, "backup", "--data-dir", data, "-o", bk, NULL);
            NSTEST_EXPECT_RC(rc, 5, out);
            NSTEST_EXPECT_IN(out, "already holds a store");
            free(out);
        }
        free(bk);
        seen = wait_puts(&load, seen + 3); /* writes committed between two backups */
    }
    __atomic_store_n(&load.stop, 1, __ATOMIC_RELAXED);
    pthread_join(th, NULL);
    assert_true(load.puts > 10);
    print_message("backup under load: %d PUT_KV_CONFIG during 3 backups\n", load.puts);
    ns_client_close(c);
    nstest_server_stop(&srv, SIGKILL);
    free(data);
    nstest_rmtree(dir);
    free(dir);
}

/* ---- verify finds violations; stat counts ---- */

static void test_verify_and_stat(void **state)
{
    char *dir = nstest_tmpdir("ctl-verify"), *out = NULL, *data = join(dir, "data");
    ns_store_opts_t o = {0};
    o.dir = data;
    o.lock = true;
    ns_store_t *st = NULL;
    ns_txn_t *t = NULL;
    assert_int_equal(ns_store_open(&o, &st, NULL, 0), NS_OK);
    assert_int_equal(ns_txn_begin(st, true, &t), NS_OK);
    assert_int_equal(ns_kv_put(t, "NS", "k", "v"), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    ns_store_close(st);
    int rc = ctl(&out, "verify", "--data-dir", data, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "consistent");
    free(out);
    rc = ctl(&out, "stat", "--data-dir", data, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "1 namespaces, 1 keys");
    NSTEST_EXPECT_IN(out, "schema version");
    free(out);

    /* a group its cluster does not list (I3) and has no registration (I5) */
    assert_int_equal(ns_store_open(&o, &st, NULL, 0), NS_OK);
    assert_int_equal(ns_txn_begin(st, true, &t), NS_OK);
    ns_broker_addr_t addrs[] = {{0, "10.0.0.1:10911"}};
    ns_group_rec_t g = {"orphan", "C", NULL, false, addrs, 1};
    assert_int_equal(ns_group_put(t, &g), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    ns_store_close(st);
    rc = ctl(&out, "verify", "--data-dir", data, NULL);
    NSTEST_EXPECT_RC(rc, 1, out);
    NSTEST_EXPECT_IN(out, "I3");
    NSTEST_EXPECT_IN(out, "violation");
    free(out);
    /* a dump of it is refused by restore (the document names the problem) */
    char *doc = join(dir, "doc.json"), *other = join(dir, "other");
    assert_int_equal(ctl(NULL, "dump", "--data-dir", data, "-o", doc, NULL), 0);
    rc = ctl(&out, "restore", "--data-dir", other, "-i", doc, NULL);
    NSTEST_EXPECT_RC(rc, 4, out);
    NSTEST_EXPECT_IN(out, "$.brokers[0].cluster");
    free(out);
    /* usage and missing stores */
    rc = ctl(&out, "verify", NULL);
    NSTEST_EXPECT_RC(rc, 2, out);
    free(out);
    rc = ctl(&out, "stat", "--data-dir", other, NULL);
    NSTEST_EXPECT_RC(rc, 5, out);
    free(out);
    rc = ctl(&out, "frobnicate", NULL);
    NSTEST_EXPECT_RC(rc, 2, out);
    free(out);
    rc = ctl(&out, "help", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "exit status");
    free(out);
    free(doc);
    free(other);
    free(data);
    nstest_rmtree(dir);
    free(dir);
}

/* ---- import-kvconfig ---- */

static void test_import_kvconfig(void **state)
{
    char *dir = nstest_tmpdir("ctl-kv"), *out = NULL, *data = join(dir, "data");
    char *good = join(dir, "kvConfig.json"), *badf = join(dir, "bad.json");
    char *d1 = join(dir, "d1.json"), *d2 = join(dir, "d2.json");
    nstest_write_text(good, "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicOrder\":"
                            "\"broker-a:4;broker-b:4\"},\"myNs\":{\"k\":\"v\",\"k2\":\"v2\"}}}");
    int rc = ctl(&out, "import-kvconfig", "--data-dir", data, good, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "imported 2 namespaces, 3 keys");
    free(out);
    assert_int_equal(ctl(NULL, "dump", "--data-dir", data, "-o", d1, "--no-timestamp", NULL), 0);
    char *t1 = read_text(d1, NULL);
    NSTEST_EXPECT_IN(t1, "\"TopicOrder\":\t\"broker-a:4;broker-b:4\"");
    NSTEST_EXPECT_IN(t1, "\"k2\":\t\"v2\"");
    free(t1);

    static const struct {
        const char *text, *expect;
    } bad[] = {
        {"{\"configTable\":", "not valid JSON"},
        {"[1,2]", "$: expected an object"},
        {"{\"table\":{}}", "$.configTable: missing"},
        {"{\"configTable\":{\"NS\":[]}}", "$.configTable.NS: expected an object"},
        {"{\"configTable\":{\"NS\":{\"a\":\"x\",\"k\":5}}}",
         "$.configTable.NS.k: expected a string, found a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nstest_write_text(badf, bad[i].text);
        rc = ctl(&out, "import-kvconfig", "--data-dir", data, badf, NULL);
        NSTEST_EXPECT_RC(rc, 4, out);
        NSTEST_EXPECT_IN(out, bad[i].expect);
        NSTEST_EXPECT_IN(out, "nothing was imported");
        free(out);
    }
    assert_int_equal(ctl(NULL, "dump", "--data-dir", data, "-o", d2, "--no-timestamp", NULL), 0);
    size_t l1, l2;
    t1 = read_text(d1, &l1);
    char *t2 = read_text(d2, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(t1, t2, l1);
    free(t1);
    free(t2);

    /* only into a stopped server's directory; the server then serves it */
    nstest_server_t srv;
    assert_int_equal(nstest_server_start(&srv, dir, NULL), 0);
    rc = ctl(&out, "import-kvconfig", "--data-dir", data, good, NULL);
    NSTEST_EXPECT_RC(rc, 3, out);
    free(out);
    char ns[64];
    snprintf(ns, sizeof ns, "127.0.0.1:%d", srv.port);
    rc = ctl(&out, "kv", "get", "myNs", "k2", "--ns", ns, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    assert_string_equal(out, "v2\n");
    free(out);
    nstest_server_stop(&srv, SIGKILL);

    free(good);
    free(badf);
    free(d1);
    free(d2);
    free(data);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_round_trip), cmocka_unit_test(test_restore_broken_documents),
        cmocka_unit_test(test_audit_history),    cmocka_unit_test(test_backup_under_load),
        cmocka_unit_test(test_verify_and_stat),  cmocka_unit_test(test_import_kvconfig),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
