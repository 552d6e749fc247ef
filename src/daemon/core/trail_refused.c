/* trail_refused.c - the write op of a refused admin request
 * (trail_refused.h): its audit record is a write of its own, since the
 * refusal has no effect to share a transaction with. */
#include "core/trail_refused.h"

#include <stdio.h>

#include "ns/err.h"
#include "ns/log.h"

typedef struct {
    ns_trail_t *trail;
    int code;
    char remark[256];
} refusal_t;

static int refusal_apply(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    refusal_t *r = (refusal_t *)w->payload;
    return ns_trail_write(txn, r->trail, "refused", r->code, r->remark, NULL);
}

static int refusal_done(ns_wreq_t *w, int rc)
{
    refusal_t *r = (refusal_t *)w->payload;
    if (rc != NS_OK)
        NS_LOG_ERROR("conn %s: the refusal of %s could not be recorded: %s",
                     ns_trail_peer(r->trail), ns_trail_summary(r->trail), ns_strerror(rc));
    return NS_OK; /* nobody to answer: the refusal was answered at once */
}

static void refusal_free(void *p)
{
    ns_trail_free(((refusal_t *)p)->trail);
}

static const ns_wreq_ops_t refusal_ops = {refusal_apply, refusal_done, refusal_free};

/* Captures and submits one refusal record; logs it at INFO when `log`. */
static void refused(ns_req_t *req, ns_trail_t *t, bool log, int rsp_code, const char *remark,
                    const char *detail)
{
    ns_wreq_t *w = NULL;
    ns_server_t *srv = ns_server_at(req->loop); /* an I/O loop has no writer */
    if (log)
        ns_trail_log_refused(t, remark);
    if (!ns_trail_kept(t) || srv == NULL || srv->writer == NULL ||
        (detail && ns_trail_set_detail(t, detail) != NS_OK) ||
        (w = ns_wreq_new(&refusal_ops, sizeof(refusal_t))) == NULL) {
        ns_trail_free(t);
        return;
    }
    refusal_t *r = (refusal_t *)w->payload;
    r->trail = t;
    r->code = rsp_code;
    snprintf(r->remark, sizeof r->remark, "%s", remark ? remark : "");
    ns_wreq_submit(srv, w, NULL);
}

void ns_trail_refused(ns_req_t *req, int rsp_code, const char *remark)
{
    refused(req, ns_req_trail_new(req), true, rsp_code, remark, NULL);
}

void ns_trail_refused_auth(ns_req_t *req, int rsp_code, const char *remark, const char *detail)
{
    ns_trail_t *t =
        ns_trail_new_auth(req->cmd, ns_req_peer(req), req->loop->cfg->admin_audit_retention);
    refused(req, t, false, rsp_code, remark, detail);
}
