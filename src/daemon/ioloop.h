/* ioloop.h - the event loops of namesrvd and what travels between them.
 *
 * Every loop runs one ns_server_t: its libuv loop, its read transaction,
 * buffers and connections. The main loop's also has the writer, the
 * registry, liveness and the listener. With ioThreads = N > 1 the main loop
 * starts N - 1 I/O loops and hands every accepted socket to the next loop in
 * turn (itself included). A connection then lives on that loop for its whole
 * life (conn.h). Requests only the main loop may run (everything but route
 * lookups, dispatch.h) travel to it as decoded commands; their encoded
 * replies travel back to the connection's loop; so do close requests (main
 * -> I/O loop) and close notices (I/O loop -> main, so that the main loop
 * unregisters the brokers of a closed connection).
 *
 * Messages are ns_mail_t, posted to a loop's mailbox (mutex + uv_async).
 * A mail that carries a connection holds a reference on it. */
#ifndef NS_IOLOOP_H
#define NS_IOLOOP_H

#include <uv.h>

#include "conn.h"
#include "liveness.h"
#include "ns/config.h"
#include "ns/store.h"
#include "writer.h"

typedef struct ns_io ns_io_t;           /* one extra I/O loop (ioloop.c) */
typedef struct ns_mailbox ns_mailbox_t; /* a loop's incoming mail (ioloop.c) */

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
    ns_server_t *from;
    int fd;
    ns_cmd_t *cmd; /* NS_MAIL_CMD: one heap block (ns_cmd_dup) */
    size_t cost;   /* NS_MAIL_CMD: bytes counted in the sender's backlog */
    ns_buf_t bytes;
} ns_mail_t;

struct ns_server {
    uv_loop_t *loop;
    ns_config_t *cfg;        /* the main loop's; an I/O loop's copy of its scalars */
    ns_store_t *store;
    ns_writer_t *writer;     /* main loop only (NULL elsewhere), as the next two */
    ns_registry_t *registry;
    ns_liveness_t *liveness;
    ns_server_t *main;       /* the main loop's server (itself on the main loop) */
    ns_mailbox_t *inbox;     /* mail for this loop; NULL with ioThreads=1 */
    ns_txn_t *rtxn;          /* the loop's reusable read transaction */
    int rtxn_users;          /* open while > 0 (ns_read_begin/ns_read_end) */
    uv_tcp_t listener;       /* main loop */
    uv_timer_t scan_timer;   /* main loop: liveness scan */
    uv_timer_t idle_timer;   /* idle-connection sweep */
    uv_check_t flush_check;  /* writes out replies once per loop iteration */
    uv_signal_t sig_int, sig_term;
    ns_conn_t *conns;        /* all open connections of this loop */
    ns_conn_t *dirty;        /* connections with replies to write */
    ns_conn_t *paused_head, *paused_tail; /* I/O loop: waiting to read again, oldest first */
    uint64_t start_ms;
    int bound_port;
    bool stopping;
    bool listener_init, handles_init;
    ns_buf_t scratch;        /* reply bodies assembled on the loop thread */
    ns_buf_t derived;        /* legacy routes derived from the standard form */
    ns_buf_t rshared;        /* the read buffer connections share (conn.c) */
    ns_buf_t remark;         /* formatted error remarks (dispatch.c) */
    uint64_t requests;
    ns_io_t *io;             /* on an I/O loop's server: that loop; NULL on main */
    ns_io_t **ios;           /* main: the extra loops */
    size_t n_ios, next_io;
};

/* Opens the store, restores liveness, starts the writer, the I/O loops and
 * listens. On failure everything opened is closed again and err says why. */
int ns_server_start(ns_server_t *srv, uv_loop_t *loop, ns_config_t *cfg, char *err, size_t errlen);
/* Stops accepting, lets in-flight writes finish, closes everything. */
void ns_server_stop(ns_server_t *srv);
/* Releases what ns_server_start allocated (after the loop has ended). */
void ns_server_free(ns_server_t *srv);

/* The loop whose thread is running (set when the loop starts). */
ns_server_t *ns_io_current(void);
void ns_io_set_current(ns_server_t *srv);

/* Starts cfg->io_threads - 1 extra loops; nothing with ioThreads=1. */
int ns_io_start(ns_server_t *srv, char *err, size_t errlen);
/* Main loop, on a new connection: hands it to the next I/O loop in turn
 * (the main loop takes its turn too); false = accept it here. */
bool ns_io_take_connection(ns_server_t *srv);
/* Main loop, at shutdown after the writer stopped: every I/O loop writes
 * what it holds, closes its connections and ends. */
void ns_io_stop(ns_server_t *srv);
/* Frees the main loop's mailbox (after its loop has ended). */
void ns_io_free(ns_server_t *srv);
/* Main loop: UPDATE_NAMESRV_CONFIG changed settings; the loops take them. */
void ns_io_config_changed(ns_server_t *srv);
/* I/O loop, before serving what it read: takes settings changed since. */
void ns_io_sync(ns_server_t *shard);
/* I/O loop: true when the main loop has too many of this loop's requests
 * still to handle; the connection then stops reading until it catches up. */
bool ns_io_backlogged(ns_server_t *shard);
/* I/O loop -> main: request cmd of c (copied; frame_len counts in the
 * backlog). Closes c when out of memory. */
void ns_io_forward(ns_server_t *shard, ns_conn_t *c, const ns_cmd_t *cmd, size_t frame_len);
/* Posts m to srv's loop (m and its reference are the receiver's); false
 * when that loop has ended (m is then still the caller's). */
bool ns_io_post(ns_server_t *srv, ns_mail_t *m);
/* A mail of kind for conn (a reference is taken); NULL when out of memory. */
ns_mail_t *ns_mail_new(ns_mail_kind_t kind, ns_conn_t *conn);
/* Frees a mail that was not posted (drops its reference). */
void ns_mail_free(ns_mail_t *m);

#endif
