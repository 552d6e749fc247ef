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
#include <sys/wait.h>
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
#include "nstest_admin.h"
#include "nstest_auth.h"
#include "ns/client.h"
#include "ns/clock.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/httpget.h"
#include "ns/sign.h"

#define ctl(...) nstest_ctl(60000, __VA_ARGS__)

typedef struct {
    nstest_fx_t base;
    int http_port;
} fx_t;

static int setup(void **state)
{
    if (nstest_fx_setup_sized(state, sizeof(fx_t), "authtrail") != 0)
        return -1;
    fx_t *fx = *state;
    char data[4200];
    snprintf(data, sizeof data, "%s/data", fx->base.dir);
    nstest_users_add(data, true);
    nstest_user_add(data, "near1", "nearsecret", "client", "--allow", "10.0.0.0/8,127.0.0.0/8");
    const char *args[] = {"--authMode=all", "--authPenaltyMaxMillis=0", NULL};
    return nstest_server_start_http(&fx->base.srv, fx->base.dir, args, &fx->http_port);
}

/* One request on a new connection (nstest_call_as); *port gets its local
 * port. */
static int call_as(fx_t *fx, const char *ak, const char *sk, int code, const char *const *kv,
                   const char *body, int *port)
{
    return nstest_call_as(&fx->base.srv, ak, sk, code, kv, body, NULL, 0, port);
}

/* `namesrvctl audit --admin --json`: the refused records, as a JSON array
 * (caller deletes), once there are `want` of them (or after 10 s). */
