/* test_tls.c - TLS sessions over memory buffers (src/proto/tls.c): a client
 * and a server session wired back to back in memory, with certificates made
 * by the openssl CLI (nstest_make_certs): handshake and data both ways,
 * records split at every size, verification failures, protocol and cipher
 * settings, encrypted keys, and the reloadable server context. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_tls.h"
#include "ns/err.h"
#include "ns/tls.h"

static char *dir;
static char path_buf[8][600];

static const char *in_dir(int slot, const char *file)
{
    snprintf(path_buf[slot], sizeof path_buf[slot], "%s/%s", dir, file);
    return path_buf[slot];
}

static int group_setup(void **state)
{
    (void)state;
    dir = nstest_tmpdir("unit-tls");
    if (dir == NULL || nstest_make_certs(dir) != 0)
        return -1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && openssl pkcs8 -topk8 -v2 aes-256-cbc -in srv.key -out srv-enc.key "
             "-passout pass:hunter2 >/dev/null 2>&1",
             dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    nstest_rmtree(dir);
    free(dir);
    return 0;
}

typedef struct {
    ns_tls_sess_t *cli, *srv;
    ns_buf_t c2s, s2c;       /* ciphertext in flight */
    ns_buf_t cli_in, srv_in; /* plaintext received */
    int cli_rc, srv_rc;
    const char *cli_why, *srv_why;
} pair_t;

/* Moves ciphertext both ways, `chunk` bytes at a time, until neither side
 * has anything to send or one failed. */
static void pump(pair_t *p, size_t chunk)
{
    for (int round = 0; round < 1000 && p->cli_rc == NS_OK && p->srv_rc == NS_OK; round++) {
        if (p->c2s.len == 0 && p->s2c.len == 0)
            return;
        ns_buf_t out = NS_BUF_INIT;
        for (size_t off = 0; off < p->c2s.len && p->srv_rc == NS_OK; off += chunk) {
            size_t n = p->c2s.len - off < chunk ? p->c2s.len - off : chunk;
            p->srv_rc =
                ns_tls_sess_feed(p->srv, p->c2s.data + off, n, &p->srv_in, &out, &p->srv_why);
        }
        ns_buf_reset(&p->c2s);
        ns_buf_t back = NS_BUF_INIT;
        for (size_t off = 0; off < p->s2c.len && p->cli_rc == NS_OK; off += chunk) {
            size_t n = p->s2c.len - off < chunk ? p->s2c.len - off : chunk;
            p->cli_rc =
                ns_tls_sess_feed(p->cli, p->s2c.data + off, n, &p->cli_in, &back, &p->cli_why);
        }
        ns_buf_reset(&p->s2c);
        ns_buf_append(&p->s2c, out.data, out.len);
        ns_buf_append(&p->c2s, back.data, back.len);
        ns_buf_free(&out);
        ns_buf_free(&back);
    }
}

static ns_tls_server_t *server(const ns_tls_opts_t *o)
{
    ns_tls_server_t *s = NULL;
    char err[512];
    if (ns_tls_server_new(o, &s, err, sizeof err) != NS_OK)
        fail_msg("server context: %s", err);
    return s;
}

static ns_tls_ctx_t *client(const char *ca, const char *cert, const char *key, const char *protos)
{
    ns_tls_ctx_t *c = NULL;
    char err[512];
    ns_tls_opts_t o = {.trust_path = ca,
                       .verify_peer = ca != NULL,
                       .cert_path = cert,
                       .key_path = key,
                       .protocols = protos};
    if (ns_tls_ctx_new(&o, false, &c, err, sizeof err) != NS_OK)
        fail_msg("client context: %s", err);
    return c;
}

static void pair_open(pair_t *p, ns_tls_server_t *s, ns_tls_ctx_t *c, size_t chunk)
{
    memset(p, 0, sizeof *p);
    p->srv = ns_tls_sess_server(s);
    p->cli = ns_tls_sess_client(c, "127.0.0.1");
    assert_non_null(p->srv);
    assert_non_null(p->cli);
    assert_int_equal(ns_tls_sess_start(p->cli, &p->c2s, &p->cli_why), NS_OK);
    pump(p, chunk);
}

static void pair_close(pair_t *p)
{
    ns_tls_sess_free(p->cli);
    ns_tls_sess_free(p->srv);
    ns_buf_free(&p->c2s);
    ns_buf_free(&p->s2c);
    ns_buf_free(&p->cli_in);
    ns_buf_free(&p->srv_in);
}

