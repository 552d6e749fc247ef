/* test_broker_identity.c - a broker acts only for itself, through the real
 * namesrvd: UNREGISTER_BROKER, BROKER_HEARTBEAT, QUERY_DATA_VERSION and
 * REGISTER_BROKER name a broker address (clusterName, brokerAddr), and only
 * a caller allowed to speak for what that address registered may remove it,
 * keep it alive or register another broker over it.
 *
 *  - authMode writes/all: the signed user must be granted the broker name
 *    (and cluster) the address registered under; an admin speaks for all.
 *    An unsigned or client-role QUERY_DATA_VERSION is answered but keeps no
 *    broker alive.
 *  - authMode off: the request must come over the connection the address
 *    registered over, or from the host the address names.
 *  - an unregister that names another broker than the one the address
 *    registered removes nothing, so liveness and routes never disagree: a
 *    silent broker still expires afterwards.
 *
 * Brokers register with heartbeatTimeoutMillis=1000 and the server scans
 * every 100 ms; the bounds below are those plus a slack for slow builds. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "nstest_auth.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

#define TIMEOUT_MS 1000
#define BEAT_MS 250
#define SLACK_MS 1500 /* writer commit and scan period, generous for ASan */

typedef struct {
    char *dir;
    nstest_server_t srv;
} fx_t;

static int start(void **state, const char *mode)
{
    fx_t *fx = calloc(1, sizeof *fx);
    char data[4200], a_mode[64];
    fx->dir = nstest_tmpdir("brokerid");
    snprintf(data, sizeof data, "%s/data", fx->dir);
    nstest_users_add(data, false); /* admin1, brk1 (granted C1/broker-a), cli1 */
    snprintf(a_mode, sizeof a_mode, "--authMode=%s", mode);
    const char *args[] = {a_mode, "--authPenaltyMaxMillis=0", "--scanNotActiveBrokerInterval=100",
                          NULL};
    if (nstest_server_start(&fx->srv, fx->dir, args) != 0)
        return -1;
    *state = fx;
    return 0;
}

static int setup_writes(void **state)
{
    return start(state, "writes");
}

static int setup_all(void **state)
{
    return start(state, "all");
}

static int setup_off(void **state)
{
    return start(state, "off");
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    nstest_server_close(&fx->srv, fx->dir);
    free(fx);
    return 0;
}

typedef struct {
    const char *cluster, *name, *addr;
} broker_t;

static const broker_t A = {"C1", "broker-a", "127.0.0.1:10911"};
static const broker_t B = {"C1", "broker-b", "127.0.0.1:10921"};
/* an address of another host: with authMode off only its registration
 * connection speaks for it here */
static const broker_t FAR = {"C1", "broker-far", "10.20.30.40:10911"};

/* A connection signed as ak/sk (unsigned when ak is NULL). */
static ns_client_t *conn_as(const fx_t *fx, const char *ak, const char *sk)
{
    ns_client_t *c = nstest_connect(&fx->srv);
    if (ak)
        assert_int_equal(ns_client_set_credentials(c, ak, sk), NS_OK);
    return c;
}

#define EXPECT_CODE(want, got, remark)                                                             \
    do {                                                                                           \
        int g_ = (got);                                                                            \
        if (g_ != (want))                                                                          \
            fail_msg("%s:%d: code %d, expected %d (remark: %s)", __FILE__, __LINE__, g_, (want),   \
                     (remark));                                                                    \
    } while (0)

/* REGISTER_BROKER of b (id 0) with topics <name>-T1/-T2 and
 * heartbeatTimeoutMillis=TIMEOUT_MS on c; the reply's code. */
static int register_on(ns_client_t *c, const broker_t *b, char *remark, size_t n)
{
    char t1[64], t2[64], crc[16];
    snprintf(t1, sizeof t1, "%s-T1", b->name);
    snprintf(t2, sizeof t2, "%s-T2", b->name);
    const char *names[] = {t1, t2};
    ns_buf_t body = NS_BUF_INIT;
    nstest_regbody_names(&body, names, 2);
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(body.data, body.len));
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", TIMEOUT_MS);
    const char *kv[] = {"brokerName",
                        b->name,
                        "brokerAddr",
                        b->addr,
                        "clusterName",
                        b->cluster,
                        "brokerId",
                        "0",
                        "haServerAddr",
                        b->addr,
                        "bodyCrc32",
                        crc,
                        "heartbeatTimeoutMillis",
                        timeout,
                        NULL};
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    nstest_call(c, NS_REQ_REGISTER_BROKER, kv, body.data, body.len, NS_VERSION_V5_3_3, 10000, &rsp);
    int got = rsp.cmd.code;
    nstest_remark(&rsp, remark, n);
    ns_cmd_msg_free(&rsp);
    ns_buf_free(&body);
    return got;
}