static cJSON *refused_records(fx_t *fx, int want)
{
    cJSON *arr = NULL;
    for (int i = 0; i < 100; i++) {
        char *out = NULL;
        int rc = ctl(&out, "audit", "--admin", "--json", "--data-dir", fx->base.srv.data, NULL);
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

/* A request: its code, extFields and body (NULL: none). */
typedef struct {
    int code;
    const char *const *kv;
    const char *body;
} req_t;

/* A refused request sent as ak/sk (NULL: unsigned): the check that
 * refuses it (detail.auth of its record) and what its remark holds. */
typedef struct {
    const char *ak, *sk;
    const req_t *req;
    const char *why;
    const char *remark;
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
static const req_t ROUTE = {NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL};
static const req_t PUT = {NS_REQ_PUT_KV_CONFIG, kv_put, NULL};
static const req_t REG_B = {NS_REQ_REGISTER_BROKER, reg_b, REG_BODY};
static const req_t USER_ADD = {NS_REQ_NS_USER_ADD, user_add, NULL};

/* A client's signed lookup replayed as DELETE_TOPIC_IN_NAMESRV: the
 * signature verifies (the code is not signed), the role refuses it. */
static int replayed(fx_t *fx, int *port)
{
    nstest_replay_t rp;
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    nstest_replay_send(&rp, &fx->base.srv, &rsp);
    *port = rp.port;
    int got = rsp.cmd.code;
    ns_cmd_msg_free(&rsp);
    nstest_replay_close(&rp);
    return got;
}

static void test_each_refusal_in_the_trail(void **state)
{
    fx_t *fx = *state;
    static const refusal_case_t cases[] = {
        {NULL, NULL, &ROUTE, "unsigned", "GET_ROUTEINFO_BY_TOPIC needs a signed request"},
        {"admin1", "wrongsecret", &PUT, "bad_signature", "signature check failed"},
        {"nobody", "adminsecret", &PUT, "bad_signature", "signature check failed"},
        {"off1", "offsecret", &ROUTE, "bad_signature", "signature check failed"},
        {"far1", "farsecret", &ROUTE, "address", "source address 127.0.0.1 is not allowed"},
        {"cli1", "clientsecret", &PUT, "role",
         "PUT_KV_CONFIG needs role admin; this AccessKey has role client"},
        {"brk1", "brokersecret", &REG_B, "broker_name",
         "not granted broker name 'broker-b' in cluster 'C1'"},
        {NULL, NULL, &USER_ADD, "unsigned",
         "needs a signed request (AccessKey and Signature) of a user with role admin"},
    };
    const size_t n = sizeof cases / sizeof cases[0];
    int ports[sizeof cases / sizeof cases[0]] = {0}; /* each case's local port */
    /* allowed requests leave no refusal (near1's allowlist has 127.0.0.0/8) */
    const nstest_call_case_t allowed[] = {
        {"cli1", "clientsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL,
         NS_RSP_TOPIC_NOT_EXIST, NULL, NULL},
        {"admin1", "adminsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, NS_RSP_SUCCESS, NULL, NULL},
        {"near1", "nearsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL,
         NS_RSP_TOPIC_NOT_EXIST, NULL, NULL},
    };
    NSTEST_EXPECT_CALLS(&fx->base.srv, allowed);
    for (size_t i = 0; i < n; i++) {
        const refusal_case_t *k = &cases[i];
        int got = call_as(fx, k->ak, k->sk, k->req->code, k->req->kv, k->req->body, &ports[i]);
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
        snprintf(peer, sizeof peer, "127.0.0.1:%d", i < n ? ports[i] : replay_port);
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
    int rc = ctl(&out, "audit", "--admin", "--data-dir", fx->base.srv.data, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    snprintf(want, sizeof want, "127.0.0.1:%d", ports[6]);
    NSTEST_EXPECT_IN(out, want);
    NSTEST_EXPECT_IN(out, "REGISTER_BROKER");
    NSTEST_EXPECT_IN(out, "\"auth\":\"broker_name\"");
    free(out);
    rc = ctl(&out, "user", "refusals", "--data-dir", fx->base.srv.data, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    size_t lines = 0;
    for (const char *p = out; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    if (lines != n + 1)
        fail_msg("user refusals: %zu lines, expected %zu:\n%s", lines, n + 1, out);
    snprintf(want, sizeof want, "127.0.0.1:%d REGISTER_BROKER brk1 broker_name: ", ports[6]);
    NSTEST_EXPECT_IN(out, want);
    snprintf(want, sizeof want, "127.0.0.1:%d DELETE_TOPIC_IN_NAMESRV cli1 role: ", replay_port);
    NSTEST_EXPECT_IN(out, want);
    assert_null(strstr(out, "PUT_KV_CONFIG admin1 role")); /* the allowed put is not a refusal */
    free(out);
}

#define UNSIGNED "namesrv_auth_refusals_total{reason=\"unsigned\"}"
#define ROLE "namesrv_auth_refusals_total{reason=\"role\"}"
#define CHECKS "namesrv_auth_checks_total"

static void test_metrics_move(void **state)
{
    fx_t *fx = *state;
    char *before = nstest_scrape(fx->http_port, fx->base.dir);
    assert_true(nstest_series(before, "namesrv_auth_mode{mode=\"all\"}", -1) == 1);
    assert_true(nstest_series(before, "namesrv_auth_mode{mode=\"off\"}", -1) == 0);
    double u0 = nstest_series(before, UNSIGNED, -1), r0 = nstest_series(before, ROLE, -1),
           c0 = nstest_series(before, CHECKS, -1);
    assert_true(u0 >= 0 && r0 >= 0 && c0 >= 0);
    assert_true(nstest_series(before, "namesrv_auth_refusals_total{reason=\"broker_name\"}", -1) ==
                0);
    const nstest_call_case_t calls[] = {
        {NULL, NULL, NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, NS_RSP_NO_PERMISSION, NULL,
         NULL},
        {"cli1", "clientsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, NS_RSP_NO_PERMISSION, NULL,
         NULL},
        {"cli1", "clientsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL,
         NS_RSP_TOPIC_NOT_EXIST, NULL, NULL},
    };
    NSTEST_EXPECT_CALLS(&fx->base.srv, calls);
    char *after = nstest_scrape(fx->http_port, fx->base.dir);
    if (nstest_series(after, UNSIGNED, -1) != u0 + 1 || nstest_series(after, ROLE, -1) != r0 + 1 ||
        nstest_series(after, CHECKS, -1) != c0 + 3)
        fail_msg("unsigned %g -> %g, role %g -> %g, checks %g -> %g (want +1, +1, +3)", u0,
                 nstest_series(after, UNSIGNED, -1), r0, nstest_series(after, ROLE, -1), c0,
                 nstest_series(after, CHECKS, -1));
    free(before);
    free(after);
}

#define STORE_ERROR "namesrv_auth_refusals_total{reason=\"store_error\"}"
#define BAD_SIGNATURE "namesrv_auth_refusals_total{reason=\"bad_signature\"}"

/* An AccessKey no user can have is a peer's doing, never the store's: an
 * empty one (what a C++ client without credentials sends) counts as
 * unsigned, one too long for a key as an unknown key, and store_error
 * (which an operator alerts on) does not move. */
static void test_impossible_access_keys(void **state)
{
    fx_t *fx = *state;
    char *before = nstest_scrape(fx->http_port, fx->base.dir);
    double u0 = nstest_series(before, UNSIGNED, -1), b0 = nstest_series(before, BAD_SIGNATURE, -1);
    char big[601];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = 0;
    ns_client_t *c = nstest_connect(&fx->base.srv);
    const char *empty[] = {"AccessKey", "", "Signature", "", "topic", "T1", NULL};
    const char *longk[] = {"AccessKey", big, "Signature", "c2ln", "topic", "T1", NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, empty, NULL, 0, 10000),
                     NS_RSP_NO_PERMISSION);
    assert_int_equal(nstest_call_code(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, longk, NULL, 0, 10000),
                     NS_RSP_NO_PERMISSION);
    ns_client_close(c);
    char *after = nstest_scrape(fx->http_port, fx->base.dir);
    if (nstest_series(after, STORE_ERROR, -1) != 0 ||
        nstest_series(after, UNSIGNED, -1) != u0 + 1 ||
        nstest_series(after, BAD_SIGNATURE, -1) != b0 + 1)
        fail_msg("store_error %g (want 0), unsigned %g -> %g, bad_signature %g -> %g (want +1 "
                 "each)",
                 nstest_series(after, STORE_ERROR, -1), u0, nstest_series(after, UNSIGNED, -1), b0,
                 nstest_series(after, BAD_SIGNATURE, -1));
    assert_int_equal(nstest_log_count(&fx->base.srv, "lmdb:"), 0); /* no store trouble logged */
    free(before);
    free(after);
}

/* Refusals pipelined on one connection: the trail takes at most 20 a
 * second, and every one left out is counted on /metrics. */
static void test_trail_rate_limit(void **state)
{
    fx_t *fx = *state;
    enum { N = 40 };
    ns_client_t *c = nstest_connect(&fx->base.srv);
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
    char *text = nstest_scrape(fx->http_port, NULL);
    double left_out = nstest_series(text, "namesrv_auth_unrecorded_refusals_total", -1);
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

/* User management is an admin act like any other: every USER_ADD,
 * USER_UPDATE and USER_DELETE that succeeds is a record of the trail with
 * the peer and the signer (the AccessKey field), never the secret; the
 * unsigned first-admin bootstrap too. */
static void test_user_management_in_the_trail(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("usertrail");
    nstest_server_t srv;
    assert_int_equal(nstest_server_start(&srv, dir, NULL), 0);
    static const char *const first[] = {
        "userAccessKey", "root1", "userSecretKey", "rootsecret1", "role", "admin", NULL};
    static const char *const second[] = {
        "userAccessKey", "ops2", "userSecretKey", "opssecret22", "role", "client", NULL};
    static const char *const upd[] = {"userAccessKey", "ops2", "role", "admin", NULL};
    static const char *const del[] = {"userAccessKey", "ops2", NULL};
    char remark[256];
    int port = 0;
    /* the first admin of an empty table: unsigned, from loopback */
    assert_int_equal(nstest_call_as(&srv, NULL, NULL, NS_REQ_NS_USER_ADD, first, NULL, remark,
                                    sizeof remark, &port),
                     NS_RSP_SUCCESS);
    assert_int_equal(nstest_call_as(&srv, "root1", "rootsecret1", NS_REQ_NS_USER_ADD, second, NULL,
                                    remark, sizeof remark, &port),
                     NS_RSP_SUCCESS);
    assert_int_equal(nstest_call_as(&srv, "root1", "rootsecret1", NS_REQ_NS_USER_UPDATE, upd, NULL,
                                    remark, sizeof remark, &port),
                     NS_RSP_SUCCESS);
    assert_int_equal(nstest_call_as(&srv, "root1", "rootsecret1", NS_REQ_NS_USER_DELETE, del, NULL,
                                    remark, sizeof remark, &port),
                     NS_RSP_SUCCESS);
    assert_int_equal(WEXITSTATUS(nstest_server_stop(&srv, SIGTERM)), 0);
    cJSON *trail = nstest_admin_trail(srv.data);
    int adds = 0;
    const cJSON *rec;
    cJSON_ArrayForEach(rec, trail)
    {
        const char *req = str_at(rec, "request", NULL);
        if (req == NULL || strncmp(req, "NS_USER_", 8) != 0)
            continue;
        assert_string_equal(str_at(rec, "result", NULL), "ok");
        assert_non_null(strstr(str_at(rec, "peer", NULL), "127.0.0.1:"));
        const char *ak = nstest_trail_field((cJSON *)rec, "userAccessKey");
        const char *signer = nstest_trail_field((cJSON *)rec, "AccessKey");
        if (strcmp(req, "NS_USER_ADD") == 0 && strcmp(ak, "root1") == 0)
            assert_string_equal(signer, ""); /* the bootstrap: unsigned */
        else
            assert_string_equal(signer, "root1");
        adds += strcmp(req, "NS_USER_ADD") == 0;
    }
    assert_int_equal(adds, 2);
    assert_non_null(nstest_trail_find(trail, "NS_USER_UPDATE", "ok"));
    assert_non_null(nstest_trail_find(trail, "NS_USER_DELETE", "ok"));
    char *text = cJSON_PrintUnformatted(trail);
    assert_null(strstr(text, "rootsecret1"));
    assert_null(strstr(text, "opssecret22"));
    free(text);
    cJSON_Delete(trail);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_each_refusal_in_the_trail, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_metrics_move, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_trail_rate_limit, setup, nstest_fx_teardown),
        cmocka_unit_test(test_user_management_in_the_trail),
        cmocka_unit_test_setup_teardown(test_impossible_access_keys, setup, nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
