/* conn.h - one client connection: it lives on one event loop for its whole
 * life (the loop that reads its socket), is decoded once there, and is the
 * only connection object there is, whichever loop a request runs on.
 *
 * Threads: a connection's socket, buffers and lists belong to its loop
 * (ns_conn_loop). Other loops may hold a reference, send it replies and ask
 * it to close: those calls travel to its loop as mail (ioloop.h). The
 * reference count and the closing flag are atomic for that reason.
 *
 * The byte seam: every byte read from the socket enters through one
 * function (conn_bytes_in in conn.c) and every byte written leaves through
 * one (conn_bytes_out). A layer that rewrites bytes (TLS, the PROXY protocol
 * header) installs an ns_conn_filter_t and sees exactly those two streams;
 * without one, bytes go from the socket to the frame decoder and from the
 * encoder to the socket untouched (no copy).
 */
#ifndef NS_CONN_H
#define NS_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"
#include "ns/remoting.h"

typedef struct ns_loop ns_loop_t;
typedef struct ns_conn ns_conn_t;
struct ns_mail;

/* A byte filter on a connection (TLS, PROXY protocol). Both hooks run on the
 * connection's loop. */
typedef struct {
    /* Bytes [in, in+n) arrived from the socket, before they are fed: NS_OK
     * feed them here; NS_EAGAIN: a costly step (a TLS handshake's key
     * operation), fed on a worker thread when tlsHandshakeOffload is on
     * (conn_offload.c); NS_ECONN: close, the filter has logged why. May be
     * NULL (always fed on the loop). */
    int (*step)(void *ctx, ns_conn_t *c, const uint8_t *in, size_t n);
    /* Appends the plain bytes [in, in+n) yield to `plain` (maybe none yet);
     * touches only ctx: it may run on a worker thread. Returns a code for
     * `fed`, with *why the reason of a failure. */
    int (*feed)(void *ctx, const uint8_t *in, size_t n, ns_buf_t *plain, const char **why);
    /* On the connection's loop after feed, with its result: NS_OK; NS_ECONN:
     * close, the filter has logged why; NS_ESHUTDOWN: close quietly (an
     * orderly end); any other error closes with ns_strerror as the reason.
     * The hook may call ns_conn_clear_filter (the bytes pass as they are
     * from then on). May be NULL (feed's result stands). */
    int (*fed)(void *ctx, ns_conn_t *c, int rc, const char *why);
    /* `plain` holds encoded replies about to be written: replace its
     * contents with the bytes to put on the wire (maybe none). Called at
     * every flush of the connection (ns_conn_want_flush asks for one). */
    int (*write)(void *ctx, ns_conn_t *c, ns_buf_t *plain);
    /* False while a handshake (PROXY header, TLS) is under way: the idle
     * sweep closes the connection when it is still not ready
     * tlsHandshakeTimeoutMillis after the sweep first saw it so (within the
     * sweep's 1 s). May be NULL. */
    bool (*ready)(void *ctx);
    /* The connection closes on our side: bytes to send if the socket takes
     * them at once (a TLS alert or close_notify), or NULL. May be NULL. */
    const ns_buf_t *(*closing)(void *ctx);
    /* The connection is freed: release ctx. May be NULL. */
    void (*free)(void *ctx);
    void *ctx;
} ns_conn_filter_t;

/* Installs f (copied) on c, on c's loop, before or between reads. */
void ns_conn_set_filter(ns_conn_t *c, const ns_conn_filter_t *f);
/* Removes c's filter (its free hook runs): bytes pass as they are. */
void ns_conn_clear_filter(ns_conn_t *c);
/* On c's loop, before its first frame: the peer as a trusted PROXY header
 * names it (ns_conn_peer returns it from then on). */
void ns_conn_set_peer(ns_conn_t *c, const char *peer);
/* True once ns_conn_set_peer renamed the peer: ns_conn_peer is then what a
 * PROXY header claims, not the socket's own peer. Any thread. */
bool ns_conn_peer_claimed(const ns_conn_t *c);
/* Asks for a flush of c at the end of this loop iteration even when no reply
 * is queued (a filter that has bytes of its own to send). */
