/* conn_write.c - the reply side of a connection (conn.h): replies are
 * encoded into `wq.out` and written once per loop iteration (uv_check) by
 * ns_wq_flush, or, for the replies of one read whose bodies lie in the read
 * snapshot, gathered and written before it is released (below). Every
 * reply byte reaches the socket through conn_bytes_out or the gather, the
 * latter only on connections without a filter. */
#include "conn_int.h"

#include <string.h>

#include "ns/err.h"
#include "ns/log.h"
#include "ns/rsphead.h"

/* Appends encoded bytes for c's socket, on c's loop. */
static int queue_out(ns_conn_t *c)
{
    if (c->wq.out.len > NS_CONN_MAX_PENDING_OUT) {
        NS_M_INC(c->srv->m.refused[NS_M_REFUSE_SLOW_READER]);
        ns_conn_close_here(c, "peer does not read its replies");
        return NS_ECONN;
    }
    ns_conn_mark_dirty(c);
    ns_conn_account(c);
    return NS_OK;
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
        ns_conn_close_here(c, "out of memory");
        return;
    }
    queue_out(c);
}

/* Appends rsp's frame to out, its header from the running loop's
 * templates (rsphead.h). */
static int encode_reply(ns_buf_t *out, const ns_cmd_t *rsp)
{
    ns_server_t *cur = ns_loop_current();
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
    if (rc == NS_OK && !ns_loop_post(c->srv, m))
        rc = NS_ECONN;
    if (rc != NS_OK) {
        ns_mail_free(m);
        ns_conn_unref(c);
    }
    return rc;
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
        c->last_active_ms = uv_now(c->srv->loop);
        if (c->wq.out.len > 0)
            conn_flush(c);
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
        NS_M_ADD(c->srv->m.bytes_out, n);
    return rc;
}

static void conn_flush(ns_conn_t *c)
{
    if (c->closing)
        return;
    int rc = conn_bytes_out(c);
    ns_conn_account(c);
    if (rc == NS_WQ_SENT)
        c->last_active_ms = uv_now(c->srv->loop);
    else if (rc == NS_WQ_QUEUED)
        ns_conn_ref(c); /* dropped by write_cb */
    else if (rc < 0)
        ns_conn_close_here(c, uv_strerror(rc));
}

void ns_conn_flush_all(ns_server_t *srv)
{
    ns_conn_t *c = srv->dirty;
    srv->dirty = NULL;
    while (c) {
        ns_conn_t *next = c->dirty_next;
        c->in_dirty = false;
        c->dirty_next = NULL;
        conn_flush(c);
        ns_conn_unref(c);
        c = next;
    }
}
