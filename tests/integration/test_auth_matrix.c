/* test_auth_matrix.c - every request the dispatcher serves, in every
 * authMode, from every kind of caller (unsigned, client, broker, admin),
 * through the real namesrvd: refused by the authentication check exactly
 * where the policy in docs/security.md "Authentication and authorization" says,
 * and let through to its handler everywhere else. The mode
 * is switched online by the admin (UPDATE_NAMESRV_CONFIG), as an operator
 * would. The policy is written out here on its own, from docs/security.md, not
 * taken from the server's table. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_auth.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

enum { NONE, CLIENT, BROKER, ADMIN }; /* callers, by rank */
enum { M_OFF, M_WRITES, M_ALL };
static const char *const mode_name[] = {"off", "writes", "all"};
static const char *const who_name[] = {"unsigned", "client", "broker", "admin"};

/* What a request needs (the policy). */
typedef enum { READ, BROKER_REQ, ADMIN_REQ, USERS } need_t;

typedef struct {
    int code;
    const char *name;
    need_t need;
    const char *const *kv;
    const char *body;
} req_t;

static const char *const kv_none[] = {NULL};
static const char *const kv_topic[] = {"topic", "ghost-topic", NULL};
static const char *const kv_kv[] = {"namespace", "NS", "key", "ghost", "value", "v", NULL};
static const char *const kv_ns[] = {"namespace", "NS", NULL};
static const char *const kv_cluster[] = {"cluster", "C1", NULL};
static const char *const kv_wipe[] = {"brokerName", "broker-x", NULL};
static const char *const kv_broker[] = {"brokerName", "broker-a",   "clusterName",
                                        "C1",         "brokerAddr", "127.0.0.1:10911",
                                        "brokerId",   "0",          NULL};
static const char *const kv_user[] = {"userAccessKey", "ghost", NULL};
static const char QD_A[] = "{\"queueDatas\":[{\"brokerName\":\"broker-a\",\"readQueueNums\":4,"
                           "\"writeQueueNums\":4,\"perm\":6,\"topicSysFlag\":0}]}";

static const req_t reqs[] = {
    {NS_REQ_GET_ROUTEINFO_BY_TOPIC, "GET_ROUTEINFO_BY_TOPIC", READ, kv_topic, NULL},
    {NS_REQ_GET_BROKER_CLUSTER_INFO, "GET_BROKER_CLUSTER_INFO", READ, kv_none, NULL},
    {NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, "GET_ALL_TOPIC_LIST", READ, kv_none, NULL},
    {NS_REQ_GET_KV_CONFIG, "GET_KV_CONFIG", READ, kv_kv, NULL},
    {NS_REQ_GET_KVLIST_BY_NAMESPACE, "GET_KVLIST_BY_NAMESPACE", READ, kv_ns, NULL},
    {NS_REQ_GET_TOPICS_BY_CLUSTER, "GET_TOPICS_BY_CLUSTER", READ, kv_cluster, NULL},
    {NS_REQ_GET_SYSTEM_TOPIC_LIST_FROM_NS, "GET_SYSTEM_TOPIC_LIST", READ, kv_none, NULL},
    {NS_REQ_GET_NAMESRV_CONFIG, "GET_NAMESRV_CONFIG", READ, kv_none, NULL},
    {NS_REQ_QUERY_DATA_VERSION, "QUERY_DATA_VERSION", READ, kv_broker, NULL},
    {NS_REQ_GET_BROKER_MEMBER_GROUP, "GET_BROKER_MEMBER_GROUP", READ, kv_broker, NULL},
    {NS_REQ_REGISTER_BROKER, "REGISTER_BROKER", BROKER_REQ, kv_broker, NULL},
    {NS_REQ_UNREGISTER_BROKER, "UNREGISTER_BROKER", BROKER_REQ, kv_broker, NULL},
    {NS_REQ_BROKER_HEARTBEAT, "BROKER_HEARTBEAT", BROKER_REQ, kv_broker, NULL},
    {NS_REQ_REGISTER_TOPIC_IN_NAMESRV, "REGISTER_TOPIC_IN_NAMESRV", BROKER_REQ, kv_topic, QD_A},
    {NS_REQ_PUT_KV_CONFIG, "PUT_KV_CONFIG", ADMIN_REQ, kv_kv, NULL},
    {NS_REQ_DELETE_KV_CONFIG, "DELETE_KV_CONFIG", ADMIN_REQ, kv_kv, NULL},
    {NS_REQ_WIPE_WRITE_PERM_OF_BROKER, "WIPE_WRITE_PERM_OF_BROKER", ADMIN_REQ, kv_wipe, NULL},
    {NS_REQ_ADD_WRITE_PERM_OF_BROKER, "ADD_WRITE_PERM_OF_BROKER", ADMIN_REQ, kv_wipe, NULL},
    {NS_REQ_DELETE_TOPIC_IN_NAMESRV, "DELETE_TOPIC_IN_NAMESRV", ADMIN_REQ, kv_topic, NULL},
    {NS_REQ_UPDATE_NAMESRV_CONFIG, "UPDATE_NAMESRV_CONFIG", ADMIN_REQ, kv_none, NULL},
    {NS_REQ_NS_USER_ADD, "NS_USER_ADD", USERS, kv_user, NULL},
    {NS_REQ_NS_USER_UPDATE, "NS_USER_UPDATE", USERS, kv_user, NULL},
    {NS_REQ_NS_USER_DELETE, "NS_USER_DELETE", USERS, kv_user, NULL},
    {NS_REQ_NS_USER_LIST, "NS_USER_LIST", USERS, kv_none, NULL},
};

