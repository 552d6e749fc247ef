/* nstest_auth.c - the authentication helpers of nstest_auth.h. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "nstest_auth.h"
#include "ns/codes.h"
#include "ns/err.h"

void nstest_user_add(const char *data_dir, const char *ak, const char *sk, const char *role,
                     const char *extra1, const char *extra2)
{
    char *out = NULL;
    int rc = nstest_ctl(60000, &out, "user", "add", ak, "--data-dir", data_dir, "--role", role,
                        "--secret", sk, extra1, extra2, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
}

void nstest_users_add(const char *data_dir, bool refused_too)
{
    nstest_user_add(data_dir, "admin1", "adminsecret", "admin", NULL, NULL);
    nstest_user_add(data_dir, "brk1", "brokersecret", "broker", "--brokers", "C1/broker-a");
    nstest_user_add(data_dir, "cli1", "clientsecret", "client", NULL, NULL);
    if (!refused_too)
        return;
    nstest_user_add(data_dir, "off1", "offsecret", "client", "--disable", NULL);
    nstest_user_add(data_dir, "far1", "farsecret", "client", "--allow", "10.0.0.0/8,::1");
}

/* The local port of a client's connection. */
static int local_port(ns_client_t *c)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(ns_client_fd(c), (struct sockaddr *)&sa, &len), 0);
    return ntohs(sa.sin_port);
}

int nstest_call_on(ns_client_t *c, int code, const char *const *kv, const char *body, char *remark,
                   size_t rlen)
{
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    nstest_call(c, code, kv, body, body ? strlen(body) : 0, NS_VERSION_V5_3_3, 10000, &rsp);
    int got = rsp.cmd.code;
    if (remark)
        nstest_remark(&rsp, remark, rlen);
    ns_cmd_msg_free(&rsp);
    return got;
}

/* A new connection to srv, signed as ak/sk when ak is set. */
static ns_client_t *connect_as(const nstest_server_t *srv, const char *ak, const char *sk)
{
    ns_client_t *c = nstest_connect(srv);
    if (ak)
        assert_int_equal(ns_client_set_credentials(c, ak, sk), NS_OK);
    return c;
}

int nstest_call_as(const nstest_server_t *srv, const char *ak, const char *sk, int code,
                   const char *const *kv, const char *body, char *remark, size_t rlen, int *port)
{
    ns_client_t *c = connect_as(srv, ak, sk);
    if (port)
        *port = local_port(c);
    int got = nstest_call_on(c, code, kv, body, remark, rlen);
    ns_client_close(c);
    return got;
}

void nstest_expect_calls(const nstest_server_t *srv, const nstest_call_case_t *calls, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const nstest_call_case_t *k = &calls[i];
        char r[256] = "";
        int got;
        if (k->kept) {
            if (*k->kept == NULL)
                *k->kept = connect_as(srv, k->ak, k->sk);
            got = nstest_call_on(*k->kept, k->code, k->kv, k->body, r, sizeof r);
        } else {
            got = nstest_call_as(srv, k->ak, k->sk, k->code, k->kv, k->body, r, sizeof r, NULL);
        }
        if (got != k->want || (k->remark && strstr(r, k->remark) == NULL))
            fail_msg("row %zu (request %d as %s): code %d, expected %d; remark '%s', expected '%s'",
                     i, k->code, k->ak ? k->ak : "unsigned", got, k->want, r,
                     k->remark ? k->remark : "");
    }
}

void nstest_replay_send(nstest_replay_t *r, const nstest_server_t *srv, ns_cmd_msg_t *rsp)
{
    ns_ext_field_t ext[] = {ns_ext_field("topic", "T1")};
    ns_cmd_t cmd;
    memset(r, 0, sizeof *r);
    ns_cmd_request_init(&cmd, NS_REQ_GET_ROUTEINFO_BY_TOPIC, ext, 1);
    assert_int_equal(ns_sign_request(&cmd, "cli1", "clientsecret", &r->scratch, &r->s), NS_OK);
    r->s.cmd.code = NS_REQ_DELETE_TOPIC_IN_NAMESRV;
    r->c = nstest_connect(srv);
    r->port = local_port(r->c);
    assert_int_equal(ns_client_call(r->c, &r->s.cmd, 10000, rsp), NS_OK);
}

void nstest_replay_close(nstest_replay_t *r)
{
    ns_client_close(r->c);
    ns_signed_free(&r->s);
    ns_buf_free(&r->scratch);
}
