/* tls.c - TLS sessions over memory BIOs and the server's reloadable context
 * (include/ns/tls.h).
 *
 * A session is one SSL with two memory BIOs: `rbio` receives the network's
 * ciphertext (ns_tls_sess_feed writes it there), `wbio` collects what
 * OpenSSL wants sent, which every call drains into the caller's buffer. So
 * no call ever blocks or touches a socket, and SSL_ERROR_WANT_READ only
 * means "feed me more".
 *
 * Reload: the server context lives behind a mutex; a session takes a
 * reference to the current SSL_CTX when it starts (SSL_new does), so
 * swapping the pointer never disturbs open sessions, and the old context
 * is freed by OpenSSL when its last session ends. Files are compared by
 * size, mtime (ns) and inode at each poll; a failed load is reported once
 * per change and the old context stays. */
#include "ns/tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "ns/err.h"

struct ns_tls_ctx {
    SSL_CTX *ctx;
};

struct ns_tls_sess {
    SSL *ssl;
    BIO *rbio, *wbio; /* owned by ssl */
    bool established;
    char why[200];
};

/* ---- errors ---- */

/* OpenSSL's newest queued error as text, or fallback; clears the queue. */
static void ossl_reason(char *out, size_t outlen, const char *fallback)
{
    unsigned long e = ERR_peek_last_error();
    if (e == 0) {
        snprintf(out, outlen, "%s", fallback);
    } else {
        char buf[160];
        ERR_error_string_n(e, buf, sizeof buf);
        const char *r = ERR_reason_error_string(e);
        snprintf(out, outlen, "%s", r ? r : buf);
    }
    ERR_clear_error();
}

static bool set(const char *s)
{
    return s != NULL && *s != 0;
}

/* ---- contexts ---- */

static int proto_version(const char *name)
{
    static const struct {
        const char *name;
        int v;
    } names[] = {{"TLSv1", TLS1_VERSION},
                 {"TLSv1.1", TLS1_1_VERSION},
                 {"TLSv1.2", TLS1_2_VERSION},
                 {"TLSv1.3", TLS1_3_VERSION}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(name, names[i].name) == 0)
            return names[i].v;
    return -1;
}

/* "TLSv1.2,TLSv1.3" -> the lowest and highest version named. */
static int set_protocols(SSL_CTX *ctx, const char *list, char *err, size_t errlen)
{
    char buf[128];
    int lo = 0, hi = 0;
    if (!set(list))
        return NS_OK;
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ", :", &save); tok;
         tok = strtok_r(NULL, ", :", &save)) {
        int v = proto_version(tok);
        if (v < 0) {
            snprintf(err, errlen, "tls.protocols: unknown protocol '%s'", tok);
            return NS_EINVAL;
        }
        lo = lo == 0 || v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (lo == 0 || !SSL_CTX_set_min_proto_version(ctx, lo) ||
        !SSL_CTX_set_max_proto_version(ctx, hi)) {
        snprintf(err, errlen, "tls.protocols: '%s' is not usable", list);
        return NS_EINVAL;
    }
    return NS_OK;
}

/* TLS_* names are TLS 1.3 suites; the rest are OpenSSL cipher names. */
static int set_ciphers(SSL_CTX *ctx, const char *list, char *err, size_t errlen)
{
    char buf[1024], v13[1024] = "", v12[1024] = "";
    if (!set(list))
        return NS_OK;
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ", :", &save); tok;
         tok = strtok_r(NULL, ", :", &save)) {
        char *dst = strncmp(tok, "TLS_", 4) == 0 ? v13 : v12;
        size_t used = strlen(dst);
        snprintf(dst + used, sizeof v13 - used, "%s%s", used ? ":" : "", tok);
    }
    if ((v13[0] && !SSL_CTX_set_ciphersuites(ctx, v13)) ||
        (v12[0] && !SSL_CTX_set_cipher_list(ctx, v12))) {
        ossl_reason(err, errlen, "no usable cipher");
        char why[160];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "tls.ciphers: '%s': %s", list, why);
        return NS_EINVAL;
    }
    return NS_OK;
}

