/* conn_int.h - the connection's insides, shared by conn.c (life, reads,
 * frames) and conn_write.c (replies and writes). Not for other files. */
#ifndef NS_CONN_INT_H
#define NS_CONN_INT_H

#include "net/budget.h"
#include "net/conn.h"
#include "net/ioloop.h"
#include "ns/wqueue.h"

#define NS_CONN_MAX_PENDING_OUT (64u * 1024 * 1024)
/* A connection holding this many reply bytes its peer has not taken (queued
 * on its loop, or on their way there from another loop) is not served any
 * more until the peer takes them: its reading stops, and a request already
 * forwarded to the main loop is answered SYSTEM_BUSY without being run. So
 * a peer that does not read costs at most one large reply, and the replies
 * it asks for next are never built while others wait. Far above what
 * ordinary pipelined lookups leave unsent (a route is a few hundred bytes). */
#define NS_CONN_STOP_READING_BYTES (1024u * 1024)

struct ns_conn {
    uv_tcp_t tcp;     /* first member: the handle's data points back at us */
    ns_loop_t *loop;  /* the loop it lives on */
    int refs;         /* atomic */
    bool closing;     /* atomic: read by other loops */
    bool close_asked; /* atomic: another loop posted close_mail */
    bool in_dirty;
    bool paused;
    bool wstopped; /* reading stopped: its peer does not take its replies */
    size_t queued; /* atomic: reply bytes on its loop the peer has not taken */
    size_t mailed; /* atomic: reply bytes other loops posted to it, not delivered */
    int brokers;   /* main loop only: registrations seen on this connection */
    uint64_t last_active_ms;
    uint64_t handshake_seen_ms; /* the sweep first saw the filter not ready; 0 = not */
    ns_buf_t rbuf;              /* the tail of a frame that has not fully arrived (plain bytes) */
    ns_wq_t wq;                 /* replies waiting for the next write, and the one in flight */
    ns_conn_filter_t filter;
    ns_mail_t close_mail;  /* another loop's close request, kept so it cannot fail */
    ns_mail_t closed_mail; /* I/O loop -> main: the close notice */
    ns_conn_budget_t bud;  /* what it holds against the server-wide budgets (budget.h) */
    ns_conn_t *prev, *next;
    ns_conn_t *dirty_next;
    ns_conn_t *paused_next;
    /* a handshake step a worker thread feeds (conn_offload.c) */
    uv_work_t off_work;
    ns_buf_t off_in, off_plain; /* the bytes fed; the plain bytes they yield */
    const char *off_why;
    int off_rc;
    bool off_busy; /* the worker owns the filter: nothing else touches it */
    char peer[64];
    bool peer_claimed; /* peer is a PROXY header's claim (ns_conn_set_peer) */
};

static inline bool ns_conn_on_own_loop(const ns_conn_t *c)
{
    return c->loop == ns_loop_current();
}

/* On c's loop: closes it now (reason logged when not NULL). */
void ns_conn_close_here(ns_conn_t *c, const char *reason);
/* Puts c on its loop's list of connections to flush at the loop's check. */
void ns_conn_mark_dirty(ns_conn_t *c);
/* On c's loop: its peer took enough of its replies for c to be served again
 * (write_cb): reading starts again. */
void ns_conn_writes_drained(ns_conn_t *c);
/* conn.c: plain bytes a filter yielded, to the frames (appended to what is
 * waiting in c's buffer). */
void ns_conn_plain_in(ns_conn_t *c, const uint8_t *p, size_t n);
/* conn.c: runs the filter's fed hook with feed's result; false when c is
 * closed by it. */
bool ns_conn_fed(ns_conn_t *c, int rc, const char *why);
/* conn_offload.c: true when [p, p+n) (copied) goes to a worker thread to be
 * fed, reading stopped until it is back; false when tlsHandshakeOffload is
 * off or the work cannot be queued (the caller feeds it here). */
bool ns_conn_offload(ns_conn_t *c, const uint8_t *p, size_t n);
/* Reading starts again after a pause, unless the connection is closing,
 * paused or stopped (conn.c). */
void ns_conn_read_restart(ns_conn_t *c);
/* Re-accounts c's buffers against the server-wide budgets (budget.c). */
void ns_conn_account(ns_conn_t *c);
/* conn_write.c: the replies of one read are gathered between these two,
 * which process() calls while its read snapshot is open (see there). */
void ns_conn_gather_begin(ns_conn_t *c);
void ns_conn_gather_end(ns_conn_t *c);

#endif
