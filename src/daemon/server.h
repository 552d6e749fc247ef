/* server.h - the NameServer process: libuv loop, connections, dispatch.
 *
 * One request flows: socket -> conn read buffer -> frame decoder ->
 * dispatch row -> handler -> (read txn | writer queue) -> encoder -> conn
 * write buffer -> socket. */
#ifndef NS_SERVER_H
#define NS_SERVER_H

#include <uv.h>

#include "liveness.h"
#include "ns/config.h"
#include "ns/remoting.h"
#include "ns/store.h"
#include "registry.h"
#include "writer.h"

typedef struct ns_server ns_server_t;
typedef struct ns_conn ns_conn_t;
typedef struct ns_io ns_io_t;           /* one extra I/O loop (ioloop.c) */
typedef struct ns_mailbox ns_mailbox_t; /* messages between loops (ioloop.c) */

struct ns_server {
    uv_loop_t *loop;
    ns_config_t *cfg;
    ns_store_t *store;
    ns_writer_t *writer;
    ns_registry_t *registry;
    ns_liveness_t *liveness;
    ns_txn_t *rtxn;          /* the loop's reusable read transaction */
    int rtxn_users;          /* open while > 0 (ns_read_begin/ns_read_end) */
    uv_tcp_t listener;
    uv_timer_t scan_timer;   /* liveness scan */
    uv_timer_t idle_timer;   /* idle-connection sweep */
    uv_check_t flush_check;  /* writes out replies once per loop iteration */
    uv_signal_t sig_int, sig_term;
    ns_conn_t *conns;        /* all open connections */
    ns_conn_t *dirty;        /* connections with replies to write */
    ns_conn_t *paused_head, *paused_tail; /* I/O loop: waiting to read again, oldest first */
    uint64_t start_ms;
    int bound_port;
    bool stopping;
    bool listener_init, handles_init;
    ns_buf_t scratch;        /* reply bodies assembled on the loop thread */
    ns_buf_t derived;        /* legacy routes derived from the standard form */
    ns_buf_t rshared;        /* the read buffer connections share (conn.c) */
    uint64_t requests;
    struct ns_auth *auth;    /* main: authMode state, penalties, counters (auth.c) */
    /* ioThreads > 1 (ioloop.c). The main server owns the extra loops; each
     * of them runs its own ns_server_t, which has its own loop, read
     * transaction, buffers and connections, and no writer, registry or
     * liveness: it serves route lookups and forwards the rest here. */
    ns_io_t *io;             /* on an I/O loop's server: that loop; NULL on main */
    ns_io_t **ios;           /* main: the extra loops */
    size_t n_ios, next_io;
    ns_mailbox_t *inbox;     /* main: messages from the I/O loops */
};

/* Opens the store, restores liveness, starts the writer and listens.
 * On failure everything opened is closed again and err says why. */
int ns_server_start(ns_server_t *srv, uv_loop_t *loop, ns_config_t *cfg, char *err, size_t errlen);
/* Stops accepting, lets in-flight writes finish, closes everything. */
void ns_server_stop(ns_server_t *srv);
/* Releases what ns_server_start allocated (after the loop has ended). */
void ns_server_free(ns_server_t *srv);

/* ---- connections (conn.c) ---- */

/* Accepts one connection from the listener. */
void ns_conn_accept(ns_server_t *srv);
void ns_conn_ref(ns_conn_t *c);
void ns_conn_unref(ns_conn_t *c);
bool ns_conn_is_closed(const ns_conn_t *c);
const char *ns_conn_peer(const ns_conn_t *c);
/* Closes the connection (idempotent); reason is logged. */
void ns_conn_close(ns_conn_t *c, const char *reason);
/* Queues one encoded response; it is written at the end of the loop
 * iteration together with the others for this connection. */
int ns_conn_send(ns_conn_t *c, const ns_cmd_t *rsp);
/* Writes every connection's queued replies (uv_check callback). */
void ns_conn_flush_all(ns_server_t *srv);
void ns_conn_close_all(ns_server_t *srv);
/* Closes connections idle for more than idle_s seconds. */
void ns_conn_sweep_idle(ns_server_t *srv, uint64_t now_ms, int64_t idle_s);
/* Number of brokers that registered over c and may still be live. */
void ns_conn_note_broker(ns_conn_t *c);

/* A connection an I/O loop owns is served on the main loop through a proxy:
 * requests the I/O loop does not serve itself arrive here as frames and run
 * against the proxy; its replies go back as bytes; its close arrives as a
 * message. `remote` is the I/O loop's connection: a token the main loop
 * hands back, never dereferences. */
