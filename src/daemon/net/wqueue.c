/* wqueue.c - flushing a stream's reply buffer (include/ns/wqueue.h). */
#include "ns/wqueue.h"

/* A written buffer bigger than this is freed, not kept for the next reply:
 * after one burst (30 pipelined 1 MiB replies) an idle connection would
 * otherwise keep 2 x 32 MiB that no budget sees (they count bytes queued). */
#define NS_WQ_KEEP_BYTES (1u << 20)

static void written(ns_buf_t *b)
{
    if (b->cap > NS_WQ_KEEP_BYTES)
        ns_buf_free(b);
    else
        ns_buf_reset(b);
}

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
        written(&q->wbuf);
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
    written(&q->wbuf);
}

void ns_wq_free(ns_wq_t *q)
{
    ns_buf_free(&q->out);
    ns_buf_free(&q->wbuf);
}
