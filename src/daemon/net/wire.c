/* wire.c - PROXY preamble and TLS detection in front of the framer (wire.h).
 *
 * Detection buffers at most one PROXY header (v2: 16 + 65535 bytes) plus
 * what arrived with it; everything after the header is handed on in order,
 * so a client may send its preamble, ClientHello or first frame in any
 * number of reads. */
#include "net/wire.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/err.h"

struct ns_wire {
    const ns_wire_cfg_t *cfg;
    ns_wire_state_t state;
    bool proxy_done;
    struct sockaddr_storage peer;
    ns_buf_t head;    /* DETECT: bytes not yet classified */
    ns_buf_t pending; /* ciphertext to send */
    ns_buf_t sealed;  /* scratch for ns_wire_seal */
    ns_tls_sess_t *tls;
    char proxied[64];
    char why[160];
};

ns_wire_t *ns_wire_new(const ns_wire_cfg_t *cfg, const struct sockaddr *peer)
{
    ns_wire_t *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    w->cfg = cfg;
    if (peer && peer->sa_family == AF_INET)
        memcpy(&w->peer, peer, sizeof(struct sockaddr_in));
    else if (peer && peer->sa_family == AF_INET6)
        memcpy(&w->peer, peer, sizeof(struct sockaddr_in6));
    return w;
}

void ns_wire_free(ns_wire_t *w)
{
    if (w == NULL)
        return;
    ns_buf_free(&w->head);
    ns_buf_free(&w->pending);
    ns_buf_free(&w->sealed);
    ns_tls_sess_free(w->tls);
    free(w);
}

static int fail(ns_wire_t *w, const char *why, const char **out)
{
    w->state = NS_WIRE_FAILED;
    *out = why;
    return NS_ECONN;
}

/* PROXY: NS_OK when decided (header consumed or none), NS_EAGAIN for more. */
static int take_proxy(ns_wire_t *w, const char **why)
{
    ns_proxy_kind_t kind = ns_proxy_detect(w->head.data, w->head.len);
    if (kind == NS_PROXY_NEED_MORE)
        return NS_EAGAIN;
    if (kind == NS_PROXY_NONE) {
        w->proxy_done = true;
        return NS_OK;
    }
    if (!ns_proxy_acl_allows(&w->cfg->acl, (const struct sockaddr *)&w->peer))
        return fail(w, "PROXY protocol header from a peer not in proxyProtocolTrustedAddresses",
                    why);
    ns_proxy_hdr_t h;
    const char *perr = NULL;
    int rc = ns_proxy_parse(w->head.data, w->head.len, &h, &perr);
    if (rc == NS_EAGAIN)
        return NS_EAGAIN;
    if (rc != NS_OK) {
        snprintf(w->why, sizeof w->why, "malformed PROXY header: %s", perr);
        return fail(w, w->why, why);
    }
    if (h.has_addr) /* the form conn.c gives a socket's peer, IPv6 included */
        snprintf(w->proxied, sizeof w->proxied, "%s:%u", h.src, h.src_port);
    memmove(w->head.data, w->head.data + h.header_len, w->head.len - h.header_len);
    w->head.len -= h.header_len;
    w->proxy_done = true;
    return NS_OK;
}

/* TLS or plain, on the first byte after the preamble. */
static int take_mode(ns_wire_t *w, ns_buf_t *plain, const char **why)
{
    const ns_wire_cfg_t *cfg = w->cfg;
    if (w->head.len == 0)
        return NS_EAGAIN;
    if (w->head.data[0] != NS_TLS_HANDSHAKE_BYTE) {
        if (cfg->mode == NS_TLS_MODE_ENFORCING)
            return fail(w, "plain connection refused: tls.server.mode=enforcing", why);
        w->state = NS_WIRE_PLAIN;
        int rc = ns_buf_append(plain, w->head.data, w->head.len);
        ns_buf_free(&w->head);
        return rc;
    }
    if (cfg->mode == NS_TLS_MODE_DISABLED)
        return fail(w, "TLS ClientHello refused: tls.server.mode=disabled", why);
    if (cfg->tls == NULL)
        return fail(w, "TLS ClientHello refused: no tls.server.certPath/keyPath configured", why);
    w->tls = ns_tls_sess_server(cfg->tls);
    if (w->tls == NULL)
        return fail(w, "out of memory for a TLS session", why);
    w->state = NS_WIRE_TLS;
    int rc = ns_tls_sess_feed(w->tls, w->head.data, w->head.len, plain, &w->pending, why);
    ns_buf_free(&w->head);
    if (rc != NS_OK)
        w->state = NS_WIRE_FAILED;
    return rc;
}

