/* test_auth.c - authMode through the real namesrvd: for each mode and role,
 * allowed and refused requests, a wrong secret, an unknown key, a disabled
 * user, an address not allowed, a broker name not granted, a signed request
 * replayed under another code, online user management and its bootstrap,
 * the refusal records (with the peer address) and the penalty delay.
 * Users are created offline with namesrvctl before the server starts. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_auth.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/sign.h"

#define ctl(...) nstest_ctl(60000, __VA_ARGS__)
#define BAD_SIG "signature check failed for this AccessKey"

/* NSTEST_EXPECT_IN for a char array. */
#define EXPECT_IN(buf, needle)                                                                     \
    do {                                                                                           \
        if (strstr((buf), (needle)) == NULL)                                                       \
            fail_msg("expected '%s' in '%s'", (needle), (buf));                                    \
    } while (0)

typedef struct {
    char *dir;
    nstest_server_t srv;
    char addr[64];
    ns_client_t *bc; /* brk1's connection: its brokers live while it is open */
} fx_t;

static char body_a[4096]; /* the register body of T1 (made by start) */
static char crc_a[16];    /* its bodyCrc32 */

static void make_body(void)
{
    ns_topic_config_t tc[] = {{"T1", 4, 4, 6, 0}, {"T2", 4, 4, 6, 0}};
    ns_regbody_t body = {0};
    body.data_version = (ns_dataversion_t){1, 0, 1700000000000LL};
    body.topics = tc;
    body.n_topics = 2; /* one topic would be an increment */
    body.has_filter_server_list = true;
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_regbody_encode_json(&b, &body), NS_OK);
    assert_true(b.len < sizeof body_a);
    memcpy(body_a, b.data, b.len);
    body_a[b.len] = 0;
    snprintf(crc_a, sizeof crc_a, "%u", ns_body_crc32(b.data, b.len));
    ns_buf_free(&b);
}

static int start(void **state, const char *mode, bool users)
{
    fx_t *fx = calloc(1, sizeof *fx);
    char data[4200], a_mode[64];
    make_body();
    fx->dir = nstest_tmpdir("auth");
    snprintf(data, sizeof data, "%s/data", fx->dir);
    if (users)
        nstest_users_add(data, true);
    snprintf(a_mode, sizeof a_mode, "--authMode=%s", mode);
    const char *args[] = {a_mode, "--authPenaltyMaxMillis=0", NULL};
    if (nstest_server_start(&fx->srv, fx->dir, args) != 0)
        return -1;
    snprintf(fx->addr, sizeof fx->addr, "127.0.0.1:%d", fx->srv.port);
    *state = fx;
    return 0;
}

static int setup_writes(void **state)
{
    return start(state, "writes", true);
}

static int setup_all(void **state)
{
    return start(state, "all", true);
}

static int setup_off(void **state)
{
    return start(state, "off", true);
}

static int setup_empty(void **state)
{
    return start(state, "off", false);
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    ns_client_close(fx->bc);
    nstest_server_close(&fx->srv, fx->dir);
    free(fx);
    return 0;
}

/* One request on a new connection (nstest_call_as), its remark in remark. */
static int call_as(fx_t *fx, const char *ak, const char *sk, int code, const char *const *kv,
                   const char *body, char *remark, size_t rlen)
{
    return nstest_call_as(&fx->srv, ak, sk, code, kv, body, remark, rlen, NULL);
}

static const char *const route_kv[] = {"topic", "T1", NULL};
static const char *const reg_a[] = {
    "brokerName", "broker-a", "brokerAddr", "127.0.0.1:10911", "clusterName",
    "C1",         "brokerId", "0",          "haServerAddr",    "127.0.0.1:10912",
    "bodyCrc32",  crc_a,      NULL};
static const char *const reg_b[] = {
    "brokerName", "broker-b", "brokerAddr", "127.0.0.1:10921", "clusterName",
    "C1",         "brokerId", "0",          "haServerAddr",    "127.0.0.1:10922",
    "bodyCrc32",  crc_a,      NULL};
