/* test_proxy_protocol.c - PROXY protocol v1/v2 in front of the remoting
 * port, through the real namesrvd: the carried address becomes the peer in
 * the server's log lines (on whichever loop serves the request), a header
 * from a peer not in proxyProtocolTrustedAddresses or a malformed one
 * closes that connection with one line, LOCAL keeps the real peer, a
 * preamble works in front of TLS too, and the unsigned first-admin bootstrap
 * believes only a socket that is itself on loopback, never an address a
 * PROXY header claims. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_tls.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

typedef nstest_fx_t fx_t;

static int setup(void **state)
{
    return nstest_fx_setup_dir(state, "proxy");
}

static void start(fx_t *fx, const char *trusted, const char *const *more)
{
    char a_trusted[256];
    const char *args[16] = {"--logLevel=debug", "--tls.config.file="};
    size_t n = 2;
    if (trusted) {
        snprintf(a_trusted, sizeof a_trusted, "--proxyProtocolTrustedAddresses=%s", trusted);
        args[n++] = a_trusted;
    }
    for (size_t i = 0; more && more[i] && n < 15; i++)
        args[n++] = more[i];
    args[n] = NULL;
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, args), 0);
}

/* A plain connection that sends hdr first. */
static ns_client_t *connect_with(fx_t *fx, const void *hdr, size_t len)
{
    ns_client_tls_t t = {.plain = true, .preamble = hdr, .preamble_len = len};
    ns_client_t *c = NULL;
    assert_int_equal(ns_client_connect_tls("127.0.0.1", fx->srv.port, 3000, &t, &c, NULL), NS_OK);
    return c;
}

/* The first log line containing needle (polled up to 3 s); caller frees. */
static char *log_line(fx_t *fx, const char *needle)
{
    char path[600];
    if (!nstest_log_wait(&fx->srv, needle, 3000))
        fail_msg("no log line with '%s'", needle);
    snprintf(path, sizeof path, "%s/namesrvd.log", fx->dir);
    uint8_t *data = NULL;
    size_t len = 0;
    assert_int_equal(nstest_read_file(path, &data, &len), 0);
    char *text = calloc(1, len + 1);
    memcpy(text, data, len);
    free(data);
    char *hit = strstr(text, needle), *start = hit, *end = strchr(hit, '\n');
    while (start > text && start[-1] != '\n')
        start--;
    if (end)
        *end = 0;
    char *line = strdup(start);
    free(text);
    return line;
}

/* Makes the server log two lines naming the connection's peer: one from
 * the request path (a stray response frame, handled on the main loop even
 * with ioThreads), one from the framer (an oversized length, on the loop
 * that owns the socket); both must name `peer`. */
static void expect_peer_in_logs(fx_t *fx, ns_client_t *c, const char *peer, int opaque)
{
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    char needle[256], want[160];
    nstest_cmd(&cmd, ext, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL);
    cmd.flag |= NS_FLAG_RESPONSE;
    cmd.opaque = opaque;
    assert_int_equal(ns_client_send(c, &cmd), NS_OK);
    snprintf(needle, sizeof needle, ": unexpected response frame (opaque %d)", opaque);
    snprintf(want, sizeof want, "conn %s", peer);
    char *line = log_line(fx, needle);
    if (strstr(line, want) == NULL)
        fail_msg("'%s' does not name %s", line, peer);
    free(line);
    int before = nstest_log_count(&fx->srv, "frame of 2147483647 bytes exceeds");
    static const uint8_t huge[] = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 2, '{', '}'};
    assert_int_equal(ns_client_send_raw(c, huge, sizeof huge), NS_OK);
    for (int i = 0;
         i < 150 && nstest_log_count(&fx->srv, "frame of 2147483647 bytes exceeds") == before; i++)
        nstest_sleep_ms(20);
    if (peer[strlen(peer) - 1] == ':')
        return; /* the real peer: its port is not known here */
    snprintf(needle, sizeof needle, "%s: frame of 2147483647 bytes exceeds", want);
    assert_true(nstest_log_count(&fx->srv, needle) > 0);
}

/* A connection sending hdr first is served; with peer, the server names
 * it so (expect_peer_in_logs with id). */
