/* client.h - a small blocking RocketMQ remoting client, used by the tests,
 * namesrvctl and nsbench. Not thread-safe: one client per thread. */
#ifndef NS_CLIENT_H
#define NS_CLIENT_H

#include "ns/remoting.h"

typedef struct ns_client ns_client_t;

/* Connects to host:port (numeric IPv4/IPv6 or a name). On success *out is a
 * new client the caller frees with ns_client_close(). */
int ns_client_connect(const char *host, int port, int timeout_ms, ns_client_t **out);
/* Parses "host:port" and connects. */
int ns_client_connect_addr(const char *addr, int timeout_ms, ns_client_t **out);
void ns_client_close(ns_client_t *c);

/* TLS for the client (namesrvctl --tls, nsbench --tls, the tests). All
 * strings borrowed during the connect only; NULL or "" = not set. */
typedef struct {
    const char *ca_file;      /* verify the server's certificate with this CA bundle;
                                 unset = encrypt without verifying (Java's default) */
    const char *cert_file;    /* client certificate chain (mutual TLS) */
    const char *key_file;     /* its private key */
    const char *key_password; /* for an encrypted key */
    const char *server_name;  /* name checked and sent as SNI; unset = the host */
    bool plain;               /* no TLS: only the preamble (tests of the PROXY protocol) */
    const void *preamble;     /* sent first, before the ClientHello (a PROXY header) */
    size_t preamble_len;
} ns_client_tls_t;
/* ns_client_connect, then a TLS handshake within the same timeout (tls may
 * be NULL: plain). NS_ECONN also when the handshake fails; *why (may be
 * NULL) then gets the reason (static or thread-local text). */
int ns_client_connect_tls(const char *host, int port, int timeout_ms, const ns_client_tls_t *tls,
                          ns_client_t **out, const char **why);
/* Parses "host:port" and connects as above. */
int ns_client_connect_addr_tls(const char *addr, int timeout_ms, const ns_client_tls_t *tls,
                               ns_client_t **out, const char **why);
int ns_client_fd(const ns_client_t *c);
/* Next opaque this client will assign (starts at 1). */
int32_t ns_client_next_opaque(ns_client_t *c);

/* Signs every request this client sends from now on with RocketMQ's
 * AccessKey/Signature scheme (include/ns/sign.h), as the Java
 * AclClientRPCHook does; NULL access_key stops signing. The strings are
 * copied. NS_OK or NS_ENOMEM. */
int ns_client_set_credentials(ns_client_t *c, const char *access_key, const char *secret_key);

/* Sends req (its opaque is used as is) without waiting. */
int ns_client_send(ns_client_t *c, const ns_cmd_t *req);
/* Sends raw bytes as they are (for malformed-input tests). */
int ns_client_send_raw(ns_client_t *c, const void *p, size_t n);
/* How long ns_client_send / send_raw may wait for the peer to take the
 * bytes (30 s unless set; negative: no limit). */
void ns_client_set_send_timeout(ns_client_t *c, int timeout_ms);
/* Reads the next whole frame into resp (any opaque). resp is reused; its
 * strings and body stay valid until the next recv/call on this client.
 * Returns NS_OK, NS_ETIMEDOUT, NS_ECONN (peer closed), NS_EINVAL. */
int ns_client_recv(ns_client_t *c, int timeout_ms, ns_cmd_msg_t *resp);
/* Assigns req->opaque from the client's counter, sends it and waits for
 * the response carrying that opaque (other frames are discarded). */
int ns_client_call(ns_client_t *c, ns_cmd_t *req, int timeout_ms, ns_cmd_msg_t *resp);
/* One request of `code` with body req (no header fields) over c; appends
 * the reply body to resp. NS_OK; the client's error; NS_EREFUSED when the
 * server answered something else than SUCCESS. why (whylen bytes) says
 * what went wrong (the code's name and the remark). */
int ns_client_call_body(ns_client_t *c, int code, const ns_buf_t *req, int timeout_ms,
                        ns_buf_t *resp, char *why, size_t whylen);

#endif
