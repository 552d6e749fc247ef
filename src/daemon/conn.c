/* conn.c - one TCP connection: read buffer, frame splitting, reply batching.
 *
 * State machine:
 *   OPEN     reading; every whole frame in the buffer is decoded and
 *            dispatched in arrival order (pipelining); replies are appended
 *            to `wq.out` and written once per loop iteration (uv_check) by
 *            ns_wq_flush, as one write per connection; while the previous
 *            write is in flight they keep accumulating.
 *   CLOSING  after a protocol error, EOF, idle timeout or shutdown: uv_close
 *            was called; queued writes are cancelled; nothing is dispatched.
 *   CLOSED   close callback ran: the connection left the server's list, the
 *            brokers it registered are unregistered (cmd_broker.c), and the
 *            handle's reference was dropped.
 * The struct is freed when the last reference goes: the handle holds one,
 * and every write operation still waiting for the writer holds one (so a
 * late reply finds a CLOSED conn and is dropped, never a dangling pointer).
 *
 * With ioThreads > 1 a connection may live on an I/O loop (ioloop.c). Its
 * main-loop proxy has no socket: forwarded frames are dispatched against it,
 * its flush sends the reply bytes to the I/O loop, closing it asks the I/O
 * loop to close, and it is CLOSED when the I/O loop reports the close. The
 * I/O loop's connection holds one more reference, for the proxy's link,
 * until the main loop has finished the proxy and can no longer name it. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ns/err.h"
#include "ns/log.h"
#include "ns/wqueue.h"
#include "budget.h"
#include "server.h"

#define READ_CHUNK (64 * 1024)
#define MAX_PENDING_OUT (64u * 1024 * 1024)

struct ns_conn {
    uv_tcp_t tcp; /* first member: the handle's data points back at us */
    ns_server_t *srv;
    int refs;
    bool closing;
    bool in_dirty;
    bool paused;   /* I/O loop: not reading while the main loop catches up */
    bool proxy;    /* a main-loop stand-in for a connection of an I/O loop */
    bool finished; /* proxy: the I/O loop reported the close */
    int brokers;   /* registrations seen on this connection */
    uint64_t last_active_ms;
    ns_buf_t rbuf;
    ns_wq_t wq; /* replies waiting for the next write, and the one in flight */
    ns_cmd_msg_t msg;
    ns_conn_t *prev, *next;
    ns_conn_t *dirty_next;
    ns_conn_t *paused_next;
    ns_io_t *home;   /* proxy: the I/O loop that owns the socket */
    ns_conn_t *link; /* the other half: a token, dereferenced only by its own loop */
    void *spare;     /* the message the close path will send (ioloop.c), kept so it cannot fail */
    char peer[64];
    ns_conn_budget_t bud; /* what it holds against the server-wide budgets (budget.h) */
};

void ns_conn_ref(ns_conn_t *c)
{
    c->refs++;
}

void ns_conn_unref(ns_conn_t *c)
{
    if (--c->refs > 0)
        return;
    ns_budget_conn_close(&c->bud);
    ns_buf_free(&c->rbuf);
    ns_wq_free(&c->wq);
    ns_cmd_msg_free(&c->msg);
    ns_io_msg_free(c->spare);
    free(c);
}

bool ns_conn_is_closed(const ns_conn_t *c)
{
    return c->closing;
}

const char *ns_conn_peer(const ns_conn_t *c)
{
    return c->peer;
}

void ns_conn_note_broker(ns_conn_t *c)
{
    c->brokers++;
}

/* Re-accounts c's buffers against the server-wide budgets and, when a sum
 * is over, closes the connections that hold the most (budget.c). */
static void account(ns_conn_t *c)
{
    size_t unsent = c->wq.out.len + (c->wq.writing ? c->wq.wbuf.len : 0);
    if (unsent == c->bud.unsent && c->rbuf.cap == c->bud.rbuf && !c->bud.enforce)
        return; /* the common case: nothing moved */
    if (ns_budget_account(&c->bud, c->rbuf.cap, unsent) || c->bud.enforce) {
        c->bud.enforce = false;
        ns_budget_enforce(c->srv);
    }
}