static void handshake_and_data(void **state)
{
    (void)state;
    ns_tls_opts_t so = {.cert_path = in_dir(0, "srv.pem"), .key_path = in_dir(1, "srv.key")};
    ns_tls_server_t *s = server(&so);
    ns_tls_ctx_t *c = client(in_dir(2, "ca.pem"), NULL, NULL, NULL);
    static uint8_t big[70000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7);
    const size_t chunks[] = {1, 5, 1000, 65536};
    for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
        pair_t p;
        pair_open(&p, s, c, chunks[k]);
        assert_int_equal(p.cli_rc, NS_OK);
        assert_int_equal(p.srv_rc, NS_OK);
        assert_true(ns_tls_sess_established(p.cli));
        assert_true(ns_tls_sess_established(p.srv));
        assert_int_equal(ns_tls_sess_seal(p.cli, big, sizeof big, &p.c2s, &p.cli_why), NS_OK);
        assert_int_equal(ns_tls_sess_seal(p.srv, (const uint8_t *)"pong", 4, &p.s2c, &p.srv_why),
                         NS_OK);
        pump(&p, chunks[k]);
        assert_int_equal(p.srv_in.len, sizeof big);
        assert_memory_equal(p.srv_in.data, big, sizeof big);
        assert_int_equal(p.cli_in.len, 4);
        assert_memory_equal(p.cli_in.data, "pong", 4);
        char d[80];
        assert_non_null(strstr(ns_tls_sess_describe(p.srv, d, sizeof d), "TLSv1.3"));
        pair_close(&p);
    }
    ns_tls_ctx_free(c);
    ns_tls_server_free(s);
}

static void verification_failures(void **state)
{
    (void)state;
    ns_tls_opts_t so = {.cert_path = in_dir(0, "srv.pem"),
                        .key_path = in_dir(1, "srv.key"),
                        .client_auth = NS_TLS_AUTH_REQUIRE,
                        .trust_path = in_dir(2, "ca.pem")};
    ns_tls_server_t *s = server(&so);
    /* the client's trust, certificate and key (files in the test dir, NULL:
     * none); which side fails (0: none) and why */
    static const struct {
        const char *ca, *cert, *key;
        char fails;
        const char *why;
    } cases[] = {
        {"ca2.pem", NULL, NULL, 'c', "certificate verify failed"},   /* server's CA not trusted */
        {"ca.pem", NULL, NULL, 's', "did not return a certificate"}, /* the server requires one */
        {"ca.pem", "rogue.pem", "rogue.key", 's', "certificate verify failed"}, /* another CA */
        {"ca.pem", "cli.pem", "cli.key", 0, NULL},                              /* the right one */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ns_tls_ctx_t *c =
            client(in_dir(3, cases[i].ca), cases[i].cert ? in_dir(4, cases[i].cert) : NULL,
                   cases[i].key ? in_dir(5, cases[i].key) : NULL, NULL);
        pair_t p;
        pair_open(&p, s, c, 4096);
        int rc = cases[i].fails == 'c' ? p.cli_rc : p.srv_rc;
        const char *why = cases[i].fails == 'c' ? p.cli_why : p.srv_why;
        if (cases[i].fails) {
            if (rc != NS_ECONN || why == NULL || strstr(why, cases[i].why) == NULL)
                fail_msg("case %zu: rc %d (%s), expected NS_ECONN (%s)", i, rc,
                         why ? why : "no reason", cases[i].why);
        } else {
            assert_int_equal(rc, NS_OK);
            assert_true(ns_tls_sess_established(p.srv));
        }
        pair_close(&p);
        ns_tls_ctx_free(c);
    }
    ns_tls_server_free(s);
}

/* The server refuses the options, with needle in its reason. */
static void expect_refused(const ns_tls_opts_t *so, const char *needle)
{
    char err[512] = "";
    ns_tls_server_t *s = NULL;
    assert_int_equal(ns_tls_server_new(so, &s, err, sizeof err), NS_EINVAL);
    if (strstr(err, needle) == NULL)
        fail_msg("refused with '%s', expected '%s'", err, needle);
}