void ns_conn_want_flush(ns_conn_t *c);

/* Serves an accepted socket fd on loop (accept.c, or an I/O loop it
 * was handed to); false when it cannot, and fd is then closed. */
bool ns_conn_adopt(ns_loop_t *loop, int fd);

/* References: any thread. The last one frees the connection (its socket
 * was closed before, on its loop). */
void ns_conn_ref(ns_conn_t *c);
void ns_conn_unref(ns_conn_t *c);
/* Any thread: true once the connection started closing. */
bool ns_conn_is_closed(const ns_conn_t *c);
/* Any thread: "host:port" of the peer (fixed at accept, or renamed once by
 * a trusted PROXY header before the first frame). */
const char *ns_conn_peer(const ns_conn_t *c);
/* The loop the connection lives on. */
ns_loop_t *ns_conn_loop(const ns_conn_t *c);

/* Closes the connection (idempotent); reason is logged. From another loop
 * the request travels to the connection's loop. */
void ns_conn_close(ns_conn_t *c, const char *reason);
/* Any thread: true while c holds NS_CONN_STOP_READING_BYTES or more of
 * reply bytes its peer has not taken (conn_int.h): a request of c is then
 * not run (nothing more is built for a peer that does not read). */
bool ns_conn_backed_up(const ns_conn_t *c);
/* Queues one response; it is encoded here and written at the end of the
 * loop iteration together with the others for this connection. From
 * another loop the encoded bytes travel to the connection's loop. */
int ns_conn_send(ns_conn_t *c, const ns_cmd_t *rsp);
/* The same for a reply whose body lies in the loop's read snapshot (valid
 * until the read's ns_read_end): while c's read is being processed on its loop the
 * body is not copied but written from where it is before the snapshot is
 * released, and only what the socket does not take at once is copied
 * (conn_write.c); otherwise as ns_conn_send. */
int ns_conn_send_mapped(ns_conn_t *c, const ns_cmd_t *rsp);
/* On c's loop: appends encoded replies from another loop (bytes emptied). */
void ns_conn_deliver(ns_conn_t *c, ns_buf_t *bytes);

/* The mail kept inside c for its close notice to the main loop, so that
 * sending it cannot fail (one use, from the on_closed hook). */
struct ns_mail *ns_conn_notice(ns_conn_t *c);

/* Main loop: a broker registered over c (its close then unregisters it). */
void ns_conn_note_broker(ns_conn_t *c);
/* Main loop: brokers that registered over c (to decide on its close). */
int ns_conn_brokers(const ns_conn_t *c);

/* The loop's connections (ioloop.c, server.c). */
void ns_conn_flush_all(ns_loop_t *loop);
void ns_conn_close_all(ns_loop_t *loop);
/* c's TLS handshake is under way (pending) or not, for maxPendingHandshakes
 * (budget.h); false when one more may not begin (the caller closes c). */
bool ns_conn_handshake_pending(ns_conn_t *c, bool pending);
/* c speaks TLS: counted in maxTlsSessions until it closes (budget.h);
 * false when one more may not (the caller closes c). */
bool ns_conn_tls_session(ns_conn_t *c);
/* Closes connections idle for more than idle_s seconds, and those whose TLS
 * handshake takes longer than tlsHandshakeTimeoutMillis. Called by the
 * loop's idle_timer: a sweep that comes late enough to be a stall of the
 * loop (ns_clock_stall) closes nothing and starts every clock again. */
void ns_conn_sweep_idle(ns_loop_t *loop, uint64_t now_ms, int64_t idle_s);
/* Connections that stopped reading (their on_request said "not now") read
 * again, oldest first, until one is refused again; the rest keep their
 * turn. */
void ns_conn_resume_all(ns_loop_t *loop);
/* The thread of loop (main or I/O loop): when the writer queue is below its
 * budgets again (budget.h), loop's paused connections read again (oldest
 * first). */
void ns_conn_resume_paused(ns_loop_t *loop);

#endif
