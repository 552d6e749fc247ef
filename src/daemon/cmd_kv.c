/* cmd_kv.c - KV configuration: PUT_KV_CONFIG, GET_KV_CONFIG,
 * DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE (PROTOCOL.md §3.2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/body.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "server.h"

static int put_run(ns_sop_t *sop, ns_txn_t *txn, ns_registry_t *reg)
{
    return ns_kv_put(txn, sop->s[0], sop->s[1], sop->s[2]);
}

void ns_cmd_put_kv_config(ns_req_t *req)
{
    const char *ns = ns_req_str(req, "namespace"), *key = ns_req_str(req, "key");
    const char *val = ns_req_str(req, "value");
    if (ns == NULL || key == NULL) {
        ns_reply_code(&req->to, NS_RSP_SYSTEM_ERROR, "namespace or key is null");
        return;
    }
    /* Java stores a null value that GET cannot see; we store "" instead. */
    ns_sop_submit(req, put_run, NULL, ns, key, val ? val : "", NULL, NULL);
}

static int del_run(ns_sop_t *sop, ns_txn_t *txn, ns_registry_t *reg)
{
    return ns_kv_del(txn, sop->s[0], sop->s[1]);
}

void ns_cmd_delete_kv_config(ns_req_t *req)
{
    const char *ns = ns_req_str(req, "namespace"), *key = ns_req_str(req, "key");
    if (ns == NULL || key == NULL) {
        ns_reply_code(&req->to, NS_RSP_SYSTEM_ERROR, "namespace or key is null");
        return;
    }
    ns_sop_submit(req, del_run, NULL, ns, key, NULL, NULL, NULL);
}

void ns_cmd_get_kv_config(ns_req_t *req)
{
    const char *ns = ns_req_str(req, "namespace"), *key = ns_req_str(req, "key");
    ns_rsp_t rsp = {0};
    ns_slice_t v;
    char *val = NULL;
    rsp.has_ext = true; /* Java always answers with a (maybe empty) response header */
    if (ns == NULL || key == NULL) {
        rsp.code = NS_RSP_SYSTEM_ERROR;
        rsp.remark = "namespace or key is null";
        ns_reply(&req->to, &rsp);
        return;
    }
    int rc = ns_kv_get(req->txn, ns, key, &v);
    if (rc == NS_OK && (val = strndup((const char *)v.ptr, v.len)) != NULL) {
        ns_rsp_ext(&rsp, "value", val);
        rsp.code = NS_RSP_SUCCESS;
        ns_reply(&req->to, &rsp);
    } else if (rc == NS_OK || rc == NS_ENOTFOUND) {
        ns_buf_t *remark = &req->srv->scratch;
        ns_buf_reset(remark);
        ns_buf_printf(remark, "No config item, Namespace: %s Key: %s", ns, key);
        rsp.code = rc == NS_OK ? NS_RSP_SYSTEM_ERROR : NS_RSP_QUERY_NOT_FOUND;
        rsp.remark = rc == NS_OK ? "out of memory" : (const char *)remark->data;
        ns_reply(&req->to, &rsp);
    } else {
        rsp.code = NS_RSP_SYSTEM_ERROR;
        rsp.remark = ns_err_remark(rc);
        ns_reply(&req->to, &rsp);
    }
    free(val);
}

typedef struct {
    char **keys, **vals;
    size_t n;
} kv_list_t;

static int list_cb(const char *key, const char *val, size_t len, void *ctx)
{
    kv_list_t *l = ctx;
    char **k = ns_array_grow(l->keys, l->n, sizeof *k);
    if (k)
        l->keys = k;
    char **v = ns_array_grow(l->vals, l->n, sizeof *v);
    if (v)
        l->vals = v;
    if (!k || !v)
        return NS_ENOMEM;
    l->keys[l->n] = strdup(key);
    l->vals[l->n] = strndup(val, len);
    l->n++;
    return l->keys[l->n - 1] && l->vals[l->n - 1] ? 0 : NS_ENOMEM;
}

static void list_free(kv_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->keys[i]);
        free(l->vals[i]);
    }
    free(l->keys);
    free(l->vals);
}

/* Appends namespace ns as a KVTable body to out (NS_ENOTFOUND if absent). */
int ns_kv_table_body(ns_txn_t *txn, const char *ns, ns_buf_t *out)
{
    kv_list_t l = {NULL, NULL, 0};
    int rc = ns_kv_iter(txn, ns, list_cb, &l);
    if (rc == NS_OK)
        rc = ns_json_kvtable_encode(out, (const char *const *)l.keys, (const char *const *)l.vals,
                                    l.n);
    list_free(&l);
    return rc;
}

void ns_cmd_get_kvlist_by_namespace(ns_req_t *req)
{
    const char *ns = ns_req_str(req, "namespace");
    ns_buf_t *body = &req->srv->scratch;
    ns_buf_reset(body);
    if (ns == NULL) {
        ns_reply_code(&req->to, NS_RSP_SYSTEM_ERROR, "namespace is null");
        return;
    }
    int rc = ns_kv_table_body(req->txn, ns, body);
    if (rc == NS_ENOTFOUND) {
        char remark[512];
        snprintf(remark, sizeof remark, "No config item, Namespace: %s", ns);
        ns_reply_code(&req->to, NS_RSP_QUERY_NOT_FOUND, remark);
        return;
    }
    if (rc != NS_OK) {
        ns_reply_code(&req->to, NS_RSP_SYSTEM_ERROR, ns_err_remark(rc));
        return;
    }
    ns_rsp_t rsp = {0};
    rsp.body = body->data;
    rsp.body_len = body->len;
    ns_reply(&req->to, &rsp);
}
