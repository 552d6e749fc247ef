/* test_reply_floods.c - floods that used to stall every client, not only
 * the attacker, through the real namesrvd:
 *   - 16 connections each pipelining 10 requests for a topic list of
 *     TOPICS topics and reading nothing: every reply was built, one after
 *     another, before a route lookup of another client was read (8.4 s at
 *     200k topics). A connection whose peer does not read its replies now
 *     stops being served (its reading stops until the peer takes them), so
 *     a lookup meanwhile waits for at most one reply per connection.
 *   - the same with maxUnsentReplyBytes 16 MiB: once the replies nobody
 *     takes hold half of it, a topic list (any reply that grows with the
 *     store) is answered SYSTEM_BUSY without being built, where before it
 *     was built and the budget then closed the connections holding most;
 *     route lookups go on, and the list is served again once they are read.
 * Each test states the lookup latency it saw and the server's peak RSS. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/model.h"

#define MiB (1024L * 1024L)

enum { TOPICS = 200000, CONNS = 16, REQS = 10 };

/* Sends n bytes; false once the server has closed the connection. */
static bool send_all(int fd, const void *p, size_t n)
{
    const char *q = p;
    while (n > 0) {
        ssize_t k = send(fd, q, n, MSG_NOSIGNAL);
        if (k <= 0)
            return false;
        q += k;
        n -= (size_t)k;
    }
    return true;
}

/* Registers broker `name` at addr with n topics "<prefix>NNNNNN" over c. */
static void register_n(ns_client_t *c, const char *name, const char *addr, const char *prefix,
                       int n)
{
    char(*names)[32] = calloc((size_t)n, sizeof *names);
    const char **name_of = calloc((size_t)n, sizeof *name_of);
    assert_non_null(names);
    assert_non_null(name_of);
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "%s%06d", prefix, i);
        name_of[i] = names[i];
    }
    ns_buf_t body = NS_BUF_INIT;
    nstest_regbody_names(&body, name_of, (size_t)n);
    char crc[16];
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(body.data, body.len));
    const char *kv[] = {"bodyCrc32",  crc,  "brokerAddr",  addr,    "brokerId",     "0",
                        "brokerName", name, "clusterName", "Flood", "haServerAddr", addr,
                        NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_REGISTER_BROKER, kv, body.data, body.len, 120000),
                     NS_RSP_SUCCESS);
    ns_buf_free(&body);
    free(name_of);
    free(names);
}

/* TOPICS topics over 4 brokers (one registration of them all would be
 * over maxFrameBytes); "t000007" is one of them. */
static void register_many(ns_client_t *c)
{
    static const char *const prefixes[] = {"t", "u", "v", "w"};
    for (int i = 0; i < 4; i++) {
        char name[32], addr[32];
        snprintf(name, sizeof name, "flood-%d", i);
        snprintf(addr, sizeof addr, "10.0.8.%d:10911", i + 1);
        register_n(c, name, addr, prefixes[i], TOPICS / 4);
    }
}

/* Milliseconds one route lookup of a fresh client takes (it must succeed). */
static int64_t lookup_ms(const nstest_fx_t *fx, const char *topic)
{
    ns_client_t *c = nstest_connect(&fx->srv);
    const char *kv[] = {"topic", topic, NULL};
    int64_t t0 = nstest_mono_ms();
    assert_int_equal(nstest_call_code(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, NULL, 0, 120000),
                     NS_RSP_SUCCESS);
    int64_t dt = nstest_mono_ms() - t0;
    ns_client_close(c);
    return dt;
}

static void report_rss(const nstest_fx_t *fx, const char *what)
{
    long hwm = nstest_proc_status_kib(fx->srv.pid, "VmHWM:");
    printf("# %s: namesrvd peak RSS (VmHWM) %ld MiB\n", what, hwm / 1024);
    assert_true(hwm > 0);
}

/* ---- replies nobody reads ---- */

/* Opens CONNS connections that each send REQS requests of code and read
 * nothing (fds filled). */