static void register_ok(ns_client_t *c, const broker_t *b)
{
    char r[256];
    EXPECT_CODE(NS_RSP_SUCCESS, register_on(c, b, r, sizeof r), r);
}

/* The header of a broker request for address `of` under the name `as`. */
#define BROKER_KV(as, of)                                                                          \
    {                                                                                              \
        "brokerName", (as)->name, "brokerAddr", (of)->addr, "clusterName", (of)->cluster,          \
            "brokerId", "0", NULL                                                                  \
    }

static const char DV[] = "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000000}";

/* Whether GET_BROKER_CLUSTER_INFO lists b's address under its group. */
static bool listed(const fx_t *fx, const broker_t *b)
{
    ns_client_t *c = conn_as(fx, "admin1", "adminsecret");
    ns_cmd_msg_t rsp = nstest_call_msg(c, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, 0, 10000);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    bool has = rsp.cmd.body && memmem(rsp.cmd.body, rsp.cmd.body_len, b->addr, strlen(b->addr));
    ns_cmd_msg_free(&rsp);
    ns_client_close(c);
    return has;
}

/* Whether topic <b->name>-T1 routes (asked as admin1). */
static bool routed(const fx_t *fx, const broker_t *b)
{
    char topic[64];
    snprintf(topic, sizeof topic, "%s-T1", b->name);
    const char *kv[] = {"topic", topic, NULL};
    ns_client_t *c = conn_as(fx, "admin1", "adminsecret");
    int code = nstest_call_code(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, NULL, 0, 10000);
    ns_client_close(c);
    assert_true(code == NS_RSP_SUCCESS || code == NS_RSP_TOPIC_NOT_EXIST);
    return code == NS_RSP_SUCCESS;
}

/* Sends request `code` for b over c every BEAT_MS (replies must be
 * want_code while b is listed) until b is no longer listed or limit_ms
 * passed; returns the ms it took, or -1 when b was still listed at the end. */
static int64_t beat_until_gone(const fx_t *fx, ns_client_t *c, int code, const char *const *kv,
                               const char *body, int want_code, const broker_t *b, int64_t limit_ms)
{
    int64_t t0 = nstest_mono_ms();
    while (nstest_mono_ms() - t0 < limit_ms) {
        char r[256];
        int got = nstest_call_on(c, code, kv, body, r, sizeof r);
        /* once b is gone its address is free: any answer is right then */
        bool gone = !listed(fx, b);
        if (got != want_code && !gone)
            fail_msg("code %d while %s is registered, expected %d (remark: %s)", got, b->addr,
                     want_code, r);
        if (gone)
            return nstest_mono_ms() - t0;
        nstest_sleep_ms(BEAT_MS);
    }
    return -1;
}

/* ---- authMode=writes ---- */

/* brk1, granted only C1/broker-a, names its own broker and broker-b's
 * address: neither unregister nor heartbeat may touch broker-b. */