static const char *const reg_a_c2[] = {
    "brokerName", "broker-a", "brokerAddr", "127.0.0.1:10931", "clusterName",
    "C2",         "brokerId", "0",          "haServerAddr",    "127.0.0.1:10932",
    "bodyCrc32",  crc_a,      NULL};
static const char *const wipe_kv[] = {"brokerName", "broker-a", NULL};
static const char *const kv_put[] = {"namespace", "NS", "key", "k", "value", "v", NULL};

#define EXPECT_CODE(want, got, remark)                                                             \
    do {                                                                                           \
        int g_ = (got);                                                                            \
        if (g_ != (want))                                                                          \
            fail_msg("code %d, expected %d (remark: %s)", g_, (want), (remark));                   \
    } while (0)

typedef nstest_call_case_t call_t;
#define EXPECT_CALLS(fx, calls) NSTEST_EXPECT_CALLS(&(fx)->srv, calls)

static const char QD_A[] = "{\"queueDatas\":[{\"brokerName\":\"broker-a\",\"readQueueNums\":4,"
                           "\"writeQueueNums\":4,\"perm\":6,\"topicSysFlag\":0}]}";
static const char QD_B[] = "{\"queueDatas\":[{\"brokerName\":\"broker-b\",\"readQueueNums\":4,"
                           "\"writeQueueNums\":4,\"perm\":6,\"topicSysFlag\":0}]}";
static const char *const topic_kv[] = {"topic", "T9", NULL};
static const char PROPS[] = "orderMessageEnable=true";

/* A C++ client without credentials sends "AccessKey":"" (and an empty
 * Signature) in every request: that is an unsigned request, so its reads
 * are served under writes and its writes refused as unsigned. */
static void test_empty_access_key_is_unsigned(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    const char *route[] = {"AccessKey", "", "OnsChannel", "", "Signature", "", "topic", "T1", NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, route, NULL, 0, 10000),
                     NS_RSP_TOPIC_NOT_EXIST);
    const char *put[] = {"AccessKey", "",  "Signature", "",  "namespace", "ns",
                         "key",       "k", "value",     "v", NULL};
    ns_cmd_msg_t rsp = nstest_call_msg(c, NS_REQ_PUT_KV_CONFIG, put, NULL, 0, 10000);
    char remark[300];
    nstest_remark(&rsp, remark, sizeof remark);
    assert_int_equal(rsp.cmd.code, NS_RSP_NO_PERMISSION);
    assert_non_null(strstr(remark, "needs a signed request"));
    ns_cmd_msg_free(&rsp);
    ns_client_close(c);
}