static void flood_unread(const nstest_fx_t *fx, int code, const char *const *kv, int *fds)
{
    ns_cmd_t req;
    ns_ext_field_t ext[8];
    nstest_cmd(&req, ext, code, kv);
    ns_buf_t frames = NS_BUF_INIT;
    for (int i = 0; i < REQS; i++) {
        req.opaque = i + 1;
        assert_int_equal(ns_remoting_encode(&frames, &req), NS_OK);
    }
    for (int i = 0; i < CONNS; i++) {
        fds[i] = nstest_raw_connect(fx->srv.port, 4096, 3); /* reads nothing, takes little */
        (void)send_all(fds[i], frames.data, frames.len);
    }
    ns_buf_free(&frames);
}

/* The worst of 20 lookups made while the flood's connections stay open. */
static int64_t worst_lookup_during(const nstest_fx_t *fx)
{
    int64_t worst = 0;
    for (int i = 0; i < 20; i++) {
        int64_t dt = lookup_ms(fx, "t000007");
        if (dt > worst)
            worst = dt;
        nstest_sleep_ms(50);
    }
    return worst;
}

static void test_unread_topic_lists(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *broker = nstest_connect(&fx->srv);
    register_many(broker);
    int64_t quiet = lookup_ms(fx, "t000007");
    int64_t t0 = nstest_mono_ms();
    int64_t one = -1;
    {
        ns_client_t *c = nstest_connect(&fx->srv);
        ns_cmd_msg_t rsp =
            nstest_call_msg(c, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, NULL, 0, 120000);
        one = nstest_mono_ms() - t0;
        printf("# one topic list: %zu bytes in %lld ms\n", rsp.cmd.body_len, (long long)one);
        ns_cmd_msg_free(&rsp);
        ns_client_close(c);
    }
    int fds[CONNS];
    flood_unread(fx, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, fds);
    int64_t worst = worst_lookup_during(fx);
    printf("# lookup: %lld ms quiet, worst %lld ms under %d unread x %d topic lists\n",
           (long long)quiet, (long long)worst, CONNS, REQS);
    report_rss(fx, "unread topic lists");
    /* before: every pipelined list was built before the lookup was read
     * (CONNS x REQS lists); now at most one per connection is */
    if (worst > (CONNS * REQS / 4) * one + 1000)
        fail_msg("a lookup took %lld ms while %d connections did not read (one list: %lld ms)",
                 (long long)worst, CONNS, (long long)one);
    assert_true(nstest_log_wait(&fx->srv, "reading stopped until the peer takes", 5000));
    for (int i = 0; i < CONNS; i++)
        close(fds[i]);
    ns_client_close(broker);
}

/* GET_ALL_TOPIC_LIST on a fresh connection: its reply code. */
static int topic_list_code(const nstest_fx_t *fx)
{
    ns_client_t *c = nstest_connect(&fx->srv);
    int code =
        nstest_call_code(c, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, NULL, 0, 120000);
    ns_client_close(c);
    return code;
}

/* The server's own count of reply bytes its clients have not taken. */
#define UNSENT_SERIES "namesrv_budget_used{budget=\"unsent_reply_bytes\"}"
#define SENT_SERIES "namesrv_sent_bytes_total"

/* The two counts once they have stood still for 200 ms (5 s at most): the
 * server writes a reply's rest as the socket takes it, and the kernel's
 * send buffer grows under it (towards tcp_wmem's 4 MiB), so what is held
 * moves for a while after each request. */
static void settled(const nstest_fx_http_t *pf, double *unsent, double *sent)
{
    double u = -1, s = -1;
    int64_t still = nstest_mono_ms(), end = still + 5000;
    for (;;) {
        char *text = nstest_scrape(pf->http_port, NULL);
        double u_now = nstest_series(text, UNSENT_SERIES, 0);
        double s_now = nstest_series(text, SENT_SERIES, 0);
        free(text);
        int64_t now = nstest_mono_ms();
        if (u_now != u || s_now != s) {
            u = u_now;
            s = s_now;
            still = now;
        } else if (now - still >= 200 || now > end) {
            break;
        }
        nstest_sleep_ms(20);
    }
    *unsent = u;
    *sent = s;
}

