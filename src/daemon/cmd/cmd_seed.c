/* cmd_seed.c - NS_SEED_PAGE (9712, ours, include/ns/seed.h): one page of
 * one section of this server's topology or KV config, from the request's
 * read snapshot, for a peer that seeds its empty store from this one
 * (src/daemon/ops/seed.c). Every page also carries the digest root of the
 * same snapshot and what the asking server judges "in sync" by (uptime,
 * grace window, addresses restored and not registered since). */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "core/server.h"
#include "ns/clock.h"
#include "ns/seed.h"
#include "ns/store.h"

#define PAGE_MAX_BYTES (4u << 20) /* a page's items, whatever the peer asks */

typedef struct {
    ns_buf_t *out;
    size_t limit; /* stop once the body is this long */
    size_t n;     /* items written */
    ns_seed_cursor_t last;
    bool full; /* stopped at the limit: there is a next page */
    int rc;
} page_t;

/* After an item: remember its key; 1 (stop) once the page is full. */
static int item_done(page_t *p, const char *a, const char *b, int rc)
{
    p->n++;
    if (rc == NS_OK) {
        ns_seed_cursor_free(&p->last);
        p->last.a = strdup(a);
        p->last.b = b ? strdup(b) : NULL;
        if (p->last.a == NULL || (b && p->last.b == NULL))
            rc = NS_ENOMEM;
    }
    if (rc != NS_OK) {
        p->rc = rc;
        return 1;
    }
    p->full = p->out->len >= p->limit;
    return p->full ? 1 : 0;
}

static int member_cb(const char *cluster, const char *broker, void *ctx)
{
    page_t *p = ctx;
    int rc = ns_seed_item_begin(p->out, p->n == 0);
    rc = rc ? rc : ns_seed_item_str(p->out, cluster, true);
    rc = rc ? rc : ns_seed_item_str(p->out, broker, false);
    rc = rc ? rc : ns_seed_item_end(p->out);
    return item_done(p, cluster, broker, rc);
}

static int group_cb(ns_group_rec_t *g, void *ctx)
{
    page_t *p = ctx;
    int rc = ns_seed_item_begin(p->out, p->n == 0);
    rc = rc ? rc : ns_seed_item_str(p->out, g->broker_name, true);
    rc = rc ? rc : ns_seed_item_str(p->out, g->cluster, true);
    rc = rc ? rc : ns_seed_item_str(p->out, g->zone_name, true);
    rc = rc ? rc : ns_seed_item_bool(p->out, g->enable_acting_master, true);
    rc = rc ? rc : ns_buf_append_str(p->out, "[");
    for (size_t i = 0; rc == NS_OK && i < g->n_addrs; i++) {
        rc = ns_seed_item_begin(p->out, i == 0);
        rc = rc ? rc : ns_seed_item_int(p->out, g->addrs[i].id, true);
        rc = rc ? rc : ns_seed_item_str(p->out, g->addrs[i].addr, false);
        rc = rc ? rc : ns_seed_item_end(p->out);
    }
    rc = rc ? rc : ns_buf_append_str(p->out, "]");
    rc = rc ? rc : ns_seed_item_end(p->out);
    return item_done(p, g->broker_name, NULL, rc);
}

static int live_cb(const ns_live_rec_t *r, void *ctx)
{
    page_t *p = ctx;
    int rc = ns_seed_item_begin(p->out, p->n == 0);
    rc = rc ? rc : ns_seed_item_str(p->out, r->cluster, true);
    rc = rc ? rc : ns_seed_item_str(p->out, r->addr, true);
    rc = rc ? rc : ns_seed_item_str(p->out, r->broker_name, true);
    rc = rc ? rc : ns_seed_item_int(p->out, r->broker_id, true);
    rc = rc ? rc : ns_seed_item_str(p->out, r->ha_addr, true);
    rc = rc ? rc : ns_seed_item_int(p->out, r->dv.counter, true);
    rc = rc ? rc : ns_seed_item_int(p->out, r->dv.state_version, true);
    rc = rc ? rc : ns_seed_item_int(p->out, r->dv.timestamp, true);
    rc = rc ? rc : ns_seed_item_int(p->out, r->heartbeat_timeout_ms, true);
    rc = rc ? rc : ns_buf_append_str(p->out, "[");
    for (size_t i = 0; rc == NS_OK && i < r->n_filter_servers; i++)
        rc = ns_seed_item_str(p->out, r->filter_servers[i], i + 1 < r->n_filter_servers);
    rc = rc ? rc : ns_buf_append_str(p->out, "]");
    rc = rc ? rc : ns_seed_item_end(p->out);
    return item_done(p, r->cluster, r->addr, rc);
}