static void test_writes_mode(void **state)
{
    fx_t *fx = *state;
    const call_t calls[] = {
        /* reads stay open, unsigned */
        {NULL, NULL, NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, NS_RSP_TOPIC_NOT_EXIST, NULL,
         false},
        /* registration: unsigned refused, the broker user under its name allowed */
        {NULL, NULL, NS_REQ_REGISTER_BROKER, reg_a, body_a, NS_RSP_NO_PERMISSION,
         "needs a signed request", NULL},
        {"brk1", "brokersecret", NS_REQ_REGISTER_BROKER, reg_a, body_a, NS_RSP_SUCCESS, NULL,
         &fx->bc},
        {NULL, NULL, NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, NS_RSP_SUCCESS, NULL, NULL},
        /* a broker name, or a cluster, not granted: no fake broker */
        {"brk1", "brokersecret", NS_REQ_REGISTER_BROKER, reg_b, body_a, NS_RSP_NO_PERMISSION,
         "not granted broker name 'broker-b'", NULL},
        {"brk1", "brokersecret", NS_REQ_REGISTER_BROKER, reg_a_c2, body_a, NS_RSP_NO_PERMISSION,
         NULL, NULL},
        {"brk1", "brokersecret", NS_REQ_UNREGISTER_BROKER, reg_b, NULL, NS_RSP_NO_PERMISSION, NULL,
         false},
        /* REGISTER_TOPIC_IN_NAMESRV: only queue data of granted broker names */
        {"brk1", "brokersecret", NS_REQ_REGISTER_TOPIC_IN_NAMESRV, topic_kv, QD_B,
         NS_RSP_NO_PERMISSION, "not granted broker name 'broker-b'", NULL},
        {"brk1", "brokersecret", NS_REQ_REGISTER_TOPIC_IN_NAMESRV, topic_kv, QD_A, NS_RSP_SUCCESS,
         NULL, NULL},
        /* a client may not register; a broker may not wipe permissions */
        {"cli1", "clientsecret", NS_REQ_REGISTER_BROKER, reg_a, body_a, NS_RSP_NO_PERMISSION,
         "needs role broker; this AccessKey has role client", NULL},
        {"brk1", "brokersecret", NS_REQ_WIPE_WRITE_PERM_OF_BROKER, wipe_kv, NULL,
         NS_RSP_NO_PERMISSION, "needs role admin", NULL},
        {"admin1", "adminsecret", NS_REQ_WIPE_WRITE_PERM_OF_BROKER, wipe_kv, NULL, NS_RSP_SUCCESS,
         NULL, NULL},
        {NULL, NULL, NS_REQ_PUT_KV_CONFIG, kv_put, NULL, NS_RSP_NO_PERMISSION, NULL, NULL},
        {"admin1", "adminsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, NS_RSP_SUCCESS, NULL, NULL},
        /* UPDATE_NAMESRV_CONFIG needs an admin */
        {NULL, NULL, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, PROPS, NS_RSP_NO_PERMISSION, NULL, NULL},
        {"cli1", "clientsecret", NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, PROPS, NS_RSP_NO_PERMISSION,
         NULL, NULL},
        {"admin1", "adminsecret", NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, PROPS, NS_RSP_SUCCESS, NULL,
         false},
    };
    EXPECT_CALLS(fx, calls);
}

/* Wrong secret, unknown key and disabled user get the same answer; an
 * address outside the allowlist is named only to the key's holder. */
static void test_bad_credentials(void **state)
{
    fx_t *fx = *state;
    char r1[256], r2[256], r3[256];
    EXPECT_CODE(
        NS_RSP_NO_PERMISSION,
        call_as(fx, "admin1", "wrongsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, r1, sizeof r1),
        r1);
    EXPECT_CODE(
        NS_RSP_NO_PERMISSION,
        call_as(fx, "nobody", "adminsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, r2, sizeof r2),
        r2);
    EXPECT_CODE(NS_RSP_NO_PERMISSION,
                call_as(fx, "off1", "offsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, r3, sizeof r3),
                r3);
    EXPECT_IN(r1, BAD_SIG);
    assert_string_equal(r1, r2);
    assert_string_equal(r1, r3);
    assert_null(strstr(r1, "adminsecret"));
    /* a signed read is verified even though a read needs nothing here */
    const call_t reads[] = {
        {"off1", "offsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, NS_RSP_NO_PERMISSION,
         NULL, NULL},
        {"far1", "farsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, NS_RSP_NO_PERMISSION,
         "source address 127.0.0.1 is not allowed", NULL},
    };
    EXPECT_CALLS(fx, reads);
}

/* The scheme signs the fields, not the request code: a client's signed
 * lookup replayed as DELETE_TOPIC_IN_NAMESRV verifies, and is refused by
 * the client's role. */
static void test_replay_to_another_code(void **state)
{
    fx_t *fx = *state;
    nstest_replay_t rp;
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    nstest_replay_send(&rp, &fx->srv, &rsp);
    assert_int_equal(rsp.cmd.code, NS_RSP_NO_PERMISSION);
    assert_non_null(rsp.cmd.remark);
    assert_non_null(strstr(rsp.cmd.remark, "DELETE_TOPIC_IN_NAMESRV needs role admin"));
    /* and a changed field breaks the signature */
    rp.s.ext[0].val = "T2";
    rp.s.cmd.code = NS_REQ_GET_ROUTEINFO_BY_TOPIC;
    assert_int_equal(ns_client_call(rp.c, &rp.s.cmd, 10000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.code, NS_RSP_NO_PERMISSION);
    assert_non_null(strstr(rsp.cmd.remark, BAD_SIG));
    ns_cmd_msg_free(&rsp);
    nstest_replay_close(&rp);
    /* every refusal so far is on record with the peer address */
    char *out = NULL;
    int rc = -1;
    for (int i = 0; i < 50; i++) { /* records are written by the writer, just after */
        free(out);
        out = NULL;
        rc = ctl(&out, "user", "refusals", "--data-dir", fx->srv.data, NULL);
        if (rc == 0 && out && strstr(out, "DELETE_TOPIC_IN_NAMESRV cli1 role") &&
            strstr(out, BAD_SIG))
            break;
        nstest_sleep_ms(100);
    }
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "127.0.0.1:");
    NSTEST_EXPECT_IN(out,
                     "DELETE_TOPIC_IN_NAMESRV cli1 role: DELETE_TOPIC_IN_NAMESRV needs role admin");
    free(out);
}

static void test_all_mode(void **state)
{
    fx_t *fx = *state;
    const call_t calls[] = {
        {NULL, NULL, NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, NS_RSP_NO_PERMISSION,
         "role client", NULL},
        {"cli1", "clientsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL,
         NS_RSP_TOPIC_NOT_EXIST, NULL, NULL},
        {"brk1", "brokersecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL,
         NS_RSP_TOPIC_NOT_EXIST, NULL, NULL},
        {"admin1", "adminsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL,
         NS_RSP_TOPIC_NOT_EXIST, NULL, NULL},
        {NULL, NULL, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, NS_RSP_NO_PERMISSION, NULL, NULL},
        {"cli1", "clientsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, NS_RSP_NO_PERMISSION, NULL,
         false},
        {"brk1", "brokersecret", NS_REQ_REGISTER_BROKER, reg_a, body_a, NS_RSP_SUCCESS, NULL,
         &fx->bc},
    };
    EXPECT_CALLS(fx, calls);
    /* namesrvctl signs: route as the client */
    nstest_ctl_expect(1, "NO_PERMISSION", "route", "T1", "--ns", fx->addr, NULL);
    nstest_ctl_expect(0, "broker-a", "route", "T1", "--ns", fx->addr, "--access-key", "cli1",
                      "--secret-key", "clientsecret", NULL);
}

/* Online user management: admin only, in every mode; the secret never
 * comes back. */
static void test_online_users(void **state)
{
    fx_t *fx = *state;
    const char *a = fx->addr;
    nstest_ctl_expect(1, "NO_PERMISSION", "user", "add", "cli2", "--role", "client", "--secret",
                      "cli2secret", "--ns", a, NULL);
    nstest_ctl_expect(1, NULL, "user", "add", "cli2", "--role", "client", "--secret", "cli2secret",
                      "--ns", a, "--access-key", "cli1", "--secret-key", "clientsecret", NULL);
    nstest_ctl_expect(0, NULL, "user", "add", "cli2", "--role", "client", "--secret", "cli2secret",
                      "--ns", a, "--access-key", "admin1", "--secret-key", "adminsecret", NULL);
    const char *const kv[] = {"key", "k", "namespace", "NS", NULL};
    const call_t enabled[] = {
        {"cli2", "cli2secret", NS_REQ_GET_KV_CONFIG, kv, NULL, NS_RSP_QUERY_NOT_FOUND, NULL, NULL}};
    EXPECT_CALLS(fx, enabled);
    nstest_ctl_expect(0, NULL, "user", "update", "cli2", "--disable", "--ns", a, "--access-key",
                      "admin1", "--secret-key", "adminsecret", NULL);
    const call_t disabled[] = {
        {"cli2", "cli2secret", NS_REQ_GET_KV_CONFIG, kv, NULL, NS_RSP_NO_PERMISSION, NULL, NULL}};
    EXPECT_CALLS(fx, disabled);
    char *out = NULL;
    int rc = ctl(&out, "user", "list", "--json", "--ns", a, "--access-key", "admin1",
                 "--secret-key", "adminsecret", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "\"accessKey\":\"cli2\",\"role\":\"client\",\"enabled\":false");
    assert_null(strstr(out, "secret"));
    free(out);
    nstest_ctl_expect(0, NULL, "user", "delete", "cli2", "--ns", a, "--access-key", "admin1",
                      "--secret-key", "adminsecret", NULL);
    /* the last enabled admin may not go while authMode is on: no lockout */
    char r[256];
    const char *const del[] = {"userAccessKey", "admin1", NULL};
    const char *const off[] = {"userAccessKey", "admin1", "enabled", "false", NULL};
    const char *const demote[] = {"userAccessKey", "admin1", "role", "client", NULL};
    const char *const *last[] = {del, off, demote};
    const int codes[] = {NS_REQ_NS_USER_DELETE, NS_REQ_NS_USER_UPDATE, NS_REQ_NS_USER_UPDATE};
    for (size_t i = 0; i < 3; i++) {
        int got = call_as(fx, "admin1", "adminsecret", codes[i], last[i], NULL, r, sizeof r);
        if (got == NS_RSP_SUCCESS)
            fail_msg("change %zu of the last admin was accepted", i);
        EXPECT_IN(r, "no enabled admin");
    }
    EXPECT_CODE(NS_RSP_TOPIC_NOT_EXIST,
                call_as(fx, "admin1", "adminsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL,
                        r, sizeof r),
                r);
    /* with another admin it may */
    nstest_ctl_expect(0, NULL, "user", "add", "adm2", "--role", "admin", "--secret", "adm2secret",
                      "--ns", a, "--access-key", "admin1", "--secret-key", "adminsecret", NULL);
    EXPECT_CODE(NS_RSP_SUCCESS,
                call_as(fx, "adm2", "adm2secret", NS_REQ_NS_USER_UPDATE, off, NULL, r, sizeof r),
                r);
}

/* off: Java's behaviour, signatures ignored, except for user management. */
static void test_off_mode(void **state)
{
    fx_t *fx = *state;
    const char *const ukv[] = {"userAccessKey", "x1", "userSecretKey", "xsecret1", "role",
                               "admin",         NULL};
    const char *to_writes = "authMode=writes", *to_off = "authMode=off";
    const call_t calls[] = {
        {NULL, NULL, NS_REQ_REGISTER_BROKER, reg_b, body_a, NS_RSP_SUCCESS, NULL, NULL},
        {"admin1", "wrong!", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, NS_RSP_SUCCESS, NULL, NULL},
        {NULL, NULL, NS_REQ_NS_USER_ADD, ukv, NULL, NS_RSP_NO_PERMISSION, NULL, NULL},
        /* switching the mode online needs nothing in off, an admin after */
        {NULL, NULL, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, to_writes, NS_RSP_SUCCESS, NULL, NULL},
        {NULL, NULL, NS_REQ_PUT_KV_CONFIG, kv_put, NULL, NS_RSP_NO_PERMISSION, NULL, NULL},
        {NULL, NULL, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, to_off, NS_RSP_NO_PERMISSION, NULL, NULL},
        {"admin1", "adminsecret", NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, to_off, NS_RSP_SUCCESS, NULL,
         false},
        {NULL, NULL, NS_REQ_PUT_KV_CONFIG, kv_put, NULL, NS_RSP_SUCCESS, NULL, NULL},
    };
    EXPECT_CALLS(fx, calls);
}

/* No admin yet: an unsigned request from loopback may add the first one. */
static void test_bootstrap(void **state)
{
    fx_t *fx = *state;
    const char *const a1[] = {"userAccessKey", "root", "userSecretKey", "rootsecret", "role",
                              "admin",         NULL};
    const char *const a2[] = {"userAccessKey", "evil", "userSecretKey", "evilsecret", "role",
                              "admin",         NULL};
    const call_t calls[] = {
        {NULL, NULL, NS_REQ_NS_USER_ADD, a1, NULL, NS_RSP_SUCCESS, NULL, NULL},
        {NULL, NULL, NS_REQ_NS_USER_ADD, a2, NULL, NS_RSP_NO_PERMISSION, NULL, NULL},
        {"root", "rootsecret", NS_REQ_NS_USER_ADD, a2, NULL, NS_RSP_SUCCESS, NULL, NULL},
    };
    EXPECT_CALLS(fx, calls);
}

/* No admin in the store: turning authentication on is refused, since no
 * one could sign the request that turns it off again; once there is an
 * enabled admin it is allowed. */
static void test_no_lockout_online(void **state)
{
    fx_t *fx = *state;
    char r[256];
    const char *const a1[] = {"userAccessKey", "root", "userSecretKey", "rootsecret", "role",
                              "admin",         NULL};
    const char *const off1[] = {"userAccessKey", "root", "enabled", "false", NULL};
    static const char *const modes[] = {"authMode=all", "authMode=writes"};
    for (size_t i = 0; i < 2; i++) {
        int got =
            call_as(fx, NULL, NULL, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, modes[i], r, sizeof r);
        if (got == NS_RSP_SUCCESS)
            fail_msg("%s was accepted with no admin in the store", modes[i]);
        EXPECT_IN(r, "enabled admin");
    }
    /* nothing changed: unsigned requests are served */
    EXPECT_CODE(NS_RSP_TOPIC_NOT_EXIST,
                call_as(fx, NULL, NULL, NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, r, sizeof r),
                r);
    EXPECT_CODE(NS_RSP_SUCCESS,
                call_as(fx, NULL, NULL, NS_REQ_PUT_KV_CONFIG, kv_put, NULL, r, sizeof r), r);
    /* an admin that is disabled does not count */
    EXPECT_CODE(NS_RSP_SUCCESS, call_as(fx, NULL, NULL, NS_REQ_NS_USER_ADD, a1, NULL, r, sizeof r),
                r);
    EXPECT_CODE(NS_RSP_SUCCESS,
                call_as(fx, "root", "rootsecret", NS_REQ_NS_USER_UPDATE, off1, NULL, r, sizeof r),
                r);
    EXPECT_CODE(NS_RSP_SYSTEM_ERROR,
                call_as(fx, NULL, NULL, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, modes[1], r, sizeof r),
                r);
    EXPECT_IN(r, "enabled admin");
    /* with an enabled admin the switch is made */
    const char *const a2[] = {"userAccessKey", "root2", "userSecretKey", "root2secret", "role",
                              "admin",         NULL};
    EXPECT_CODE(NS_RSP_SUCCESS, call_as(fx, NULL, NULL, NS_REQ_NS_USER_ADD, a2, NULL, r, sizeof r),
                r);
    EXPECT_CODE(NS_RSP_SUCCESS,
                call_as(fx, NULL, NULL, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, modes[1], r, sizeof r),
                r);
    EXPECT_CODE(NS_RSP_NO_PERMISSION,
                call_as(fx, NULL, NULL, NS_REQ_PUT_KV_CONFIG, kv_put, NULL, r, sizeof r), r);
}

/* The same at start-up, from a flag or from the settings file: the server
 * does not start, and says why. */
static void test_no_lockout_at_start(void **state)
{
    char *dir = nstest_tmpdir("auth-lock"), a_data[4200], a_store[4200], a_port[4200], props[4200],
         a_c[4300];
    snprintf(a_data, sizeof a_data, "--dataDir=%s/data", dir);
    snprintf(a_store, sizeof a_store, "--configStorePath=%s/store.properties", dir);
    snprintf(a_port, sizeof a_port, "--portFile=%s/port", dir);
    snprintf(props, sizeof props, "%s/ns.properties", dir);
    snprintf(a_c, sizeof a_c, "%s", props);
    nstest_write_text(props, "authMode=writes\n");
    const char *flag[] = {"--bindAddress=127.0.0.1",
                          "--listenPort=0",
                          a_data,
                          a_store,
                          a_port,
                          "--authMode=all",
                          NULL};
    const char *file[] = {"-c",   a_c, "--bindAddress=127.0.0.1", "--listenPort=0", a_data,
                          a_port, NULL};
    const char *const *runs[] = {flag, file};
    for (size_t i = 0; i < 2; i++) {
        char *err = NULL;
        int rc = nstest_run(NS_NAMESRVD_PATH, runs[i], &err, 10000);
        if (rc <= 0 || err == NULL || strstr(err, "enabled admin") == NULL)
            fail_msg("run %zu: exit %d, expected a refusal naming the missing admin; stderr:\n%s",
                     i, rc, err ? err : "");
        free(err);
    }
    /* with an admin in the store it starts */
    char data[4200];
    snprintf(data, sizeof data, "%s/data", dir);
    nstest_user_add(data, "admin1", "adminsecret", "admin", NULL, NULL);
    nstest_server_t s;
    const char *ok[] = {"--authMode=all", NULL};
    assert_int_equal(nstest_server_start(&s, dir, ok), 0);
    nstest_server_stop(&s, SIGKILL);
    nstest_rmtree(dir);
    free(dir);
}

/* Repeated failures from one address are answered later and later. */
static void test_penalty(void **state)
{
    fx_t *fx = *state;
    char r[256];
    const char *set = "authPenaltyMaxMillis=400";
    EXPECT_CODE(
        NS_RSP_SUCCESS,
        call_as(fx, "admin1", "adminsecret", NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, set, r, sizeof r),
        r);
    int64_t t0 = nstest_mono_ms();
    for (int i = 0; i < 3; i++)
        EXPECT_CODE(NS_RSP_NO_PERMISSION,
                    call_as(fx, "admin1", "bad", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, r, sizeof r),
                    r);
    int64_t t1 = nstest_mono_ms();
    for (int i = 0; i < 3; i++) /* 100 + 200 + 400 ms */
        EXPECT_CODE(NS_RSP_NO_PERMISSION,
                    call_as(fx, "admin1", "bad", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, r, sizeof r),
                    r);
    int64_t t2 = nstest_mono_ms();
    if (t2 - t1 < 650)
        fail_msg("refusals 4-6 took %lld ms, want >= 650 (the first three %lld ms)",
                 (long long)(t2 - t1), (long long)(t1 - t0));
    /* the honest requests of others from that address are not delayed */
    int64_t t3 = nstest_mono_ms();
    EXPECT_CODE(
        NS_RSP_SUCCESS,
        call_as(fx, "admin1", "adminsecret", NS_REQ_PUT_KV_CONFIG, kv_put, NULL, r, sizeof r), r);
    assert_true(nstest_mono_ms() - t3 < 300);
}

/* Users are in dumps (mode 0600, secrets included) and come back with
 * restore: the restored store verifies the same signatures. */
static void test_dump_restore_users(void **state)
{
    fx_t *fx = *state;
    char dump[4200], dir2[4200];
    snprintf(dump, sizeof dump, "%s/dump.json", fx->dir);
    snprintf(dir2, sizeof dir2, "%s/restored", fx->dir);
    nstest_ctl_expect(0, "5 users", "dump", "--data-dir", fx->srv.data, "-o", dump, NULL);
    struct stat st;
    assert_int_equal(stat(dump, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    nstest_ctl_expect(0, NULL, "restore", "--data-dir", dir2, "-i", dump, NULL);
    char *out = NULL;
    int rc = ctl(&out, "user", "list", "--data-dir", dir2, "--json", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "\"accessKey\":\"far1\",\"role\":\"client\",\"enabled\":true,"
                          "\"sealed\":false,\"allow\":\"10.0.0.0/8,::1\"");
    NSTEST_EXPECT_IN(out, "\"accessKey\":\"off1\",\"role\":\"client\",\"enabled\":false");
    free(out);
    /* the restored store serves the same credentials */
    nstest_server_stop(&fx->srv, SIGKILL);
    char *d2 = strdup(dir2);
    const char *args[] = {"--authMode=all", NULL};
    nstest_server_t s2;
    char sub[4300];
    snprintf(sub, sizeof sub, "%s/srv2", fx->dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    char data2[4400];
    snprintf(data2, sizeof data2, "%s/data", sub);
    assert_int_equal(rename(d2, data2), 0);
    free(d2);
    assert_int_equal(nstest_server_start(&s2, sub, args), 0);
    fx->srv = s2;
    const call_t calls[] = {
        {"cli1", "clientsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL,
         NS_RSP_TOPIC_NOT_EXIST, NULL, NULL},
        {"cli1", "wrongsecret", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv, NULL, NS_RSP_NO_PERMISSION,
         NULL, NULL},
    };
    EXPECT_CALLS(fx, calls);
}

/* grep: whether the file holds the bytes of needle. */
static bool file_has(const char *path, const char *needle)
{
    uint8_t *d = NULL;
    size_t n = 0;
    assert_int_equal(nstest_read_file(path, &d, &n), 0);
    bool found = memmem(d, n, needle, strlen(needle)) != NULL;
    free(d);
    return found;
}

/* authKeyFile: secrets sealed at rest, by namesrvctl offline and by the
 * server online; the store and its dumps never hold them plain; without
 * the key they do not verify. */
static void test_sealed_secrets(void **state)
{
    char *dir = nstest_tmpdir("auth-seal"), key[4200], data[4200], dump[4200], arg[4300];
    snprintf(key, sizeof key, "%s/ns.key", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(dump, sizeof dump, "%s/dump.json", dir);
    FILE *f = fopen(key, "w");
    fputs("8c1f3a0e5b7d92c4e6f8a1b3c5d7e9f0123456789abcdef0fedcba9876543210\n", f);
    fclose(f);
    char *out = NULL;
    int rc = ctl(&out, "user", "add", "admin1", "--role", "admin", "--secret", "adminsecret-s",
                 "--data-dir", data, "--key-file", key, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    snprintf(arg, sizeof arg, "--authKeyFile=%s", key);
    const char *args[] = {"--authMode=all", arg, "--authPenaltyMaxMillis=0", NULL};
    fx_t fx = {0};
    fx.dir = dir;
    assert_int_equal(nstest_server_start(&fx.srv, dir, args), 0);
    snprintf(fx.addr, sizeof fx.addr, "127.0.0.1:%d", fx.srv.port);
    rc = ctl(&out, "user", "add", "cli1", "--role", "client", "--secret", "clientsecret-s", "--ns",
             fx.addr, "--access-key", "admin1", "--secret-key", "adminsecret-s", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    char r[256];
    EXPECT_CODE(NS_RSP_TOPIC_NOT_EXIST,
                call_as(&fx, "cli1", "clientsecret-s", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv,
                        NULL, r, sizeof r),
                r);
    rc = ctl(&out, "user", "list", "--json", "--ns", fx.addr, "--access-key", "admin1",
             "--secret-key", "adminsecret-s", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out,
                     "\"accessKey\":\"cli1\",\"role\":\"client\",\"enabled\":true,\"sealed\":true");
    free(out);
    rc = ctl(&out, "dump", "--data-dir", data, "-o", dump, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    nstest_server_stop(&fx.srv, SIGTERM);
    char mdb[4300];
    snprintf(mdb, sizeof mdb, "%s/data.mdb", data);
    assert_false(file_has(mdb, "adminsecret-s"));
    assert_false(file_has(mdb, "clientsecret-s"));
    assert_false(file_has(dump, "clientsecret-s"));
    assert_true(file_has(dump, "enc1:"));
    /* the same store without the key: sealed secrets verify for no one */
    const char *nokey[] = {"--authMode=all", "--authPenaltyMaxMillis=0", NULL};
    assert_int_equal(nstest_server_start(&fx.srv, dir, nokey), 0);
    EXPECT_CODE(NS_RSP_NO_PERMISSION,
                call_as(&fx, "cli1", "clientsecret-s", NS_REQ_GET_ROUTEINFO_BY_TOPIC, route_kv,
                        NULL, r, sizeof r),
                r);
    EXPECT_IN(r, BAD_SIG);
    nstest_server_stop(&fx.srv, SIGKILL);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_writes_mode, setup_writes, teardown),
        cmocka_unit_test_setup_teardown(test_empty_access_key_is_unsigned, setup_writes, teardown),
        cmocka_unit_test_setup_teardown(test_bad_credentials, setup_writes, teardown),
        cmocka_unit_test_setup_teardown(test_replay_to_another_code, setup_writes, teardown),
        cmocka_unit_test_setup_teardown(test_all_mode, setup_all, teardown),
        cmocka_unit_test_setup_teardown(test_online_users, setup_all, teardown),
        cmocka_unit_test_setup_teardown(test_off_mode, setup_off, teardown),
        cmocka_unit_test_setup_teardown(test_bootstrap, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(test_no_lockout_online, setup_empty, teardown),
        cmocka_unit_test(test_no_lockout_at_start),
        cmocka_unit_test_setup_teardown(test_penalty, setup_writes, teardown),
        cmocka_unit_test_setup_teardown(test_dump_restore_users, setup_writes, teardown),
        cmocka_unit_test(test_sealed_secrets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
