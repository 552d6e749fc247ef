/* ioloop.h - one event loop of namesrvd, and the mail between loops.
 *
 * Every loop runs one ns_loop_t: its libuv loop, its read transaction,
 * buffers and connections. The main loop's is part of the main server
 * (core/server.h), which also has the writer, the registry, liveness and the
 * listener; with ioThreads > 1 there are extra I/O loops (iothreads.h). A
 * connection lives on one loop for its whole life (conn.h).
 *
 * The layers above a loop plug in through three hooks, so that the
 * connection code below them never calls up: what to do with a decoded
 * request, with a closed connection, and with changed settings.
 *
 * Mail: an ns_mail_t posted to a loop's mailbox (mutex + uv_async) is the
 * only thing that crosses threads. A mail that names a connection carries a
 * reference on it, which the receiver drops (ns_conn_unref) when done. */
#ifndef NS_IOLOOP_H
#define NS_IOLOOP_H

#include <uv.h>

#include "net/metrics.h"
#include "ns/config.h"
#include "ns/remoting.h"
#include "ns/rsphead.h"
#include "ns/store.h"

typedef struct ns_loop ns_loop_t;
/* The main server (core/server.h): what only the main loop has. A loop
 * carries a pointer to it; nothing in this room looks inside. */
typedef struct ns_server ns_server_t;
typedef struct ns_conn ns_conn_t;
typedef struct ns_io ns_io_t;           /* one extra I/O loop (iothreads.c) */
typedef struct ns_mailbox ns_mailbox_t; /* a loop's incoming mail */

typedef enum {
    NS_MAIL_CONN,   /* main -> I/O: serve socket fd */
    NS_MAIL_CMD,    /* I/O -> main: a decoded request of conn */
    NS_MAIL_OUT,    /* any -> conn's loop: encoded replies for conn */
    NS_MAIL_CLOSE,  /* any -> conn's loop: close conn */
    NS_MAIL_CLOSED, /* I/O -> main: conn closed (its brokers go) */
} ns_mail_kind_t;

typedef struct ns_mail {
    struct ns_mail *next;
    ns_mail_kind_t kind;
    bool embedded;   /* part of its connection: never freed on its own */
    ns_conn_t *conn; /* a reference, dropped by the receiver */
    ns_loop_t *from;
    int fd;
    ns_cmd_t *cmd;                /* NS_MAIL_CMD: one heap block (ns_cmd_dup) */
    size_t cost;                  /* NS_MAIL_CMD: bytes counted in the sender's backlog */
    const struct ns_cmd_row *row; /* NS_MAIL_CMD: the dispatcher's row of cmd (cmd/dispatch.h) */
    ns_buf_t bytes;
} ns_mail_t;

/* One event loop: everything its thread uses, and nothing only the main
 * loop has. The main loop's is the first member of the main server
 * (core/server.h); an extra I/O loop's is part of its ns_io_t. Each is
 * touched by its own thread only; what store and wire_cfg (and the main
 * loop's cfg) point at is the main server's, shared by every loop. */
/* Whole frames of one read decoded before any of them runs (conn.c): a
 * pipelining client's depth, and then some; and their lengths. */
#define NS_CONN_READ_AHEAD 16
typedef struct {
    ns_cmd_msg_t msgs[NS_CONN_READ_AHEAD];
    size_t flen[NS_CONN_READ_AHEAD];
} ns_read_ahead_t;

