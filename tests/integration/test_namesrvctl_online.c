/* test_namesrvctl_online.c - every online namesrvctl subcommand against two
 * real namesrvd processes (--ns "A;B"): reads from every server shown per
 * server, writes to every one, tables and --json output (numbers as
 * numbers), global options before the command, per-command -h. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

typedef struct {
    char *dir[2];
    nstest_server_t srv[2];
    ns_client_t *c[2]; /* the brokers' registration connections, kept open */
    char addr[2][64];
    char both[160];
} fx_t;

/* Runs namesrvctl (nstest_ctl) with this file's time limit. */
#define ctl(...) nstest_ctl(60000, __VA_ARGS__)

/* Registers broker-a (master, cluster C1, topics T1 T2) with a compressed
 * body on the client's connection. */
static void register_broker_a(ns_client_t *c)
{
    ns_topic_config_t tc[] = {{"T1", 4, 4, 6, 0}, {"T2", 8, 8, 6, 0}};
    ns_regbody_t body = {0};
    body.data_version = (ns_dataversion_t){1, 0, 1700000000000LL};
    body.topics = tc;
    body.n_topics = 2;
    body.has_filter_server_list = true;
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_regbody_encode_compressed(&b, &body, true), NS_OK);
    char crc[32];
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(b.data, b.len));
    const char *kv[] = {"brokerName",  "broker-a", "brokerAddr",         "10.0.0.1:10911",
                        "clusterName", "C1",       "haServerAddr",       "10.0.0.1:10912",
                        "brokerId",    "0",        "enableActingMaster", "false",
                        "compressed",  "true",     "bodyCrc32",          crc,
                        NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_REGISTER_BROKER, kv, b.data, b.len, 10000),
                     NS_RSP_SUCCESS);
    ns_buf_free(&b);
}

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof *fx);
    for (int i = 0; i < 2; i++) {
        fx->dir[i] = nstest_tmpdir(i ? "ctl-on-b" : "ctl-on-a");
        if (fx->dir[i] == NULL || nstest_server_start(&fx->srv[i], fx->dir[i], NULL) != 0)
            return -1;
        fx->c[i] = nstest_connect(&fx->srv[i]);
        register_broker_a(fx->c[i]);
        snprintf(fx->addr[i], sizeof fx->addr[i], "127.0.0.1:%d", fx->srv[i].port);
    }
    snprintf(fx->both, sizeof fx->both, "%s;%s", fx->addr[0], fx->addr[1]);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    for (int i = 0; i < 2; i++) {
        ns_client_close(fx->c[i]);
        nstest_server_stop(&fx->srv[i], SIGKILL);
        nstest_rmtree(fx->dir[i]);
        free(fx->dir[i]);
    }
    free(fx);
    return 0;
}

/* The raw route body a client of version 479 gets. */
static char *route_body(ns_client_t *c, const char *topic)
{
    const char *kv[] = {"topic", topic, NULL};
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    nstest_cmd(&cmd, ext, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv);
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &cmd, 10000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    char *s = strndup((const char *)rsp.cmd.body, rsp.cmd.body_len);
    ns_cmd_msg_free(&rsp);
    return s;
}

