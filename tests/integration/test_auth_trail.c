/* test_auth_trail.c - where authentication refusals go, through the real
 * namesrvd with authMode=all: each refusal (unsigned, wrong secret, unknown
 * key, disabled user, address not allowed, role too low, broker name not
 * granted, a signed read replayed under another code) is a record of the
 * admin audit trail (`namesrvctl audit --admin`) with the peer address of
 * the connection that sent it, the access key and the check that refused,
 * and never a secret; `namesrvctl user refusals` is the filtered view; the
 * refusal counters of /metrics move; the trail's rate limit counts what it
 * leaves out. The test_auth.c tests cover the same checks in writes and off. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "ns/client.h"
#include "ns/clock.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/httpget.h"
#include "ns/sign.h"

#define ctl(...) nstest_ctl(60000, __VA_ARGS__)
#define PROMTOOL "/usr/bin/promtool"

typedef struct {
    char *dir;
    nstest_server_t srv;
    int http_port;
} fx_t;

static void add_user(const char *data, const char *ak, const char *sk, const char *role,
                     const char *extra1, const char *extra2)
{
    char *out = NULL;
    int rc = ctl(&out, "user", "add", ak, "--data-dir", data, "--role", role, "--secret", sk,
                 extra1, extra2, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
}

static int read_port(const char *path)
{
    uint8_t *p = NULL;
    size_t n = 0;
    for (int i = 0; i < 100; i++) {
        if (nstest_read_file(path, &p, &n) == 0) {
            int port = atoi((const char *)p);
            free(p);
            return port;
        }
        nstest_sleep_ms(50);
    }
    return 0;
}

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof *fx);
    char data[4200], hport[4200], a_port[4300];
    fx->dir = nstest_tmpdir("authtrail");
    snprintf(data, sizeof data, "%s/data", fx->dir);
    add_user(data, "admin1", "adminsecret", "admin", NULL, NULL);
    add_user(data, "brk1", "brokersecret", "broker", "--brokers", "C1/broker-a");
    add_user(data, "cli1", "clientsecret", "client", NULL, NULL);
    add_user(data, "off1", "offsecret", "client", "--disable", NULL);
    add_user(data, "far1", "farsecret", "client", "--allow", "10.0.0.0/8,::1");
    add_user(data, "near1", "nearsecret", "client", "--allow", "10.0.0.0/8,127.0.0.0/8");
    snprintf(hport, sizeof hport, "%s/http.port", fx->dir);
    snprintf(a_port, sizeof a_port, "--httpPortFile=%s", hport);
    const char *args[] = {"--authMode=all", "--authPenaltyMaxMillis=0", "--httpListen=127.0.0.1:0",
                          a_port, NULL};
    if (nstest_server_start(&fx->srv, fx->dir, args) != 0)
        return -1;
    fx->http_port = read_port(hport);
    *state = fx;
    return fx->http_port > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    nstest_server_stop(&fx->srv, SIGKILL);
    nstest_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

/* The local port of a client's connection: the server records ip:port. */
static int local_port(ns_client_t *c)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(ns_client_fd(c), (struct sockaddr *)&sa, &len), 0);
    return ntohs(sa.sin_port);
}

/* One request on a new connection (signed when ak is set); the reply's
 * code; *port gets the connection's local port. */
static int call_as(fx_t *fx, const char *ak, const char *sk, int code, const char *const *kv,
                   const char *body, int *port)
{
    ns_client_t *c = nstest_connect(&fx->srv);
    if (ak)
        assert_int_equal(ns_client_set_credentials(c, ak, sk), NS_OK);
    *port = local_port(c);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    nstest_call(c, code, kv, body, body ? strlen(body) : 0, NS_VERSION_V5_3_3, 10000, &rsp);
    int got = rsp.cmd.code;
    ns_cmd_msg_free(&rsp);
    ns_client_close(c);
    return got;
}

/* `namesrvctl audit --admin --json`: the refused records, as a JSON array
 * (caller deletes), once there are `want` of them (or after 10 s). */