static void expect_served(fx_t *fx, const void *hdr, size_t len, const char *peer, int id)
{
    ns_client_t *c = connect_with(fx, hdr, len);
    assert_int_equal(nstest_cluster_info(c), NS_OK);
    if (peer)
        expect_peer_in_logs(fx, c, peer, id);
    ns_client_close(c);
}

/* A connection sending hdr first is closed unserved, the log saying why. */
static void expect_refused(fx_t *fx, const void *hdr, size_t len, const char *why)
{
    ns_client_t *c = connect_with(fx, hdr, len);
    assert_int_not_equal(nstest_cluster_info(c), NS_OK);
    ns_client_close(c);
    if (!nstest_log_wait(&fx->srv, why, 3000))
        fail_msg("no log line with '%s'", why);
}

static void v1_sets_the_peer(void **state)
{
    fx_t *fx = *state;
    start(fx, "127.0.0.1", NULL);
    const char hdr[] = "PROXY TCP4 203.0.113.7 192.0.2.1 40000 9876\r\n";
    expect_served(fx, hdr, sizeof hdr - 1, "203.0.113.7:40000", 4242);
    /* UNKNOWN keeps the socket's peer */
    const char unk[] = "PROXY UNKNOWN\r\n";
    expect_served(fx, unk, sizeof unk - 1, NULL, 0);
}

