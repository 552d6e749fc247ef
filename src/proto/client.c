/* client.c - small blocking RocketMQ remoting client (include/ns/client.h).
 *
 * The socket is non-blocking; every wait is a poll() bounded by a deadline.
 * Received bytes accumulate in rbuf; a frame handed to the caller stays in
 * rbuf (resp->cmd.body points into it) until the next recv/call drops it.
 * An ns_client_t owns its socket and both buffers; ns_client_close frees all.
 */
#include "ns/client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "ns/codes.h"
#include "ns/err.h"
#include "ns/tls.h"
#include "ns/sign.h"

#define CLIENT_MAX_FRAME (64u * 1024u * 1024u)
#define READ_CHUNK 65536
#define SEND_TIMEOUT_MS 30000 /* ns_client_send / send_raw: the default of send_timeout_ms */

struct ns_client {
    int fd;
    uint32_t next_opaque;
    int send_timeout_ms; /* ns_client_send / send_raw (no timeout argument) */
    ns_buf_t rbuf;       /* received, not yet consumed bytes */
    size_t consumed;     /* bytes at the front of rbuf owned by the last returned frame */
    ns_buf_t wbuf;       /* encode scratch */
    ns_tls_ctx_t *tctx;  /* TLS: the context and session, else NULL */
    ns_tls_sess_t *tls;
    ns_buf_t cbuf;                 /* TLS: ciphertext to send */
    char *access_key, *secret_key; /* sign requests when set (owned) */
    ns_buf_t sbuf;                 /* signing scratch */
};

static __thread char tls_why[256];

static int send_raw(ns_client_t *c, const uint8_t *p, size_t n, int64_t deadline);
static int recv_some(ns_client_t *c, int64_t deadline);

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Deadline for a timeout; -1 (no deadline) for a negative timeout. */
static int64_t deadline_of(int timeout_ms)
{
    return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

/* Waits for events on fd until the deadline. Returns NS_OK, NS_ETIMEDOUT or
 * NS_ECONN. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int wait = -1;
        if (deadline >= 0) {
            int64_t left = deadline - now_ms();
            if (left < 0)
                left = 0;
            wait = left > INT_MAX ? INT_MAX : (int)left;
        }
        struct pollfd pfd = {.fd = fd, .events = events, .revents = 0};
        int n = poll(&pfd, 1, wait);
        if (n > 0)
            return NS_OK; /* errors/hangups are reported by the next send/recv */
        if (n == 0)
            return NS_ETIMEDOUT;
        if (errno != EINTR)
            return NS_ECONN;
    }
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL, 0);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return NS_ECONN;
    return NS_OK;
}

/* One connection attempt; returns the connected fd or -1 with *err set. */
static int try_connect(const struct addrinfo *ai, int64_t deadline, int *err)
{
    int one = 1, soerr = 0;
    socklen_t slen = sizeof soerr;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        *err = NS_ECONN;
        return -1;
    }
    if (set_nonblock(fd) != NS_OK)
        goto fail;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
        return fd;
    if (errno != EINPROGRESS) {
        *err = NS_ECONN;
        goto fail;
    }
    *err = wait_fd(fd, POLLOUT, deadline);
    if (*err != NS_OK)
        goto fail;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) != 0 || soerr != 0) {
        *err = NS_ECONN;
        goto fail;
    }
    return fd;

fail:
    close(fd);
    return -1;
}

int ns_client_connect(const char *host, int port, int timeout_ms, ns_client_t **out)
{
    int rc = NS_ECONN;
    struct addrinfo hints, *res = NULL;
    ns_client_t *c = NULL;
    char portstr[16];
    int fd = -1;

    *out = NULL;
    if (host == NULL || port <= 0 || port > 65535)
        return NS_EINVAL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(portstr, sizeof portstr, "%d", port);
    if (getaddrinfo(host, portstr, &hints, &res) != 0)
        goto cleanup;
    int64_t deadline = deadline_of(timeout_ms);
    for (const struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next)
        fd = try_connect(ai, deadline, &rc);
    if (fd < 0)
        goto cleanup;
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        rc = NS_ENOMEM;
        goto cleanup;
    }
    c->fd = fd;
    fd = -1;
    c->next_opaque = 1;
    c->send_timeout_ms = SEND_TIMEOUT_MS;
    ns_buf_init(&c->rbuf);
    ns_buf_init(&c->wbuf);
    *out = c;
    c = NULL;
    rc = NS_OK;

