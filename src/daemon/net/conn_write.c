/* conn_write.c - the reply side of a connection (conn.h): replies are
 * encoded into `wq.out` and written once per loop iteration (uv_check) by
 * ns_wq_flush, or, for the replies of one read whose bodies lie in the read
 * snapshot, gathered and written before it is released (below). Every
 * reply byte reaches the socket through conn_bytes_out or the gather, the
 * latter only on connections without a filter. */
#include "net/conn_int.h"

#include <string.h>

#include "ns/err.h"
#include "ns/log.h"
#include "ns/rsphead.h"

#define GATHER_SEGS 64
#define GATHER_MIN 128 /* smaller bodies are copied: cheaper than an iovec */

typedef struct {
    size_t out_end; /* the body follows wq.out's first out_end bytes */
    const uint8_t *p;
    size_t n;
} gather_seg_t;

static _Thread_local struct {
    ns_conn_t *conn; /* gathering, or NULL */
    size_t n;
    gather_seg_t seg[GATHER_SEGS];
} gather;

static void gather_settle(ns_conn_t *c);

/* Appends encoded bytes for c's socket, on c's loop. */
static int queue_out(ns_conn_t *c)
{
    if (c->wq.out.len > NS_CONN_MAX_PENDING_OUT) {
        NS_M_INC(c->loop->m.refused[NS_M_REFUSE_SLOW_READER]);
        ns_conn_close_here(c, "peer does not read its replies");
        return NS_ECONN;
    }
    ns_conn_mark_dirty(c);
    ns_conn_account(c);
    return NS_OK;
}

void ns_conn_deliver(ns_conn_t *c, ns_buf_t *bytes)
{
    __atomic_sub_fetch(&c->mailed, bytes->len, __ATOMIC_RELAXED); /* counted in queued next */
    if (c->closing)
        return;
    if (gather.conn == c)
        gather_settle(c);
    if (c->wq.out.len == 0) {
        ns_buf_t t = c->wq.out;
        c->wq.out = *bytes;
        *bytes = t;
    } else if (ns_buf_append(&c->wq.out, bytes->data, bytes->len) != NS_OK) {
        ns_conn_close_here(c, "out of memory");
        return;
    }
    queue_out(c);
}

/* Appends rsp's frame to out, its header from the running loop's
 * templates (rsphead.h). */
static int encode_reply(ns_buf_t *out, const ns_cmd_t *rsp)
{
    ns_loop_t *cur = ns_loop_current();
    size_t start = out->len;
    int rc =
        cur ? ns_rsp_heads_encode(&cur->rsp_heads, out, rsp) : ns_remoting_encode_header(out, rsp);
    if (rc == NS_OK && rsp->body != NULL && rsp->body_len > 0 &&
        ns_buf_append(out, rsp->body, rsp->body_len) != NS_OK) {
        out->len = start;
        out->data[start] = 0;
        rc = NS_ENOMEM;
    }
    return rc;
}

int ns_conn_send(ns_conn_t *c, const ns_cmd_t *rsp)
{
    if (ns_conn_is_closed(c))
        return NS_ECONN;
    if (ns_conn_on_own_loop(c)) {
        int rc = encode_reply(&c->wq.out, rsp);
        return rc != NS_OK ? rc : queue_out(c);
    }
    ns_mail_t *m = ns_mail_new(NS_MAIL_OUT, c); /* the reply travels to c's loop */
    if (m == NULL)
        return NS_ENOMEM;
    int rc = encode_reply(&m->bytes, rsp);
    ns_conn_ref(c); /* the mail's */
    size_t n = m->bytes.len;
    if (rc == NS_OK) /* before the post: its delivery takes them off */
        __atomic_add_fetch(&c->mailed, n, __ATOMIC_RELAXED);
    if (rc == NS_OK && !ns_loop_post(c->loop, m)) {
        __atomic_sub_fetch(&c->mailed, n, __ATOMIC_RELAXED);
        rc = NS_ECONN;
    }
    if (rc != NS_OK) {
        ns_mail_free(m);
        ns_conn_unref(c);
    }
    return rc;
}