static void test_writes_other_address(void **state)
{
    fx_t *fx = *state;
    char r[256];
    ns_client_t *adm = conn_as(fx, "admin1", "adminsecret"); /* broker-b's registration */
    /* brk1's requests for broker-b, on a connection that registers nothing
     * (an expiry closes the registration connection of the broker) */
    ns_client_t *brk = conn_as(fx, "brk1", "brokersecret");
    register_ok(adm, &B);
    const char *kv[] = BROKER_KV(&A, &B);
    EXPECT_CODE(NS_RSP_NO_PERMISSION,
                nstest_call_on(brk, NS_REQ_UNREGISTER_BROKER, kv, NULL, r, sizeof r), r);
    if (strstr(r, "broker-b") == NULL)
        fail_msg("the refusal does not say whose address it is: %s", r);
    assert_true(listed(fx, &B));
    assert_true(routed(fx, &B));
    /* nor a heartbeat: broker-b, silent, expires on time */
    int64_t gone = beat_until_gone(fx, brk, NS_REQ_BROKER_HEARTBEAT, kv, NULL, NS_RSP_NO_PERMISSION,
                                   &B, TIMEOUT_MS + SLACK_MS);
    print_message("broker-b gone %lld ms into brk1's heartbeats for it\n", (long long)gone);
    assert_true(gone >= 0);
    assert_false(routed(fx, &B));
    /* its own address it may refresh and unregister, also on another
     * connection */
    ns_client_t *reg = conn_as(fx, "brk1", "brokersecret");
    register_ok(reg, &A);
    ns_client_t *brk2 = conn_as(fx, "brk1", "brokersecret");
    const char *own[] = BROKER_KV(&A, &A);
    EXPECT_CODE(NS_RSP_SUCCESS,
                nstest_call_on(brk2, NS_REQ_BROKER_HEARTBEAT, own, NULL, r, sizeof r), r);
    EXPECT_CODE(NS_RSP_SUCCESS,
                nstest_call_on(brk2, NS_REQ_UNREGISTER_BROKER, own, NULL, r, sizeof r), r);
    assert_false(listed(fx, &A));
    ns_client_close(brk2);
    ns_client_close(reg);
    ns_client_close(brk);
    ns_client_close(adm);
}

/* Another broker's name at broker-b's address is no registration either. */
static void test_writes_register_over_other(void **state)
{
    fx_t *fx = *state;
    char r[256];
    ns_client_t *adm = conn_as(fx, "admin1", "adminsecret");
    ns_client_t *brk = conn_as(fx, "brk1", "brokersecret");
    register_ok(adm, &B);
    const broker_t a_at_b = {"C1", "broker-a", B.addr};
    EXPECT_CODE(NS_RSP_NO_PERMISSION, register_on(brk, &a_at_b, r, sizeof r), r);
    assert_true(listed(fx, &B));
    ns_client_close(brk);
    ns_client_close(adm);
}

/* An unsigned QUERY_DATA_VERSION is answered, and keeps no broker alive. */
static void test_writes_unsigned_query(void **state)
{
    fx_t *fx = *state;
    ns_client_t *brk = conn_as(fx, "brk1", "brokersecret"), *anon = conn_as(fx, NULL, NULL);
    register_ok(brk, &A);
    const char *kv[] = BROKER_KV(&A, &A);
    int64_t gone = beat_until_gone(fx, anon, NS_REQ_QUERY_DATA_VERSION, kv, DV, NS_RSP_SUCCESS, &A,
                                   TIMEOUT_MS + SLACK_MS);
    print_message("broker-a gone %lld ms into unsigned queries for it\n", (long long)gone);
    assert_true(gone >= 0);
    /* control: the broker's own signed queries keep it (a new connection:
     * the expiry closed the first) */
    ns_client_t *brk2 = conn_as(fx, "brk1", "brokersecret");
    register_ok(brk2, &A);
    int64_t kept = beat_until_gone(fx, brk2, NS_REQ_QUERY_DATA_VERSION, kv, DV, NS_RSP_SUCCESS, &A,
                                   TIMEOUT_MS + SLACK_MS);
    assert_int_equal(kept, -1);
    ns_client_close(brk2);
    ns_client_close(anon);
    ns_client_close(brk);
}

/* ---- authMode=all ---- */

static void test_all_client_query(void **state)
{
    fx_t *fx = *state;
    ns_client_t *brk = conn_as(fx, "brk1", "brokersecret"),
                *cli = conn_as(fx, "cli1", "clientsecret");
    register_ok(brk, &A);
    const char *kv[] = BROKER_KV(&A, &A);
    int64_t gone = beat_until_gone(fx, cli, NS_REQ_QUERY_DATA_VERSION, kv, DV, NS_RSP_SUCCESS, &A,
                                   TIMEOUT_MS + SLACK_MS);
    print_message("broker-a gone %lld ms into cli1's queries for it\n", (long long)gone);
    assert_true(gone >= 0);
    ns_client_close(cli);
    ns_client_close(brk);
}

/* ---- authMode=off ---- */

/* Nobody but the registration connection speaks for an address of
 * another host. */