int ns_wire_feed(ns_wire_t *w, const uint8_t *in, size_t n, ns_buf_t *plain, const char **why)
{
    int rc = NS_OK;
    *why = "";
    switch (w->state) {
    case NS_WIRE_PLAIN:
        return ns_buf_append(plain, in, n);
    case NS_WIRE_TLS:
        rc = ns_tls_sess_feed(w->tls, in, n, plain, &w->pending, why);
        if (rc != NS_OK)
            w->state = NS_WIRE_FAILED;
        return rc;
    case NS_WIRE_FAILED:
        *why = "connection already failed";
        return NS_ECONN;
    case NS_WIRE_DETECT:
        break;
    }
    if (ns_buf_append(&w->head, in, n) != NS_OK)
        return fail(w, "out of memory", why);
    if (!w->proxy_done) {
        rc = take_proxy(w, why);
        if (rc != NS_OK)
            return rc == NS_EAGAIN ? NS_OK : rc;
    }
    rc = take_mode(w, plain, why);
    return rc == NS_EAGAIN ? NS_OK : rc;
}

ns_wire_state_t ns_wire_state(const ns_wire_t *w)
{
    return w->state;
}

bool ns_wire_ready(const ns_wire_t *w)
{
    return w->state == NS_WIRE_PLAIN ||
           (w->state == NS_WIRE_TLS && ns_tls_sess_established(w->tls));
}

bool ns_wire_handshaking(const ns_wire_t *w)
{
    if (w->state == NS_WIRE_TLS)
        return !ns_tls_sess_established(w->tls);
    return w->state == NS_WIRE_DETECT && (w->head.len > 0 || w->proxy_done);
}

const char *ns_wire_proxied_peer(const ns_wire_t *w)
{
    return w->proxied[0] ? w->proxied : NULL;
}

ns_buf_t *ns_wire_pending(ns_wire_t *w)
{
    return &w->pending;
}

int ns_wire_seal(ns_wire_t *w, ns_buf_t *buf, const char **why)
{
    *why = "";
    if (w->state != NS_WIRE_TLS) {
        if (w->pending.len == 0)
            return NS_OK;
        if (ns_buf_append(&w->pending, buf->data, buf->len) != NS_OK)
            return NS_ENOMEM;
        ns_buf_t t = *buf;
        *buf = w->pending;
        w->pending = t;
        ns_buf_reset(&w->pending);
        return NS_OK;
    }
    ns_buf_t *out = &w->pending; /* handshake bytes first, then the records */
    if (buf->len > 0) {
        int rc = ns_tls_sess_seal(w->tls, buf->data, buf->len, out, why);
        if (rc != NS_OK)
            return rc;
    }
    ns_buf_t t = *buf;
    *buf = *out;
    *out = t;
    ns_buf_reset(out);
    return NS_OK;
}

void ns_wire_close(ns_wire_t *w)
{
    if (w->state == NS_WIRE_TLS)
        ns_tls_sess_close(w->tls, &w->pending);
}

const char *ns_wire_describe(const ns_wire_t *w, char *out, size_t outlen)
{
    if (w->state == NS_WIRE_TLS)
        return ns_tls_sess_describe(w->tls, out, outlen);
    snprintf(out, outlen, "%s", w->state == NS_WIRE_PLAIN ? "plain" : "undecided");
    return out;
}
