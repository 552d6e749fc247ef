/* echo.c - the echo server: the ceiling of any request/response server on
 * this machine (nsbench.h).
 *
 * One libuv loop, like namesrvd's. Every request frame is answered with a
 * canned, valid remoting response: the JSON header a Java NameServer writes
 * for a success ({"code":0,"flag":1,"language":"JAVA","opaque":<request's>,
 * "serializeTypeCurrentRPC":"JSON","version":479}) and a body of exactly
 * --response-bytes bytes ({"pad":"xxx...."}), so with the body size of the
 * real route reply the frame is byte-for-byte the same size. One-way
 * requests (flag bit 2) get no answer. Replies to the frames of one read are
 * written with one write, as namesrvd does per loop iteration. No decoding
 * beyond the opaque, no allocation per request. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "nsbench.h"
#include "ns/err.h"
#include "ns/remoting.h"
#include "ns/wqueue.h"

typedef struct {
    uv_tcp_t tcp;
    ns_buf_t rbuf;
    ns_wq_t wq; /* written the way namesrvd writes (ns_wq_flush) */
    bool closing;
} econn_t;

static const char RSP_PRE[] = "{\"code\":0,\"flag\":1,\"language\":\"JAVA\",\"opaque\":";
static const char RSP_POST[] = ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}";

static uint8_t *g_body;
static size_t g_body_len;
static uv_tcp_t g_listener;
static uint64_t g_requests;

static void econn_close_cb(uv_handle_t *h)
{
    econn_t *c = h->data;
    ns_buf_free(&c->rbuf);
    ns_wq_free(&c->wq);
    free(c);
}

static void econn_close(econn_t *c)
{
    if (c->closing)
        return;
    c->closing = true;
    uv_close((uv_handle_t *)&c->tcp, econn_close_cb);
}

static void eflush(econn_t *c);

static void ewrite_cb(uv_write_t *req, int status)
{
    econn_t *c = req->data;
    ns_wq_done(&c->wq);
    if (status < 0) {
        econn_close(c);
        return;
    }
    eflush(c);
}

static void eflush(econn_t *c)
{
    if (!c->closing && ns_wq_flush(&c->wq, (uv_stream_t *)&c->tcp, c, ewrite_cb) < 0)
        econn_close(c);
}

static int answer(econn_t *c, int32_t opaque)
{
    char num[16];
    int nl = snprintf(num, sizeof num, "%d", (int)opaque);
    size_t hlen = (sizeof RSP_PRE - 1) + (size_t)nl + (sizeof RSP_POST - 1);
    if (ns_buf_reserve(&c->wq.out, 8 + hlen + g_body_len + 1) != NS_OK)
        return NS_ENOMEM;
    uint8_t *p = c->wq.out.data + c->wq.out.len;
    ns_be32_write(p, (uint32_t)(4 + hlen + g_body_len));
    ns_be32_write(p + 4, (uint32_t)hlen);
    p += 8;
    memcpy(p, RSP_PRE, sizeof RSP_PRE - 1);
    p += sizeof RSP_PRE - 1;
    memcpy(p, num, (size_t)nl);
    p += nl;
    memcpy(p, RSP_POST, sizeof RSP_POST - 1);
    p += sizeof RSP_POST - 1;
    if (g_body_len)
        memcpy(p, g_body, g_body_len);
    c->wq.out.len += 8 + hlen + g_body_len;
    return NS_OK;
}

void nsb_read_buf(ns_buf_t *rbuf, uv_buf_t *out)
{
    if (ns_buf_reserve(rbuf, 65536) != NS_OK) {
        out->base = NULL;
        out->len = 0;
        return;
    }
    out->base = (char *)rbuf->data + rbuf->len;
    out->len = rbuf->cap - rbuf->len - 1;
}

static void ealloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    econn_t *c = h->data;
    nsb_read_buf(&c->rbuf, buf);
}

