/* test_tls.c - TLS on the remoting port through the real namesrvd, with
 * certificates made by the openssl CLI in each test's directory
 * (nstest_make_certs): permissive serves TLS and plain on one port,
 * enforcing refuses plain, mutual TLS refuses a client without (or with an
 * untrusted) certificate, a new certificate is picked up while a connection
 * is open, a bad new file keeps the old one, handshakes are bounded. */
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

typedef struct {
    nstest_fx_t base;
    char path[8][512]; /* scratch for argument strings */
} fx_t;

/* A temp directory with the test certificates; a test starts the server. */
static int setup(void **state)
{
    if (nstest_fx_setup_sized(state, sizeof(fx_t), "tls") != 0)
        return -1;
    if (nstest_make_certs(((fx_t *)*state)->base.dir) != 0) {
        nstest_fx_teardown(state);
        return -1;
    }
    return 0;
}

/* "--key=<dir>/<file>" in scratch slot i. */
static const char *arg_path(fx_t *fx, int i, const char *key, const char *file)
{
    snprintf(fx->path[i], sizeof fx->path[i], "--%s=%s/%s", key, fx->base.dir, file);
    return fx->path[i];
}

static const char *file_in(fx_t *fx, int i, const char *file)
{
    snprintf(fx->path[i], sizeof fx->path[i], "%s/%s", fx->base.dir, file);
    return fx->path[i];
}

