/* nstest_auth.h - what the authentication integration tests share: users
 * made offline with namesrvctl, one request signed as a user on its own
 * connection, and a signed request replayed under another code.
 * Need <cmocka.h> (they fail the test on error). */
#ifndef NS_TEST_AUTH_H
#define NS_TEST_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "nstest.h"
#include "ns/buf.h"
#include "ns/client.h"
#include "ns/sign.h"

/* Adds user ak with secret sk and role offline to the store under data_dir
 * ("namesrvctl user add"), with up to two more arguments (extra1, extra2;
 * NULL ends them). Fails the test unless namesrvctl succeeds. */
void nstest_user_add(const char *data_dir, const char *ak, const char *sk, const char *role,
                     const char *extra1, const char *extra2);
/* The users the auth tests share: admin1/adminsecret (admin),
 * brk1/brokersecret (broker, granted C1/broker-a), cli1/clientsecret
 * (client); with refused_too, off1/offsecret (a disabled client) and
 * far1/farsecret (a client allowed only from 10.0.0.0/8 and ::1). */
void nstest_users_add(const char *data_dir, bool refused_too);

/* One request on c (body may be NULL); returns the reply's code, its remark
 * in remark (rlen bytes; may be NULL). */
int nstest_call_on(ns_client_t *c, int code, const char *const *kv, const char *body, char *remark,
                   size_t rlen);
/* One request on a new connection to srv, signed as ak/sk when ak is set,
 * unsigned otherwise, body (may be NULL) as its body; returns the reply's
 * code. remark (rlen bytes) gets the reply's remark and *port the local
 * port of the connection (the server records "127.0.0.1:port"); both may
 * be NULL. */
int nstest_call_as(const nstest_server_t *srv, const char *ak, const char *sk, int code,
                   const char *const *kv, const char *body, char *remark, size_t rlen, int *port);

/* One request of a table for nstest_expect_calls: signed as ak/sk (NULL:
 * unsigned), the code wanted and, when set, what its remark holds. With
 * kept, on *kept: connected and signed as ak on first use and left open
 * for the caller to close (a broker registered over a closed connection
 * is unregistered); otherwise on a new connection. */
typedef struct {
    const char *ak, *sk;
    int code;
    const char *const *kv;
    const char *body;
    int want;
    const char *remark;
    ns_client_t **kept;
} nstest_call_case_t;
/* Runs the calls in order; a wrong code or remark fails the test, naming
 * the row. */
void nstest_expect_calls(const nstest_server_t *srv, const nstest_call_case_t *calls, size_t n);
#define NSTEST_EXPECT_CALLS(srv, calls)                                                            \
    nstest_expect_calls((srv), (calls), sizeof(calls) / sizeof(calls)[0])

/* cli1's signed GET_ROUTEINFO_BY_TOPIC of T1 sent as DELETE_TOPIC_IN_NAMESRV
 * on a new connection: the signature verifies (the code is not signed).
 * The fields stay in r->s (r->s.cmd, r->s.ext) to be sent again on r->c. */
typedef struct {
    ns_signed_t s;
    ns_buf_t scratch;
    ns_client_t *c;
    int port; /* local port of r->c */
} nstest_replay_t;
/* Sends it; rsp (initialised by the caller) gets the reply. The caller
 * releases r with nstest_replay_close. */
void nstest_replay_send(nstest_replay_t *r, const nstest_server_t *srv, ns_cmd_msg_t *rsp);
void nstest_replay_close(nstest_replay_t *r);

#endif