static void test_route(void **state)
{
    fx_t *fx = *state;
    char *out = NULL;
    int rc = ctl(&out, "route", "T1", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "C1");
    NSTEST_EXPECT_IN(out, "broker-a");
    NSTEST_EXPECT_IN(out, "10.0.0.1:10911");
    NSTEST_EXPECT_IN(out, "rw-");
    free(out);
    rc = ctl(&out, "route", "T1", "--json", "-n", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    char *raw = route_body(fx->c[0], "T1");
    size_t n = strlen(out);
    assert_true(n > 0 && out[n - 1] == '\n');
    out[n - 1] = 0;
    assert_string_equal(out, raw); /* standard JSON already: printed as it came */
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON_Delete(j);
    free(raw);
    free(out);
    rc = ctl(&out, "route", "NoSuchTopic", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 1, out);
    NSTEST_EXPECT_IN(out, "TOPIC_NOT_EXIST");
    free(out);
    /* reads go to every server: the one that answers is shown, the one that
     * does not is reported and makes the exit 5 */
    char list[128], head[96];
    snprintf(list, sizeof list, "127.0.0.1:1;%s", fx->addr[1]);
    rc = ctl(&out, "route", "T2", "--ns", list, NULL);
    NSTEST_EXPECT_RC(rc, 5, out);
    NSTEST_EXPECT_IN(out, "127.0.0.1:1: ");
    snprintf(head, sizeof head, "== %s\n", fx->addr[1]);
    NSTEST_EXPECT_IN(out, head);
    NSTEST_EXPECT_IN(out, "broker-a");
    free(out);
    /* global options before the command name */
    rc = ctl(&out, "--json", "-n", fx->addr[0], "route", "T1", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    assert_true(out[0] == '{');
    free(out);
    /* per-command help */
    rc = ctl(&out, "route", "-h", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "usage: namesrvctl route TOPIC");
    NSTEST_EXPECT_IN(out, "--timeout MS");
    free(out);
    rc = ctl(&out, "route", "T2", "--ns", "127.0.0.1:1", NULL);
    NSTEST_EXPECT_RC(rc, 5, out);
    NSTEST_EXPECT_IN(out, "no name server could be reached");
    free(out);
    rc = ctl(&out, "route", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 2, out);
    free(out);
    rc = ctl(&out, "route", "T1", "--ns", "nonsense", NULL);
    NSTEST_EXPECT_RC(rc, 2, out);
    free(out);
}

static void test_clusters_and_topics(void **state)
{
    fx_t *fx = *state;
    char *out = NULL;
    int rc = ctl(&out, "clusters", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "C1");
    NSTEST_EXPECT_IN(out, "broker-a");
    NSTEST_EXPECT_IN(out, "10.0.0.1:10911");
    free(out);
    rc = ctl(&out, "clusters", "--json", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 0, out); /* legacy body, normalised: bare numeric keys quoted */
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON *addr = cJSON_GetObjectItem(
        cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(j, "brokerAddrTable"), "broker-a"),
            "brokerAddrs"),
        "0");
    assert_true(cJSON_IsString(addr));
    assert_string_equal(addr->valuestring, "10.0.0.1:10911");
    cJSON_Delete(j);
    free(out);
    /* clusters asks for each address's liveness: the last heartbeat as a
     * number (wall-clock ms), and its state */
    rc = ctl(&out, "clusters", "--json", "--ns", fx->addr[0], NULL);
    j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON *live = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "brokerLiveTable"), "10.0.0.1:10911");
    assert_non_null(live);
    cJSON *last = cJSON_GetObjectItem(live, "lastUpdateTimestamp");
    assert_true(cJSON_IsNumber(last));
    long long now = (long long)time(NULL) * 1000;
    assert_true(last->valuedouble > (double)(now - 60000) &&
                last->valuedouble < (double)(now + 60000));
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(live, "heartbeatTimeoutMillis")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(live, "onGrace")));
    cJSON_Delete(j);
    free(out);
    rc = ctl(&out, "clusters", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "LAST HEARTBEAT");
    NSTEST_EXPECT_IN(out, "alive, timeout");
    free(out);
    rc = ctl(&out, "topics", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    assert_string_equal(out, "T1\nT2\n");
    free(out);
    rc = ctl(&out, "topics", "--cluster", "C1", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    assert_string_equal(out, "T1\nT2\n");
    free(out);
    rc = ctl(&out, "topics", "--cluster", "Nope", "--json", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    assert_string_equal(out, "{\"topicList\":[]}\n");
    free(out);
}

static void test_kv(void **state)
{
    fx_t *fx = *state;
    char *out = NULL;
    int rc = ctl(&out, "kv", "put", "NS", "key one", "value = 1", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, fx->addr[0]);
    NSTEST_EXPECT_IN(out, fx->addr[1]);
    free(out);
    for (int i = 0; i < 2; i++) { /* written to every server */
        rc = ctl(&out, "kv", "get", "NS", "key one", "--ns", fx->addr[i], NULL);
        NSTEST_EXPECT_RC(rc, 0, out);
        assert_string_equal(out, "value = 1\n");
        free(out);
    }
    rc = ctl(&out, "kv", "put", "NS", "k2", "-dash", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 2, out); /* "-dash" looks like an option */
    free(out);
    rc = ctl(&out, "kv", "put", "--ns", fx->both, "--", "NS", "k2", "-dash", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    rc = ctl(&out, "kv", "list", "NS", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    assert_string_equal(out, "k2=-dash\nkey one=value = 1\n");
    free(out);
    /* asked of both: each answer under its server */
    char want_list[512];
    snprintf(want_list, sizeof want_list,
             "== %s\nk2=-dash\nkey one=value = 1\n\n== %s\nk2=-dash\nkey one=value = 1\n",
             fx->addr[0], fx->addr[1]);
    rc = ctl(&out, "kv", "list", "NS", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    assert_string_equal(out, want_list);
    free(out);
    rc = ctl(&out, "kv", "list", "NS", "--json", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "table"), "k2")->valuestring,
                        "-dash");
    cJSON_Delete(j);
    free(out);
    rc = ctl(&out, "kv", "get", "NS", "k2", "--json", "--ns", fx->addr[1], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    assert_string_equal(out, "{\"value\":\"-dash\"}\n");
    free(out);
    /* JSON from two servers: one line per server, saying whose it is */
    rc = ctl(&out, "kv", "get", "NS", "k2", "--json", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    char *nl = strchr(out, '\n');
    assert_non_null(nl);
    *nl = 0;
    for (int i = 0; i < 2; i++) {
        j = cJSON_Parse(i ? nl + 1 : out);
        assert_non_null(j);
        assert_string_equal(cJSON_GetObjectItem(j, "server")->valuestring, fx->addr[i]);
        assert_string_equal(
            cJSON_GetObjectItem(cJSON_GetObjectItem(j, "result"), "value")->valuestring, "-dash");
        cJSON_Delete(j);
    }
    free(out);
    rc = ctl(&out, "kv", "delete", "NS", "k2", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    for (int i = 0; i < 2; i++) {
        rc = ctl(&out, "kv", "get", "NS", "k2", "--ns", fx->addr[i], NULL);
        NSTEST_EXPECT_RC(rc, 1, out);
        NSTEST_EXPECT_IN(out, "QUERY_NOT_FOUND");
        free(out);
    }
    rc = ctl(&out, "kv", "list", "NoNamespace", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 1, out);
    free(out);
    /* a write with one server down: the other is written, the exit says so */
    char list[128];
    snprintf(list, sizeof list, "127.0.0.1:1;%s", fx->addr[1]);
    rc = ctl(&out, "kv", "put", "NS", "k3", "v3", "--ns", list, NULL);
    NSTEST_EXPECT_RC(rc, 5, out);
    free(out);
    rc = ctl(&out, "kv", "get", "NS", "k3", "--ns", fx->addr[1], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    assert_string_equal(out, "v3\n");
    free(out);
    rc = ctl(&out, "kv", "frob", "NS", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 2, out);
    free(out);
}

static void test_perms_and_delete_topic(void **state)
{
    fx_t *fx = *state;
    char *out = NULL;
    int rc = ctl(&out, "wipe-perm", "broker-a", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    char want[160];
    for (int i = 0; i < 2; i++) {
        snprintf(want, sizeof want, "%s: OK, wipeTopicCount=2", fx->addr[i]);
        NSTEST_EXPECT_IN(out, want);
    }
    free(out);
    for (int i = 0; i < 2; i++) {
        char *raw = route_body(fx->c[i], "T1");
        assert_non_null(strstr(raw, "\"perm\":4"));
        free(raw);
    }
    rc = ctl(&out, "add-perm", "broker-a", "--json", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "\"addTopicCount\":2"); /* a number, not a string */
    free(out);
    for (int i = 0; i < 2; i++) {
        char *raw = route_body(fx->c[i], "T1");
        assert_non_null(strstr(raw, "\"perm\":6"));
        free(raw);
    }
    /* Java answers SUCCESS with a count of 0 for a broker it does not know:
     * namesrvctl says so and exits 1 */
    rc = ctl(&out, "wipe-perm", "nobody", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 1, out);
    NSTEST_EXPECT_IN(out, "wipeTopicCount=0");
    NSTEST_EXPECT_IN(out, "no topic of that broker was changed");
    free(out);
    rc = ctl(&out, "add-perm", "nobody", "--json", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 1, out);
    NSTEST_EXPECT_IN(out, "\"addTopicCount\":0");
    free(out);
    rc = ctl(&out, "delete-topic", "T2", "--cluster", "C1", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    for (int i = 0; i < 2; i++) {
        rc = ctl(&out, "route", "T2", "--ns", fx->addr[i], NULL);
        NSTEST_EXPECT_RC(rc, 1, out);
        free(out);
    }
    rc = ctl(&out, "delete-topic", "T1", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    rc = ctl(&out, "topics", "--ns", fx->addr[1], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    assert_string_equal(out, "");
    free(out);
}

static void test_config(void **state)
{
    fx_t *fx = *state;
    char *out = NULL;
    char port[64];
    snprintf(port, sizeof port, "listenPort=0\n");
    int rc = ctl(&out, "config", "get", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "clusterTest=false\n");
    NSTEST_EXPECT_IN(out, port);
    free(out);
    rc = ctl(&out, "config", "set", "clusterTest", "true", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    rc = ctl(&out, "config", "set", "productEnvName", " env with = and \\", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    for (int i = 0; i < 2; i++) {
        rc = ctl(&out, "config", "get", "--json", "--ns", fx->addr[i], NULL);
        NSTEST_EXPECT_RC(rc, 0, out);
        cJSON *j = cJSON_Parse(out);
        assert_non_null(j);
        /* JSON types: booleans and integers as such, strings as strings */
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "clusterTest")));
        assert_true(cJSON_IsNumber(cJSON_GetObjectItem(j, "listenPort")));
        assert_true(cJSON_IsNumber(cJSON_GetObjectItem(j, "adminAuditRetention")));
        assert_true(cJSON_IsString(cJSON_GetObjectItem(j, "dataDir")));
        assert_string_equal(cJSON_GetObjectItem(j, "productEnvName")->valuestring,
                            " env with = and \\");
        cJSON_Delete(j);
        free(out);
    }
    rc = ctl(&out, "config", "set", "kvConfigPath", "/tmp/x", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 1, out);
    NSTEST_EXPECT_IN(out, "NO_PERMISSION");
    free(out);
    rc = ctl(&out, "config", "set", "clusterTest", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 2, out);
    free(out);
    /* a key neither Java nor namesrvd knows is refused; a Java key with no
     * effect here is accepted */
    rc = ctl(&out, "config", "set", "noSuchKey", "1", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 1, out);
    NSTEST_EXPECT_IN(out, "unknown key 'noSuchKey'");
    free(out);
    rc = ctl(&out, "config", "set", "serverWorkerThreads", "32", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    /* config get from both servers: one section per server */
    rc = ctl(&out, "config", "get", "--ns", fx->both, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    for (int i = 0; i < 2; i++) {
        char head[96];
        snprintf(head, sizeof head, "== %s\n", fx->addr[i]);
        NSTEST_EXPECT_IN(out, head);
    }
    free(out);
}

/* Every common option may stand before the command (the help says
 * "anywhere on the line"), an access key without a secret is a usage error
 * here rather than a bad signature at the server, and `user list` has a
 * header line. */
static void test_options_anywhere(void **state)
{
    fx_t *fx = *state;
    char *out = NULL;
    int rc = ctl(&out, "--tls-ca", "/nonexistent/ca.pem", "--ns", fx->addr[0], "clusters", NULL);
    assert_true(strstr(out, "unknown command") == NULL);
    NSTEST_EXPECT_RC(rc, 5, out); /* the CA file cannot be read: an I/O error */
    free(out);
    rc = ctl(&out, "--timeout=3000", "--json", "-n", fx->addr[0], "topics", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "T1");
    free(out);
    rc = ctl(&out, "--access-key", "ak", "--ns", fx->addr[0], "topics", NULL);
    NSTEST_EXPECT_RC(rc, 2, out);
    NSTEST_EXPECT_IN(out, "--access-key needs --secret-key");
    free(out);
    rc = ctl(&out, "kv", "list", "NS", "--access-key=ak", "--ns", fx->addr[0], NULL);
    NSTEST_EXPECT_RC(rc, 2, out);
    free(out);
    /* user list: offline with -d like every other offline command, and a header */
    nstest_server_stop(&fx->srv[1], SIGTERM);
    rc = ctl(&out, "user", "add", "admin1", "--role", "admin", "--secret", "s3cret", "-d",
             fx->dir[1], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    rc = ctl(&out, "user", "list", "-d", fx->dir[1], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "ACCESS KEY");
    NSTEST_EXPECT_IN(out, "admin1");
    assert_true(strstr(out, "ACCESS KEY") < strstr(out, "admin1"));
    free(out);
    rc = ctl(&out, "user", "list", "--json", "-d", fx->dir[1], NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    assert_true(strstr(out, "ACCESS KEY") == NULL);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_route, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clusters_and_topics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_perms_and_delete_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_options_anywhere, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