/* Starts the server with the certificate srv.pem plus extra args. */
static void start(fx_t *fx, const char *const *extra)
{
    const char *args[24];
    size_t n = 0;
    args[n++] = arg_path(fx, 0, "tls.server.certPath", "srv.pem");
    args[n++] = arg_path(fx, 1, "tls.server.keyPath", "srv.key");
    args[n++] = "--tls.config.file="; /* never the machine's /etc/rocketmq/tls.properties */
    for (size_t i = 0; extra && extra[i] && n < 23; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    assert_int_equal(nstest_server_start(&fx->base.srv, fx->base.dir, args), 0);
}

/* Connects with TLS verifying the server with ca (file in the test dir);
 * cert/key may be NULL. Returns the rc; *why the TLS reason. */
static int tls_connect(fx_t *fx, const char *ca, const char *cert, const char *key, ns_client_t **c,
                       const char **why)
{
    char cap[512], certp[512], keyp[512];
    snprintf(cap, sizeof cap, "%s/%s", fx->base.dir, ca);
    snprintf(certp, sizeof certp, "%s/%s", fx->base.dir, cert ? cert : "");
    snprintf(keyp, sizeof keyp, "%s/%s", fx->base.dir, key ? key : "");
    ns_client_tls_t t = {
        .ca_file = cap, .cert_file = cert ? certp : NULL, .key_file = key ? keyp : NULL};
    return ns_client_connect_tls("127.0.0.1", fx->base.srv.port, 3000, &t, c, why);
}

/* A TLS connection (trusting ca, with the client certificate cert/key or
 * none) is made and served; what names the step when it is not. */
static void expect_tls_served(fx_t *fx, const char *ca, const char *cert, const char *key,
                              const char *what)
{
    ns_client_t *t = NULL;
    const char *why = NULL;
    if (tls_connect(fx, ca, cert, key, &t, &why) != NS_OK)
        fail_msg("%s: %s", what, why);
    assert_int_equal(nstest_cluster_info(t), NS_OK);
    ns_client_close(t);
}

/* A TLS connection the server refuses, then the log says why: TLS 1.3
 * finishes the client's side first, so the refusal may come at the
 * handshake or at the first request. */
static void expect_tls_refused(fx_t *fx, const char *cert, const char *key, const char *why_log)
{
    ns_client_t *t = NULL;
    const char *why = NULL;
    if (tls_connect(fx, "ca.pem", cert, key, &t, &why) == NS_OK) {
        assert_int_not_equal(nstest_cluster_info(t), NS_OK);
        ns_client_close(t);
    }
    assert_true(nstest_log_wait(&fx->base.srv, why_log, 3000));
}

static void permissive_serves_tls_and_plain(void **state)
{
    fx_t *fx = *state;
    start(fx, NULL); /* tls.server.mode defaults to permissive */
    const char *why = NULL;
    ns_client_t *t = NULL, *p = nstest_connect(&fx->base.srv);
    if (tls_connect(fx, "ca.pem", NULL, NULL, &t, &why) != NS_OK)
        fail_msg("TLS connect failed: %s", why);
    for (int i = 0; i < 3; i++) { /* interleaved on one port */
        assert_int_equal(nstest_cluster_info(t), NS_OK);
        assert_int_equal(nstest_cluster_info(p), NS_OK);
    }
    /* a large reply crosses several TLS records */
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    static char big[60000];
    memset(big, 'v', sizeof big - 1);
    const char *kv[] = {"namespace", "tls", "key", "k", "value", big, NULL};
    nstest_cmd(&cmd, ext, NS_REQ_PUT_KV_CONFIG, kv);
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(t, &cmd, 5000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    const char *kv2[] = {"namespace", "tls", "key", "k", NULL};
    nstest_cmd(&cmd, ext, NS_REQ_GET_KV_CONFIG, kv2);
    assert_int_equal(ns_client_call(t, &cmd, 5000, &rsp), NS_OK);
    assert_string_equal(ns_cmd_ext_get(&rsp.cmd, "value"), big);
    ns_cmd_msg_free(&rsp);
    ns_client_close(t);
    ns_client_close(p);
    /* a client that does not trust the server's CA gives up */
    assert_int_not_equal(tls_connect(fx, "ca2.pem", NULL, NULL, &t, &why), NS_OK);
    assert_non_null(strstr(why, "certificate verify failed"));
    assert_true(nstest_log_wait(&fx->base.srv, "closed: TLS handshake failed", 3000));
}

/* A server whose certificate has expired: clients that verify refuse it. */
static void expired_server_certificate(void **state)
{
    fx_t *fx = *state;
    const char *extra[] = {arg_path(fx, 2, "tls.server.certPath", "oldsrv.pem"),
                           arg_path(fx, 3, "tls.server.keyPath", "oldsrv.key"), NULL};
    start(fx, extra);
    ns_client_t *t = NULL;
    const char *why = NULL;
    assert_int_not_equal(tls_connect(fx, "ca.pem", NULL, NULL, &t, &why), NS_OK);
    if (strstr(why, "certificate has expired") == NULL)
        fail_msg("client said: %s", why);
    assert_true(nstest_log_wait(&fx->base.srv, "closed: TLS handshake failed", 3000));
}

static void enforcing_refuses_plain(void **state)
{
    fx_t *fx = *state;
    const char *extra[] = {"--tls.server.mode=enforcing", NULL};
    start(fx, extra);
    ns_client_t *p = nstest_connect(&fx->base.srv);
    assert_int_not_equal(nstest_cluster_info(p), NS_OK);
    ns_client_close(p);
    assert_true(nstest_log_wait(&fx->base.srv,
                                "conn 127.0.0.1:", 3000)); /* the peer is named in the line below */
    assert_true(nstest_log_wait(
        &fx->base.srv, "closed: plain connection refused: tls.server.mode=enforcing", 3000));
    expect_tls_served(fx, "ca.pem", NULL, NULL, "TLS connect failed");
}

static void disabled_refuses_tls(void **state)
{
    fx_t *fx = *state;
    const char *extra[] = {"--tls.server.mode=disabled", NULL};
    start(fx, extra);
    ns_client_t *t = NULL, *p = nstest_connect(&fx->base.srv);
    const char *why = NULL;
    assert_int_not_equal(tls_connect(fx, "ca.pem", NULL, NULL, &t, &why), NS_OK);
    assert_true(
        nstest_log_wait(&fx->base.srv, "TLS ClientHello refused: tls.server.mode=disabled", 3000));
    assert_int_equal(nstest_cluster_info(p), NS_OK);
    ns_client_close(p);
}

static void mutual_tls_require(void **state)
{
    fx_t *fx = *state;
    const char *extra[] = {"--tls.server.need.client.auth=require",
                           arg_path(fx, 2, "tls.server.trustCertPath", "ca.pem"), NULL};
    start(fx, extra);
    /* without a certificate */
    expect_tls_refused(fx, NULL, NULL, "peer did not return a certificate");
    /* a certificate from a CA the server does not trust */
    expect_tls_refused(fx, "rogue.pem", "rogue.key", "certificate verify failed");
    /* an expired one from the trusted CA */
    expect_tls_refused(fx, "oldcli.pem", "oldcli.key", "certificate has expired");
    /* the right one */
    expect_tls_served(fx, "ca.pem", "cli.pem", "cli.key", "mTLS connect failed");
    /* plain still served in permissive mode */
    ns_client_t *p = nstest_connect(&fx->base.srv);
    assert_int_equal(nstest_cluster_info(p), NS_OK);
    ns_client_close(p);
}

static void reload_with_connection_open(void **state)
{
    fx_t *fx = *state;
    /* the server reads its certificate from copies the test replaces */
    assert_int_equal(nstest_install_file(file_in(fx, 4, "srv.pem"), file_in(fx, 5, "live.pem")), 0);
    assert_int_equal(nstest_install_file(file_in(fx, 4, "srv.key"), file_in(fx, 5, "live.key")), 0);
    const char *extra[] = {arg_path(fx, 2, "tls.server.certPath", "live.pem"),
                           arg_path(fx, 3, "tls.server.keyPath", "live.key"), NULL};
    start(fx, extra);
    ns_client_t *old = NULL, *t = NULL;
    const char *why = NULL;
    if (tls_connect(fx, "ca.pem", NULL, NULL, &old, &why) != NS_OK)
        fail_msg("TLS connect failed: %s", why);
    assert_int_equal(nstest_cluster_info(old), NS_OK);

    /* a bad new certificate: logged, the old context stays */
    FILE *f = fopen(file_in(fx, 4, "bad.pem"), "w");
    assert_non_null(f);
    fputs("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", f);
    fclose(f);
    assert_int_equal(nstest_install_file(file_in(fx, 4, "bad.pem"), file_in(fx, 5, "live.pem")), 0);
    assert_true(nstest_log_wait(&fx->base.srv,
                                "reload failed, the previous certificate stays in use", 5000));
    expect_tls_served(fx, "ca.pem", NULL, NULL, "the old certificate should still be served");

    /* the new pair (signed by another CA): new connections get it */
    assert_int_equal(nstest_install_file(file_in(fx, 4, "srv2.key"), file_in(fx, 5, "live.key")),
                     0);
    assert_int_equal(nstest_install_file(file_in(fx, 4, "srv2.pem"), file_in(fx, 5, "live.pem")),
                     0);
    bool switched = false;
    for (int i = 0; i < 100 && !switched; i++) {
        if (tls_connect(fx, "ca2.pem", NULL, NULL, &t, &why) == NS_OK) {
            switched = true;
            assert_int_equal(nstest_cluster_info(t), NS_OK);
            ns_client_close(t);
        } else {
            nstest_sleep_ms(50);
        }
    }
    assert_true(switched);
    assert_true(nstest_log_wait(&fx->base.srv, "reloaded (context", 1000));
    assert_int_not_equal(tls_connect(fx, "ca.pem", NULL, NULL, &t, &why), NS_OK);
    /* the connection opened before still works on its own session */
    assert_int_equal(nstest_cluster_info(old), NS_OK);
    ns_client_close(old);

    /* SIGHUP rebuilds at once */
    int before = nstest_log_count(&fx->base.srv, "reloaded (context");
    assert_int_equal(kill(fx->base.srv.pid, SIGHUP), 0);
    assert_true(nstest_log_wait(&fx->base.srv, "SIGHUP: reloading the TLS certificate", 3000));
    for (int i = 0; i < 100 && nstest_log_count(&fx->base.srv, "reloaded (context") == before; i++)
        nstest_sleep_ms(20);
    assert_int_equal(nstest_log_count(&fx->base.srv, "reloaded (context"), before + 1);
    expect_tls_served(fx, "ca2.pem", NULL, NULL, "after SIGHUP");
}

static void handshake_is_bounded(void **state)
{
    fx_t *fx = *state;
    const char *extra[] = {"--tlsHandshakeTimeoutMillis=300", NULL};
    start(fx, extra);
    ns_client_t *c = nstest_connect(&fx->base.srv);
    /* the first bytes of a ClientHello, and then nothing */
    static const uint8_t partial[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00,
                                      0x01, 0xfc, 0x03, 0x03, 0x00, 0x01, 0x02};
    assert_int_equal(ns_client_send_raw(c, partial, sizeof partial), NS_OK);
    int64_t t0 = nstest_mono_ms();
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_recv(c, 5000, &rsp), NS_ECONN); /* closed by the server */
    int64_t took = nstest_mono_ms() - t0;
    assert_true(took < 3000);
    assert_true(nstest_log_wait(
        &fx->base.srv, "closed: handshake not finished within tlsHandshakeTimeoutMillis=300",
        1000));
    ns_cmd_msg_free(&rsp);
    ns_client_close(c);
    /* the others are unaffected; one that has sent nothing at all is not in a
     * handshake (the idle timeout governs it, as in Java) */
    ns_client_t *p = nstest_connect(&fx->base.srv), *quiet = nstest_connect(&fx->base.srv);
    assert_int_equal(nstest_cluster_info(p), NS_OK);
    ns_client_close(p);
    /* a handshake started after quiet connected runs out: a handshake timer
     * of quiet's, had it one, would have run out first */
    ns_client_t *late = nstest_connect(&fx->base.srv);
    assert_int_equal(ns_client_send_raw(late, partial, sizeof partial), NS_OK);
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_recv(late, 5000, &rsp), NS_ECONN);
    ns_cmd_msg_free(&rsp);
    ns_client_close(late);
    assert_int_equal(nstest_cluster_info(quiet), NS_OK);
    ns_client_close(quiet);
}

