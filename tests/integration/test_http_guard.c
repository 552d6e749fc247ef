/* test_http_guard.c - slow clients cannot hold the HTTP endpoint. Before,
 * 32 clients sending one header byte every few seconds held all of
 * libmicrohttpd's 32 connections (each byte reset its idle timeout), and
 * /healthz and /metrics went unanswered for as long as they went on. Now a
 * connection that has not sent a whole request header within
 * httpHeaderTimeoutMillis is closed however its bytes come, and one address
 * holds at most httpMaxConnectionsPerAddress connections (the total is
 * httpMaxConnections). */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
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
#include "ns/buf.h"
#include "ns/err.h"
#include "ns/httpget.h"

#define SLOW 8

typedef nstest_fx_http_t fx_t;

static int start(void **state, const char *const *args)
{
    return nstest_fx_setup_http(state, "httpguard", args);
}

/* A client that connects and starts a request header it never ends. */
static int slow_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    const char *start = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    assert_true(send(fd, start, strlen(start), MSG_NOSIGNAL) > 0);
    return fd;
}

/* Whether the server has closed fd (EOF or reset), waiting up to ms. */
static bool closed_by_server(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0)
        return false;
    char b[256];
    ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* One byte more on every slow client still open. */
static void dribble(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0 && send(fds[i], "a", 1, MSG_NOSIGNAL) != 1) {
            close(fds[i]);
            fds[i] = -1;
        }
}

/* GET /healthz with a short timeout: its status, 0 when not answered. */
static int healthz(int port)
{
    ns_buf_t body = NS_BUF_INIT;
    int status = 0;
    if (ns_http_get("127.0.0.1", port, "/healthz", 500, &status, &body) != NS_OK)
        status = 0;
    ns_buf_free(&body);
    return status;
}

/* SLOW clients take every connection; they go on sending a byte every
 * 100 ms; /healthz answers once the header deadline (1 s) closed them. */
static void test_slow_clients_cut_at_the_header_deadline(void **state)
{
    fx_t *f = *state;
    int fds[SLOW];
    for (int i = 0; i < SLOW; i++)
        fds[i] = slow_open(f->http_port);
    nstest_sleep_ms(100);
    int64_t t0 = nstest_mono_ms(), answered = -1;
    int first = healthz(f->http_port);
    while (nstest_mono_ms() - t0 < 5000 && answered < 0) {
        dribble(fds, SLOW);
        if (healthz(f->http_port) == 200)
            answered = nstest_mono_ms() - t0;
        nstest_sleep_ms(100);
    }
    print_message("# /healthz with %d slow clients: first try %d, answered after %lld ms\n", SLOW,
                  first, (long long)answered);
    assert_int_equal(first, 0); /* the slow clients hold every connection */
    assert_true(answered >= 0 && answered < 4000);
    int cut = 0;
    for (int i = 0; i < SLOW; i++)
        if (fds[i] < 0 || closed_by_server(fds[i], 2000))
            cut++;
    assert_int_equal(cut, SLOW);
    assert_true(nstest_log_wait(&f->fx.srv, "sent no whole request header", 5000));
    assert_true(nstest_metric(f->http_port, "namesrv_http_header_timeouts_total") >= SLOW);
    for (int i = 0; i < SLOW; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* One address holds at most httpMaxConnectionsPerAddress connections: the
 * next one is closed at once, without an answer. */
static void test_per_address_cap(void **state)
{
    fx_t *f = *state;
    int fds[4];
    for (int i = 0; i < 4; i++)
        fds[i] = slow_open(f->http_port);
    nstest_sleep_ms(100);
    int extra = slow_open(f->http_port);
    assert_true(closed_by_server(extra, 2000));
    close(extra);
    for (int i = 0; i < 4; i++) {
        assert_false(closed_by_server(fds[i], 0));
        close(fds[i]);
    }
    nstest_sleep_ms(100); /* the server sees them go */
    assert_int_equal(healthz(f->http_port), 200);
}

static int setup_deadline(void **state)
{
    const char *args[] = {"--httpMaxConnections=8", "--httpMaxConnectionsPerAddress=8",
                          "--httpHeaderTimeoutMillis=1000", NULL};
    return start(state, args);
}

static int setup_per_address(void **state)
{
    const char *args[] = {"--httpMaxConnectionsPerAddress=4", NULL};
    return start(state, args);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_slow_clients_cut_at_the_header_deadline,
                                        setup_deadline, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_per_address_cap, setup_per_address,
                                        nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