static cJSON *refused_records(fx_t *fx, int want)
{
    cJSON *arr = NULL;
    for (int i = 0; i < 100; i++) {
        char *out = NULL;
        int rc = ctl(&out, "audit", "--admin", "--json", "--data-dir", fx->srv.data, NULL);
        NSTEST_EXPECT_RC(rc, 0, out);
        cJSON_Delete(arr);
        arr = cJSON_CreateArray();
        for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
            cJSON *rec = cJSON_Parse(line);
            const char *res = cJSON_GetStringValue(cJSON_GetObjectItem(rec, "result"));
            if (res && strcmp(res, "refused") == 0)
                cJSON_AddItemToArray(arr, rec);
            else
                cJSON_Delete(rec);
        }
        free(out);
        if (cJSON_GetArraySize(arr) >= want)
            break;
        nstest_sleep_ms(100); /* records are written by the writer, just after */
    }
    return arr;
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

typedef struct {
    const char *ak, *sk;
    int code;
    const char *const *kv;
    const char *body;
    const char *why; /* detail.auth */
    const char *remark;
    int port;
} refusal_case_t;

static const char *const route_kv[] = {"topic", "T1", NULL};
static const char *const kv_put[] = {"namespace", "NS", "key", "k", "value", "v", NULL};
static const char *const reg_b[] = {"brokerName",  "broker-b",  "brokerAddr", "127.0.0.1:10921",
                                    "clusterName", "C1",        "brokerId",   "0",
                                    "bodyCrc32",   "123456789", NULL};
static const char *const user_add[] = {
    "userAccessKey", "evil", "userSecretKey", "topsecret9", "role", "admin", NULL};
static const char REG_BODY[] = "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{}},"
                               "\"filterServerList\":[]}";

/* A client's signed lookup replayed as DELETE_TOPIC_IN_NAMESRV: the
 * signature verifies (the code is not signed), the role refuses it. */
static int replayed(fx_t *fx, int *port)
{
    ns_ext_field_t ext[] = {ns_ext_field("topic", "T1")};
    ns_cmd_t cmd;
    ns_signed_t s;
    ns_buf_t scratch = NS_BUF_INIT;
    ns_cmd_request_init(&cmd, NS_REQ_GET_ROUTEINFO_BY_TOPIC, ext, 1);
    assert_int_equal(ns_sign_request(&cmd, "cli1", "clientsecret", &scratch, &s), NS_OK);
    s.cmd.code = NS_REQ_DELETE_TOPIC_IN_NAMESRV;
    ns_client_t *c = nstest_connect(&fx->srv);
    *port = local_port(c);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &s.cmd, 10000, &rsp), NS_OK);
    int got = rsp.cmd.code;
    ns_cmd_msg_free(&rsp);
    ns_client_close(c);
    ns_signed_free(&s);
    ns_buf_free(&scratch);
    return got;
}