/* Opens flood connections one at a time until the replies nobody takes
 * hold target bytes: the pressure then stays (nothing else is built,
 * nobody reads). Each connection is sent one topic list request at a time
 * until the server holds a reply for it (the unsent count grows by 1 MiB:
 * the server then stops reading it) or a request moves neither count (it
 * was not read, or was answered SYSTEM_BUSY): the socket's own send buffer
 * takes a first list or two whole, and how much depends on the kernel, so
 * no count of requests per connection is fixed. Returns how many
 * connections were opened (fds filled). */
static int flood_until_pressed(const nstest_fx_http_t *pf, double target, int *fds)
{
    ns_cmd_t req;
    ns_ext_field_t ext[8];
    nstest_cmd(&req, ext, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL);
    ns_buf_t frame = NS_BUF_INIT;
    int n = 0;
    double held, sent;
    settled(pf, &held, &sent);
    while (held < target && n < CONNS) {
        fds[n] = nstest_raw_connect(pf->fx.srv.port, 4096, 3);
        double base = held;
        for (int k = 0; k < 8; k++) {
            double was_held = held, was_sent = sent;
            ns_buf_reset(&frame);
            req.opaque = k + 1;
            assert_int_equal(ns_remoting_encode(&frame, &req), NS_OK);
            assert_true(send_all(fds[n], frame.data, frame.len));
            settled(pf, &held, &sent);
            if (held >= base + MiB || held >= target)
                break; /* this connection holds a reply */
            if (held == was_held && sent < was_sent + MiB)
                break; /* not read, or not built */
        }
        n++;
    }
    ns_buf_free(&frame);
    if (held < target)
        fail_msg("%d unread connections hold %.0f bytes, under %.0f", n, held, target);
    return n;
}

static void test_bulk_not_built_under_pressure(void **state)
{
    nstest_fx_http_t *pf = *state;
    nstest_fx_t *fx = &pf->fx;
    ns_client_t *broker = nstest_connect(&fx->srv);
    register_many(broker);
    assert_int_equal(topic_list_code(fx), NS_RSP_SUCCESS);
    /* that list's bytes leave the count once the server has seen them go:
     * the flood below starts from a count of its own bytes only */
    double left = nstest_metric(pf->http_port, UNSENT_SERIES);
    for (int64_t end = nstest_mono_ms() + 10000; left > 0 && nstest_mono_ms() < end;) {
        nstest_sleep_ms(20);
        left = nstest_metric(pf->http_port, UNSENT_SERIES);
    }
    assert_true(left == 0);
    int fds[CONNS];
    /* half the budget: no more lists are built from there on */
    int n = flood_until_pressed(pf, 16.0 * MiB / 2, fds);
    int code = topic_list_code(fx);
    int64_t dt = lookup_ms(fx, "t000007");
    printf("# under pressure (%d unread connections, %.0f unsent bytes): topic list answered "
           "%d, a lookup took %lld ms\n",
           n, nstest_metric(pf->http_port, UNSENT_SERIES), code, (long long)dt);
    assert_int_equal(code, NS_RSP_SYSTEM_BUSY);
    assert_true(nstest_log_wait(&fx->srv, "hold half of maxUnsentReplyBytes", 5000));
    report_rss(fx, "unread topic lists, 16 MiB unsent budget");
    for (int i = 0; i < n; i++)
        close(fds[i]);
    bool served = false;
    for (int64_t end = nstest_mono_ms() + 20000; !served && nstest_mono_ms() < end;) {
        served = topic_list_code(fx) == NS_RSP_SUCCESS;
        if (!served)
            nstest_sleep_ms(100);
    }
    assert_true(served);
    ns_client_close(broker);
}

static int setup_small_unsent(void **state)
{
    static const char *const args[] = {"--maxUnsentReplyBytes=16777216", NULL};
    return nstest_fx_setup_http(state, "reply-pressure", args);
}

static int setup_default(void **state)
{
    return nstest_fx_setup(state, "reply-floods", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unread_topic_lists, setup_default, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_bulk_not_built_under_pressure, setup_small_unsent,
                                        nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