/* Main loop: a proxy for the accepted socket fd, which `home` will own; the
 * proxy holds one reference, dropped by ns_conn_proxy_finish. It takes
 * `spare`, the message its close request will travel in (ioloop.c), so that
 * closing cannot fail for want of memory; on NULL the caller keeps it. */
ns_conn_t *ns_conn_proxy_new(ns_server_t *srv, ns_io_t *home, int fd, void *spare);
/* Main loop: decodes and dispatches one forwarded frame (learning remote). */
void ns_conn_proxy_request(ns_conn_t *p, ns_conn_t *remote, const uint8_t *frame, size_t len);
/* Main loop: the I/O loop closed the connection; unregisters its brokers. */
void ns_conn_proxy_finish(ns_conn_t *p);
/* I/O loop: serves the socket fd (from the main loop) for proxy p and keeps
 * `spare` for the message that will report its close; false when it cannot
 * (fd is then closed, spare still the caller's). */
bool ns_conn_adopt(ns_server_t *shard, int fd, ns_conn_t *proxy, void *spare);
/* I/O loop: queues reply bytes from the main loop (bytes is emptied). */
void ns_conn_deliver(ns_conn_t *c, ns_buf_t *bytes);
/* I/O loop: connections paused by ns_io_backlogged read again, oldest
 * first, until one fills the backlog again; the rest keep their turn. */
void ns_conn_resume_all(ns_server_t *shard);

/* ---- extra I/O loops (ioloop.c) ---- */

/* Starts cfg->io_threads - 1 extra loops; nothing with ioThreads=1. */
int ns_io_start(ns_server_t *srv, char *err, size_t errlen);
/* Main loop, on a new connection: hands it to the next I/O loop in turn
 * (the main loop takes its turn too); false = accept it here. */
bool ns_io_take_connection(ns_server_t *srv);
/* Main loop, at shutdown after the writer stopped: every I/O loop writes
 * what it holds, closes its connections and ends; their proxies finish. */
void ns_io_stop(ns_server_t *srv);
/* Frees the main loop's mailbox (after its loop has ended). */
void ns_io_free(ns_server_t *srv);
/* Main loop: UPDATE_NAMESRV_CONFIG changed settings; the loops take them. */
void ns_io_config_changed(ns_server_t *srv);
/* I/O loop, before serving what it read: takes settings changed since. */
void ns_io_sync(ns_server_t *shard);
/* True when an I/O loop answers this request itself (route lookups). */
bool ns_io_serves(const ns_cmd_t *cmd);
/* I/O loop: true when the main loop has too many of this loop's frames
 * still to handle; the connection then stops reading until it catches up. */
bool ns_io_backlogged(ns_server_t *shard);
/* I/O loop -> main: a frame for the proxy / the connection closed. */
void ns_io_forward(ns_server_t *shard, ns_conn_t *c, ns_conn_t *proxy, const uint8_t *frame,
                   size_t len);
void ns_io_closed(ns_server_t *shard, ns_conn_t *c, ns_conn_t *proxy, void *spare);
/* Main -> I/O loop: reply bytes for remote (out is emptied) / close it. */
void ns_io_reply(ns_io_t *home, ns_conn_t *remote, ns_buf_t *out);
void ns_io_close_remote(ns_io_t *home, ns_conn_t *remote, void *spare);
/* Frees a message a connection kept in reserve and never sent (NULL: none). */
void ns_io_msg_free(void *spare);

/* ---- requests (dispatch.c) ---- */

/* Where a reply goes; holds a reference on conn while an async write
 * operation is in flight. */
typedef struct {
    ns_conn_t *conn;
    int32_t opaque;
    uint8_t serialize_type;
    bool oneway;
} ns_reply_to_t;

typedef struct ns_req {
    ns_server_t *srv;
    ns_conn_t *conn;
    const ns_cmd_t *cmd; /* valid during the handler call only */
    ns_txn_t *txn;       /* read txn for NS_CMD_READ rows, during the call */
    ns_reply_to_t to;
} ns_req_t;

/* A response to send: code, remark, extFields and body (all borrowed). */
typedef struct {
    int code;
    const char *remark;
    bool has_ext;
    ns_ext_field_t ext[4];
    size_t n_ext;
    const uint8_t *body;
    size_t body_len;
} ns_rsp_t;

/* Dispatches one decoded frame read from conn. */
void ns_dispatch(ns_server_t *srv, ns_conn_t *conn, const ns_cmd_t *cmd);
/* Sends rsp to `to` (nothing for one-way requests or closed conns). */
void ns_reply(const ns_reply_to_t *to, const ns_rsp_t *rsp);
/* Shorthands. */
void ns_reply_code(const ns_reply_to_t *to, int code, const char *remark);
/* Sets ext[n_ext] = key/value (value borrowed). */
void ns_rsp_ext(ns_rsp_t *rsp, const char *key, const char *val);
/* Keeps a reference on the reply target for an async reply / drops it. */
void ns_reply_to_hold(ns_reply_to_t *to);
void ns_reply_to_release(ns_reply_to_t *to);
/* The loop's read transaction: renewed by the first user, reset when the
 * last one ends, so all the frames of one read share one snapshot and it is
 * never held across loop iterations. */
