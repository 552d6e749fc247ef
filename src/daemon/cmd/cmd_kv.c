/* cmd_kv.c - KV configuration: PUT_KV_CONFIG, GET_KV_CONFIG,
 * DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE (docs/protocol.md §3.2), and
 * NS_KV_SYNC_GET (ours, include/ns/kvsync.h: entries with their versions,
 * tombstones too, for a peer's kvSync). The
 * required namespace and key are checked by the dispatcher. A write takes
 * the store's next version and a delete leaves a tombstone (ns_kv_*_local),
 * whether kvSync is on or not, so a fleet that turns it on later merges by
 * the real order of its writes; the answers are Java's either way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "ns/body.h"
#include "ns/clock.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/kvsync.h"
#include "ns/strpairs.h"

/* A KV write: namespace, key and (for PUT) value, copied. */
typedef struct {
    char *ns, *key, *val;
} kv_write_t;

static void kv_write_free(void *p)
{
    kv_write_t *k = p;
    free(k->ns);
    free(k->key);
    free(k->val);
}

static int put_apply(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    kv_write_t *k = (kv_write_t *)w->payload;
    return ns_kv_put_local(txn, k->ns, k->key, k->val, ns_clock_wall_ms(), NULL);
}

static int del_apply(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    kv_write_t *k = (kv_write_t *)w->payload;
    return ns_kv_del_local(txn, k->ns, k->key, ns_clock_wall_ms(), NULL);
}

static const ns_wreq_ops_t put_ops = {put_apply, NULL, kv_write_free};
static const ns_wreq_ops_t del_ops = {del_apply, NULL, kv_write_free};

static int submit_kv(ns_req_t *req, const ns_wreq_ops_t *ops, const char *val)
{
    ns_wreq_t *w = ns_wreq_new(ops, sizeof(kv_write_t));
    if (w == NULL)
        return NS_ENOMEM;
    kv_write_t *k = (kv_write_t *)w->payload;
    k->ns = strdup(ns_req_str(req, "namespace"));
    k->key = strdup(ns_req_str(req, "key"));
    k->val = val ? strdup(val) : NULL;
    if (!k->ns || !k->key || (val && !k->val)) {
        ns_wreq_free(w);
        return NS_ENOMEM;
    }
    ns_req_submit(req, w);
    return NS_OK;
}

int ns_cmd_put_kv_config(ns_req_t *req)
{
    /* Java stores a null value that GET cannot see; we store "" instead. */
    const char *val = ns_req_str(req, "value");
    return submit_kv(req, &put_ops, val ? val : "");
}

int ns_cmd_delete_kv_config(ns_req_t *req)
{
    return submit_kv(req, &del_ops, NULL);
}

int ns_cmd_get_kv_config(ns_req_t *req)
{
    const char *ns = ns_req_str(req, "namespace"), *key = ns_req_str(req, "key");
    ns_rsp_t rsp = {0};
    ns_slice_t v;
    int rc = ns_kv_get(req->txn, ns, key, &v);
    if (rc == NS_ENOTFOUND)
        return ns_failf(req, NS_RSP_QUERY_NOT_FOUND, "No config item, Namespace: %s Key: %s", ns,
                        key);
    if (rc != NS_OK)
        return rc;
    char *val = strndup((const char *)v.ptr, v.len);
    if (val == NULL)
        return NS_ENOMEM;
    rsp.has_ext = true; /* Java always answers with a (maybe empty) response header */
    ns_rsp_ext(&rsp, "value", val);
    ns_reply(&req->to, &rsp);
    free(val);
    return NS_OK;
}

static int list_cb(const char *key, const char *val, size_t len, void *ctx)
{
    return ns_strpairs_add(ctx, key, val, len);
}

/* Appends namespace ns as a KVTable body to out (NS_ENOTFOUND if absent). */
int ns_kv_table_body(ns_txn_t *txn, const char *ns, ns_buf_t *out)
{
    ns_strpairs_t l = NS_STRPAIRS_INIT;
    int rc = ns_kv_iter(txn, ns, list_cb, &l);
    if (rc == NS_OK)
        rc = ns_json_kvtable_encode(out, (const char *const *)l.a, (const char *const *)l.b, l.n);
    ns_strpairs_free(&l);
    return rc;
}

int ns_cmd_get_kvlist_by_namespace(ns_req_t *req)
{
    const char *ns = ns_req_str(req, "namespace");
    ns_buf_t *body = &req->loop->scratch;
    ns_buf_reset(body);
    int rc = ns_kv_table_body(req->txn, ns, body);
    if (rc == NS_ENOTFOUND)
        return ns_failf(req, NS_RSP_QUERY_NOT_FOUND, "No config item, Namespace: %s", ns);
    return ns_cmd_reply_body(req, rc, body);
}

/* The state of each key asked for, from the read snapshot: a peer's kvSync
 * pull. Tombstones are shown here and nowhere else. */
int ns_cmd_kv_sync_get(ns_req_t *req)
{
    ns_kvsync_entry_t *keys = NULL;
    size_t n = 0;
    ns_buf_t body = NS_BUF_INIT;
    int rc = ns_kvsync_keys_decode(req->cmd->body, req->cmd->body_len, &keys, &n);
    if (rc == NS_EINVAL)
        rc = ns_fail(&req->to, NS_RSP_INVALID_PARAMETER,
                     "body: {\"entries\":[[namespace, key], ...]}, 1 to 64 keys");
    for (size_t i = 0; rc == NS_OK && i < n; i++) {
        ns_kvsync_entry_t *e = &keys[i];
        ns_slice_t v = {NULL, 0};
        int src = ns_kv_state_get(req->txn, e->ns, e->key, &e->ver, &v);
        if (src == NS_OK || src == NS_ENOTFOUND) {
            e->state = src == NS_ENOTFOUND ? NS_KVSYNC_ABSENT
                       : e->ver.deleted    ? NS_KVSYNC_DELETED
                                           : NS_KVSYNC_VALUE;
            e->value = (char *)v.ptr; /* borrowed from the txn; not freed below */
            rc = ns_kvsync_reply_entry(&body, i == 0, e, v.len);
            e->value = NULL;
        } else {
            rc = src;
        }
    }
    rc = rc ? rc : ns_kvsync_reply_end(&body, n > 0);
    rc = ns_cmd_reply_body(req, rc, &body);
    ns_buf_free(&body);
    ns_kvsync_entries_free(keys, n);
    return rc;
}