static void eread_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    econn_t *c = s->data;
    if (nread < 0) {
        econn_close(c);
        return;
    }
    c->rbuf.len += (size_t)nread;
    size_t off = 0;
    for (;;) {
        size_t flen = 0;
        int rc =
            ns_frame_peek(c->rbuf.data + off, c->rbuf.len - off, NS_DEFAULT_MAX_FRAME_BYTES, &flen);
        if (rc == NS_EAGAIN) {
            if (flen > c->rbuf.len - off && ns_buf_reserve(&c->rbuf, flen) != NS_OK) {
                econn_close(c);
                return;
            }
            break;
        }
        int32_t code, opaque, flag;
        const uint8_t *body;
        size_t blen;
        if (rc != NS_OK ||
            frame_scan(c->rbuf.data + off, flen, &code, &opaque, &flag, &body, &blen) != NS_OK) {
            econn_close(c);
            return;
        }
        g_requests++;
        if (!(flag & (NS_FLAG_ONEWAY | NS_FLAG_RESPONSE)) && answer(c, opaque) != NS_OK) {
            econn_close(c);
            return;
        }
        off += flen;
    }
    if (off > 0) {
        memmove(c->rbuf.data, c->rbuf.data + off, c->rbuf.len - off);
        c->rbuf.len -= off;
    }
    eflush(c);
}

static void on_connection(uv_stream_t *server, int status)
{
    if (status < 0)
        return;
    econn_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    uv_tcp_init(server->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        econn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    if (uv_read_start((uv_stream_t *)&c->tcp, ealloc_cb, eread_cb) != 0)
        econn_close(c);
}

static void on_signal(uv_signal_t *s, int signum)
{
    fprintf(stderr, "nsbench echo: %llu request(s) served, exiting on signal %d\n",
            (unsigned long long)g_requests, signum);
    exit(0);
}

int echo_run(const char *bind_addr, int port, size_t response_bytes, const char *port_file)
{
    uv_loop_t *loop = uv_default_loop();
    struct sockaddr_storage ss;
    signal(SIGPIPE, SIG_IGN);
    g_body_len = response_bytes;
    g_body = malloc(g_body_len + 1);
    if (g_body == NULL)
        return 1;
    memset(g_body, 'x', g_body_len);
    if (g_body_len >= 10) { /* {"pad":"xxxx"} */
        memcpy(g_body, "{\"pad\":\"", 8);
        g_body[g_body_len - 2] = '"';
        g_body[g_body_len - 1] = '}';
    }
    if (uv_ip4_addr(bind_addr, port, (struct sockaddr_in *)&ss) != 0 &&
        uv_ip6_addr(bind_addr, port, (struct sockaddr_in6 *)&ss) != 0) {
        fprintf(stderr, "nsbench echo: bad bind address %s\n", bind_addr);
        return 1;
    }
    if (strncmp(bind_addr, "127.", 4) != 0 && strcmp(bind_addr, "::1") != 0) {
        fprintf(stderr, "nsbench echo: binds to a loopback address only\n");
        return 1;
    }
    uv_tcp_init(loop, &g_listener);
    int rc = uv_tcp_bind(&g_listener, (struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&g_listener, 1024, on_connection);
    if (rc != 0) {
        fprintf(stderr, "nsbench echo: cannot listen on %s:%d: %s\n", bind_addr, port,
                uv_strerror(rc));
        return 1;
    }
    struct sockaddr_storage bound;
    int blen = sizeof bound;
    int bport = port;
    if (uv_tcp_getsockname(&g_listener, (struct sockaddr *)&bound, &blen) == 0)
        bport = ntohs(((struct sockaddr_in *)&bound)->sin_port);
    if (port_file) {
        FILE *f = fopen(port_file, "w");
        if (f) {
            fprintf(f, "%d\n", bport);
            fclose(f);
        }
    }
    fprintf(stderr, "nsbench echo: listening on %s:%d, response body %zu bytes\n", bind_addr, bport,
            g_body_len);
    uv_signal_t s1, s2;
    uv_signal_init(loop, &s1);
    uv_signal_init(loop, &s2);
    uv_signal_start(&s1, on_signal, SIGINT);
    uv_signal_start(&s2, on_signal, SIGTERM);
    uv_run(loop, UV_RUN_DEFAULT);
    return 0;
}
