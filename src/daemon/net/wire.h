/* wire.h - what a connection's bytes go through before the framer: an
 * optional PROXY protocol preamble, then TLS or plain, decided on the first
 * bytes as the Java NameServer 5.x decides (NettyRemotingServer's
 * HandshakeHandler, then TlsModeHandler):
 *
 *   DETECT  wait for 12 bytes (fewer when they already match no PROXY
 *           signature); a PROXY v1/v2 signature -> the header is
 *           parsed (only from peers in proxyProtocolTrustedAddresses) and
 *           its source address becomes the peer; then the next byte: 0x16
 *           -> TLS (unless tls.server.mode=disabled or no certificate), any
 *           other -> plain (unless enforcing)
 *   PLAIN   bytes pass through; the connection may drop the wire
 *   TLS     bytes in are decrypted; replies are encrypted by ns_wire_seal
 *   FAILED  the connection must close; the reason was returned
 *
 * Knows neither libuv nor the server: conn.c feeds it what it reads and
 * sends what it gives back, and the fuzzer drives it directly. */
#ifndef NS_WIRE_H
#define NS_WIRE_H

#include <stdbool.h>
#include <sys/socket.h>

#include "ns/buf.h"
#include "ns/proxy.h"
#include "ns/tls.h"

typedef enum {
    NS_TLS_MODE_DISABLED = 0,
    NS_TLS_MODE_PERMISSIVE,
    NS_TLS_MODE_ENFORCING
} ns_tls_mode_t;
typedef enum { NS_WIRE_DETECT = 0, NS_WIRE_PLAIN, NS_WIRE_TLS, NS_WIRE_FAILED } ns_wire_state_t;

/* Shared by every connection of the process; outlives them. */
typedef struct ns_wire_cfg_s {
    ns_tls_mode_t mode;
    ns_tls_server_t *tls; /* NULL: no certificate, TLS is refused */
    ns_proxy_acl_t acl;
} ns_wire_cfg_t;

typedef struct ns_wire ns_wire_t;

/* A wire for a connection from `peer` (copied); NULL when out of memory. */
ns_wire_t *ns_wire_new(const ns_wire_cfg_t *cfg, const struct sockaddr *peer);
void ns_wire_free(ns_wire_t *w);

/* Takes n bytes read from the socket and appends the plaintext they yield
 * to plain. NS_OK, or NS_ECONN / NS_ENOMEM with *why (static or owned by the
 * wire, valid until it is freed) naming the reason to close. */
int ns_wire_feed(ns_wire_t *w, const uint8_t *in, size_t n, ns_buf_t *plain, const char **why);
ns_wire_state_t ns_wire_state(const ns_wire_t *w);
/* True once detection is over and, for TLS, the handshake has finished. */
bool ns_wire_ready(const ns_wire_t *w);
/* True while a handshake is under way: the first bytes (a PROXY header
 * among them) have started to arrive but are not decided, or TLS has not
 * finished. A connection that has sent nothing yet is not handshaking (the
 * idle timeout governs it, as in Java). */
bool ns_wire_handshaking(const ns_wire_t *w);
/* "ip:port" from a PROXY header, or NULL if none carried an address. */
const char *ns_wire_proxied_peer(const ns_wire_t *w);
/* Ciphertext the wire wants sent (handshake, alerts); the caller may take
 * its bytes (and reset it) or call ns_wire_seal, which prepends them. */
ns_buf_t *ns_wire_pending(ns_wire_t *w);
/* Replaces the plaintext in *buf with what must go on the socket: pending
 * bytes first, then the records of the plaintext (TLS), or the plaintext
 * itself (PLAIN/DETECT). NS_OK, NS_ECONN (*why), NS_ENOMEM. */
int ns_wire_seal(ns_wire_t *w, ns_buf_t *buf, const char **why);
/* TLS: appends a close_notify to the pending bytes (the connection is
 * closing on our side); nothing otherwise. */
void ns_wire_close(ns_wire_t *w);
/* For logs once ready: "TLSv1.3 TLS_AES_256_GCM_SHA384", "plain". */
const char *ns_wire_describe(const ns_wire_t *w, char *out, size_t outlen);

#endif
