/* request.h - what a handler works with: the request, its reply target,
 * replies, the one mapping of NS_E* to RocketMQ replies, and the one
 * write-operation type every mutation goes through. The contract of the
 * table and its wrapper is in dispatch.h. */
#ifndef NS_REQUEST_H
#define NS_REQUEST_H

#include "core/server.h"
#include "core/trail.h"
#include "core/writer.h"
#include "net/conn.h"
#include "net/ioloop.h"

/* Where a reply goes, and what an error reply looks like there. Holds a
 * reference on conn while a write operation is in flight. */
typedef struct {
    ns_conn_t *conn; /* the request's connection (ns_req_t); NULL only in a
                      * write operation nobody waits for (evictions, the
                      * trail record of a refusal): nobody to answer */
    int32_t opaque;
    uint8_t serialize_type;
    bool oneway;
    bool ext_always;         /* Java answers this request with a header object */
    int fail_code;           /* set by ns_fail: the RocketMQ code ... */
    const char *fail_remark; /* ... and remark (borrowed until the reply); or ns_remark's */
    bool async;              /* answered after the writer (set by ns_wreq_submit) */
    uint8_t m_row;           /* metrics: request row (metrics.h), 0 = none */
    uint64_t t0_ns;          /* uv_hrtime() when dispatched */
} ns_reply_to_t;

/* What admin-trail record (trail.h) a request's row asks for: the
 * dispatcher sets it from the row, the request machinery makes the record
 * (ns_req_submit, and the dispatcher for a refusal). */
typedef enum {
    NS_REQ_TRAIL_NONE,   /* no record */
    NS_REQ_TRAIL_FIELDS, /* command, peer and extFields */
    NS_REQ_TRAIL_BODY,   /* the same and the body as text */
} ns_req_trail_t;

/* A request while its handler runs. conn is never NULL: every request
 * arrives on a connection (ns_dispatch takes it), and what the server does
 * on its own is an ns_wreq_t without an ns_req_t. It is valid for the
 * handler call; whoever keeps it longer takes a reference (ns_conn_ref), as
 * ns_wreq_submit does for to.conn. So handlers use req->conn unguarded. */
typedef struct {
    ns_loop_t *loop;     /* the loop running the request (loop->main: the main server) */
    ns_conn_t *conn;     /* never NULL (above) */
    const ns_cmd_t *cmd; /* valid during the handler call only */
    ns_txn_t *txn;       /* read txn for READ and WRITE rows, during the call */
    const char *need[4]; /* the row's required fields' values, in the row's order */
    ns_reply_to_t to;
    uint8_t trail;            /* ns_req_trail_t of the row */
    bool trail_made;          /* its record was made (handed to a write or refused) */
    const char *trail_detail; /* ns_req_trail_detail's, borrowed until ns_req_submit */
    /* the caller speaks for the broker address the request names (auth.h,
     * NS_SELF_*; set by the dispatcher's check, false for other rows) */
    bool speaks_for;
    /* that check's liveness entry of (clusterName, brokerAddr), NULL when
     * none is registered, valid for the handler call when self_looked: the
     * heartbeat's handler need not look it up again */
    struct ns_live_entry *self_live;
    bool self_looked;
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
    bool body_mapped; /* body lies in the loop's read snapshot (ns_conn_send_mapped) */
} ns_rsp_t;

/* Sends rsp to `to` (nothing for one-way requests or closed conns). */
void ns_reply(const ns_reply_to_t *to, const ns_rsp_t *rsp);
void ns_reply_code(const ns_reply_to_t *to, int code, const char *remark);
/* The one mapping of NS_E* to a RocketMQ reply (ns_reply_error_of): NS_EREFUSED
 * answers the code and remark ns_fail recorded; anything else SYSTEM_ERROR
 * with the remark ns_remark recorded, else the store's (ns_err_remark). */
void ns_reply_error(const ns_reply_to_t *to, int rc);
/* The code and remark (borrowed like to's) ns_reply_error answers for rc. */
void ns_reply_error_of(const ns_reply_to_t *to, int rc, int *code, const char **remark);
/* Records the RocketMQ code and remark (borrowed until the reply is sent)
 * for the error reply; returns NS_EREFUSED for the handler to return. */
int ns_fail(ns_reply_to_t *to, int code, const char *remark);
/* The same with a formatted remark (kept in the loop's remark buffer). */
int ns_failf(ns_req_t *req, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records the remark (borrowed until the reply is sent) the error reply of
 * rc carries in place of ns_err_remark(rc); returns rc for the handler (or
 * a write's done) to return. */
int ns_remark(ns_reply_to_t *to, int rc, const char *remark);
/* The same with a formatted remark (kept in the loop's remark buffer); an
 * error of its own (out of memory) is returned instead of rc. rc is not
 * NS_EREFUSED (that is ns_failf). */
int ns_remarkf(ns_req_t *req, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Remark for a store or system error (SYSTEM_ERROR). */
const char *ns_err_remark(int rc);
/* Sets ext[n_ext] = key/value (value borrowed). */
void ns_rsp_ext(ns_rsp_t *rsp, const char *key, const char *val);

/* Header fields (the row's required ones are never NULL in its handler). */
const char *ns_req_str(const ns_req_t *req, const char *key);
/* The peer of req's connection ("ip:port"); borrowed like req->conn. */
const char *ns_req_peer(const ns_req_t *req);
/* req's audit record (trail.h, ns_trail_new) as its row asks (req->trail):
 * its command and peer, the server's adminAuditRetention. Caller frees
 * with ns_trail_free (or hands it to an ns_wreq_t); NULL for a row without
 * records, when off or out of memory. The dispatcher's and ns_req_submit's. */
ns_trail_t *ns_req_trail_new(const ns_req_t *req);
/* The detail object (JSON object text, borrowed until ns_req_submit) the
 * record of req's write gets: what only the handler knows. */
void ns_req_trail_detail(ns_req_t *req, const char *json);
/* Optional integer field; def when missing or unparseable (Java leaves 0/null). */
int64_t ns_req_i64(const ns_req_t *req, const char *key, int64_t def);
/* Java's Boolean.parseBoolean of an extField value: "true" in any case;
 * NULL is false. */
bool ns_req_is_true(const char *v);
/* The same of the field key. */
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
    ns_server_t *srv; /* the main server */
    ns_reply_to_t to; /* conn NULL: nobody to answer (evictions) */
    /* Admin requests: their audit record (trail.h), appended by the wrapper
     * in the transaction of the effect, logged after the commit, freed with w. */
    struct ns_trail *trail;
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
/* Queues w, the write of request req, on the main loop's writer, answering
 * req (ns_wreq_submit) and with the admin record req's row asks for (made
 * now: it sees the settings as they are at the write). Consumes w. */
void ns_req_submit(ns_req_t *req, ns_wreq_t *w);

#endif