static int pass_cb(char *buf, int size, int rwflag, void *u)
{
    const char *pw = u;
    size_t n = pw ? strlen(pw) : 0;
    if (n > (size_t)size)
        n = (size_t)size;
    memcpy(buf, pw ? pw : "", n);
    return (int)n;
}

/* Loads certificate, key and trust into ctx; err names the file. */
static int load_files(SSL_CTX *ctx, const ns_tls_opts_t *o, bool server, char *err, size_t errlen)
{
    char why[160];
    if (server && (!set(o->cert_path) || !set(o->key_path))) {
        snprintf(err, errlen, "tls.server.certPath and tls.server.keyPath are required");
        return NS_EINVAL;
    }
    if (set(o->cert_path) && SSL_CTX_use_certificate_chain_file(ctx, o->cert_path) != 1) {
        ossl_reason(why, sizeof why, "cannot load");
        snprintf(err, errlen, "certificate %s: %s", o->cert_path, why);
        return NS_EINVAL;
    }
    if (set(o->key_path)) {
        SSL_CTX_set_default_passwd_cb(ctx, pass_cb);
        SSL_CTX_set_default_passwd_cb_userdata(ctx, (void *)o->key_password);
        int ok = SSL_CTX_use_PrivateKey_file(ctx, o->key_path, SSL_FILETYPE_PEM);
        SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
        if (ok != 1) {
            ossl_reason(why, sizeof why, "cannot load");
            if (strstr(why, "mismatch") == NULL) {
                snprintf(err, errlen, "private key %s: %s", o->key_path, why);
                return NS_EINVAL;
            }
        }
        if (ok != 1 || SSL_CTX_check_private_key(ctx) != 1) {
            ERR_clear_error();
            snprintf(err, errlen, "private key %s does not match certificate %s", o->key_path,
                     o->cert_path ? o->cert_path : "(none)");
            return NS_EINVAL;
        }
    }
    bool need_trust = server ? o->client_auth != NS_TLS_AUTH_NONE : o->verify_peer;
    if (need_trust && !set(o->trust_path)) {
        snprintf(err, errlen, "%s needs a trust file (%s)",
                 server ? "tls.server.need.client.auth" : "verifying the server",
                 server ? "tls.server.trustCertPath" : "a CA file");
        return NS_EINVAL;
    }
    if (set(o->trust_path)) {
        if (SSL_CTX_load_verify_locations(ctx, o->trust_path, NULL) != 1) {
            ossl_reason(why, sizeof why, "cannot load");
            snprintf(err, errlen, "trust file %s: %s", o->trust_path, why);
            return NS_EINVAL;
        }
        if (server) {
            STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(o->trust_path);
            if (names)
                SSL_CTX_set_client_CA_list(ctx, names);
            ERR_clear_error();
        }
    }
    return NS_OK;
}