/* A TLS connection the server closes (here: idle) ends with close_notify. */
static void idle_close_sends_close_notify(void **state)
{
    fx_t *fx = *state;
    const char *extra[] = {"--serverChannelMaxIdleTimeSeconds=1", NULL};
    start(fx, extra);
    ns_client_t *t = NULL;
    const char *why = NULL;
    if (tls_connect(fx, "ca.pem", NULL, NULL, &t, &why) != NS_OK)
        fail_msg("TLS connect failed: %s", why);
    assert_int_equal(nstest_cluster_info(t), NS_OK);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_recv(t, 5000, &rsp), NS_ECONN);
    if (strstr(why, "close_notify") == NULL)
        fail_msg("the connection ended without close_notify: '%s'", why);
    ns_cmd_msg_free(&rsp);
    ns_client_close(t);
    assert_true(nstest_log_wait(&fx->base.srv, "closing: idle timeout", 1000));
}

static void bad_settings_fail_at_start(void **state)
{
    fx_t *fx = *state;
    char *err = NULL;
    char data[600], cert[600], key[600];
    snprintf(data, sizeof data, "--dataDir=%s/data2", fx->base.dir);
    snprintf(cert, sizeof cert, "--tls.server.certPath=%s/srv.pem", fx->base.dir);
    snprintf(key, sizeof key, "--tls.server.keyPath=%s/cli.key", fx->base.dir); /* not srv's key */
    const char *args[] = {data, "--listenPort=0", cert, key, "--tls.config.file=", NULL};
    assert_int_not_equal(nstest_run(NS_NAMESRVD_PATH, args, &err, 10000), 0);
    assert_non_null(err);
    if (strstr(err, "does not match certificate") == NULL)
        fail_msg("namesrvd said: %s", err);
    free(err);
    const char *args2[] = {data, "--listenPort=0", "--tls.server.mode=enforcing",
                           "--tls.config.file=", NULL};
    assert_int_not_equal(nstest_run(NS_NAMESRVD_PATH, args2, &err, 10000), 0);
    assert_non_null(strstr(err, "enforcing needs tls.server.certPath"));
    free(err);
}

