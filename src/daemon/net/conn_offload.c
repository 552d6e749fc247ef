/* conn_offload.c - TLS handshake steps fed on a worker thread
 * (tlsHandshakeOffload), not on the loop that serves lookups.
 *
 * The step that answers a ClientHello costs the server a key operation
 * (about 1 ms with RSA-2048). Run on the loop, a flood of new TLS
 * connections would hold every lookup of that loop behind it. So when the
 * filter says the bytes are such a step (its `step` hook, NS_EAGAIN), the
 * connection copies them, stops reading and hands its filter to libuv's
 * thread pool, where only the filter's `feed` runs (it touches the wire
 * alone: OpenSSL's session belongs to one thread at a time, and the
 * pool's queue and completion order the hand-over). Until the work is
 * back the connection does not read, write or close its filter (closing
 * it leaves the filter to the work's return, which holds a reference); its
 * loop serves the other connections meanwhile. Back on the loop, `fed`
 * does the rest (the PROXY peer, the handshake bytes to send, plain bytes
 * that came with the client's Finished) and reading starts again.
 *
 * The workers keep the loop's priority: libuv's completion signal has the
 * loop spin until a worker's send is done, so a worker niced down and
 * preempted there stalls the loop (seen with perf under
 * tools/bench_handshake_flood.sh).
 * A connection has at most one step in flight, so the pool holds at most
 * one flight (a few KiB) per connection in handshake, and those are bounded
 * by maxPendingHandshakes (budget.h).
 */
#include "net/conn_int.h"
#include "ns/err.h"

static void work_cb(uv_work_t *req)
{
    ns_conn_t *c = req->data;
    c->off_why = NULL;
    c->off_rc =
        c->filter.feed(c->filter.ctx, c->off_in.data, c->off_in.len, &c->off_plain, &c->off_why);
}

static void after_cb(uv_work_t *req, int status)
{
    ns_conn_t *c = req->data;
    c->off_busy = false;
    ns_buf_free(&c->off_in);
    if (!c->closing) {
        int rc = status == 0 ? c->off_rc : NS_ESHUTDOWN; /* cancelled: the loop stops */
        if (ns_conn_fed(c, rc, c->off_why)) {
            ns_buf_t plain = c->off_plain;
            c->off_plain = (ns_buf_t)NS_BUF_INIT;
            ns_conn_plain_in(c, plain.data, plain.len);
            ns_buf_free(&plain);
            ns_conn_read_restart(c);
        }
        ns_read_release(c->loop); /* not from a read: the loop may block next */
    }
    ns_buf_free(&c->off_plain);
    ns_conn_unref(c);
}

bool ns_conn_offload(ns_conn_t *c, const uint8_t *p, size_t n)
{
    ns_loop_t *loop = c->loop;
    if (!loop->cfg->tls_handshake_offload || ns_buf_append(&c->off_in, p, n) != NS_OK)
        return false;
    c->off_work.data = c;
    ns_conn_ref(c); /* the work's: a close meanwhile leaves the filter to after_cb */
    c->off_busy = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (uv_queue_work(loop->uv, &c->off_work, work_cb, after_cb) != 0) {
        c->off_busy = false;
        ns_buf_free(&c->off_in);
        ns_conn_unref(c);
        ns_conn_read_restart(c);
        return false;
    }
    NS_M_INC(loop->m.tls_handshakes_offloaded);
    return true;
}