static void test_each_refusal_in_the_trail(void **state)
{
    fx_t *fx = *state;
    refusal_case_t cases[] = {
        {NULL, NULL, NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, "unsigned",
         "GET_ROUTEINFO_BY_TOPIC needs a signed request", 0},
        {"admin1", "wrongsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, "bad_signature",
         "signature check failed", 0},
        {"nobody", "adminsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, "bad_signature",
         "signature check failed", 0},
        {"off1", "offsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, "bad_signature",
         "signature check failed", 0},
        {"far1", "farsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, "address",
         "source address 127.0.0.1 is not allowed", 0},
        {"cli1", "clientsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, "role",
         "PUT_KV_CONFIG needs role admin; this AccessKey has role client", 0},
        {"brk1", "brokersecret", NS_REQ_REGISTER_BROKER, reg_b, REG_BODY, "broker_name",
         "not granted broker name 'broker-b' in cluster 'C1'", 0},
        {NULL, NULL, NS_REQ_NS_USER_ADD, user_add, NULL, "unsigned",
         "needs a signed request (AccessKey and Signature) of a user with role admin", 0},
    };
    const size_t n = sizeof cases / sizeof cases[0];
    int port = 0;
    /* allowed requests leave no refusal */
    assert_int_equal(
        call_as(fx, "cli1", "clientsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, &port),
        NS_RSP_TOPIC_NOT_EXIST);
    assert_int_equal(
        call_as(fx, "admin1", "adminsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, &port),
        NS_RSP_SUCCESS);
    assert_int_equal(
        call_as(fx, "near1", "nearsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, &port),
        NS_RSP_TOPIC_NOT_EXIST); /* its allowlist has 127.0.0.0/8 */
    for (size_t i = 0; i < n; i++) {
        refusal_case_t *k = &cases[i];
        int got = call_as(fx, k->ak, k->sk, k->code, k->kv, k->body, &k->port);
        if (got != NS_RSP_NO_PERMISSION)
            fail_msg("case %zu (%s): code %d, expected NO_PERMISSION", i, k->why, got);
    }
    int replay_port = 0;
    assert_int_equal(replayed(fx, &replay_port), NS_RSP_NO_PERMISSION);

    cJSON *recs = refused_records(fx, (int)n + 1);
    char *text = cJSON_PrintUnformatted(recs);
    assert_int_equal(cJSON_GetArraySize(recs), (int)n + 1);
    /* never a secret, nor the body of the refused registration */
    static const char *const secrets[] = {"adminsecret",  "clientsecret",
                                          "brokersecret", "farsecret",
                                          "topsecret9",   "topicConfigSerializeWrapper"};
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
        if (strstr(text, secrets[i]))
            fail_msg("'%s' is in the trail: %s", secrets[i], text);
    for (size_t i = 0; i <= n; i++) {
        const cJSON *rec = cJSON_GetArrayItem(recs, (int)i);
        char peer[64];
        const char *why = i < n ? cases[i].why : "role";
        const char *remark = i < n ? cases[i].remark : "DELETE_TOPIC_IN_NAMESRV needs role admin";
        const char *ak = i < n ? cases[i].ak : "cli1";
        snprintf(peer, sizeof peer, "127.0.0.1:%d", i < n ? cases[i].port : replay_port);
        if (str_at(rec, "peer", NULL) == NULL || strcmp(str_at(rec, "peer", NULL), peer) != 0)
            fail_msg("record %zu: peer %s, expected %s", i, str_at(rec, "peer", NULL), peer);
        assert_string_equal(str_at(rec, "detail", "auth"), why);
        const char *got_remark = str_at(rec, "remark", NULL);
        if (got_remark == NULL || strstr(got_remark, remark) == NULL)
            fail_msg("record %zu: remark '%s', expected '%s'", i, got_remark, remark);
        assert_int_equal(cJSON_GetObjectItem(rec, "responseCode")->valueint, NS_RSP_NO_PERMISSION);
        if (ak) {
            assert_string_equal(str_at(rec, "detail", "accessKey"), ak);
            assert_string_equal(str_at(rec, "fields", "AccessKey"), ak);
            assert_string_equal(str_at(rec, "fields", "Signature"), "(redacted)");
        } else {
            assert_true(
                cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "detail"), "accessKey")));
        }
        assert_null(cJSON_GetObjectItem(rec, "body"));
    }
    assert_string_equal(str_at(cJSON_GetArrayItem(recs, (int)n - 1), "fields", "userSecretKey"),
                        "(redacted)");
    assert_string_equal(str_at(cJSON_GetArrayItem(recs, (int)n), "request", NULL),
                        "DELETE_TOPIC_IN_NAMESRV");
    free(text);
    cJSON_Delete(recs);

    /* the table view and `user refusals` show the same records */
    char *out = NULL, want[128];
    int rc = ctl(&out, "audit", "--admin", "--data-dir", fx->srv.data, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    snprintf(want, sizeof want, "127.0.0.1:%d", cases[6].port);
    NSTEST_EXPECT_IN(out, want);
    NSTEST_EXPECT_IN(out, "REGISTER_BROKER");
    NSTEST_EXPECT_IN(out, "\"auth\":\"broker_name\"");
    free(out);
    rc = ctl(&out, "user", "refusals", "--data-dir", fx->srv.data, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    size_t lines = 0;
    for (const char *p = out; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    if (lines != n + 1)
        fail_msg("user refusals: %zu lines, expected %zu:\n%s", lines, n + 1, out);
    snprintf(want, sizeof want, "127.0.0.1:%d REGISTER_BROKER brk1 broker_name: ", cases[6].port);
    NSTEST_EXPECT_IN(out, want);
    snprintf(want, sizeof want, "127.0.0.1:%d DELETE_TOPIC_IN_NAMESRV cli1 role: ", replay_port);
    NSTEST_EXPECT_IN(out, want);
    assert_null(strstr(out, "PUT_KV_CONFIG admin1 role")); /* the allowed put is not a refusal */
    free(out);
}

/* The value of one series in a scrape (-1 when absent). */
static double series(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

static char *scrape(fx_t *fx)
{
    ns_buf_t body = NS_BUF_INIT;
    int status = 0;
    assert_int_equal(ns_http_get("127.0.0.1", fx->http_port, "/metrics", 10000, &status, &body),
                     NS_OK);
    assert_int_equal(status, 200);
    ns_buf_append_u8(&body, 0);
    return (char *)ns_buf_steal(&body, NULL);
}

static void promtool_check(fx_t *fx, const char *text)
{
    char path[4200], cmd[8600];
    snprintf(path, sizeof path, "%s/scrape.txt", fx->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s check metrics < '%s' > '%s.out' 2>&1", PROMTOOL, path, path);
    if (system(cmd) != 0)
        fail_msg("promtool check metrics failed on the scrape (see %s.out)", path);
}

#define UNSIGNED "namesrv_auth_refusals_total{reason=\"unsigned\"}"
#define ROLE "namesrv_auth_refusals_total{reason=\"role\"}"
#define CHECKS "namesrv_auth_checks_total"

static void test_metrics_move(void **state)
{
    fx_t *fx = *state;
    char *before = scrape(fx);
    promtool_check(fx, before);
    assert_true(series(before, "namesrv_auth_mode{mode=\"all\"}") == 1);
    assert_true(series(before, "namesrv_auth_mode{mode=\"off\"}") == 0);
    double u0 = series(before, UNSIGNED), r0 = series(before, ROLE), c0 = series(before, CHECKS);
    assert_true(u0 >= 0 && r0 >= 0 && c0 >= 0);
    assert_true(series(before, "namesrv_auth_refusals_total{reason=\"broker_name\"}") == 0);
    int port = 0;
    assert_int_equal(call_as(fx, NULL, NULL, NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, &port),
                     NS_RSP_NO_PERMISSION);
    assert_int_equal(call_as(fx, "cli1", "clientsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, &port),
                     NS_RSP_NO_PERMISSION);
    assert_int_equal(
        call_as(fx, "cli1", "clientsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, &port),
        NS_RSP_TOPIC_NOT_EXIST);
    char *after = scrape(fx);
    promtool_check(fx, after);
    if (series(after, UNSIGNED) != u0 + 1 || series(after, ROLE) != r0 + 1 ||
        series(after, CHECKS) != c0 + 3)
        fail_msg("unsigned %g -> %g, role %g -> %g, checks %g -> %g (want +1, +1, +3)", u0,
                 series(after, UNSIGNED), r0, series(after, ROLE), c0, series(after, CHECKS));
    free(before);
    free(after);
}

/* Refusals pipelined on one connection: the trail takes at most 20 a
 * second, and every one left out is counted on /metrics. */
static void test_trail_rate_limit(void **state)
{
    fx_t *fx = *state;
    enum { N = 40 };
    ns_client_t *c = nstest_connect(&fx->srv);
    ns_ext_field_t ext[] = {ns_ext_field("topic", "T1")};
    int64_t t0 = ns_clock_mono_ms();
    for (int i = 0; i < N; i++) {
        ns_cmd_t cmd;
        ns_cmd_request_init(&cmd, NS_REQ_GET_ROUTEINFO_BY_TOPIC, ext, 1);
        cmd.opaque = i + 1;
        assert_int_equal(ns_client_send(c, &cmd), NS_OK);
    }
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    for (int i = 0; i < N; i++) {
        assert_int_equal(ns_client_recv(c, 10000, &rsp), NS_OK);
        assert_int_equal(rsp.cmd.code, NS_RSP_NO_PERMISSION);
    }
    int64_t took = ns_clock_mono_ms() - t0;
    ns_cmd_msg_free(&rsp);
    ns_client_close(c);
    char *text = scrape(fx);
    double left_out = series(text, "namesrv_auth_unrecorded_refusals_total");
    free(text);
    cJSON *recs = refused_records(fx, N - (int)left_out);
    int recorded = cJSON_GetArraySize(recs);
    cJSON_Delete(recs);
    if (recorded + (int)left_out != N || recorded > 20 * (int)(took / 1000 + 2))
        fail_msg("%d refusals in %lld ms: %d recorded, %g left out", N, (long long)took, recorded,
                 left_out);
    if (took < 900 && recorded > 20 * 2)
        fail_msg("%d recorded within %lld ms: the limit is 20 a second", recorded, (long long)took);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_each_refusal_in_the_trail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_move, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trail_rate_limit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