static int queue_cb(const char *topic, const ns_queue_data_t *q, void *ctx)
{
    page_t *p = ctx;
    int rc = ns_seed_item_begin(p->out, p->n == 0);
    rc = rc ? rc : ns_seed_item_str(p->out, topic, true);
    rc = rc ? rc : ns_seed_item_str(p->out, q->broker_name, true);
    rc = rc ? rc : ns_seed_item_int(p->out, q->perm, true);
    rc = rc ? rc : ns_seed_item_int(p->out, q->read_queue_nums, true);
    rc = rc ? rc : ns_seed_item_int(p->out, q->write_queue_nums, true);
    rc = rc ? rc : ns_seed_item_int(p->out, q->topic_sys_flag, false);
    rc = rc ? rc : ns_seed_item_end(p->out);
    return item_done(p, topic, q->broker_name, rc);
}

static int kv_cb(const char *ns, const char *key, const char *val, size_t len,
                 const ns_kvver_t *ver, void *ctx)
{
    page_t *p = ctx;
    char v[34];
    ns_kvver_format(ver, v);
    int rc = ns_seed_item_begin(p->out, p->n == 0);
    rc = rc ? rc : ns_seed_item_str(p->out, ns, true);
    rc = rc ? rc : ns_seed_item_str(p->out, key, true);
    rc = rc ? rc : ns_buf_append_json_str(p->out, val, len, true);
    rc = rc ? rc : ns_buf_append_str(p->out, ",");
    rc = rc ? rc : ns_seed_item_str(p->out, v, false);
    rc = rc ? rc : ns_seed_item_end(p->out);
    return item_done(p, ns, key, rc);
}

static int walk(ns_txn_t *t, const ns_seed_request_t *r, page_t *p)
{
    const char *a = r->after.a, *b = r->after.b;
    switch (r->section) {
    case NS_SEED_MEMBERS:
        return ns_cluster_iter_after(t, a, b, member_cb, p);
    case NS_SEED_GROUPS:
        return ns_group_iter_after(t, a, group_cb, p);
    case NS_SEED_LIVE:
        return ns_live_iter_after(t, a, b, live_cb, p);
    case NS_SEED_QUEUES:
        return ns_queue_iter_after(t, a, b, queue_cb, p);
    case NS_SEED_KV:
        return ns_kv_iter_after(t, a, b, kv_cb, p);
    default:
        return NS_EINVAL;
    }
}

int ns_cmd_seed_page(ns_req_t *req)
{
    ns_seed_request_t r;
    ns_seed_info_t info = {{0}, 0, 0, 0, 0};
    ns_digest_sum_t root;
    ns_buf_t body = NS_BUF_INIT;
    ns_server_t *srv = req->loop->main;
    page_t p = {&body, 0, 0, {NULL, NULL}, false, NS_OK};
    int rc = ns_seed_request_decode(req->cmd->body, req->cmd->body_len, &r);
    if (rc == NS_EINVAL)
        return ns_fail(&req->to, NS_RSP_INVALID_PARAMETER,
                       "body: {\"section\":members|groups|live|queues|kv,\"after\":[..],"
                       "\"maxBytes\":N}");
    if (rc != NS_OK)
        return rc;
    size_t cap =
        NS_CMD_REPLY_MAX(req) / 2 < PAGE_MAX_BYTES ? NS_CMD_REPLY_MAX(req) / 2 : PAGE_MAX_BYTES;
    p.limit = (size_t)r.max_bytes < cap ? (size_t)r.max_bytes : cap;
    rc = ns_digest_root(req->txn, &root);
    if (rc == NS_OK) {
        int64_t since = atomic_load(&srv->serving_since_ms);
        ns_digest_hex(&root, info.digest);
        info.leaves = root.count;
        info.uptime_ms = since ? ns_clock_mono_ms() - since : 0;
        info.grace_ms = req->loop->cfg->broker_grace_window_ms;
        info.unconfirmed = atomic_load(&srv->unconfirmed);
        rc = ns_seed_reply_begin(&body, &info);
    }
    if (rc == NS_OK) {
        int wrc = walk(req->txn, &r, &p);
        rc = p.rc ? p.rc : wrc < 0 ? wrc : NS_OK;
    }
    rc = rc ? rc : ns_seed_reply_end(&body, p.full ? &p.last : NULL);
    rc = ns_cmd_reply_body(req, rc, &body);
    ns_buf_free(&body);
    ns_seed_cursor_free(&p.last);
    ns_seed_cursor_free(&r.after);
    return rc;
}