ns_conn_t *ns_conn_iter(ns_server_t *srv, ns_conn_t *prev)
{
    return prev ? prev->next : srv->conns;
}

ns_conn_budget_t *ns_conn_budget_of(ns_conn_t *c)
{
    return &c->bud;
}

static void mark_dirty(ns_conn_t *c)
{
    if (c->in_dirty)
        return;
    c->in_dirty = true;
    ns_conn_ref(c);
    c->dirty_next = c->srv->dirty;
    c->srv->dirty = c;
}

static void *take_spare(ns_conn_t *c)
{
    void *s = c->spare;
    c->spare = NULL;
    return s;
}

static void unlink_conn(ns_conn_t *c)
{
    ns_server_t *srv = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

static void close_cb(uv_handle_t *h)
{
    ns_conn_t *c = h->data;
    ns_server_t *srv = c->srv;
    unlink_conn(c);
    ns_budget_conn_close(&c->bud);
    if (srv->io)
        ns_io_closed(srv, c, c->link, take_spare(c)); /* its brokers are the main loop's */
    else if (c->brokers > 0 && !srv->stopping)
        ns_broker_conn_closed(srv, c);
    ns_conn_unref(c);
}

void ns_conn_close(ns_conn_t *c, const char *reason)
{
    if (c->closing)
        return;
    c->closing = true;
    if (reason)
        NS_LOG_INFO("conn %s: closing: %s", c->peer, reason);
    if (c->proxy) {
        if (c->link && c->srv->n_ios > 0) /* else told when it next forwards (or gone) */
            ns_io_close_remote(c->home, c->link, take_spare(c));
        return;
    }
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_close((uv_handle_t *)&c->tcp, close_cb);
}

/* A connection with no partial frame reads into the server's one shared
 * buffer (idle connections then hold no read memory); only the tail of a
 * frame that has not fully arrived is copied into the connection's own
 * buffer, which later reads extend. */
static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    ns_conn_t *c = h->data;
    ns_server_t *srv = c->srv;
    if (c->rbuf.len == 0 && ns_buf_reserve(&srv->rshared, READ_CHUNK) == NS_OK) {
        buf->base = (char *)srv->rshared.data;
        buf->len = srv->rshared.cap - 1;
        return;
    }
    if (ns_buf_reserve(&c->rbuf, READ_CHUNK) != NS_OK) {
        buf->base = NULL;
        buf->len = 0;
        return;
    }
    buf->base = (char *)c->rbuf.data + c->rbuf.len;
    buf->len = c->rbuf.cap - c->rbuf.len - 1;
    /* counted now, enforced in read_cb: libuv reads into the stream right
     * after this callback, so it must not be closed here */
    if (c->rbuf.cap != c->bud.rbuf && ns_budget_account(&c->bud, c->rbuf.cap, c->bud.unsent))
        c->bud.enforce = true;
}

/* I/O loop: the main loop has too many of this loop's frames to handle;
 * stop reading until it catches up (ns_conn_resume_all). */
static void pause_reading(ns_conn_t *c)
{
    ns_server_t *srv = c->srv;
    c->paused = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    ns_conn_ref(c); /* the queue's, dropped when it leaves */
    if (srv->paused_tail)
        srv->paused_tail->paused_next = c;
    else
        srv->paused_head = c;
    srv->paused_tail = c;
    NS_LOG_DEBUG("conn %s: reading paused until the main loop catches up", c->peer);
}

/* Takes the oldest paused connection off the queue (its reference with it). */
static ns_conn_t *paused_pop(ns_server_t *srv)
{
    ns_conn_t *c = srv->paused_head;
    if (c == NULL)
        return NULL;
    srv->paused_head = c->paused_next;
    if (srv->paused_head == NULL)
        srv->paused_tail = NULL;
    c->paused_next = NULL;
    c->paused = false;
    return c;
}

/* A connection keeps its decode arena and ext array between frames (no
 * allocation per request), but not after a huge header: 60 connections that
 * each sent one 16 MiB header would otherwise hold 16 MiB apiece for as long
 * as they stay open, outside every budget. */