/* tls.config.file: its tls.server.* keys apply, as Java's TlsHelper reads them. */
static void tls_config_file(void **state)
{
    fx_t *fx = *state;
    char path[600], line[700];
    snprintf(path, sizeof path, "%s/tls.properties", fx->base.dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "tls.test.mode.enable=false\ntls.client.authServer=true\n"
            "tls.server.need.client.auth=require\ntls.server.trustCertPath=%s/ca.pem\n",
            fx->base.dir);
    fclose(f);
    snprintf(line, sizeof line, "--tls.config.file=%s", path);
    const char *args[] = {arg_path(fx, 0, "tls.server.certPath", "srv.pem"),
                          arg_path(fx, 1, "tls.server.keyPath", "srv.key"), line, NULL};
    assert_int_equal(nstest_server_start(&fx->base.srv, fx->base.dir, args), 0);
    assert_true(nstest_log_wait(&fx->base.srv, "TLS: settings read from", 3000));
    assert_true(nstest_log_wait(&fx->base.srv, "client auth require", 3000));
    ns_client_t *t = NULL;
    const char *why = NULL;
    if (tls_connect(fx, "ca.pem", "cli.pem", "cli.key", &t, &why) != NS_OK)
        fail_msg("mTLS connect failed: %s", why);
    assert_int_equal(nstest_cluster_info(t), NS_OK);
    ns_client_close(t);
}

