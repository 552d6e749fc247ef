/* request.c - replies, the NS_E* -> RocketMQ mapping, header fields, and
 * the write operation that holds its reply target until the writer
 * committed (request.h). */
#include "core/request.h"
#include "core/trail.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"

/* Counts the reply of a request in the metrics of the loop whose thread
 * sends it (for a forwarded request, the main loop: every counter has one
 * writer thread). */
static void count_reply(const ns_reply_to_t *to, int code)
{
    ns_loop_t *loop = ns_loop_current();
    NS_M_INC(loop->m.req[to->m_row][ns_metrics_rsp_index(code)]);
    if (to->async)
        ns_hist_observe(&loop->m.latency[NS_M_LAT_WRITE], NS_HIST_LATENCY, uv_hrtime() - to->t0_ns);
    else
        loop->m_replied = true;
}

void ns_reply(const ns_reply_to_t *to, const ns_rsp_t *rsp)
{
    if (to->m_row)
        count_reply(to, rsp->code);
    if (to->oneway || to->conn == NULL) /* a closed conn: ns_conn_send says NS_ECONN */
        return;
    ns_cmd_t c = {0};
    c.code = rsp->code;
    c.language = NS_LANG_JAVA;
    c.version = NS_VERSION_V5_3_3;
    c.opaque = to->opaque;
    c.flag = NS_FLAG_RESPONSE;
    c.serialize_type = to->serialize_type;
    c.remark = rsp->remark;
    c.remark_len = rsp->remark ? strlen(rsp->remark) : 0;
    c.has_ext = rsp->has_ext;
    c.ext = rsp->ext;
    c.n_ext = rsp->n_ext;
    c.body = rsp->body;
    c.body_len = rsp->body_len;
    int rc = rsp->body_mapped ? ns_conn_send_mapped(to->conn, &c) : ns_conn_send(to->conn, &c);
    if (rc != NS_OK && rc != NS_ECONN)
        NS_LOG_ERROR("conn %s: cannot encode reply: %s", ns_conn_peer(to->conn), ns_strerror(rc));
}

void ns_reply_code(const ns_reply_to_t *to, int code, const char *remark)
{
    ns_rsp_t rsp = {0};
    rsp.code = code;
    rsp.remark = remark;
    ns_reply(to, &rsp);
}

void ns_reply_error_of(const ns_reply_to_t *to, int rc, int *code, const char **remark)
{
    if (rc == NS_EREFUSED) {
        *code = to->fail_code;
        *remark = to->fail_remark;
    } else {
        *code = NS_RSP_SYSTEM_ERROR;
        *remark = to->fail_remark ? to->fail_remark : ns_err_remark(rc);
    }
}

void ns_reply_error(const ns_reply_to_t *to, int rc)
{
    ns_rsp_t rsp = {0};
    rsp.has_ext = to->ext_always;
    ns_reply_error_of(to, rc, &rsp.code, &rsp.remark);
    ns_reply(to, &rsp);
}

int ns_fail(ns_reply_to_t *to, int code, const char *remark)
{
    to->fail_code = code;
    to->fail_remark = remark;
    return NS_EREFUSED;
}

int ns_remark(ns_reply_to_t *to, int rc, const char *remark)
{
    to->fail_remark = remark;
    return rc;
}

/* Formats the remark into the loop's remark buffer and records it: with
 * code for rc NS_EREFUSED (ns_fail), else for rc (ns_remark). */
static int vremark(ns_req_t *req, int code, int rc, const char *fmt, va_list ap)
{
    ns_buf_t *b = &req->loop->remark;
    ns_buf_reset(b);
    int err = ns_buf_vprintf(b, fmt, ap);
    if (err != NS_OK)
        return err;
    if (rc == NS_EREFUSED)
        return ns_fail(&req->to, code, (const char *)b->data);
    return ns_remark(&req->to, rc, (const char *)b->data);
}

int ns_failf(ns_req_t *req, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vremark(req, code, NS_EREFUSED, fmt, ap);
    va_end(ap);
    return rc;
}

int ns_remarkf(ns_req_t *req, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rc = vremark(req, 0, rc, fmt, ap);
    va_end(ap);
    return rc;
}

void ns_rsp_ext(ns_rsp_t *rsp, const char *key, const char *val)
{
    if (rsp->n_ext >= sizeof rsp->ext / sizeof rsp->ext[0])
        return;
    ns_ext_field_t *e = &rsp->ext[rsp->n_ext++];
    e->key = key;
    e->key_len = strlen(key);
    e->val = val;
    e->val_len = strlen(val);
    rsp->has_ext = true;
}