cleanup:
    if (fd >= 0)
        close(fd);
    if (res != NULL)
        freeaddrinfo(res);
    free(c);
    return rc;
}

int ns_client_connect_addr(const char *addr, int timeout_ms, ns_client_t **out)
{
    return ns_client_connect_addr_tls(addr, timeout_ms, NULL, out, NULL);
}

int ns_client_connect_addr_tls(const char *addr, int timeout_ms, const ns_client_tls_t *tls,
                               ns_client_t **out, const char **why)
{
    char host[256];
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    int64_t port = 0;

    *out = NULL;
    if (colon == NULL || colon == addr)
        return NS_EINVAL;
    const char *h = addr;
    size_t hlen = (size_t)(colon - addr);
    if (h[0] == '[' && hlen >= 2 && h[hlen - 1] == ']') { /* [v6]:port */
        h++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof host)
        return NS_EINVAL;
    memcpy(host, h, hlen);
    host[hlen] = 0;
    if (colon[1] == '+' || colon[1] == '-' ||
        ns_parse_i64(colon + 1, strlen(colon + 1), &port) != NS_OK || port <= 0 || port > 65535)
        return NS_EINVAL;
    return ns_client_connect_tls(host, (int)port, timeout_ms, tls, out, why);
}

void ns_client_close(ns_client_t *c)
{
    if (c == NULL)
        return;
    if (c->fd >= 0)
        close(c->fd);
    ns_buf_free(&c->rbuf);
    ns_buf_free(&c->wbuf);
    ns_buf_free(&c->cbuf);
    ns_tls_sess_free(c->tls);
    ns_tls_ctx_free(c->tctx);
    ns_buf_free(&c->sbuf);
    ns_client_set_credentials(c, NULL, NULL);
    free(c);
}

static int tls_handshake(ns_client_t *c, const ns_client_tls_t *t, const char *host, int timeout_ms)
{
    const char *why = NULL;
    ns_tls_opts_t o = {.cert_path = t->cert_file,
                       .key_path = t->key_file,
                       .key_password = t->key_password,
                       .trust_path = t->ca_file,
                       .verify_peer = t->ca_file && *t->ca_file};
    int rc = ns_tls_ctx_new(&o, false, &c->tctx, tls_why, sizeof tls_why);
    if (rc != NS_OK)
        return rc;
    const char *name = t->server_name && *t->server_name ? t->server_name : host;
    if ((c->tls = ns_tls_sess_client(c->tctx, name)) == NULL)
        return NS_ENOMEM;
    int64_t deadline = deadline_of(timeout_ms);
    rc = ns_tls_sess_start(c->tls, &c->cbuf, &why);
    if (rc == NS_OK)
        rc = send_raw(c, c->cbuf.data, c->cbuf.len, deadline);
    else
        snprintf(tls_why, sizeof tls_why, "%s", why);
    while (rc == NS_OK && !ns_tls_sess_established(c->tls))
        rc = recv_some(c, deadline);
    if (rc == NS_ETIMEDOUT)
        snprintf(tls_why, sizeof tls_why, "TLS handshake timed out");
    else if (rc != NS_OK && tls_why[0] == 0)
        snprintf(tls_why, sizeof tls_why, "connection closed during the TLS handshake");
    return rc;
}

int ns_client_connect_tls(const char *host, int port, int timeout_ms, const ns_client_tls_t *tls,
                          ns_client_t **out, const char **why)
{
    tls_why[0] = 0;
    if (why)
        *why = tls_why;
    int rc = ns_client_connect(host, port, timeout_ms, out);
    if (rc != NS_OK || tls == NULL)
        return rc;
    if (tls->preamble_len > 0)
        rc = send_raw(*out, tls->preamble, tls->preamble_len, deadline_of(timeout_ms));
    if (rc == NS_OK && !tls->plain)
        rc = tls_handshake(*out, tls, host, timeout_ms);
    if (rc != NS_OK) {
        ns_client_close(*out);
        *out = NULL;
        return rc == NS_ETIMEDOUT || rc == NS_ENOMEM ? rc : NS_ECONN;
    }
    return NS_OK;
}