/* The least caller the policy lets through (NONE: anyone). */
static int least(int mode, need_t need)
{
    switch (need) {
    case READ:
        return mode == M_ALL ? CLIENT : NONE;
    case BROKER_REQ:
        return mode == M_OFF ? NONE : BROKER;
    case ADMIN_REQ:
        return mode == M_OFF ? NONE : ADMIN;
    case USERS:
        return ADMIN;
    }
    return ADMIN;
}

typedef struct {
    char *dir;
    nstest_server_t srv;
    ns_client_t *c[4]; /* one connection per caller */
} fx_t;

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof *fx);
    char data[4200];
    fx->dir = nstest_tmpdir("authmatrix");
    snprintf(data, sizeof data, "%s/data", fx->dir);
    nstest_users_add(data, false);
    const char *args[] = {"--authMode=off", "--authPenaltyMaxMillis=0", NULL};
    if (nstest_server_start(&fx->srv, fx->dir, args) != 0)
        return -1;
    static const char *const creds[4][2] = {{NULL, NULL},
                                            {"cli1", "clientsecret"},
                                            {"brk1", "brokersecret"},
                                            {"admin1", "adminsecret"}};
    for (int w = 0; w < 4; w++) {
        fx->c[w] = nstest_connect(&fx->srv);
        if (creds[w][0])
            assert_int_equal(ns_client_set_credentials(fx->c[w], creds[w][0], creds[w][1]), NS_OK);
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    for (int w = 0; w < 4; w++)
        ns_client_close(fx->c[w]);
    nstest_server_close(&fx->srv, fx->dir);
    free(fx);
    return 0;
}

/* True when the reply is a refusal of the authentication check (its
 * remarks), false for whatever the handler answered. */
static bool auth_refused(const ns_cmd_msg_t *rsp)
{
    char r[300];
    nstest_remark(rsp, r, sizeof r);
    return rsp->cmd.code == NS_RSP_NO_PERMISSION &&
           (strstr(r, "needs a signed request") || strstr(r, "needs role"));
}

static void set_mode(fx_t *fx, int mode)
{
    char body[32];
    snprintf(body, sizeof body, "authMode=%s", mode_name[mode]);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    nstest_call(fx->c[ADMIN], NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, body, strlen(body),
                NS_VERSION_V5_3_3, 10000, &rsp);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    ns_cmd_msg_free(&rsp);
}

static void test_every_request_mode_and_caller(void **state)
{
    fx_t *fx = *state;
    const size_t n = sizeof reqs / sizeof reqs[0];
    int wrong = 0, refused = 0, passed = 0;
    for (int mode = M_OFF; mode <= M_ALL; mode++) {
        set_mode(fx, mode);
        for (size_t i = 0; i < n; i++) {
            const req_t *q = &reqs[i];
            for (int who = NONE; who <= ADMIN; who++) {
                ns_cmd_msg_t rsp;
                ns_cmd_msg_init(&rsp);
                nstest_call(fx->c[who], q->code, q->kv, q->body, q->body ? strlen(q->body) : 0,
                            NS_VERSION_V5_3_3, 10000, &rsp);
                bool got = auth_refused(&rsp), want = who < least(mode, q->need);
                if (got != want) {
                    print_message("authMode=%s %s from %s: %s (code %d: %.*s)\n", mode_name[mode],
                                  q->name, who_name[who], got ? "refused" : "let through",
                                  rsp.cmd.code, rsp.cmd.remark ? (int)rsp.cmd.remark_len : 0,
                                  rsp.cmd.remark ? rsp.cmd.remark : "");
                    wrong++;
                }
                got ? refused++ : passed++;
                ns_cmd_msg_free(&rsp);
            }
        }
    }
    if (wrong)
        fail_msg("%d of %d answers differ from the policy", wrong, refused + passed);
    /* the matrix has both outcomes in it */
    assert_true(refused > 50 && passed > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_request_mode_and_caller, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