/* namesrvctl speaks TLS with --tls-ca (and a client certificate). */
static void namesrvctl_over_tls(void **state)
{
    fx_t *fx = *state;
    const char *extra[] = {"--tls.server.mode=enforcing", NULL};
    start(fx, extra);
    char ns[64], ca[600];
    snprintf(ns, sizeof ns, "127.0.0.1:%d", fx->base.srv.port);
    snprintf(ca, sizeof ca, "%s/ca.pem", fx->base.dir);
    char *out = NULL;
    int rc = nstest_ctl(10000, &out, "kv", "put", "NS", "K", "V", "--ns", ns, "--tls-ca", ca, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    rc = nstest_ctl(10000, &out, "kv", "get", "NS", "K", "--ns", ns, "--tls-ca", ca, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "V");
    free(out);
    rc = nstest_ctl(10000, &out, "kv", "get", "NS", "K", "--ns", ns, NULL); /* plain: refused */
    NSTEST_EXPECT_RC(rc, 5, out);
    NSTEST_EXPECT_IN(out, "if it enforces TLS"); /* and the operator is told why */
    free(out);
    /* TLS options before the command, as the help allows */
    rc = nstest_ctl(10000, &out, "--tls-ca", ca, "--ns", ns, "kv", "get", "NS", "K", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(permissive_serves_tls_and_plain, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(enforcing_refuses_plain, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(expired_server_certificate, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(disabled_refuses_tls, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(mutual_tls_require, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(reload_with_connection_open, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(handshake_is_bounded, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(idle_close_sends_close_notify, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(bad_settings_fail_at_start, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(tls_config_file, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(namesrvctl_over_tls, setup, nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