int ns_client_fd(const ns_client_t *c)
{
    return c->fd;
}

int32_t ns_client_next_opaque(ns_client_t *c)
{
    int32_t v = (int32_t)c->next_opaque;
    c->next_opaque = (c->next_opaque + 1) & 0x7FFFFFFFu;
    if (c->next_opaque == 0)
        c->next_opaque = 1;
    return v;
}

static int send_raw(ns_client_t *c, const uint8_t *p, size_t n, int64_t deadline)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_fd(c->fd, POLLOUT, deadline);
            if (rc != NS_OK)
                return rc;
            continue;
        }
        return NS_ECONN;
    }
    return NS_OK;
}

/* Sends n bytes of plaintext (sealed first over TLS). */
static int send_all(ns_client_t *c, const uint8_t *p, size_t n, int64_t deadline)
{
    if (c->tls == NULL)
        return send_raw(c, p, n, deadline);
    const char *why = NULL;
    ns_buf_reset(&c->cbuf);
    int rc = ns_tls_sess_seal(c->tls, p, n, &c->cbuf, &why);
    if (rc != NS_OK)
        return rc == NS_ENOMEM ? rc : NS_ECONN;
    return send_raw(c, c->cbuf.data, c->cbuf.len, deadline);
}

/* Reads what the socket has (waiting until the deadline) and appends the
 * plaintext to rbuf: NS_OK when something arrived (maybe no plaintext). */
static int recv_some(ns_client_t *c, int64_t deadline)
{
    uint8_t tmp[READ_CHUNK];
    for (;;) {
        uint8_t *dst = tmp;
        size_t room = sizeof tmp;
        if (c->tls == NULL) {
            if (ns_buf_reserve(&c->rbuf, READ_CHUNK) != NS_OK)
                return NS_ENOMEM;
            dst = c->rbuf.data + c->rbuf.len;
            room = c->rbuf.cap - c->rbuf.len - 1;
        }
        ssize_t r = recv(c->fd, dst, room, 0);
        if (r > 0 && c->tls == NULL) {
            c->rbuf.len += (size_t)r;
            return NS_OK;
        }
        if (r > 0) {
            const char *why = NULL;
            ns_buf_reset(&c->cbuf);
            int rc = ns_tls_sess_feed(c->tls, tmp, (size_t)r, &c->rbuf, &c->cbuf, &why);
            if (c->cbuf.len > 0) /* tickets, alerts: best effort */
                (void)send_raw(c, c->cbuf.data, c->cbuf.len, deadline);
            if (rc != NS_OK) {
                snprintf(tls_why, sizeof tls_why, "%s", why ? why : "TLS failure");
                return NS_ECONN;
            }
            return NS_OK;
        }
        if (r == 0)
            return NS_ECONN;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return NS_ECONN;
        int rc = wait_fd(c->fd, POLLIN, deadline);
        if (rc != NS_OK)
            return rc;
    }
}

int ns_client_set_credentials(ns_client_t *c, const char *access_key, const char *secret_key)
{
    char *ak = access_key ? strdup(access_key) : NULL;
    char *sk = access_key ? strdup(secret_key ? secret_key : "") : NULL;
    if (access_key && (ak == NULL || sk == NULL)) {
        free(ak);
        free(sk);
        return NS_ENOMEM;
    }
    free(c->access_key);
    if (c->secret_key)
        OPENSSL_cleanse(c->secret_key, strlen(c->secret_key));
    free(c->secret_key);
    c->access_key = ak;
    c->secret_key = sk;
    return NS_OK;
}

