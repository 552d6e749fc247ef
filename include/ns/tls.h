/* tls.h - TLS over memory buffers (OpenSSL 3), for the server's connections
 * and for our clients (the blocking client, nsbench).
 *
 * A session never touches a socket: ciphertext read from the network goes
 * in with ns_tls_sess_feed, which hands back the plaintext and whatever
 * ciphertext must be sent (handshake messages, alerts, tickets); plaintext to
 * send goes through ns_tls_sess_seal. The caller owns the I/O, so the same
 * code runs on any libuv loop or over a blocking poll().
 *
 * Contexts: ns_tls_ctx_new builds one SSL_CTX from options. A server keeps
 * its context in an ns_tls_server_t, which can be reloaded while sessions
 * are open (each session keeps the context it started with; new sessions
 * take the newest). A reload that fails leaves the previous context in use.
 *
 * Threads: ns_tls_server_t is shared by every event loop (its context
 * pointer is swapped under a mutex); a session belongs to one thread. */
#ifndef NS_TLS_H
#define NS_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"

/* The first byte of a TLS record carrying a handshake (a ClientHello):
 * what Java's TlsModeHandler looks for. */
#define NS_TLS_HANDSHAKE_BYTE 0x16

typedef enum { NS_TLS_AUTH_NONE = 0, NS_TLS_AUTH_OPTIONAL, NS_TLS_AUTH_REQUIRE } ns_tls_auth_t;

/* Everything borrowed for the duration of ns_tls_ctx_new (the server copies
 * the paths it watches). NULL or "" = not set. */
typedef struct {
    const char *cert_path;     /* PEM certificate chain (server: required) */
    const char *key_path;      /* PEM private key, PKCS#8 or traditional, may be encrypted */
    const char *key_password;  /* for an encrypted key */
    const char *trust_path;    /* PEM CA bundle to verify the peer with */
    ns_tls_auth_t client_auth; /* server: tls.server.need.client.auth */
    bool verify_peer;          /* client: verify the server against trust_path */
    const char *protocols;     /* "TLSv1.2,TLSv1.3" style; "" = OpenSSL's default range */
    const char *ciphers;       /* ':' or ',' separated; TLS_* names are TLS 1.3 suites */
} ns_tls_opts_t;

typedef struct ns_tls_ctx ns_tls_ctx_t;

/* A new context (server side when `server`). NS_EINVAL with the reason in
 * err (the file and OpenSSL's words); NS_ENOMEM. Free with ns_tls_ctx_free. */
int ns_tls_ctx_new(const ns_tls_opts_t *opts, bool server, ns_tls_ctx_t **out, char *err,
                   size_t errlen);
void ns_tls_ctx_free(ns_tls_ctx_t *ctx);

/* Parses "none" | "optional" | "require" (any case; "" = none); -1 when bad. */
int ns_tls_auth_parse(const char *s);

/* ---- the server's reloadable context ---- */

typedef struct ns_tls_server ns_tls_server_t;

/* Builds the first context; copies the options (the strings too). */
int ns_tls_server_new(const ns_tls_opts_t *opts, ns_tls_server_t **out, char *err, size_t errlen);
void ns_tls_server_free(ns_tls_server_t *s);
/* Rebuilds the context when the certificate, key or trust file changed
 * since the last attempt (size, mtime, inode), or always with `force`.
 * NS_OK: new context in use; NS_EAGAIN: nothing changed; NS_EINVAL: the
 * new files do not load (err says why) and the old context stays. */
int ns_tls_server_reload(ns_tls_server_t *s, bool force, char *err, size_t errlen);
/* How many times a context was built successfully (1 after _new). */
uint64_t ns_tls_server_generation(ns_tls_server_t *s);

/* ---- sessions ---- */

typedef struct ns_tls_sess ns_tls_sess_t;

/* Server session on the newest context; NULL when out of memory. */
ns_tls_sess_t *ns_tls_sess_server(ns_tls_server_t *s);
/* Client session; server_name (may be NULL: no name check) is sent as SNI
 * unless it is an IP address and, when the context verifies the peer,
 * checked against the certificate's DNS or IP names. */
ns_tls_sess_t *ns_tls_sess_client(ns_tls_ctx_t *ctx, const char *server_name);
void ns_tls_sess_free(ns_tls_sess_t *t);

/* Client: appends the ClientHello to out. */
int ns_tls_sess_start(ns_tls_sess_t *t, ns_buf_t *out, const char **why);
/* Takes n bytes of ciphertext; appends the plaintext they complete to
 * plain and the ciphertext to send to out. NS_OK; NS_ESHUTDOWN when the
 * peer sent close_notify (an orderly end); NS_ECONN when the session
 * failed: *why (valid until the session is freed) names the reason, and
 * out may hold an alert worth sending; NS_ENOMEM. */
int ns_tls_sess_feed(ns_tls_sess_t *t, const uint8_t *in, size_t n, ns_buf_t *plain, ns_buf_t *out,
                     const char **why);
/* Encrypts n bytes of plaintext, appending the records to out. NS_OK,
 * NS_ECONN (*why), NS_ENOMEM; NS_EINVAL before the handshake has finished
 * (no caller has plaintext to send before then). */
int ns_tls_sess_seal(ns_tls_sess_t *t, const uint8_t *plain, size_t n, ns_buf_t *out,
                     const char **why);
/* Appends a close_notify alert to out (nothing before the handshake has
 * finished). The session sends nothing after it. */
void ns_tls_sess_close(ns_tls_sess_t *t, ns_buf_t *out);
/* True once the handshake has completed. */
bool ns_tls_sess_established(const ns_tls_sess_t *t);
/* "TLSv1.3 TLS_AES_256_GCM_SHA384" and the like, for logs; static text. */
const char *ns_tls_sess_describe(const ns_tls_sess_t *t, char *out, size_t outlen);

#endif
