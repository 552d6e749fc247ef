/* test_tls_offload.c - TLS handshake steps run on worker threads
 * (tlsHandshakeOffload, src/daemon/net/conn_offload.c), not on the loop
 * that serves lookups. Eight ClientHellos reach the server in one turn (it
 * is stopped while they are sent) with a plain lookup among them: each is
 * answered with the server's first flight, counted in
 * namesrv_tls_handshakes_offloaded_total, the lookup is served and a full
 * handshake works; with the offload off the same holds and nothing is
 * counted. maxPendingHandshakes bounds the handshakes begun and not
 * finished, and maxTlsSessions the TLS connections open. Before, every handshake step ran on the
 * loop, ahead of the lookups that arrived with it, and unfinished handshakes were bounded only by
 * maxConnections. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/ssl.h>

#include "nstest.h"
#include "nstest_tls.h"
#include "ns/client.h"
#include "ns/err.h"

#define HELLOS 8

typedef struct {
    nstest_fx_t base;
    char a[4][512];
    int http;
} fx_t;

static int setup(void **state)
{
    if (nstest_fx_setup_sized(state, sizeof(fx_t), "tlsoffload") != 0)
        return -1;
    if (nstest_make_certs(((fx_t *)*state)->base.dir) != 0) {
        nstest_fx_teardown(state);
        return -1;
    }
    return 0;
}

static void start(fx_t *fx, const char *offload, const char *extra)
{
    snprintf(fx->a[0], sizeof fx->a[0], "--tls.server.certPath=%s/srv.pem", fx->base.dir);
    snprintf(fx->a[1], sizeof fx->a[1], "--tls.server.keyPath=%s/srv.key", fx->base.dir);
    snprintf(fx->a[2], sizeof fx->a[2], "--tlsHandshakeOffload=%s", offload);
    const char *args[] = {fx->a[0], fx->a[1], fx->a[2], "--tls.config.file=", extra, NULL};
    assert_int_equal(nstest_server_start_http(&fx->base.srv, fx->base.dir, args, &fx->http), 0);
}

/* A TLS 1.3 ClientHello made by OpenSSL into memory: the bytes a client
 * sends first. Returns its length (out holds it). */
static size_t client_hello(unsigned char *out, size_t cap)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(ctx);
    SSL *s = SSL_new(ctx);
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    SSL_set_bio(s, rb, wb);
    SSL_set_connect_state(s);
    assert_true(SSL_do_handshake(s) <= 0); /* wants the server's answer */
    int n = BIO_read(wb, out, (int)cap);
    assert_true(n > 0);
    SSL_free(s);
    SSL_CTX_free(ctx);
    return (size_t)n;
}

/* Sends the same ClientHello on HELLOS connections while the server is
 * stopped, so that one turn of its loop reads them all, with a plain lookup
 * among them; then every connection must get the server's first flight (a
 * TLS handshake record) and the lookup its answer. */
static void hellos_in_one_turn(fx_t *fx)
{
    unsigned char hello[4096];
    size_t n = client_hello(hello, sizeof hello);
    int fds[HELLOS];
    for (int i = 0; i < HELLOS; i++)
        fds[i] = nstest_raw_connect(fx->base.srv.port, 0, 5);
    ns_client_t *plain = nstest_connect(&fx->base.srv);
    assert_int_equal(nstest_cluster_info(plain), NS_OK); /* accepted before the stop */
    assert_int_equal(kill(fx->base.srv.pid, SIGSTOP), 0);
    for (int i = 0; i < HELLOS; i++)
        assert_int_equal(send(fds[i], hello, n, 0), (ssize_t)n);
    assert_int_equal(kill(fx->base.srv.pid, SIGCONT), 0);
    assert_int_equal(nstest_cluster_info(plain), NS_OK);
    for (int i = 0; i < HELLOS; i++) {
        unsigned char b[5];
        ssize_t got = recv(fds[i], b, sizeof b, MSG_WAITALL);
        if (got != (ssize_t)sizeof b || b[0] != 22)
            fail_msg("connection %d: no ServerHello (recv %zd, first byte %d)", i, got,
                     got > 0 ? b[0] : -1);
        close(fds[i]);
    }
    ns_client_close(plain);
}

/* A TLS connection verified with the test CA that answers a lookup; NULL
 * when the handshake or the lookup fails (the caller closes it). */
static ns_client_t *tls_connect(fx_t *fx)
{
    char ca[600];
    snprintf(ca, sizeof ca, "%s/ca.pem", fx->base.dir);
    ns_client_tls_t t = {.ca_file = ca};
    ns_client_t *c = NULL;
    const char *why = NULL;
    if (ns_client_connect_tls("127.0.0.1", fx->base.srv.port, 5000, &t, &c, &why) != NS_OK) {
        print_message("# TLS connect failed: %s\n", why ? why : "?");
        return NULL;
    }
    if (nstest_cluster_info(c) != NS_OK) {
        ns_client_close(c);
        return NULL;
    }
    return c;
}

