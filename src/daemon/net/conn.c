/* conn.c - one TCP connection: its life, read buffer and frame splitting;
 * its replies and writes are in conn_write.c (the contract is in conn.h).
 *
 * State machine (all on the connection's loop):
 *   OPEN     reading; every whole frame in the buffer is decoded once and
 *            dispatched in arrival order (pipelining): here when the row may
 *            run on any loop, else forwarded to the main loop as a decoded
 *            command (the loop's on_request hook decides). Replies are appended to `wq.out` and
 *            written once per loop iteration (uv_check) by ns_wq_flush, as
 *            one write per connection; while the previous write is in
 *            flight they keep accumulating.
 *   PAUSED   on_request refused a frame for now (an I/O loop whose
 *            forwarded requests pile up): not reading; the frame waits in
 *            rbuf; ns_conn_resume_all takes it up again.
 *   CLOSING  after a protocol error, EOF, idle timeout, a close request
 *            or shutdown: uv_close was called; nothing more is dispatched;
 *            replies that still arrive are dropped.
 *   CLOSED   close callback ran: the connection left its loop's list; on
 *            the on_closed hook runs (the main loop unregisters the brokers
 *            it registered; an I/O loop sends a close notice there).
 * The struct is freed when the last reference goes: the handle holds one,
 * and so does every write operation still waiting for the writer and every
 * message naming the connection (a late reply then finds a CLOSING conn and
 * is dropped, never a dangling pointer).
 *
 * The byte seam: conn_bytes_in is the only way read bytes reach the frame
 * decoder, conn_bytes_out (conn_write.c) the only way reply bytes reach the
 * socket through a filter (conn.h), which hooks into exactly these two. */
#include "net/conn_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/budget.h"
#include "net/ioloop.h"
#include "ns/clock.h"
#include "ns/err.h"
#include "ns/log.h"

#define READ_CHUNK (64 * 1024)

