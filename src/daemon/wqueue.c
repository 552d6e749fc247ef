/* wqueue.c - flushing a stream's reply buffer (include/ns/wqueue.h). */
#include "ns/wqueue.h"

int ns_wq_flush(ns_wq_t *q, uv_stream_t *s, void *data, uv_write_cb cb)
{
    if (q->writing || q->out.len == 0)
        return NS_WQ_IDLE;
    ns_buf_t t = q->wbuf;
    q->wbuf = q->out;
    q->out = t;
    ns_buf_reset(&q->out);
    uv_buf_t b = uv_buf_init((char *)q->wbuf.data, (unsigned)q->wbuf.len);
    /* Try to write synchronously first; queue only what the socket refused. */
    int n = uv_try_write(s, &b, 1);
    if (n == (int)q->wbuf.len) {
        ns_buf_reset(&q->wbuf);
        return NS_WQ_SENT;
    }
    if (n < 0 && n != UV_EAGAIN)
        return n;
    if (n > 0) {
        b.base += n;
        b.len -= (unsigned)n;
    }
    q->req.data = data;
    int rc = uv_write(&q->req, s, &b, 1, cb);
    if (rc != 0)
        return rc;
    q->writing = true;
    return NS_WQ_QUEUED;
}

void ns_wq_done(ns_wq_t *q)
{
    q->writing = false;
    ns_buf_reset(&q->wbuf);
}

void ns_wq_free(ns_wq_t *q)
{
    ns_buf_free(&q->out);
    ns_buf_free(&q->wbuf);
}