#define MSG_KEEP_BYTES (256u * 1024)

static void shrink_msg(ns_conn_t *c)
{
    if (c->msg.arena.cap > MSG_KEEP_BYTES ||
        c->msg.ext_cap * sizeof(ns_ext_field_t) > MSG_KEEP_BYTES)
        ns_cmd_msg_free(&c->msg);
}

/* Splits [data, data+len) into frames and dispatches each one; returns how
 * many bytes were consumed (whole frames). */
static size_t process(ns_conn_t *c, const uint8_t *data, size_t len)
{
    ns_server_t *srv = c->srv;
    size_t off = 0, max = (size_t)srv->cfg->max_frame_bytes;
    ns_txn_t *txn = NULL;
    if (srv->io)
        ns_io_sync(srv);
    bool reading = ns_read_begin(srv, &txn) == NS_OK; /* one snapshot for the whole read */
    while (!c->closing && !c->paused) {
        size_t flen = 0;
        int rc = ns_frame_peek(data + off, len - off, max, &flen);
        if (rc == NS_EAGAIN)
            break;
        if (rc == NS_ETOOBIG) {
            NS_LOG_WARN("conn %s: frame of %u bytes exceeds maxFrameBytes %zu", c->peer,
                        ns_be32_read(data + off), max);
            ns_conn_close(c, "oversized frame");
            break;
        }
        if (rc != NS_OK) {
            NS_LOG_WARN("conn %s: malformed frame length", c->peer);
            ns_conn_close(c, "malformed frame");
            break;
        }
        rc = ns_remoting_decode(data + off, flen, &c->msg);
        if (rc != NS_OK) {
            NS_LOG_WARN("conn %s: undecodable frame header (%s)", c->peer, ns_strerror(rc));
            ns_conn_close(c, "malformed header");
            break;
        }
        if (ns_budget_writer_full() && ns_dispatch_may_write(&c->msg.cmd)) {
            /* the writer queue is at its budget: this frame waits in c->rbuf */
            ns_refusal(srv, c, NS_REFUSE_WRITER_PAUSE,
                       "reading paused: the writer queue is at writerQueueMaxBytes/Ops");
            pause_reading(c);
            break;
        }
        if (srv->io && !ns_io_serves(&c->msg.cmd)) {
            if (ns_io_backlogged(srv)) { /* this frame waits in c->rbuf */
                pause_reading(c);
                break;
            }
            ns_io_forward(srv, c, c->link, data + off, flen);
        } else {
            ns_dispatch(srv, c, &c->msg.cmd);
        }
        shrink_msg(c);
        off += flen;
    }
    if (reading)
        ns_read_end(srv);
    return off;
}

/* Runs the whole frames in c's own buffer and keeps the rest there. */
static void process_rbuf(ns_conn_t *c)
{
    size_t used = process(c, c->rbuf.data, c->rbuf.len);
    if (used > 0 && !c->closing) {
        memmove(c->rbuf.data, c->rbuf.data + used, c->rbuf.len - used);
        c->rbuf.len -= used;
    }
    if (c->rbuf.len == 0)
        ns_buf_free(&c->rbuf); /* back to the shared buffer */
    account(c);
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    ns_conn_t *c = s->data;
    ns_server_t *srv = c->srv;
    if (nread < 0) {
        ns_conn_close(c, nread == UV_EOF ? NULL : uv_strerror((int)nread));
        return;
    }
    if (nread == 0)
        return;
    c->last_active_ms = uv_now(srv->loop);
    if (buf->base == (char *)srv->rshared.data) {
        size_t used = process(c, srv->rshared.data, (size_t)nread);
        if (!c->closing && used < (size_t)nread &&
            ns_buf_append(&c->rbuf, srv->rshared.data + used, (size_t)nread - used) != NS_OK)
            ns_conn_close(c, "out of memory");
        account(c);
        return;
    }
    c->rbuf.len += (size_t)nread;
    process_rbuf(c);
}