static void full_handshake(fx_t *fx)
{
    ns_client_t *c = tls_connect(fx);
    assert_non_null(c);
    ns_client_close(c);
}

static void offloaded(void **state)
{
    fx_t *fx = *state;
    start(fx, "true", NULL);
    hellos_in_one_turn(fx);
    double off = nstest_metric(fx->http, "namesrv_tls_handshakes_offloaded_total");
    print_message("# offload on: %d ClientHellos in one turn, %.0f steps offloaded\n", HELLOS, off);
    assert_true(off >= HELLOS);
    full_handshake(fx);
}

static void on_the_loop(void **state)
{
    fx_t *fx = *state;
    start(fx, "false", NULL);
    hellos_in_one_turn(fx);
    full_handshake(fx);
    assert_true(nstest_metric(fx->http, "namesrv_tls_handshakes_offloaded_total") == 0);
}

/* One ClientHello on fd; true when the server answers with its first
 * flight, false when it closes the connection instead. */
static bool hello_answered(int fd, const unsigned char *hello, size_t n)
{
    unsigned char b[5];
    assert_int_equal(send(fd, hello, n, 0), (ssize_t)n);
    ssize_t got = recv(fd, b, sizeof b, MSG_WAITALL);
    return got == (ssize_t)sizeof b && b[0] == 22;
}

/* maxPendingHandshakes 2: two handshakes left unfinished hold both slots,
 * the third ClientHello is refused before any key operation (the
 * connection closes, counted as budget_handshakes), and a slot freed by a
 * close serves a full handshake again. Before, every unfinished handshake
 * held its ~48 KiB until tlsHandshakeTimeoutMillis, up to maxConnections of
 * them. */
static void pending_capped(void **state)
{
    fx_t *fx = *state;
    start(fx, "true", "--maxPendingHandshakes=2");
    unsigned char hello[4096];
    size_t n = client_hello(hello, sizeof hello);
    int held[2], extra = nstest_raw_connect(fx->base.srv.port, 0, 5);
    for (int i = 0; i < 2; i++) {
        held[i] = nstest_raw_connect(fx->base.srv.port, 0, 5);
        assert_true(hello_answered(held[i], hello, n));
    }
    assert_false(hello_answered(extra, hello, n));
    close(extra);
    assert_true(nstest_metric(fx->http, "namesrv_refusals_total{reason=\"budget_handshakes\"}") >=
                1);
    assert_true(nstest_metric(fx->http, "namesrv_budget_used{budget=\"pending_handshakes\"}") == 2);
    assert_true(nstest_log_wait(&fx->base.srv, "maxPendingHandshakes", 3000));
    close(held[0]);
    close(held[1]);
    bool freed = false;
    for (int64_t end = nstest_mono_ms() + 10000; !freed && nstest_mono_ms() < end;) {
        freed = nstest_metric(fx->http, "namesrv_budget_used{budget=\"pending_handshakes\"}") == 0;
        if (!freed)
            nstest_sleep_ms(20);
    }
    assert_true(freed);
    full_handshake(fx);
}

/* maxTlsSessions 2: two established TLS sessions hold both slots, a third
 * ClientHello closes its connection (counted as budget_tls_sessions) while
 * plain connections are served as before, and a session's close frees its
 * slot. Before, established sessions (~21 KiB of OpenSSL state each) were
 * bounded only by maxConnections. */
static void sessions_capped(void **state)
{
    fx_t *fx = *state;
    start(fx, "true", "--maxTlsSessions=2");
    ns_client_t *held[2];
    for (int i = 0; i < 2; i++)
        assert_non_null(held[i] = tls_connect(fx));
    assert_null(tls_connect(fx));
    ns_client_t *plain = nstest_connect(&fx->base.srv);
    assert_int_equal(nstest_cluster_info(plain), NS_OK);
    ns_client_close(plain);
    assert_true(nstest_metric(fx->http, "namesrv_refusals_total{reason=\"budget_tls_sessions\"}") >=
                1);
    assert_true(nstest_metric(fx->http, "namesrv_budget_used{budget=\"tls_sessions\"}") == 2);
    assert_true(nstest_log_wait(&fx->base.srv, "maxTlsSessions", 3000));
    ns_client_close(held[0]);
    bool freed = false;
    for (int64_t end = nstest_mono_ms() + 10000; !freed && nstest_mono_ms() < end;) {
        freed = nstest_metric(fx->http, "namesrv_budget_used{budget=\"tls_sessions\"}") == 1;
        if (!freed)
            nstest_sleep_ms(20);
    }
    assert_true(freed);
    ns_client_t *again = tls_connect(fx);
    assert_non_null(again);
    ns_client_close(again);
    ns_client_close(held[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(offloaded, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(on_the_loop, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(pending_capped, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(sessions_capped, setup, nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