const char *ns_req_str(const ns_req_t *req, const char *key)
{
    return ns_cmd_ext_get(req->cmd, key);
}

int64_t ns_req_i64(const ns_req_t *req, const char *key, int64_t def)
{
    const char *v = ns_cmd_ext_get(req->cmd, key);
    int64_t out;
    if (v == NULL || ns_parse_i64(v, strlen(v), &out) != NS_OK)
        return def;
    return out;
}

bool ns_req_is_true(const char *v)
{
    return v && strcasecmp(v, "true") == 0;
}

bool ns_req_bool(const ns_req_t *req, const char *key)
{
    return ns_req_is_true(ns_cmd_ext_get(req->cmd, key));
}

const char *ns_err_remark(int rc)
{
    switch (rc) {
    case NS_EMAPFULL:
        return "store is full: the LMDB map reached mapMaxBytes; nothing was written";
    case NS_ECORRUPT:
        return "store is corrupt; nothing was written";
    case NS_EIO:
        return "store I/O error (EIO or another errno, named in the server log); nothing was "
               "written";
    case NS_ENOSPC:
        return "store write failed: no space left on device (ENOSPC); nothing was written";
    case NS_ENOMEM:
        return "out of memory";
    case NS_ESHUTDOWN:
        return "the NameServer is shutting down: not written; send it to another NameServer";
    default:
        return ns_strerror(rc);
    }
}

/* ---- the write operation ---- */

ns_wreq_t *ns_wreq_new(const ns_wreq_ops_t *ops, size_t payload_size)
{
    ns_wreq_t *w = calloc(1, sizeof *w + payload_size);
    if (w)
        w->ops = ops;
    return w;
}

void ns_wreq_free(ns_wreq_t *w)
{
    if (w == NULL)
        return;
    if (w->ops->free)
        w->ops->free(w->payload);
    ns_trail_free(w->trail);
    if (w->to.conn)
        ns_conn_unref(w->to.conn);
    free(w);
}

static int wreq_apply(ns_wop_t *op, ns_txn_t *txn, void *hook_ctx)
{
    ns_wreq_t *w = (ns_wreq_t *)op;
    int rc = w->ops->apply(w, txn, hook_ctx);
    /* the admin record commits with the effect or not at all */
    return rc ? rc : ns_trail_write(txn, w->trail, "ok", NS_RSP_SUCCESS, NULL, NULL);
}

static void wreq_done(ns_wop_t *op)
{
    ns_wreq_t *w = (ns_wreq_t *)op;
    if (op->rc == NS_OK)
        ns_trail_done(w->trail);
    int rc = w->ops->done ? w->ops->done(w, op->rc) : op->rc;
    if (rc == NS_OK && w->ops->done == NULL)
        ns_reply_code(&w->to, NS_RSP_SUCCESS, NULL);
    else if (rc != NS_OK)
        ns_reply_error(&w->to, rc);
    ns_wreq_free(w);
}

void ns_wreq_submit(ns_server_t *srv, ns_wreq_t *w, const ns_reply_to_t *to)
{
    w->op.apply = wreq_apply;
    w->op.done = wreq_done;
    w->srv = srv;
    if (to) {
        w->to = *to;
        w->to.async = true; /* its reply is timed as a write (request.c) */
        if (w->to.conn)
            ns_conn_ref(w->to.conn);
    }
    ns_writer_submit(srv->writer, &w->op);
}

const char *ns_req_peer(const ns_req_t *req)
{
    return ns_conn_peer(req->conn);
}

ns_trail_t *ns_req_trail_new(const ns_req_t *req)
{
    if (req->trail == NS_REQ_TRAIL_NONE)
        return NULL;
    return ns_trail_new(req->cmd, ns_req_peer(req), req->loop->cfg->admin_audit_retention,
                        req->trail == NS_REQ_TRAIL_BODY);
}

void ns_req_trail_detail(ns_req_t *req, const char *json)
{
    req->trail_detail = json;
}

void ns_req_submit(ns_req_t *req, ns_wreq_t *w)
{
    if (req->trail != NS_REQ_TRAIL_NONE) {
        w->trail = ns_req_trail_new(req);
        ns_trail_set_detail(w->trail, req->trail_detail); /* without it if memory runs out */
        req->trail_made = true;
    }
    ns_wreq_submit(req->loop->main, w, &req->to);
}
