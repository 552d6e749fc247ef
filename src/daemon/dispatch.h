/* dispatch.h - the handler contract: the request table, the one wrapper
 * around every handler (ns_dispatch), replies, and the one write-operation
 * type every write request goes through.
 *
 * A row of the table (dispatch.c) is: the request code (its name from the
 * X-macro list in ns/codes.h), the header fields it requires and the remark
 * Java answers when one is missing, its kind and its function. The
 * dispatcher checks the required fields, opens the loop's read transaction
 * for rows that read the store, calls the handler, and turns the NS_E* code
 * it returns into a RocketMQ response code and remark (ns_reply_error, the
 * only place that does). A handler that replied returns NS_OK; one that
 * wants a specific RocketMQ code and remark returns ns_fail(...).
 *
 * Kinds:
 *   READ   runs in the loop's read transaction; with NS_ROW_ANY_LOOP on
 *          whichever loop owns the connection, else on the main loop.
 *   WRITE  runs on the main loop in the read transaction (to answer an
 *          unchanged request at once) and usually queues an ns_wreq_t on
 *          the writer, which replies after the commit.
 *   ADMIN  runs on the main loop without a transaction (settings).
 */
#ifndef NS_DISPATCH_H
#define NS_DISPATCH_H

#include "ioloop.h"

typedef enum { NS_CMD_READ, NS_CMD_WRITE, NS_CMD_ADMIN } ns_cmd_kind_t;

/* Where a reply goes, and what an error reply looks like there. Holds a
 * reference on conn while a write operation is in flight. */
typedef struct {
    ns_conn_t *conn;
    int32_t opaque;
    uint8_t serialize_type;
    bool oneway;
    bool ext_always;         /* Java answers this request with a header object */
    int fail_code;           /* set by ns_fail: the RocketMQ code ... */
    const char *fail_remark; /* ... and remark (borrowed until the reply) */
} ns_reply_to_t;

typedef struct {
    ns_server_t *srv;        /* the loop running the request */
    ns_conn_t *conn;
    const ns_cmd_t *cmd;     /* valid during the handler call only */
    ns_txn_t *txn;           /* read txn for READ and WRITE rows, during the call */
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

/* Dispatches one decoded request of conn on srv's loop. */
void ns_dispatch(ns_server_t *srv, ns_conn_t *conn, const ns_cmd_t *cmd);
/* True when cmd may run on any loop (else it goes to the main loop). */
bool ns_dispatch_any_loop(const ns_cmd_t *cmd);

/* Sends rsp to `to` (nothing for one-way requests or closed conns). */
void ns_reply(const ns_reply_to_t *to, const ns_rsp_t *rsp);
void ns_reply_code(const ns_reply_to_t *to, int code, const char *remark);
/* The one mapping of NS_E* to a RocketMQ reply: NS_EREFUSED answers the
 * code and remark ns_fail recorded; anything else SYSTEM_ERROR with the
 * store's remark (ns_err_remark). */
void ns_reply_error(const ns_reply_to_t *to, int rc);
/* Records the RocketMQ code and remark (borrowed until the reply is sent)
 * for the error reply; returns NS_EREFUSED for the handler to return. */
int ns_fail(ns_reply_to_t *to, int code, const char *remark);
/* The same with a formatted remark (kept in the loop's remark buffer). */
int ns_failf(ns_req_t *req, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Remark for a store or system error (SYSTEM_ERROR). */
const char *ns_err_remark(int rc);
/* Sets ext[n_ext] = key/value (value borrowed). */
void ns_rsp_ext(ns_rsp_t *rsp, const char *key, const char *val);

/* The loop's read transaction: renewed by the first user, reset when the
 * last one ends, so all the frames of one read share one snapshot and it is
 * never held across loop iterations. */
int ns_read_begin(ns_server_t *srv, ns_txn_t **txn);
void ns_read_end(ns_server_t *srv);
/* Milliseconds on the loop's monotonic clock / the wall clock. */
uint64_t ns_now_ms(ns_server_t *srv);
int64_t ns_wall_ms(void);

/* Header fields (the row's required ones are never NULL in its handler). */
const char *ns_req_str(const ns_req_t *req, const char *key);
/* Optional integer field; def when missing or unparseable (Java leaves 0/null). */
int64_t ns_req_i64(const ns_req_t *req, const char *key, int64_t def);
/* Java boolean: "true" (any case) is true. */
bool ns_req_bool(const ns_req_t *req, const char *key);

/* ---- the write operation ----
 * Every mutation, from a request or from the server itself (evictions),
 * is one ns_wreq_t: the writer runs `apply` in its batch transaction, then
 * on the main loop `done` sees the result and replies (or returns an error
 * the wrapper maps). The wrapper holds the reply target from submit to
 * reply and frees the operation with its payload. */
typedef struct ns_wreq ns_wreq_t;
typedef struct {
    /* Writer thread, in the batch transaction; may run more than once
     * (writer.h), so it rebuilds its results each time. */
    int (*apply)(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg);
    /* Main loop, after the commit (rc NS_OK) or the failure: replies and
     * returns NS_OK, or returns an error the wrapper answers. NULL: answer
     * SUCCESS or the error. */
    int (*done)(ns_wreq_t *w, int rc);
    /* Frees what the payload owns (not the payload itself). May be NULL. */
    void (*free)(void *payload);
} ns_wreq_ops_t;

struct ns_wreq {
    ns_wop_t op; /* the writer's */
    const ns_wreq_ops_t *ops;
    ns_server_t *srv; /* the main loop */
    ns_reply_to_t to; /* conn NULL: nobody to answer (evictions) */
    max_align_t payload[];
};

/* A zeroed operation with payload_size bytes of payload (w->payload);
 * NULL when out of memory. Freed by the wrapper after done. */
ns_wreq_t *ns_wreq_new(const ns_wreq_ops_t *ops, size_t payload_size);
/* Queues w on the main loop's writer; `to` may be NULL (no reply) and is
 * held until the reply. */
void ns_wreq_submit(ns_server_t *srv, ns_wreq_t *w, const ns_reply_to_t *to);
/* Frees an operation that was never submitted. */
void ns_wreq_free(ns_wreq_t *w);

/* Handlers (cmd_*.c), one per request code: NS_OK after replying, or an
 * error for the wrapper to answer. */
typedef int (*ns_handler_fn)(ns_req_t *req);
#define NS_HANDLER_DECL(name) int ns_cmd_##name(ns_req_t *req);
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
#undef NS_HANDLER_DECL

/* Liveness glue (cmd_broker.c), main loop: brokers registered over a closed
 * connection and expired brokers are unregistered through the writer,
 * fenced by the generation they were decided for. */
void ns_broker_conn_closed(ns_server_t *srv, ns_conn_t *conn);
void ns_broker_scan(ns_server_t *srv);
int ns_broker_restore(ns_server_t *srv);
/* The KVTable body of namespace ns (cmd_kv.c); NS_ENOTFOUND if absent. */
int ns_kv_table_body(ns_txn_t *txn, const char *ns, ns_buf_t *out);

#endif