static void test_off_other_connection(void **state)
{
    fx_t *fx = *state;
    char r[256];
    ns_client_t *own = conn_as(fx, NULL, NULL), *other = conn_as(fx, NULL, NULL);
    register_ok(own, &FAR);
    const char *kv[] = BROKER_KV(&FAR, &FAR);
    EXPECT_CODE(NS_RSP_NO_PERMISSION,
                nstest_call_on(other, NS_REQ_UNREGISTER_BROKER, kv, NULL, r, sizeof r), r);
    EXPECT_CODE(NS_RSP_NO_PERMISSION,
                nstest_call_on(other, NS_REQ_BROKER_HEARTBEAT, kv, NULL, r, sizeof r), r);
    const broker_t x_at_far = {"C1", "broker-x", FAR.addr};
    EXPECT_CODE(NS_RSP_NO_PERMISSION, register_on(other, &x_at_far, r, sizeof r), r);
    assert_true(listed(fx, &FAR));
    /* its own connection keeps it alive... */
    int64_t kept = beat_until_gone(fx, own, NS_REQ_BROKER_HEARTBEAT, kv, NULL, NS_RSP_SUCCESS, &FAR,
                                   TIMEOUT_MS + SLACK_MS);
    assert_int_equal(kept, -1);
    /* ...another one's queries are answered and keep nothing alive */
    int64_t gone = beat_until_gone(fx, other, NS_REQ_QUERY_DATA_VERSION, kv, DV, NS_RSP_SUCCESS,
                                   &FAR, TIMEOUT_MS + SLACK_MS);
    print_message("broker-far gone %lld ms into another connection's queries\n", (long long)gone);
    assert_true(gone >= 0);
    assert_false(routed(fx, &FAR));
    ns_client_close(other);
    ns_client_close(own);
}

/* The host an address names speaks for it (a broker's tools beside it). */
static void test_off_same_host(void **state)
{
    fx_t *fx = *state;
    char r[256];
    ns_client_t *own = conn_as(fx, NULL, NULL), *other = conn_as(fx, NULL, NULL);
    register_ok(own, &B);
    const char *kv[] = BROKER_KV(&B, &B);
    int64_t kept = beat_until_gone(fx, other, NS_REQ_BROKER_HEARTBEAT, kv, NULL, NS_RSP_SUCCESS, &B,
                                   TIMEOUT_MS + SLACK_MS);
    assert_int_equal(kept, -1);
    EXPECT_CODE(NS_RSP_SUCCESS,
                nstest_call_on(other, NS_REQ_UNREGISTER_BROKER, kv, NULL, r, sizeof r), r);
    assert_false(listed(fx, &B));
    ns_client_close(other);
    ns_client_close(own);
}

/* An unregister under another broker's name removes nothing: the address
 * stays routed and alive, and expires when it falls silent, route and all. */
static void test_off_unregister_wrong_name(void **state)
{
    fx_t *fx = *state;
    char r[256];
    ns_client_t *own = conn_as(fx, NULL, NULL);
    register_ok(own, &FAR);
    const broker_t zz = {"C1", "broker-zz", FAR.addr};
    const char *kv[] = BROKER_KV(&zz, &FAR);
    EXPECT_CODE(NS_RSP_SUCCESS,
                nstest_call_on(own, NS_REQ_UNREGISTER_BROKER, kv, NULL, r, sizeof r), r);
    assert_true(listed(fx, &FAR));
    assert_true(routed(fx, &FAR));
    /* silent now (its connection stays open): it expires, and so does its route */
    int64_t t0 = nstest_mono_ms();
    while (routed(fx, &FAR) && nstest_mono_ms() - t0 < TIMEOUT_MS + SLACK_MS)
        nstest_sleep_ms(BEAT_MS);
    if (routed(fx, &FAR))
        fail_msg("broker-far's route outlived its heartbeat timeout by %d ms", SLACK_MS);
    assert_false(listed(fx, &FAR));
    ns_client_close(own);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_writes_other_address, setup_writes, teardown),
        cmocka_unit_test_setup_teardown(test_writes_register_over_other, setup_writes, teardown),
        cmocka_unit_test_setup_teardown(test_writes_unsigned_query, setup_writes, teardown),
        cmocka_unit_test_setup_teardown(test_all_client_query, setup_all, teardown),
        cmocka_unit_test_setup_teardown(test_off_other_connection, setup_off, teardown),
        cmocka_unit_test_setup_teardown(test_off_same_host, setup_off, teardown),
        cmocka_unit_test_setup_teardown(test_off_unregister_wrong_name, setup_off, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