/* ---- the gather: replies of one read straight from the read snapshot ----
 *
 * While a connection without a filter processes a read (conn.c, process),
 * a reply whose body lies in the loop's read snapshot (a route in the LMDB
 * map) is not copied: its header goes to wq.out and the body is remembered
 * as a segment after it. When the read's frames are done, and before the
 * snapshot can be released, the whole of wq.out and the bodies go to the
 * socket in one uv_try_write of iovecs; only what the socket did not take
 * is copied into wq.out, to be written at the loop's check as usual. So a
 * route is copied once (by the kernel) instead of twice. Connections with
 * a filter (TLS, PROXY) need the bytes through it: their replies are
 * copied as before. One gather per loop thread: one connection at a time. */

/* uv_buf_init without the call into libuv (it is not inline). */
static inline uv_buf_t buf_of(const void *p, size_t n)
{
    uv_buf_t b;
    b.base = (char *)p;
    b.len = n;
    return b;
}

/* c's bytes in order as iovecs: wq.out with the bodies at their places. */
static size_t gather_iov(ns_conn_t *c, uv_buf_t *iov, size_t *total)
{
    size_t k = 0, from = 0;
    char *out = (char *)c->wq.out.data;
    *total = c->wq.out.len;
    for (size_t i = 0; i < gather.n; i++) {
        const gather_seg_t *g = &gather.seg[i];
        if (g->out_end > from)
            iov[k++] = buf_of(out + from, g->out_end - from);
        iov[k++] = buf_of(g->p, g->n);
        from = g->out_end;
        *total += g->n;
    }
    if (c->wq.out.len > from)
        iov[k++] = buf_of(out + from, c->wq.out.len - from);
    return k;
}

/* Makes the bytes of iov after the first skip c's wq.out (copied through
 * wq.wbuf, which is idle: no write is in flight while gathering). */
static int gather_keep(ns_conn_t *c, const uv_buf_t *iov, size_t k, size_t skip)
{
    ns_buf_t *rest = &c->wq.wbuf;
    ns_buf_reset(rest);
    for (size_t i = 0; i < k; i++) {
        if (skip >= iov[i].len) {
            skip -= iov[i].len;
            continue;
        }
        if (ns_buf_append(rest, iov[i].base + skip, iov[i].len - skip) != NS_OK)
            return NS_ENOMEM;
        skip = 0;
    }
    ns_buf_t t = c->wq.out;
    c->wq.out = *rest;
    *rest = t;
    ns_buf_reset(rest);
    return NS_OK;
}

void ns_conn_gather_begin(ns_conn_t *c)
{
    gather.conn = c->filter.write == NULL && !c->wq.writing && !c->closing ? c : NULL;
    gather.n = 0;
}

/* Copies the gathered bodies into wq.out and ends the gather (something
 * else is about to use wq.out as a whole). */
static void gather_settle(ns_conn_t *c)
{
    uv_buf_t iov[2 * GATHER_SEGS + 1];
    size_t total, k = gather_iov(c, iov, &total);
    gather.conn = NULL;
    gather.n = 0;
    if (gather_keep(c, iov, k, 0) != NS_OK)
        ns_conn_close_here(c, "out of memory");
}