int ns_tls_ctx_new(const ns_tls_opts_t *o, bool server, ns_tls_ctx_t **out, char *err,
                   size_t errlen)
{
    int rc = NS_ENOMEM;
    ns_tls_ctx_t *t = NULL;
    SSL_CTX *ctx = NULL;
    *out = NULL;
    t = calloc(1, sizeof *t);
    ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (t == NULL || ctx == NULL) {
        snprintf(err, errlen, "out of memory for a TLS context");
        goto fail;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if ((rc = set_protocols(ctx, o->protocols, err, errlen)) != NS_OK ||
        (rc = set_ciphers(ctx, o->ciphers, err, errlen)) != NS_OK ||
        (rc = load_files(ctx, o, server, err, errlen)) != NS_OK)
        goto fail;
    if (server) {
        int mode = o->client_auth == NS_TLS_AUTH_NONE ? SSL_VERIFY_NONE
                   : o->client_auth == NS_TLS_AUTH_OPTIONAL
                       ? SSL_VERIFY_PEER
                       : SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
        SSL_CTX_set_verify(ctx, mode, NULL);
        SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
        static const unsigned char sid[] = "namesrvd";
        SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
    } else {
        SSL_CTX_set_verify(ctx, o->verify_peer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    }
    /* idle connections hold no record buffers */
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    t->ctx = ctx;
    *out = t;
    return NS_OK;
fail:
    SSL_CTX_free(ctx);
    free(t);
    ERR_clear_error();
    return rc;
}

void ns_tls_ctx_free(ns_tls_ctx_t *ctx)
{
    if (ctx == NULL)
        return;
    SSL_CTX_free(ctx->ctx);
    free(ctx);
}

int ns_tls_auth_parse(const char *s)
{
    if (!set(s) || strcasecmp(s, "none") == 0)
        return NS_TLS_AUTH_NONE;
    if (strcasecmp(s, "optional") == 0)
        return NS_TLS_AUTH_OPTIONAL;
    if (strcasecmp(s, "require") == 0)
        return NS_TLS_AUTH_REQUIRE;
    return -1;
}

/* ---- the server's context ---- */

typedef struct {
    bool exists;
    off_t size;
    ino_t ino;
    struct timespec mtime;
} stamp_t;

struct ns_tls_server {
    pthread_mutex_t mu;
    SSL_CTX *cur; /* one reference of ours */
    uint64_t generation;
    ns_tls_opts_t opts; /* our copy: its strings (STR_FIELDS) are ours */
    stamp_t stamps[3];  /* cert, key, trust at the last attempt */
};

static void stamp_of(const char *path, stamp_t *st)
{
    struct stat sb;
    memset(st, 0, sizeof *st);
    if (path == NULL || stat(path, &sb) != 0)
        return;
    st->exists = true;
    st->size = sb.st_size;
    st->ino = sb.st_ino;
    st->mtime = sb.st_mtim;
}

static bool stamp_eq(const stamp_t *a, const stamp_t *b)
{
    return a->exists == b->exists && a->size == b->size && a->ino == b->ino &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* The string fields of ns_tls_opts_t, which a server copies. */
static const size_t STR_FIELDS[] = {
    offsetof(ns_tls_opts_t, cert_path),    offsetof(ns_tls_opts_t, key_path),
    offsetof(ns_tls_opts_t, key_password), offsetof(ns_tls_opts_t, trust_path),
    offsetof(ns_tls_opts_t, protocols),    offsetof(ns_tls_opts_t, ciphers),
};
#define N_STR_FIELDS (sizeof STR_FIELDS / sizeof STR_FIELDS[0])

static const char **str_field(ns_tls_opts_t *o, size_t i)
{
    return (const char **)(void *)((char *)o + STR_FIELDS[i]);
}

int ns_tls_server_new(const ns_tls_opts_t *opts, ns_tls_server_t **out, char *err, size_t errlen)
{
    ns_tls_server_t *s = calloc(1, sizeof *s);
    *out = NULL;
    if (s == NULL)
        return NS_ENOMEM;
    pthread_mutex_init(&s->mu, NULL);
    ns_tls_opts_t in = *opts;
    int rc = NS_OK;
    s->opts.client_auth = opts->client_auth;
    for (size_t i = 0; i < N_STR_FIELDS; i++) {
        const char *v = *str_field(&in, i);
        if (set(v) && (*str_field(&s->opts, i) = strdup(v)) == NULL)
            rc = NS_ENOMEM;
    }
    rc = rc ? rc : ns_tls_server_reload(s, true, err, errlen);
    if (rc != NS_OK) {
        ns_tls_server_free(s);
        return rc;
    }
    *out = s;
    return NS_OK;
}

void ns_tls_server_free(ns_tls_server_t *s)
{
    if (s == NULL)
        return;
    SSL_CTX_free(s->cur);
    pthread_mutex_destroy(&s->mu);
    for (size_t i = 0; i < N_STR_FIELDS; i++)
        free((void *)(uintptr_t)*str_field(&s->opts, i));
    free(s);
}

int ns_tls_server_reload(ns_tls_server_t *s, bool force, char *err, size_t errlen)
{
    stamp_t now[3];
    stamp_of(s->opts.cert_path, &now[0]);
    stamp_of(s->opts.key_path, &now[1]);
    stamp_of(s->opts.trust_path, &now[2]);
    if (!force && stamp_eq(&now[0], &s->stamps[0]) && stamp_eq(&now[1], &s->stamps[1]) &&
        stamp_eq(&now[2], &s->stamps[2]))
        return NS_EAGAIN;
    memcpy(s->stamps, now, sizeof now); /* a bad file is reported once per change */
    ns_tls_ctx_t *fresh = NULL;
    int rc = ns_tls_ctx_new(&s->opts, true, &fresh, err, errlen);
    if (rc != NS_OK)
        return rc;
    pthread_mutex_lock(&s->mu);
    SSL_CTX *old = s->cur;
    s->cur = fresh->ctx;
    s->generation++;
    pthread_mutex_unlock(&s->mu);
    fresh->ctx = NULL;
    ns_tls_ctx_free(fresh);
    SSL_CTX_free(old); /* sessions on it keep their own references */
    return NS_OK;
}

uint64_t ns_tls_server_generation(ns_tls_server_t *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t g = s->generation;
    pthread_mutex_unlock(&s->mu);
    return g;
}

/* ---- sessions ---- */

static ns_tls_sess_t *sess_new(SSL_CTX *ctx, bool server)
{
    ns_tls_sess_t *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->ssl = SSL_new(ctx);
    t->rbio = BIO_new(BIO_s_mem());
    t->wbio = BIO_new(BIO_s_mem());
    if (t->ssl == NULL || t->rbio == NULL || t->wbio == NULL) {
        BIO_free(t->rbio);
        BIO_free(t->wbio);
        SSL_free(t->ssl);
        free(t);
        ERR_clear_error();
        return NULL;
    }
    BIO_set_mem_eof_return(t->rbio, -1); /* empty = "want more", not EOF */
    SSL_set_bio(t->ssl, t->rbio, t->wbio);
    if (server)
        SSL_set_accept_state(t->ssl);
    else
        SSL_set_connect_state(t->ssl);
    return t;
}

ns_tls_sess_t *ns_tls_sess_server(ns_tls_server_t *s)
{
    pthread_mutex_lock(&s->mu);
    ns_tls_sess_t *t = sess_new(s->cur, true); /* SSL_new takes its reference */
    pthread_mutex_unlock(&s->mu);
    return t;
}

ns_tls_sess_t *ns_tls_sess_client(ns_tls_ctx_t *ctx, const char *server_name)
{
    ns_tls_sess_t *t = sess_new(ctx->ctx, false);
    if (t == NULL || !set(server_name))
        return t;
    unsigned char ip[16];
    bool is_ip =
        inet_pton(AF_INET, server_name, ip) == 1 || inet_pton(AF_INET6, server_name, ip) == 1;
    if (!is_ip)
        SSL_set_tlsext_host_name(t->ssl, server_name); /* SNI names hosts, never addresses */
    if (SSL_get_verify_mode(t->ssl) & SSL_VERIFY_PEER) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(t->ssl);
        if (is_ip)
            X509_VERIFY_PARAM_set1_ip_asc(vp, server_name);
        else
            SSL_set1_host(t->ssl, server_name);
    }
    return t;
}

void ns_tls_sess_free(ns_tls_sess_t *t)
{
    if (t == NULL)
        return;
    SSL_free(t->ssl);
    free(t);
}

/* Moves what OpenSSL wrote into out. */
static int drain(ns_tls_sess_t *t, ns_buf_t *out)
{
    char *p = NULL;
    long n = BIO_get_mem_data(t->wbio, &p);
    if (n <= 0)
        return NS_OK;
    if (ns_buf_append(out, p, (size_t)n) != NS_OK)
        return NS_ENOMEM;
    (void)BIO_reset(t->wbio);
    return NS_OK;
}

/* Fills t->why after an SSL call returned r; NS_ECONN, or NS_OK when it
 * only wants more input. */
static int failed(ns_tls_sess_t *t, int r)
{
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return NS_OK; /* SSL_get_error found the error queue empty */
    if (e == SSL_ERROR_ZERO_RETURN) {
        snprintf(t->why, sizeof t->why, "TLS: peer sent close_notify");
        return NS_ESHUTDOWN;
    }
    char reason[160];
    ossl_reason(reason, sizeof reason, "TLS failure");
    long v = SSL_get_verify_result(t->ssl);
    if (v != X509_V_OK)
        snprintf(t->why, sizeof t->why, "TLS %s: %s (certificate: %s)",
                 t->established ? "error" : "handshake failed", reason,
                 X509_verify_cert_error_string(v));
    else
        snprintf(t->why, sizeof t->why, "TLS %s: %s", t->established ? "error" : "handshake failed",
                 reason);
    return NS_ECONN;
}

int ns_tls_sess_start(ns_tls_sess_t *t, ns_buf_t *out, const char **why)
{
    int r = SSL_do_handshake(t->ssl);
    int rc = r == 1 ? NS_OK : failed(t, r);
    if (r == 1)
        t->established = true;
    *why = t->why;
    int drc = drain(t, out);
    return rc != NS_OK ? rc : drc;
}

int ns_tls_sess_feed(ns_tls_sess_t *t, const uint8_t *in, size_t n, ns_buf_t *plain, ns_buf_t *out,
                     const char **why)
{
    int rc = NS_OK;
    *why = t->why;
    if (n > 0 && BIO_write(t->rbio, in, (int)n) != (int)n) {
        snprintf(t->why, sizeof t->why, "out of memory for TLS input");
        return NS_ENOMEM;
    }
    if (!t->established) {
        int r = SSL_do_handshake(t->ssl);
        if (r == 1)
            t->established = true;
        else
            rc = failed(t, r);
    }
    while (rc == NS_OK && t->established) {
        if (ns_buf_reserve(plain, 16384 + 1) != NS_OK) {
            rc = NS_ENOMEM;
            break;
        }
        size_t got = 0;
        int r = SSL_read_ex(t->ssl, plain->data + plain->len, plain->cap - plain->len - 1, &got);
        if (r != 1) {
            rc = failed(t, r);
            break;
        }
        plain->len += got;
        plain->data[plain->len] = 0;
    }
    int drc = drain(t, out);
    return rc != NS_OK ? rc : drc;
}

int ns_tls_sess_seal(ns_tls_sess_t *t, const uint8_t *plain, size_t n, ns_buf_t *out,
                     const char **why)
{
    *why = t->why;
    if (!t->established) {
        snprintf(t->why, sizeof t->why, "TLS: data before the handshake finished");
        return NS_EINVAL;
    }
    while (n > 0) {
        size_t done = 0;
        int r = SSL_write_ex(t->ssl, plain, n, &done);
        if (r != 1) {
            int rc = failed(t, r);
            return rc != NS_OK ? rc : NS_ECONN;
        }
        plain += done;
        n -= done;
    }
    return drain(t, out);
}

void ns_tls_sess_close(ns_tls_sess_t *t, ns_buf_t *out)
{
    if (!t->established)
        return;
    (void)SSL_shutdown(t->ssl); /* 0: our close_notify is written, theirs not awaited */
    ERR_clear_error();
    (void)drain(t, out);
}

bool ns_tls_sess_established(const ns_tls_sess_t *t)
{
    return t->established;
}

const char *ns_tls_sess_describe(const ns_tls_sess_t *t, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s %s", SSL_get_version(t->ssl), SSL_get_cipher_name(t->ssl));
    return out;
}