int ns_read_begin(ns_server_t *srv, ns_txn_t **txn);
void ns_read_end(ns_server_t *srv);
/* Milliseconds on the loop's monotonic clock / the wall clock. */
uint64_t ns_now_ms(ns_server_t *srv);
int64_t ns_wall_ms(void);

/* Required header field: NULL when missing (handlers answer SYSTEM_ERROR). */
const char *ns_req_str(const ns_req_t *req, const char *key);
/* Optional integer field; def when missing or unparseable (Java leaves 0/null). */
int64_t ns_req_i64(const ns_req_t *req, const char *key, int64_t def);
/* Java boolean: "true" (any case) is true. */
bool ns_req_bool(const ns_req_t *req, const char *key);

/* Handlers (cmd_*.c), one per request code. */
typedef void (*ns_handler_fn)(ns_req_t *req);
#define NS_HANDLER_DECL(name) void ns_cmd_##name(ns_req_t *req);
NS_HANDLER_DECL(put_kv_config)
NS_HANDLER_DECL(get_kv_config)
NS_HANDLER_DECL(delete_kv_config)
NS_HANDLER_DECL(get_kvlist_by_namespace)
NS_HANDLER_DECL(register_broker)
NS_HANDLER_DECL(unregister_broker)
NS_HANDLER_DECL(broker_heartbeat)
NS_HANDLER_DECL(query_data_version)
NS_HANDLER_DECL(get_broker_member_group)
NS_HANDLER_DECL(get_routeinfo_by_topic)
NS_HANDLER_DECL(get_broker_cluster_info)
NS_HANDLER_DECL(get_all_topic_list)
NS_HANDLER_DECL(get_topics_by_cluster)
NS_HANDLER_DECL(get_system_topic_list)
NS_HANDLER_DECL(get_unit_topic_list)
NS_HANDLER_DECL(get_has_unit_sub_topic_list)
NS_HANDLER_DECL(get_has_unit_sub_ununit_topic_list)
NS_HANDLER_DECL(wipe_write_perm_of_broker)
NS_HANDLER_DECL(add_write_perm_of_broker)
NS_HANDLER_DECL(delete_topic_in_namesrv)
NS_HANDLER_DECL(register_topic_in_namesrv)
NS_HANDLER_DECL(update_namesrv_config)
NS_HANDLER_DECL(get_namesrv_config)
NS_HANDLER_DECL(user_add)
NS_HANDLER_DECL(user_update)
NS_HANDLER_DECL(user_delete)
NS_HANDLER_DECL(user_list)
#undef NS_HANDLER_DECL

/* Liveness glue (cmd_broker.c): brokers registered over a closed connection
 * and expired brokers are unregistered through the writer, fenced by the
 * generation they were decided for. */
void ns_broker_conn_closed(ns_server_t *srv, ns_conn_t *conn);
void ns_broker_scan(ns_server_t *srv);
int ns_broker_restore(ns_server_t *srv);


/* ---- simple write operations (dispatch.c) ----
 * Most write requests carry up to three strings, run one store mutation on
 * the writer and answer SUCCESS (or a custom reply) after the commit. */
typedef struct ns_sop ns_sop_t;
struct ns_sop {
    ns_wop_t op;
    ns_server_t *srv;
    ns_reply_to_t to;
    char *s[3];
    int count;
    void *extra; /* owned by the handler: freed with free_extra */
    void (*free_extra)(void *extra);
    int (*run)(ns_sop_t *sop, ns_txn_t *txn, ns_registry_t *reg); /* writer thread */
    void (*reply)(ns_sop_t *sop); /* loop thread, after a successful commit; NULL = SUCCESS */
};
/* Copies the strings (NULLs allowed), queues the op; replies SYSTEM_ERROR
 * at once if memory runs out. */
void ns_sop_submit(ns_req_t *req, int (*run)(ns_sop_t *, ns_txn_t *, ns_registry_t *),
                   void (*reply)(ns_sop_t *), const char *s0, const char *s1, const char *s2,
                   void *extra, void (*free_extra)(void *));
/* Maps a store error to a reply remark (SYSTEM_ERROR). */
const char *ns_err_remark(int rc);
int ns_kv_table_body(ns_txn_t *txn, const char *ns, ns_buf_t *out);

#endif