void ns_conn_resume_all(ns_server_t *shard)
{
    ns_conn_t *c;
    while ((c = paused_pop(shard)) != NULL) {
        if (!c->closing) {
            NS_LOG_DEBUG("conn %s: reading again", c->peer);
            c->last_active_ms = uv_now(shard->loop);
            process_rbuf(c);
            if (!c->closing && !c->paused &&
                uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) != 0)
                ns_conn_close(c, "read start failed");
        }
        bool full_again = c->paused;
        ns_conn_unref(c);
        if (full_again) /* the rest keep their place in the queue: first next time */
            break;
    }
}

static void peer_name(const struct sockaddr_storage *ss, char *out, size_t outlen)
{
    char host[48] = "?";
    int port = 0;
    if (ss->ss_family == AF_INET) {
        uv_ip4_name((const struct sockaddr_in *)ss, host, sizeof host);
        port = ntohs(((const struct sockaddr_in *)ss)->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        uv_ip6_name((const struct sockaddr_in6 *)ss, host, sizeof host);
        port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    }
    snprintf(out, outlen, "%s:%d", host, port);
}

/* Allocates a connection of srv with one reference (the handle's or, for a
 * proxy, the link's) and puts it on srv's list. NULL when out of memory. */
static ns_conn_t *conn_new(ns_server_t *srv)
{
    ns_conn_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->srv = srv;
    c->refs = 1;
    ns_cmd_msg_init(&c->msg);
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    c->last_active_ms = uv_now(srv->loop);
    return c;
}

/* Names the peer and starts reading an accepted or adopted socket. */
static void conn_start(ns_conn_t *c)
{
    struct sockaddr_storage ss = {0};
    int len = sizeof ss;
    uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len);
    peer_name(&ss, c->peer, sizeof c->peer);
    uv_tcp_nodelay(&c->tcp, 1);
    if (!ns_budget_conn_open(&c->bud)) {
        ns_refusal(c->srv, c, NS_REFUSE_CONNECTIONS,
                   "connection refused: maxConnections open already");
        ns_conn_close(c, NULL);
        return;
    }
    NS_LOG_DEBUG("conn %s: accepted", c->peer);
    if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) != 0)
        ns_conn_close(c, "read start failed");
}

void ns_conn_accept(ns_server_t *srv)
{
    ns_conn_t *c = conn_new(srv);
    if (c == NULL)
        return;
    uv_tcp_init(srv->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&c->tcp) != 0) {
        c->closing = true;
        uv_close((uv_handle_t *)&c->tcp, close_cb);
        return;
    }
    conn_start(c);
}

bool ns_conn_adopt(ns_server_t *shard, int fd, ns_conn_t *proxy, void *spare)
{
    ns_conn_t *c = conn_new(shard);
    if (c == NULL) {
        close(fd);
        return false;
    }
    c->link = proxy;
    uv_tcp_init(shard->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_tcp_open(&c->tcp, fd) != 0) {
        close(fd);
        c->closing = true;
        unlink_conn(c);
        c->link = NULL;
        uv_close((uv_handle_t *)&c->tcp, (uv_close_cb)free);
        ns_cmd_msg_free(&c->msg);
        return false;
    }
    ns_conn_ref(c); /* the proxy's link, dropped when the main loop releases it */
    c->spare = spare;
    conn_start(c);
    return true;
}

ns_conn_t *ns_conn_proxy_new(ns_server_t *srv, ns_io_t *home, int fd, void *spare)
{
    ns_conn_t *c = conn_new(srv);
    if (c == NULL)
        return NULL;
    c->proxy = true;
    c->home = home;
    c->spare = spare;
    struct sockaddr_storage ss = {0};
    socklen_t len = sizeof ss;
    getpeername(fd, (struct sockaddr *)&ss, &len);
    peer_name(&ss, c->peer, sizeof c->peer);
    return c;
}

void ns_conn_proxy_request(ns_conn_t *p, ns_conn_t *remote, const uint8_t *frame, size_t len)
{
    if (p->link == NULL) {
        p->link = remote;
        if (p->closing) /* closed before the main loop could name the socket */
            ns_io_close_remote(p->home, remote, take_spare(p));
    }
    if (p->closing)
        return;
    int rc = ns_remoting_decode(frame, len, &p->msg);
    if (rc != NS_OK) { /* the I/O loop decoded it already: not expected */
        NS_LOG_WARN("conn %s: undecodable frame header (%s)", p->peer, ns_strerror(rc));
        ns_conn_close(p, "malformed header");
        return;
    }
    p->last_active_ms = uv_now(p->srv->loop);
    ns_dispatch(p->srv, p, &p->msg.cmd);
    shrink_msg(p);
}