void ns_conn_gather_end(ns_conn_t *c)
{
    if (gather.conn != c)
        return;
    gather.conn = NULL;
    if (gather.n == 0 || c->closing) {
        gather.n = 0;
        return;
    }
    if (gather.n == 1 && gather.seg[0].out_end == c->wq.out.len) {
        /* A lone reply (depth 1) is copied and written at the loop's check
         * with the other connections' replies: written from here, each one
         * wakes its peer apart, and p99 at depth 1 rose by ~30 us
         * (docs/performance.md). Pipelined replies are still gathered. */
        gather.n = 0;
        if (ns_buf_append(&c->wq.out, gather.seg[0].p, gather.seg[0].n) != NS_OK) {
            ns_conn_close_here(c, "out of memory");
            return;
        }
        queue_out(c);
        return;
    }
    uv_buf_t iov[2 * GATHER_SEGS + 1];
    size_t total, k = gather_iov(c, iov, &total);
    gather.n = 0;
    int n = uv_try_write((uv_stream_t *)&c->tcp, iov, (unsigned)k);
    if (n < 0 && n != UV_EAGAIN) {
        ns_conn_close_here(c, uv_strerror(n));
        return;
    }
    size_t sent = n > 0 ? (size_t)n : 0;
    NS_M_ADD(c->loop->m.bytes_out, sent);
    if (sent > 0)
        c->last_active_ms = uv_now(c->loop->uv);
    if (sent == total) {
        ns_buf_reset(&c->wq.out);
        ns_conn_account(c);
        return;
    }
    if (gather_keep(c, iov, k, sent) != NS_OK) {
        ns_conn_close_here(c, "out of memory");
        return;
    }
    queue_out(c); /* the rest at the loop's check */
}

int ns_conn_send_mapped(ns_conn_t *c, const ns_cmd_t *rsp)
{
    if (gather.conn != c || c->closing || rsp->body == NULL || rsp->body_len < GATHER_MIN ||
        gather.n == GATHER_SEGS)
        return ns_conn_send(c, rsp);
    int rc = ns_rsp_heads_encode(&c->loop->rsp_heads, &c->wq.out, rsp);
    if (rc != NS_OK)
        return rc;
    gather.seg[gather.n++] = (gather_seg_t){c->wq.out.len, rsp->body, rsp->body_len};
    return NS_OK;
}

static void conn_flush(ns_conn_t *c);

static void write_cb(uv_write_t *req, int status)
{
    ns_conn_t *c = req->data;
    ns_wq_done(&c->wq);
    ns_conn_account(c);
    if (status < 0) {
        ns_conn_close_here(c, uv_strerror(status));
    } else {
        c->last_active_ms = uv_now(c->loop->uv);
        if (c->wq.out.len > 0)
            conn_flush(c);
        if (c->wstopped)
            ns_conn_writes_drained(c);
    }
    ns_conn_unref(c);
}

/* The seam, outbound: what the connection has to write goes to the socket.
 * Returns an NS_WQ_* value or a libuv error (ns_wq_flush). */
static int conn_bytes_out(ns_conn_t *c)
{
    if (c->filter.write && !c->wq.writing) {
        int rc = c->filter.write(c->filter.ctx, c, &c->wq.out);
        if (rc != NS_OK) {
            ns_conn_close_here(c, rc == NS_ECONN ? NULL : ns_strerror(rc)); /* ECONN: logged */
            return NS_WQ_IDLE;
        }
    }
    size_t n = c->wq.out.len;
    int rc = ns_wq_flush(&c->wq, (uv_stream_t *)&c->tcp, c, write_cb);
    if (rc > 0)
        NS_M_ADD(c->loop->m.bytes_out, n);
    return rc;
}

static void conn_flush(ns_conn_t *c)
{
    if (c->closing || c->off_busy) /* a worker feeds its filter: flushed when it is back */
        return;
    if (gather.conn == c) /* a flush in the middle of a read (shutdown) */
        gather_settle(c);
    int rc = conn_bytes_out(c);
    ns_conn_account(c);
    if (c->wstopped) /* the socket may have taken it all at once */
        ns_conn_writes_drained(c);
    if (rc == NS_WQ_SENT)
        c->last_active_ms = uv_now(c->loop->uv);
    else if (rc == NS_WQ_QUEUED)
        ns_conn_ref(c); /* dropped by write_cb */
    else if (rc < 0)
        ns_conn_close_here(c, uv_strerror(rc));
}

void ns_conn_flush_all(ns_loop_t *loop)
{
    ns_conn_t *c = loop->dirty;
    loop->dirty = NULL;
    while (c) {
        ns_conn_t *next = c->dirty_next;
        c->in_dirty = false;
        c->dirty_next = NULL;
        conn_flush(c);
        ns_conn_unref(c);
        c = next;
    }
}