void ns_conn_ref(ns_conn_t *c)
{
    __atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

void ns_conn_unref(ns_conn_t *c)
{
    if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    ns_budget_conn_close(&c->bud);
    ns_buf_free(&c->rbuf);
    ns_buf_free(&c->off_in);
    ns_buf_free(&c->off_plain);
    ns_wq_free(&c->wq);
    if (c->filter.free)
        c->filter.free(c->filter.ctx);
    free(c);
}

bool ns_conn_handshake_pending(ns_conn_t *c, bool pending)
{
    return ns_budget_handshake(&c->bud, pending);
}

bool ns_conn_tls_session(ns_conn_t *c)
{
    return ns_budget_tls_session(&c->bud);
}

bool ns_conn_is_closed(const ns_conn_t *c)
{
    return __atomic_load_n(&c->closing, __ATOMIC_ACQUIRE);
}

const char *ns_conn_peer(const ns_conn_t *c)
{
    return c->peer;
}

ns_loop_t *ns_conn_loop(const ns_conn_t *c)
{
    return c->loop;
}

struct ns_mail *ns_conn_notice(ns_conn_t *c)
{
    return &c->closed_mail;
}

void ns_conn_note_broker(ns_conn_t *c)
{
    c->brokers++;
}

int ns_conn_brokers(const ns_conn_t *c)
{
    return c->brokers;
}

void ns_conn_set_filter(ns_conn_t *c, const ns_conn_filter_t *f)
{
    c->filter = *f;
}

void ns_conn_clear_filter(ns_conn_t *c)
{
    if (c->filter.free)
        c->filter.free(c->filter.ctx);
    memset(&c->filter, 0, sizeof c->filter);
}

void ns_conn_set_peer(ns_conn_t *c, const char *peer)
{
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    c->peer_claimed = true;
}

bool ns_conn_peer_claimed(const ns_conn_t *c)
{
    return c->peer_claimed;
}

#define BUDGET_GRAIN ((size_t)4096)

/* A sum of the connections' buffers is over its budget (budget.h): closes
 * the connections of loop that hold the most until the sums fit again (or
 * none of loop's is left to close). The thread of loop. Never inlined: in
 * ns_conn_account, which runs for every read and reply, its registers
 * would be saved on every call (+40 instructions per lookup at depth 1). */
__attribute__((noinline, cold)) static void enforce_budgets(ns_loop_t *loop)
{
    for (int pass = 0; pass < 2; pass++) {
        bool frames = pass == 0;
        ns_budget_sum_t which = frames ? NS_BUDGET_UNFINISHED : NS_BUDGET_UNSENT;
        uint64_t max = 0;
        while (ns_budget_over(which, &max)) {
            ns_conn_t *worst = NULL;
            size_t most = 0;
            for (ns_conn_t *c = loop->conns; c; c = c->next) {
                if (c->bud.released)
                    continue;
                size_t held = frames ? c->bud.rbuf : c->bud.unsent;
                if (!ns_conn_is_closed(c) && held > most) {
                    most = held;
                    worst = c;
                }
            }
            if (worst == NULL)
                break;
            if (frames)
                ns_refusal(worst->peer, NS_REFUSE_UNFINISHED,
                           "closing: holds %zu bytes of unfinished frames and all connections "
                           "together exceed maxUnfinishedFrameBytes %llu",
                           most, (unsigned long long)max);
            else
                ns_refusal(worst->peer, NS_REFUSE_UNSENT,
                           "closing: %zu reply bytes not read by the peer and all connections "
                           "together exceed maxUnsentReplyBytes %llu",
                           most, (unsigned long long)max);
            ns_conn_close(worst, NULL);
            ns_budget_release(&worst->bud);
        }
    }
}

/* Re-accounts c's buffers against the server-wide budgets and, when a sum
 * is over, closes the connections that hold the most. */
void ns_conn_account(ns_conn_t *c)
{
    /* in whole BUDGET_GRAIN units: an ordinary reply (a route is a few
     * hundred bytes) moves no shared counter; what goes uncounted is below
     * BUDGET_GRAIN per connection (16 MiB at maxConnections 4096) */
    size_t held = c->wq.out.len;
    if (c->wq.writing) /* what libuv still holds of it, not what the socket took */
        held += uv_stream_get_write_queue_size((const uv_stream_t *)&c->tcp);
    __atomic_store_n(&c->queued, held, __ATOMIC_RELAXED);
    size_t unsent = held & ~(BUDGET_GRAIN - 1);
    if (unsent == c->bud.unsent && c->rbuf.cap == c->bud.rbuf && !c->bud.enforce)
        return; /* the common case: nothing moved */
    if (ns_budget_account(&c->bud, c->rbuf.cap, unsent) || c->bud.enforce) {
        c->bud.enforce = false;
        enforce_budgets(c->loop);
    }
}

void ns_conn_mark_dirty(ns_conn_t *c)
{
    if (c->in_dirty)
        return;
    c->in_dirty = true;
    ns_conn_ref(c);
    c->dirty_next = c->loop->dirty;
    c->loop->dirty = c;
}

void ns_conn_want_flush(ns_conn_t *c)
{
    if (!c->closing)
        ns_conn_mark_dirty(c);
}

static void unlink_conn(ns_conn_t *c)
{
    ns_loop_t *loop = c->loop;
    if (c->prev)
        c->prev->next = c->next;
    else
        loop->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

static void close_cb(uv_handle_t *h)
{
    ns_conn_t *c = h->data;
    ns_loop_t *loop = c->loop;
    unlink_conn(c);
    ns_budget_conn_close(&c->bud);
    if (c->peer[0]) /* started: counted as accepted */
        NS_M_INC(loop->m.conn_closed);
    if (loop->on_closed)
        loop->on_closed(loop, c);
    ns_conn_unref(c);
}

/* On c's loop. */
void ns_conn_close_here(ns_conn_t *c, const char *reason)
{
    if (c->closing)
        return;
    __atomic_store_n(&c->closing, true, __ATOMIC_RELEASE);
    if (reason)
        NS_LOG_INFO("conn %s: closing: %s", c->peer, reason);
    /* a wire a worker is feeding is not touched here (conn_offload.c) */
    const ns_buf_t *last =
        c->filter.closing && !c->off_busy ? c->filter.closing(c->filter.ctx) : NULL;
    if (last && last->len > 0) { /* uv_try_write refuses while a write is queued */
        uv_buf_t b = uv_buf_init((char *)last->data, (unsigned)last->len);
        (void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    }
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_close((uv_handle_t *)&c->tcp, close_cb);
    /* Replies not yet handed to the socket are dropped now, not when the
     * handle's close ends: that waits for the loop's poll phase to end, and
     * one phase can read every connection's pipelined requests (12 x 30 MiB
     * of replies held by closed connections in the unsent-replies flood). */
    ns_buf_free(&c->wq.out);
}

void ns_conn_close(ns_conn_t *c, const char *reason)
{
    if (ns_conn_on_own_loop(c)) {
        ns_conn_close_here(c, reason);
        return;
    }
    if (ns_conn_is_closed(c) || __atomic_exchange_n(&c->close_asked, true, __ATOMIC_ACQ_REL))
        return;
    if (reason)
        NS_LOG_INFO("conn %s: closing: %s", c->peer, reason);
    c->close_mail.kind = NS_MAIL_CLOSE;
    c->close_mail.conn = c;
    ns_conn_ref(c); /* the mail's */
    if (!ns_loop_post(c->loop, &c->close_mail))
        ns_conn_unref(c); /* its loop has ended: it is closed already */
}

/* A connection whose bytes pass as they are and that has no partial frame
 * reads into the loop's one shared buffer (idle connections then hold no
 * read memory); only the tail of a frame that has not fully arrived is
 * copied into the connection's own buffer, which later reads extend. */
static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    ns_conn_t *c = h->data;
    ns_loop_t *loop = c->loop;
    if ((c->rbuf.len == 0 || c->filter.feed) &&
        ns_buf_reserve(&loop->rshared, READ_CHUNK) == NS_OK) {
        buf->base = (char *)loop->rshared.data;
        buf->len = loop->rshared.cap - 1;
        return;
    }
    if (c->filter.feed || ns_buf_reserve(&c->rbuf, READ_CHUNK) != NS_OK) {
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

bool ns_conn_backed_up(const ns_conn_t *c)
{
    return __atomic_load_n(&c->queued, __ATOMIC_RELAXED) +
               __atomic_load_n(&c->mailed, __ATOMIC_RELAXED) >=
           NS_CONN_STOP_READING_BYTES;
}

/* c's peer does not take its replies: stop reading (and running what it
 * sent) until it does (ns_conn_writes_drained). The frames already read
 * wait in c->rbuf. */
static void stop_reading(ns_conn_t *c)
{
    c->wstopped = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    ns_refusal(c->peer, NS_REFUSE_UNSENT,
               "reading stopped until the peer takes the %zu reply bytes it has not read",
               c->wq.out.len + (c->wq.writing ? c->wq.wbuf.len : 0));
}

/* on_request refused a frame for now: stop reading until ns_conn_resume_all. */
static void pause_reading(ns_conn_t *c)
{
    ns_loop_t *loop = c->loop;
    c->paused = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    ns_conn_ref(c); /* the queue's, dropped when it leaves */
    if (loop->paused_tail)
        loop->paused_tail->paused_next = c;
    else
        loop->paused_head = c;
    loop->paused_tail = c;
    NS_LOG_DEBUG("conn %s: reading paused until the main loop catches up", c->peer);
}

/* Takes the oldest paused connection off the queue (its reference with it). */
static ns_conn_t *paused_pop(ns_loop_t *loop)
{
    ns_conn_t *c = loop->paused_head;
    if (c == NULL)
        return NULL;
    loop->paused_head = c->paused_next;
    if (loop->paused_head == NULL)
        loop->paused_tail = NULL;
    c->paused_next = NULL;
    c->paused = false;
    return c;
}

/* The loop keeps one decode arena and ext array for all its connections
 * (no allocation per request, and none held by an idle connection: at the
 * capacity topology 1,000 broker connections held ~1 KiB each between their
 * heartbeats), but not after a huge header: it would hold 16 MiB for as
 * long as the loop runs, outside every budget. */
#define MSG_KEEP_BYTES (256u * 1024)

static void shrink_msg(ns_cmd_msg_t *m)
{
    if (m->arena.cap > MSG_KEEP_BYTES || m->ext_cap * sizeof(ns_ext_field_t) > MSG_KEEP_BYTES)
        ns_cmd_msg_free(m);
}

/* A frame that cannot be run closes its connection: rc from ns_frame_peek
 * (header false) or from ns_remoting_decode (header true). */
static void refuse_frame(ns_conn_t *c, const uint8_t *frame, int rc, bool header)
{
    ns_loop_t *loop = c->loop;
    if (header) {
        NS_LOG_WARN("conn %s: undecodable frame header (%s)", c->peer, ns_strerror(rc));
        NS_M_INC(loop->m.refused[NS_M_REFUSE_MALFORMED_HEADER]);
        ns_conn_close_here(c, "malformed header");
    } else if (rc == NS_ETOOBIG) {
        NS_LOG_WARN("conn %s: frame of %u bytes exceeds maxFrameBytes %zu", c->peer,
                    ns_be32_read(frame), (size_t)loop->cfg->max_frame_bytes);
        NS_M_INC(loop->m.refused[NS_M_REFUSE_OVERSIZED_FRAME]);
        ns_conn_close_here(c, "oversized frame");
    } else {
        NS_LOG_WARN("conn %s: malformed frame length", c->peer);
        NS_M_INC(loop->m.refused[NS_M_REFUSE_MALFORMED_FRAME]);
        ns_conn_close_here(c, "malformed frame");
    }
}

/* Decodes the whole frames at the start of [data, data+len) into
 * ra->msgs[0, n), at most NS_CONN_READ_AHEAD, their lengths in ra->flen:
 * n. Each frame is decoded once. A frame that cannot be run stops it: the
 * first one closes the connection (refuse_frame), a later one waits for
 * those before it to run. n = 0 also when no whole frame is there yet.
 * *more: frames may follow the n (the batch is full, or stopped at one to
 * refuse). */
static size_t decode_ahead(ns_conn_t *c, const uint8_t *data, size_t len, ns_read_ahead_t *ra,
                           bool *more)
{
    size_t n = 0, off = 0, max = (size_t)c->loop->cfg->max_frame_bytes;
    for (; n < NS_CONN_READ_AHEAD && off < len; off += ra->flen[n++]) {
        int rc = ns_frame_peek(data + off, len - off, max, &ra->flen[n]);
        bool header = rc == NS_OK;
        if (header)
            rc = ns_remoting_decode(data + off, ra->flen[n], &ra->msgs[n]);
        if (rc == NS_OK)
            continue;
        *more = rc != NS_EAGAIN;
        if (n == 0 && *more) {
            refuse_frame(c, data, rc, header);
            *more = false;
        }
        return n;
    }
    *more = n == NS_CONN_READ_AHEAD;
    return n;
}

/* Runs the decoded ra->msgs[0, n) in order through the loop's on_request,
 * which copies what it keeps (ns_cmd_dup); true when it ran them all. Stops
 * at a closing connection, one whose peer does not read its replies (it
 * stops reading) or a frame not taken (it pauses; the frame waits in
 * c->rbuf). Adds the bytes of the frames it ran to *used. */
static bool run_ahead(ns_conn_t *c, ns_read_ahead_t *ra, size_t n, size_t *used)
{
    for (size_t i = 0; i < n; i++) {
        if (c->closing)
            return false;
        if (i > 0 && ns_conn_backed_up(c)) {
            stop_reading(c);
            return false;
        }
        if (!c->loop->on_request(c->loop, c, &ra->msgs[i].cmd, ra->flen[i])) {
            pause_reading(c);
            return false;
        }
        *used += ra->flen[i];
    }
    return true;
}

/* Splits [data, data+len) into frames and handles each one; returns how
 * many bytes were consumed (whole frames). The frames of one read are
 * decoded ahead, up to NS_CONN_READ_AHEAD at a time, and shown to the
 * loop's on_read_ahead before the first of them runs (route lookups warm
 * their pages together). The loop's read-ahead serves that; a process
 * that starts inside another's handler (none does today) gets one of its
 * own. */
static size_t process(ns_conn_t *c, const uint8_t *data, size_t len)
{
    ns_loop_t *loop = c->loop;
    size_t off = 0;
    ns_read_ahead_t *ra = &loop->ahead;
    bool nested = loop->ahead_busy;
    if (nested && (ra = calloc(1, sizeof *ra)) == NULL) { /* zeros: empty messages */
        ns_conn_close_here(c, "out of memory");
        return 0;
    }
    loop->ahead_busy = true;
    ns_txn_t *txn = NULL;
    bool reading = ns_read_begin(loop, &txn) == NS_OK; /* one snapshot for the whole read */
    if (reading)
        ns_conn_gather_begin(c); /* replies from the snapshot: not copied */
    while (!c->closing && !c->paused) {
        if (ns_conn_backed_up(c)) {
            stop_reading(c);
            break;
        }
        bool more;
        size_t n = decode_ahead(c, data + off, len - off, ra, &more);
        if (n > 1 && reading && loop->on_read_ahead)
            loop->on_read_ahead(loop, txn, ra->msgs, n);
        bool ran = run_ahead(c, ra, n, &off);
        for (size_t i = 0; i < n; i++)
            shrink_msg(&ra->msgs[i]);
        if (!more || !ran) /* nothing more whole yet, refused, or stopped */
            break;
    }
    if (reading) {
        ns_conn_gather_end(c);  /* written while the snapshot is still open */
        ns_read_end_keep(loop); /* the snapshot serves this iteration's other reads */
    }
    if (nested) {
        for (size_t i = 0; i < NS_CONN_READ_AHEAD; i++)
            ns_cmd_msg_free(&ra->msgs[i]);
        free(ra);
    } else {
        loop->ahead_busy = false;
    }
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
    ns_conn_account(c);
}

void ns_conn_plain_in(ns_conn_t *c, const uint8_t *p, size_t n)
{
    if (n > 0 && ns_buf_append(&c->rbuf, p, n) != NS_OK) {
        ns_conn_close_here(c, "out of memory");
        return;
    }
    process_rbuf(c);
}

bool ns_conn_fed(ns_conn_t *c, int rc, const char *why)
{
    if (c->filter.fed)
        rc = c->filter.fed(c->filter.ctx, c, rc, why);
    if (rc != NS_OK)
        ns_conn_close_here(c, rc == NS_ECONN || rc == NS_ESHUTDOWN ? NULL : ns_strerror(rc));
    return rc == NS_OK;
}

/* The seam, inbound: n bytes read from the socket into the shared buffer. */
static void conn_bytes_in(ns_conn_t *c, const uint8_t *p, size_t n)
{
    if (c->filter.feed) {
        int st = c->filter.step ? c->filter.step(c->filter.ctx, c, p, n) : NS_OK;
        if (st == NS_ECONN) {
            ns_conn_close_here(c, NULL);
            return;
        }
        if (st == NS_EAGAIN && ns_conn_offload(c, p, n))
            return; /* fed on a worker thread, then on this loop again */
        /* with no partial frame waiting, the plain bytes go to the loop's
         * shared buffer (as unfiltered reads do) and only a tail is kept */
        ns_loop_t *loop = c->loop;
        ns_buf_t *plain = c->rbuf.len == 0 ? &loop->tshared : &c->rbuf;
        const char *why = NULL;
        ns_buf_reset(&loop->tshared);
        int rc = c->filter.feed(c->filter.ctx, p, n, plain, &why); /* sets why first */
        if (!ns_conn_fed(c, rc, why))
            return;
        if (plain == &c->rbuf) {
            process_rbuf(c);
            return;
        }
        p = plain->data;
        n = plain->len;
    }
    size_t used = process(c, p, n);
    if (!c->closing && used < n && ns_buf_append(&c->rbuf, p + used, n - used) != NS_OK)
        ns_conn_close_here(c, "out of memory");
    ns_conn_account(c);
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    ns_conn_t *c = s->data;
    ns_loop_t *loop = c->loop;
    if (nread < 0) {
        ns_conn_close_here(c, nread == UV_EOF ? NULL : uv_strerror((int)nread));
        return;
    }
    if (nread == 0)
        return;
    c->last_active_ms = uv_now(loop->uv);
    NS_M_ADD(loop->m.bytes_in, nread);
    if (buf->base == (char *)loop->rshared.data) {
        conn_bytes_in(c, loop->rshared.data, (size_t)nread);
        return;
    }
    c->rbuf.len += (size_t)nread; /* plain bytes straight into the frame's tail */
    process_rbuf(c);
}

/* Reads what waits in c's buffer and starts reading its socket again,
 * unless that stops it again. */
static void read_again(ns_conn_t *c)
{
    ns_loop_t *loop = c->loop;
    c->last_active_ms = uv_now(loop->uv);
    process_rbuf(c);
    ns_conn_read_restart(c);
}

void ns_conn_read_restart(ns_conn_t *c)
{
    if (!c->closing && !c->paused && !c->wstopped && !c->off_busy &&
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) != 0)
        ns_conn_close_here(c, "read start failed");
}

void ns_conn_writes_drained(ns_conn_t *c)
{
    if (!c->wstopped || c->closing || ns_conn_backed_up(c))
        return;
    c->wstopped = false;
    NS_LOG_DEBUG("conn %s: its peer reads again: reading again", c->peer);
    if (!c->paused) /* else ns_conn_resume_all reads it */
        read_again(c);
    ns_read_release(c->loop); /* not from a read: the loop may block next */
}

void ns_conn_resume_all(ns_loop_t *loop)
{
    ns_conn_t *c;
    while ((c = paused_pop(loop)) != NULL) {
        if (!c->closing && !c->wstopped) {
            NS_LOG_DEBUG("conn %s: reading again", c->peer);
            read_again(c);
        }
        bool full_again = c->paused;
        ns_conn_unref(c);
        if (full_again) /* the rest keep their place in the queue: first next time */
            break;
    }
    ns_read_release(loop); /* not from a read: the loop may block next */
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

/* Allocates a connection of loop with one reference (the handle's), its
 * handle initialised, on loop's list. NULL when out of memory. */
static ns_conn_t *conn_new(ns_loop_t *loop)
{
    ns_conn_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->loop = loop;
    c->refs = 1;
    c->close_mail.embedded = c->closed_mail.embedded = true;
    c->close_mail.fd = c->closed_mail.fd = -1;
    c->next = loop->conns;
    if (loop->conns)
        loop->conns->prev = c;
    loop->conns = c;
    c->last_active_ms = uv_now(loop->uv);
    uv_tcp_init(loop->uv, &c->tcp);
    c->tcp.data = c;
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
    ns_refuse_t why;
    if (!ns_budget_conn_open(&c->bud, (const struct sockaddr *)&ss, &why)) {
        ns_refusal(c->peer, why, "connection refused: %s open already",
                   why == NS_REFUSE_CONNECTIONS ? "maxConnections"
                                                : "maxConnectionsPerAddress from this address");
        ns_conn_close_here(c, NULL);
        return;
    }
    NS_M_INC(c->loop->m.conn_accepted);
    NS_LOG_DEBUG("conn %s: accepted", c->peer);
    if (c->loop->on_accepted)
        c->loop->on_accepted(c->loop, c, (const struct sockaddr *)&ss);
    if (!c->closing && uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) != 0)
        ns_conn_close_here(c, "read start failed");
}

/* A connection the main loop never heard of: no close notice. */
static void adopt_failed_cb(uv_handle_t *h)
{
    ns_conn_t *c = h->data;
    unlink_conn(c);
    ns_conn_unref(c);
}

bool ns_conn_adopt(ns_loop_t *loop, int fd)
{
    ns_conn_t *c = conn_new(loop);
    if (c == NULL) {
        close(fd);
        return false;
    }
    if (uv_tcp_open(&c->tcp, fd) != 0) {
        close(fd);
        c->closing = true;
        uv_close((uv_handle_t *)&c->tcp, adopt_failed_cb);
        return false;
    }
    conn_start(c);
    return true;
}

/* The loop was stalled (ns_clock_stall): what its peers sent meanwhile is
 * not read yet, so every connection's idle and handshake clocks start again
 * now, as after a restart every connection is new. */
static void restart_idle_clocks(ns_loop_t *loop, uint64_t now_ms, uint64_t stall_ms)
{
    size_t n = 0;
    for (ns_conn_t *c = loop->conns; c; c = c->next, n++) {
        c->last_active_ms = now_ms;
        if (c->handshake_seen_ms != 0)
            c->handshake_seen_ms = now_ms;
    }
    NS_LOG_WARN("event loop stalled for %llu ms: the idle and handshake timeouts of its %zu "
                "connection(s) start again",
                (unsigned long long)stall_ms, n);
}

void ns_conn_sweep_idle(ns_loop_t *loop, uint64_t now_ms, int64_t idle_s)
{
    uint64_t hs_ms = (uint64_t)loop->cfg->tls_handshake_timeout_ms;
    uint64_t stall =
        ns_clock_stall(&loop->idle_swept_ms, now_ms, uv_timer_get_repeat(&loop->idle_timer));
    if (stall > 0) {
        restart_idle_clocks(loop, now_ms, stall);
        return;
    }
    /* paused connections have frames waiting */
    for (ns_conn_t *c = loop->conns; c; c = c->next) {
        if (c->closing)
            continue;
        bool handshaking = c->off_busy || (c->filter.ready && !c->filter.ready(c->filter.ctx));
        if (!handshaking)
            c->handshake_seen_ms = 0;
        else if (c->handshake_seen_ms == 0)
            c->handshake_seen_ms = now_ms;
        if (handshaking && now_ms - c->handshake_seen_ms >= hs_ms) {
            NS_LOG_WARN("conn %s: closed: handshake not finished within "
                        "tlsHandshakeTimeoutMillis=%llu",
                        c->peer, (unsigned long long)hs_ms);
            ns_conn_close_here(c, NULL);
        } else if (idle_s > 0 && !c->paused &&
                   now_ms - c->last_active_ms > (uint64_t)idle_s * 1000) {
            ns_conn_close_here(c, "idle timeout");
        }
    }
}

void ns_conn_close_all(ns_loop_t *loop)
{
    for (ns_conn_t *c = loop->conns; c; c = c->next)
        ns_conn_close_here(c, NULL);
    ns_conn_t *p;
    while ((p = paused_pop(loop)) != NULL)
        ns_conn_unref(p);
}

void ns_conn_resume_paused(ns_loop_t *loop)
{
    if (loop->paused_head && !loop->stopping && !ns_budget_writer_full())
        ns_conn_resume_all(loop);
}