void ns_conn_proxy_finish(ns_conn_t *p)
{
    if (p->finished)
        return;
    p->finished = true;
    p->closing = true;
    unlink_conn(p);
    if (p->brokers > 0 && !p->srv->stopping)
        ns_broker_conn_closed(p->srv, p);
    ns_conn_unref(p);
}

void ns_conn_deliver(ns_conn_t *c, ns_buf_t *bytes)
{
    if (c->closing)
        return;
    if (c->wq.out.len == 0) {
        ns_buf_t t = c->wq.out;
        c->wq.out = *bytes;
        *bytes = t;
    } else if (ns_buf_append(&c->wq.out, bytes->data, bytes->len) != NS_OK) {
        ns_conn_close(c, "out of memory");
        return;
    }
    if (c->wq.out.len > MAX_PENDING_OUT) {
        ns_conn_close(c, "peer does not read its replies");
        return;
    }
    mark_dirty(c);
    account(c);
}

int ns_conn_send(ns_conn_t *c, const ns_cmd_t *rsp)
{
    if (c->closing)
        return NS_ECONN;
    int rc = ns_remoting_encode(&c->wq.out, rsp);
    if (rc != NS_OK)
        return rc;
    if (c->wq.out.len > MAX_PENDING_OUT) {
        ns_conn_close(c, "peer does not read its replies");
        return NS_ECONN;
    }
    mark_dirty(c);
    account(c);
    return NS_OK;
}

static void flush(ns_conn_t *c);

static void write_cb(uv_write_t *req, int status)
{
    ns_conn_t *c = req->data;
    ns_wq_done(&c->wq);
    account(c);
    if (status < 0) {
        ns_conn_close(c, uv_strerror(status));
    } else {
        c->last_active_ms = uv_now(c->srv->loop);
        if (c->wq.out.len > 0)
            flush(c);
    }
    ns_conn_unref(c);
}

static void flush(ns_conn_t *c)
{
    if (c->closing)
        return;
    if (c->proxy) {
        if (c->link && c->wq.out.len > 0)
            ns_io_reply(c->home, c->link, &c->wq.out);
        account(c);
        return;
    }
    int rc = ns_wq_flush(&c->wq, (uv_stream_t *)&c->tcp, c, write_cb);
    account(c);
    if (rc == NS_WQ_SENT)
        c->last_active_ms = uv_now(c->srv->loop);
    else if (rc == NS_WQ_QUEUED)
        ns_conn_ref(c); /* dropped by write_cb */
    else if (rc < 0)
        ns_conn_close(c, uv_strerror(rc));
}

void ns_conn_flush_all(ns_server_t *srv)
{
    ns_conn_t *c = srv->dirty;
    srv->dirty = NULL;
    while (c) {
        ns_conn_t *next = c->dirty_next;
        c->in_dirty = false;
        c->dirty_next = NULL;
        flush(c);
        ns_conn_unref(c);
        c = next;
    }
}

void ns_conn_sweep_idle(ns_server_t *srv, uint64_t now_ms, int64_t idle_s)
{
    if (idle_s <= 0)
        return;
    /* proxies: their I/O loop sweeps; paused connections have frames waiting */
    for (ns_conn_t *c = srv->conns; c; c = c->next)
        if (!c->closing && !c->proxy && !c->paused &&
            now_ms - c->last_active_ms > (uint64_t)idle_s * 1000)
            ns_conn_close(c, "idle timeout");
}

void ns_conn_close_all(ns_server_t *srv)
{
    for (ns_conn_t *c = srv->conns; c; c = c->next)
        ns_conn_close(c, NULL);
    ns_conn_t *p;
    while ((p = paused_pop(srv)) != NULL)
        ns_conn_unref(p);
}