struct ns_loop {
    uv_loop_t *uv;
    ns_config_t *cfg; /* the main loop's; an I/O loop's copy of its scalars */
    ns_store_t *store;
    /* The main server, on every loop (its own on the main loop). Its
     * main-only fields are the main thread's: another loop reaches them only
     * by mail to main (ns_loop_post(&main->loop, ...)). */
    ns_server_t *main;
    ns_io_t *io;         /* on an I/O loop: that loop; NULL on main */
    ns_mailbox_t *inbox; /* mail for this loop; NULL with ioThreads=1 */
    /* Hooks of the layers above. on_request runs a decoded request of c
     * (cmd valid during the call); false = not taken now: c stops reading
     * and offers it again when resumed. on_closed: c's socket is closed
     * (c is freed after it returns unless it took a reference).
     * on_config_changed: UPDATE_NAMESRV_CONFIG changed cfg (may be NULL). */
    bool (*on_request)(ns_loop_t *loop, ns_conn_t *c, const ns_cmd_t *cmd, size_t frame_len);
    void (*on_closed)(ns_loop_t *loop, ns_conn_t *c);
    /* on_read_ahead (may be NULL): msgs[0, n) (n > 1), the requests of one
     * read, decoded before the first of them runs, in the read's snapshot
     * txn: the layer above may warm what they will read (ns_dispatch_warm).
     * It must not run them or keep them. */
    void (*on_read_ahead)(ns_loop_t *loop, ns_txn_t *txn, const ns_cmd_msg_t *msgs, size_t n);
    /* on_accepted (may be NULL): c was accepted from peer; may install a
     * filter (secure.c: PROXY protocol and TLS). */
    void (*on_accepted)(ns_loop_t *loop, ns_conn_t *c, const struct sockaddr *peer);
    void (*on_config_changed)(ns_loop_t *loop);
    ns_txn_t *rtxn;                         /* the loop's reusable read transaction */
    int rtxn_users;                         /* in use while > 0 (ns_read_begin/ns_read_end) */
    bool rtxn_live;                         /* renewed and not reset yet (ns_read_release) */
    uint64_t rtxn_epoch;                    /* the store's read epoch when rtxn was renewed */
    const ns_store_epoch_t *rtxn_epoch_now; /* the store's (ns_store_read_epoch) */
    uv_timer_t idle_timer;                  /* idle-connection sweep */
    uint64_t idle_swept_ms;                 /* loop time of its last sweep (ns_clock_stall) */
    uv_check_t flush_check;                 /* writes out replies once per loop iteration */
    ns_conn_t *conns;                       /* all open connections of this loop */
    ns_conn_t *dirty;                       /* connections with replies to write */
    ns_conn_t *paused_head, *paused_tail;   /* waiting to read again, oldest first */
    uint64_t start_ms;
    bool stopping;
    ns_buf_t scratch; /* reply bodies assembled on the loop thread */
    ns_buf_t derived; /* legacy routes derived from the standard form */
    ns_buf_t rshared; /* the read buffer connections share (conn.c) */
    ns_buf_t remark;  /* formatted error remarks (request.c) */
    ns_buf_t tshared; /* the plaintext of a TLS read, shared as rshared is (conn.c) */
    /* the frames of one read, decoded ahead (conn.c), shared as rshared is */
    ns_read_ahead_t ahead;
    bool ahead_busy;          /* ahead holds frames whose handlers run */
    ns_rsp_heads_t rsp_heads; /* reply headers by shape, patched per reply (rsphead.h) */
    /* TLS and the PROXY protocol (secure.c): the main loop's ns_secure_start
     * owns it, every loop points at it */
    struct ns_wire_cfg_s *wire_cfg;
    /* metrics (metrics.h): this loop's counters, written by this loop only */
    ns_metrics_loop_t m;
    bool m_replied; /* the request being dispatched was answered */
    /* the auth check's state on this loop (core/auth.c: opened secrets,
     * signature scratch), NULL until its first signed request */
    struct ns_auth_cache *auth;
};

/* The loop whose thread is running (set when the loop starts). Inline:
 * every reply asks it. */
extern _Thread_local ns_loop_t *ns_loop_running;
static inline ns_loop_t *ns_loop_current(void)
{
    return ns_loop_running;
}
void ns_loop_set_current(ns_loop_t *loop);
/* Asks the kernel to run the calling loop thread in short slices
 * (NS_LOOP_SLICE_NS), so that when it wakes it takes the core from a
 * thread with a longer slice (the writer, a backup, anything else on the
 * core) at once instead of when that thread's slice ends (1.4 ms here, and
 * more till the next tick). Linux >= 6.12 honours it (EEVDF's requested
 * slice); older ones ignore it, and a refusal is only logged. Only for a
 * thread of the default policy; its nice level stays, and the threads it
 * creates do not inherit it. */
#define NS_LOOP_SLICE_NS 100000
void ns_loop_thread_prefer_latency(void);
/* Frees what the loop's messages hold (at the loop's end). */
void ns_loop_msgs_free(ns_loop_t *loop);