static void settings(void **state)
{
    (void)state;
    ns_tls_opts_t so = {
        .cert_path = in_dir(0, "srv.pem"), .key_path = in_dir(1, "srv.key"), .protocols = "SSLv3"};
    expect_refused(&so, "tls.protocols: unknown protocol 'SSLv3'");
    so.protocols = NULL;
    so.ciphers = "NOT-A-CIPHER";
    expect_refused(&so, "tls.ciphers");
    so.ciphers = NULL;
    so.client_auth = NS_TLS_AUTH_OPTIONAL; /* without a trust file */
    expect_refused(&so, "tls.server.trustCertPath");
    so.client_auth = NS_TLS_AUTH_NONE;
    so.cert_path = in_dir(2, "missing.pem");
    expect_refused(&so, "missing.pem");
    assert_int_equal(ns_tls_auth_parse("REQUIRE"), NS_TLS_AUTH_REQUIRE);
    assert_int_equal(ns_tls_auth_parse(""), NS_TLS_AUTH_NONE);
    assert_int_equal(ns_tls_auth_parse("yes"), -1);

    /* TLS 1.2 only on the server, a TLS 1.2 suite named: it is what is used */
    so.cert_path = in_dir(0, "srv.pem");
    so.protocols = "TLSv1.2";
    so.ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256";
    ns_tls_server_t *s = server(&so);
    ns_tls_ctx_t *c = client(in_dir(3, "ca.pem"), NULL, NULL, NULL);
    pair_t p;
    pair_open(&p, s, c, 4096);
    assert_int_equal(p.srv_rc, NS_OK);
    char d[80];
    assert_string_equal(ns_tls_sess_describe(p.cli, d, sizeof d),
                        "TLSv1.2 ECDHE-ECDSA-AES128-GCM-SHA256");
    pair_close(&p);
    ns_tls_ctx_free(c);
    /* a client that only speaks TLS 1.3 cannot agree with it */
    c = client(in_dir(3, "ca.pem"), NULL, NULL, "TLSv1.3");
    pair_open(&p, s, c, 4096);
    assert_true(p.srv_rc == NS_ECONN || p.cli_rc == NS_ECONN);
    pair_close(&p);
    ns_tls_ctx_free(c);
    ns_tls_server_free(s);
}

static void encrypted_key(void **state)
{
    (void)state;
    ns_tls_opts_t so = {.cert_path = in_dir(0, "srv.pem"),
                        .key_path = in_dir(1, "srv-enc.key"),
                        .key_password = "wrong"};
    expect_refused(&so, "srv-enc.key");
    so.key_password = "hunter2";
    ns_tls_server_free(server(&so));
}

static void reload(void **state)
{
    (void)state;
    char err[512];
    const char *live_cert = in_dir(6, "reload.pem"), *live_key = in_dir(7, "reload.key");
    assert_int_equal(nstest_install_file(in_dir(0, "srv.pem"), live_cert), 0);
    assert_int_equal(nstest_install_file(in_dir(1, "srv.key"), live_key), 0);
    ns_tls_opts_t so = {.cert_path = live_cert, .key_path = live_key};
    ns_tls_server_t *s = server(&so);
    assert_int_equal(ns_tls_server_generation(s), 1);
    assert_int_equal(ns_tls_server_reload(s, false, err, sizeof err), NS_EAGAIN);
    /* a session started before the reload keeps working after it */
    ns_tls_ctx_t *c1 = client(in_dir(2, "ca.pem"), NULL, NULL, NULL);
    pair_t old;
    pair_open(&old, s, c1, 4096);
    assert_true(ns_tls_sess_established(old.srv));
    /* only the key replaced: mismatch, the old context stays */
    assert_int_equal(nstest_install_file(in_dir(1, "srv2.key"), live_key), 0);
    assert_int_equal(ns_tls_server_reload(s, false, err, sizeof err), NS_EINVAL);
    assert_non_null(strstr(err, "does not match"));
    assert_int_equal(ns_tls_server_reload(s, false, err, sizeof err), NS_EAGAIN); /* once */
    assert_int_equal(ns_tls_server_generation(s), 1);
    assert_int_equal(nstest_install_file(in_dir(0, "srv2.pem"), live_cert), 0);
    assert_int_equal(ns_tls_server_reload(s, false, err, sizeof err), NS_OK);
    assert_int_equal(ns_tls_server_generation(s), 2);
    ns_tls_ctx_t *c2 = client(in_dir(3, "ca2.pem"), NULL, NULL, NULL);
    pair_t p;
    pair_open(&p, s, c2, 4096);
    assert_int_equal(p.cli_rc, NS_OK);
    assert_true(ns_tls_sess_established(p.cli));
    pair_close(&p);
    assert_int_equal(ns_tls_sess_seal(old.cli, (const uint8_t *)"hi", 2, &old.c2s, &old.cli_why),
                     NS_OK);
    pump(&old, 4096);
    assert_int_equal(old.srv_in.len, 2);
    pair_close(&old);
    assert_int_equal(ns_tls_server_reload(s, true, err, sizeof err), NS_OK); /* SIGHUP */
    assert_int_equal(ns_tls_server_generation(s), 3);
    ns_tls_ctx_free(c1);
    ns_tls_ctx_free(c2);
    ns_tls_server_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handshake_and_data),
        cmocka_unit_test(verification_failures),
        cmocka_unit_test(settings),
        cmocka_unit_test(encrypted_key),
        cmocka_unit_test(reload),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