static int send_cmd(ns_client_t *c, const ns_cmd_t *req, int64_t deadline)
{
    ns_signed_t sreq;
    int rc = NS_OK;
    ns_buf_reset(&c->wbuf);
    if (c->access_key) {
        rc = ns_sign_request(req, c->access_key, c->secret_key, &c->sbuf, &sreq);
        if (rc != NS_OK)
            return rc;
        rc = ns_remoting_encode(&c->wbuf, &sreq.cmd);
        ns_signed_free(&sreq);
    } else {
        rc = ns_remoting_encode(&c->wbuf, req);
    }
    if (rc != NS_OK)
        return rc;
    return send_all(c, c->wbuf.data, c->wbuf.len, deadline);
}

int ns_client_send(ns_client_t *c, const ns_cmd_t *req)
{
    return send_cmd(c, req, deadline_of(c->send_timeout_ms));
}

int ns_client_send_raw(ns_client_t *c, const void *p, size_t n)
{
    return send_all(c, p, n, deadline_of(c->send_timeout_ms));
}

void ns_client_set_send_timeout(ns_client_t *c, int timeout_ms)
{
    c->send_timeout_ms = timeout_ms;
}

/* Drops the frame returned by the previous recv from the front of rbuf. */
static void drop_consumed(ns_client_t *c)
{
    if (c->consumed == 0)
        return;
    size_t rest = c->rbuf.len - c->consumed;
    if (rest)
        memmove(c->rbuf.data, c->rbuf.data + c->consumed, rest);
    c->rbuf.len = rest;
    c->consumed = 0;
}

static int recv_until(ns_client_t *c, int64_t deadline, ns_cmd_msg_t *resp)
{
    drop_consumed(c);
    for (;;) {
        size_t flen = 0;
        int rc = ns_frame_peek(c->rbuf.data, c->rbuf.len, CLIENT_MAX_FRAME, &flen);
        if (rc == NS_OK) {
            rc = ns_remoting_decode(c->rbuf.data, flen, resp);
            if (rc == NS_OK)
                c->consumed = flen;
            return rc;
        }
        if (rc != NS_EAGAIN)
            return NS_EINVAL;
        rc = recv_some(c, deadline);
        if (rc != NS_OK)
            return rc;
    }
}

int ns_client_recv(ns_client_t *c, int timeout_ms, ns_cmd_msg_t *resp)
{
    return recv_until(c, deadline_of(timeout_ms), resp);
}

int ns_client_call(ns_client_t *c, ns_cmd_t *req, int timeout_ms, ns_cmd_msg_t *resp)
{
    int64_t deadline = deadline_of(timeout_ms);
    req->opaque = ns_client_next_opaque(c);
    int rc = send_cmd(c, req, deadline);
    while (rc == NS_OK) {
        rc = recv_until(c, deadline, resp);
        if (rc == NS_OK && resp->cmd.opaque == req->opaque)
            break;
    }
    return rc;
}

int ns_client_call_body(ns_client_t *c, int code, const ns_buf_t *req, int timeout_ms,
                        ns_buf_t *resp, char *why, size_t whylen)
{
    ns_cmd_t cmd;
    ns_cmd_msg_t rsp;
    ns_cmd_request_init(&cmd, code, NULL, 0);
    cmd.body = req->data;
    cmd.body_len = req->len;
    ns_cmd_msg_init(&rsp);
    int rc = ns_client_call(c, &cmd, timeout_ms, &rsp);
    if (rc != NS_OK) {
        snprintf(why, whylen, "%s", ns_strerror(rc));
    } else if (rsp.cmd.code != NS_RSP_SUCCESS) {
        const char *name = ns_response_code_name(rsp.cmd.code);
        snprintf(why, whylen, "answered %s (%d)%s%.*s", name ? name : "error", rsp.cmd.code,
                 rsp.cmd.remark ? ": " : "", rsp.cmd.remark ? (int)rsp.cmd.remark_len : 0,
                 rsp.cmd.remark ? rsp.cmd.remark : "");
        rc = NS_EREFUSED;
    } else {
        rc = ns_buf_append(resp, rsp.cmd.body ? rsp.cmd.body : (const uint8_t *)"",
                           rsp.cmd.body_len);
    }
    ns_cmd_msg_free(&rsp);
    return rc;
}