/* The loop's read transaction. A user begins it with ns_read_begin and ends
 * it with ns_read_end, or, for the reads of connections (conn.c), with
 * ns_read_end_keep: the snapshot then serves the other reads of the same
 * loop iteration (one renew per iteration, not per read) until
 * ns_read_release resets it, in the loop's check (after the poll phase,
 * before it blocks again), after the paused connections resume and at
 * shutdown. Never held across loop iterations.
 * A kept snapshot is dropped as soon as no one uses it and the store's read
 * epoch moved (ns_store_read_epoch): at the start of the next read, or at
 * the end of the read during which it moved. So the bytes a read hands to
 * the handlers were all sent before the read began, and any write whose
 * reply their sender had seen moved the epoch before that: the snapshot
 * that answers them holds the write, from whichever loop it was answered.
 * And a resize (the epoch is odd while it waits for the lock) waits for at
 * most the read in progress, as with a snapshot per read. Nested begins
 * (the frames of one read, the handlers inside it) share the snapshot.
 * Inline: the lookup path nests them. */
static inline bool ns_read_stale(const ns_loop_t *loop)
{
    uint64_t epoch = atomic_load_explicit(loop->rtxn_epoch_now, memory_order_acquire);
    return epoch != loop->rtxn_epoch || (epoch & 1) != 0; /* odd: a resize waits */
}

/* Resets the loop's read transaction unless a user still has it open. */
static inline void ns_read_release(ns_loop_t *loop)
{
    if (loop->rtxn_live && loop->rtxn_users == 0) {
        ns_txn_read_reset(loop->rtxn);
        loop->rtxn_live = false;
    }
}

static inline int ns_read_begin(ns_loop_t *loop, ns_txn_t **txn)
{
    if (loop->rtxn_live && loop->rtxn_users == 0 && ns_read_stale(loop))
        ns_read_release(loop);
    if (!loop->rtxn_live) {
        if (loop->rtxn_epoch_now == NULL)
            loop->rtxn_epoch_now = ns_store_read_epoch(loop->store);
        /* loaded before the renew: a write that moves it later is dropped for */
        uint64_t epoch = atomic_load_explicit(loop->rtxn_epoch_now, memory_order_acquire);
        int rc = ns_txn_read_renew(loop->store, &loop->rtxn);
        if (rc != 0)
            return rc;
        loop->rtxn_epoch = epoch;
        loop->rtxn_live = true;
    }
    loop->rtxn_users++;
    *txn = loop->rtxn;
    return 0;
}

static inline void ns_read_end(ns_loop_t *loop)
{
    loop->rtxn_users--;
    ns_read_release(loop);
}

/* Ends a use but keeps the snapshot for the iteration's next read unless
 * the epoch moved meanwhile (see above). */
static inline void ns_read_end_keep(ns_loop_t *loop)
{
    if (--loop->rtxn_users == 0 && ns_read_stale(loop))
        ns_read_release(loop);
}
/* Milliseconds on the loop's monotonic clock / the wall clock. */
uint64_t ns_now_ms(ns_loop_t *loop);
int64_t ns_wall_ms(void);

/* A mailbox on loop, whose wake-up runs cb(data); NULL when out of memory.
 * Freed with ns_mailbox_free after its loop ended. */
ns_mailbox_t *ns_mailbox_new(uv_loop_t *loop, void (*cb)(void *data), void *data);
void ns_mailbox_free(ns_mailbox_t *mb);
/* Takes all the mail, oldest first (the caller owns the list); *stop (may
 * be NULL) tells whether ns_mailbox_stop was called before it. */
ns_mail_t *ns_mailbox_take(ns_mailbox_t *mb, bool *stop);
/* Asks the loop to stop (it sees the flag at its next wake-up). */
void ns_mailbox_stop(ns_mailbox_t *mb);
/* The loop has ended: later posts fail; its wake handle is gone. */
void ns_mailbox_close(ns_mailbox_t *mb);
/* Closes the wake handle (on the mailbox's loop, as it stops). */
void ns_mailbox_close_handle(ns_mailbox_t *mb);
/* Posts m to loop (m and its reference are the receiver's from now
 * on); false when that loop has ended, and m is still the caller's. */
bool ns_loop_post(ns_loop_t *loop, ns_mail_t *m);
/* Wakes loop with no mail (it then looks at its flags again). */
void ns_loop_wake(ns_loop_t *loop);
/* A zeroed mail of kind for conn (whose reference the caller provides);
 * NULL when out of memory. */
ns_mail_t *ns_mail_new(ns_mail_kind_t kind, ns_conn_t *conn);
/* Frees the mail's memory (not its reference: the caller drops that). */
void ns_mail_free(ns_mail_t *m);

#endif