static size_t v2_header(uint8_t *p, uint8_t cmd, uint8_t fam, const uint8_t *addr, size_t alen)
{
    static const uint8_t sig[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                    0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
    memcpy(p, sig, 12);
    p[12] = (uint8_t)(0x20 | cmd);
    p[13] = fam;
    p[14] = (uint8_t)(alen >> 8);
    p[15] = (uint8_t)alen;
    if (alen)
        memcpy(p + 16, addr, alen);
    return 16 + alen;
}

static void v2_sets_the_peer(void **state)
{
    fx_t *fx = *state;
    start(fx, "10.9.0.0/16, 127.0.0.0/8", NULL);
    uint8_t addr[36 + 7] = {0x20, 0x01, 0x0d, 0xb8, [15] = 0x07}; /* src 2001:db8::7 */
    addr[31] = 1;                                                 /* dst ::1 */
    addr[32] = 0x9c;                                              /* sport 40001 */
    addr[33] = 0x41;
    addr[34] = 0x26; /* dport 9876 */
    addr[35] = 0x94;
    addr[36] = 0x04; /* a NOOP TLV of 4 bytes, skipped */
    addr[37] = 0x00;
    addr[38] = 0x04;
    uint8_t hdr[64];
    expect_served(fx, hdr, v2_header(hdr, 1, 0x21, addr, sizeof addr), "2001:db8::7:40001", 4243);
    /* LOCAL (a health check of the balancer): the real peer stays */
    expect_served(fx, hdr, v2_header(hdr, 0, 0x00, NULL, 0), "127.0.0.1:", 4244);
}

static void forged_preamble_is_refused(void **state)
{
    fx_t *fx = *state;
    start(fx, NULL, NULL); /* default: nobody may send one */
    const char hdr[] = "PROXY TCP4 198.51.100.1 192.0.2.1 1234 9876\r\n";
    expect_refused(
        fx, hdr, sizeof hdr - 1,
        "closed: PROXY protocol header from a peer not in proxyProtocolTrustedAddresses");
    assert_int_equal(nstest_log_count(&fx->srv, "198.51.100.1"), 0); /* never believed */
    assert_true(nstest_log_count(&fx->srv, "conn 127.0.0.1:") > 0);
    /* the others are served */
    ns_client_t *c = nstest_connect(&fx->srv);
    assert_int_equal(nstest_cluster_info(c), NS_OK);
    ns_client_close(c);
}

static void unlisted_peer_is_refused(void **state)
{
    fx_t *fx = *state;
    start(fx, "10.0.0.0/8,192.0.2.10", NULL);
    uint8_t addr[12] = {198, 51, 100, 2, 192, 0, 2, 1, 0x04, 0xd2, 0x26, 0x94};
    uint8_t hdr[32];
    expect_refused(fx, hdr, v2_header(hdr, 1, 0x11, addr, sizeof addr),
                   "not in proxyProtocolTrustedAddresses");
    assert_int_equal(nstest_log_count(&fx->srv, "198.51.100.2"), 0);
}

static void malformed_header_is_refused(void **state)
{
    fx_t *fx = *state;
    start(fx, "*", NULL);
    const char bad[] = "PROXY TCP4 999.1.1.1 192.0.2.1 1 2\r\n";
    expect_refused(fx, bad, sizeof bad - 1,
                   "closed: malformed PROXY header: PROXY v1: address does not match");
    /* a v2 header claiming more address bytes than its family has */
    uint8_t hdr[32];
    uint8_t addr[8] = {0};
    expect_refused(fx, hdr, v2_header(hdr, 1, 0x11, addr, sizeof addr),
                   "address block shorter than its family needs");
}

/* A load balancer in front of a TLS port: preamble, then the ClientHello. */
static void preamble_before_tls(void **state)
{
    fx_t *fx = *state;
    assert_int_equal(nstest_make_certs(fx->dir), 0);
    char cert[600], key[600], ca[600];
    snprintf(cert, sizeof cert, "--tls.server.certPath=%s/srv.pem", fx->dir);
    snprintf(key, sizeof key, "--tls.server.keyPath=%s/srv.key", fx->dir);
    snprintf(ca, sizeof ca, "%s/ca.pem", fx->dir);
    const char *more[] = {cert, key, "--tls.server.mode=enforcing", NULL};
    start(fx, "127.0.0.1", more);
    const char hdr[] = "PROXY TCP6 2001:db8::99 2001:db8::1 50000 9876\r\n";
    ns_client_tls_t t = {.ca_file = ca, .preamble = hdr, .preamble_len = sizeof hdr - 1};
    ns_client_t *c = NULL;
    const char *why = NULL;
    if (ns_client_connect_tls("127.0.0.1", fx->srv.port, 3000, &t, &c, &why) != NS_OK)
        fail_msg("TLS behind PROXY failed: %s", why);
    assert_int_equal(nstest_cluster_info(c), NS_OK);
    expect_peer_in_logs(fx, c, "2001:db8::99:50000", 4245);
    ns_client_close(c);
}

/* USER_ADD of an admin, unsigned, on c: the reply's code. */
static int bootstrap_admin(ns_client_t *c, const char *ak)
{
    const char *kv[] = {"userAccessKey", ak, "userSecretKey", "bootsecret1", "role", "admin", NULL};
    return nstest_call_code(c, NS_REQ_NS_USER_ADD, kv, NULL, 0, 10000);
}

/* A remote peer behind a trusted balancer (or one that is trusted itself)
 * claiming 127.0.0.1 is still remote: no first admin for it. The socket of
 * the test is on loopback, so this also shows that a connection renamed by
 * a PROXY header never counts as local, whatever it claims. */
static void proxied_loopback_no_bootstrap(void **state)
{
    fx_t *fx = *state;
    start(fx, "*", NULL);
    const char lo[] = "PROXY TCP4 127.0.0.1 127.0.0.1 40000 9876\r\n";
    const char far[] = "PROXY TCP4 203.0.113.9 192.0.2.1 40001 9876\r\n";
    ns_client_t *c = connect_with(fx, lo, sizeof lo - 1);
    assert_int_equal(bootstrap_admin(c, "forged1"), NS_RSP_NO_PERMISSION);
    ns_client_close(c);
    c = connect_with(fx, far, sizeof far - 1);
    assert_int_equal(bootstrap_admin(c, "forged2"), NS_RSP_NO_PERMISSION);
    ns_client_close(c);
    /* the operator on the host itself still can */
    c = nstest_connect(&fx->srv);
    assert_int_equal(bootstrap_admin(c, "local1"), NS_RSP_SUCCESS);
    ns_client_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(v1_sets_the_peer, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(v2_sets_the_peer, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(forged_preamble_is_refused, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(unlisted_peer_is_refused, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(malformed_header_is_refused, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(preamble_before_tls, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(proxied_loopback_no_bootstrap, setup, nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
