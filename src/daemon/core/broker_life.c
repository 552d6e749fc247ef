/* broker_life.c - how brokers leave the liveness table, in one module:
 * unregistration when a broker's registration connection closes, eviction
 * of expired brokers, restore of the table at startup (docs/protocol.md
 * §6.6, §6.7), the removal UNREGISTER_BROKER asks for (cmd/cmd_unregister.c)
 * and the notification of a changed smallest broker id that a registration
 * or a removal calls for. Every removal goes through the writer as one
 * ns_wreq_t, fenced as cmd/cmd_broker.c's header describes (the broker id it
 * was decided for; applied in the order the loop saw it).
 * The liveness entry goes when the store says the broker was removed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/clock.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "core/broker_life.h"
#include "core/liveness.h"
#include "core/notify.h"
#include "core/trail.h"

typedef struct {
    char *cluster, *addr, *broker_name;
    int64_t broker_id;
    bool removed;
    ns_minid_change_t *change; /* the 905 this removal calls for, or NULL */
    const char *why;
    int evict; /* NS_M_EVICT_* for evictions, -1 for UNREGISTER_BROKER */
} unreg_op_t;

static void unreg_free(void *p)
{
    unreg_op_t *op = p;
    ns_minid_change_free(op->change);
    free(op->cluster);
    free(op->addr);
    free(op->broker_name);
}

static int unreg_apply(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    unreg_op_t *op = (unreg_op_t *)w->payload;
    op->removed = false;
    ns_minid_change_free(op->change); /* from an attempt of the batch that was undone */
    op->change = NULL;
    int rc = ns_registry_unregister(reg, txn, op->cluster, op->addr, op->broker_name, op->broker_id,
                                    &op->removed, &op->change);
    ns_trail_set_count(w->trail, op->removed);
    return rc;
}

static int unreg_done(ns_wreq_t *w, int rc)
{
    unreg_op_t *op = (unreg_op_t *)w->payload;
    ns_server_t *srv = w->srv;
    if (rc != NS_OK) {
        ns_live_entry_t *e = ns_liveness_get(srv->liveness, op->cluster, op->addr);
        if (e && e->evicting)
            ns_liveness_retry(srv->liveness, e); /* the next scan tries again */
        return rc;
    }
    ns_live_entry_t *e = op->removed ? NULL : ns_liveness_get(srv->liveness, op->cluster, op->addr);
    if (e && e->evicting && op->evict < 0) {
        /* the request named another broker than the one registered there:
         * the address keeps its registration, so its deadline again */
        ns_liveness_retry(srv->liveness, e);
    } else if (e && e->evicting) {
        /* an expiry or a close of what the store no longer holds: nothing
         * left to time */
        ns_liveness_remove(srv->liveness, op->cluster, op->addr);
    }
    if (op->removed) {
        ns_liveness_remove(srv->liveness, op->cluster, op->addr);
        if (op->evict >= 0)
            NS_M_INC(srv->loop.m.evictions[op->evict]);
        else
            NS_M_INC(srv->loop.m.unregistrations);
    }
    if (op->why && op->removed)
        NS_LOG_INFO("broker %s %s (%s) unregistered: %s", op->broker_name ? op->broker_name : "?",
                    op->addr, op->cluster, op->why);
    ns_reply_code(&w->to, NS_RSP_SUCCESS, NULL);
    ns_broker_notify_minid(srv, &op->change);
    return NS_OK;
}

bool ns_broker_is_member(void *ctx, const char *group, const char *addr)
{
    ns_server_t *srv = ctx;
    ns_txn_t *txn = NULL;
    ns_group_rec_t g = {0};
    bool in = false;
    if (ns_read_begin(&srv->loop, &txn) != NS_OK)
        return false;
    if (ns_group_get(txn, group, &g) == NS_OK) {
        for (size_t i = 0; i < g.n_addrs && !in; i++)
            in = strcmp(g.addrs[i].addr, addr) == 0;
        ns_group_rec_free(&g);
    }
    ns_read_end(&srv->loop);
    return in;
}

void ns_broker_notify_minid(ns_server_t *srv, ns_minid_change_t **change)
{
    if (*change && srv->loop.cfg->notify_min_broker_id_changed && srv->notifier)
        ns_notifier_send(srv->notifier, *change);
    else
        ns_minid_change_free(*change);
    *change = NULL;
}

static const ns_wreq_ops_t unreg_ops = {unreg_apply, unreg_done, unreg_free};

ns_wreq_t *ns_broker_unregister_new(const char *cluster, const char *addr, const char *broker_name,
                                    int64_t broker_id, const char *why, int evict)
{
    ns_wreq_t *w = ns_wreq_new(&unreg_ops, sizeof(unreg_op_t));
    unreg_op_t *op = w ? (unreg_op_t *)w->payload : NULL;
    if (op == NULL || !(op->cluster = strdup(cluster)) || !(op->addr = strdup(addr)) ||
        (broker_name && !(op->broker_name = strdup(broker_name)))) {
        ns_wreq_free(w);
        NS_LOG_ERROR("broker %s (%s): cannot unregister: out of memory", addr, cluster);
        return NULL;
    }
    op->broker_id = broker_id;
    op->why = why;
    op->evict = evict;
    return w;
}

void ns_broker_unregister(ns_server_t *srv, ns_live_entry_t *e, const char *why, int evict)
{
    e->evicting = true;
    ns_wreq_t *w =
        ns_broker_unregister_new(e->cluster, e->addr, e->broker_name, e->broker_id, why, evict);
    if (w == NULL)
        ns_liveness_retry(srv->liveness, e);
    else
        ns_wreq_submit(srv, w, NULL);
}

void ns_broker_conn_closed(ns_loop_t *loop, ns_conn_t *conn)
{
    ns_server_t *srv = loop->main; /* the main loop's hook */
    ns_live_entry_t *found[64];
    size_t n;
    if (ns_conn_brokers(conn) == 0)
        return;
    if (srv->loop.stopping) { /* a shutdown is not an unregistration */
        ns_liveness_forget_conn(srv->liveness, conn);
        return;
    }
    size_t gone = 0;
    while ((n = ns_liveness_by_conn(srv->liveness, conn, found, 64)) > 0)
        for (size_t i = 0; i < n; i++, gone++)
            ns_broker_unregister(srv, found[i], "its registration connection closed",
                                 NS_M_EVICT_CONN_CLOSED);
    ns_liveness_forget_conn(srv->liveness, conn);
    /* after the unregisters are queued: a test that sees this line and then
     * a write's answer knows they are committed */
    NS_LOG_INFO("conn %s closed after %d registration(s) over it; %zu broker(s) to unregister",
                ns_conn_peer(conn), ns_conn_brokers(conn), gone);
}

/* The scan came stall_ms later than its period: the loop did not run, so
 * nothing expires now; every broker gets a grace window as after a restart,
 * and the next scan, after the loop has read what waited, decides
 * (core/liveness.c "A stall is not a silence"). */
static void scan_after_stall(ns_server_t *srv, uint64_t now, uint64_t stall_ms, uint64_t period_ms)
{
    int64_t grace = srv->loop.cfg->broker_grace_window_ms;
    size_t n = ns_liveness_grace_all(srv->liveness, now, grace);
    NS_LOG_WARN("event loop stalled for %llu ms (the liveness scan runs every %llu ms): no "
                "broker expires before what waited is read; %zu broker address(es) get "
                "max(brokerGraceWindowMillis %lld ms, their heartbeat timeout) to be heard from",
                (unsigned long long)stall_ms, (unsigned long long)period_ms, n, (long long)grace);
}

void ns_broker_scan(ns_server_t *srv)
{
    ns_live_entry_t *found[256];
    size_t n;
    uint64_t now = ns_now_ms(&srv->loop);
    uint64_t period = uv_timer_get_repeat(&srv->scan_timer);
    uint64_t stall = ns_clock_stall(&srv->scan_last_ms, now, period);
    if (stall > 0) {
        scan_after_stall(srv, now, stall, period);
        return;
    }
    while ((n = ns_liveness_expired(srv->liveness, now, found, 256)) > 0) {
        for (size_t i = 0; i < n; i++) {
            ns_live_entry_t *e = found[i];
            /* the deadline that ran out (e->deadline_ms is now parked at the end) */
            char deadline[40];
            uint64_t hb_deadline = e->last_update_ms + (uint64_t)e->timeout_ms;
            bool on_grace = e->grace_until_ms > hb_deadline;
            uint64_t dl = on_grace ? e->grace_until_ms : hb_deadline;
            ns_format_wall_time(ns_wall_ms() - (int64_t)(now - (dl < now ? dl : now)), deadline,
                                sizeof deadline);
            NS_LOG_WARN("broker %s %s (%s) expired: no heartbeat for %llu ms, deadline %s "
                        "(timeout %lld ms%s, registration #%llu)",
                        e->broker_name, e->addr, e->cluster,
                        (unsigned long long)(now - e->last_update_ms), deadline,
                        (long long)e->timeout_ms,
                        !on_grace              ? ""
                        : e->grace_after_stall ? ", the grace window after a stall"
                                               : ", the grace window after a restart",
                        (unsigned long long)e->generation);
            if (e->conn)
                ns_conn_close(e->conn, "broker expired");
            ns_broker_unregister(srv, e, "heartbeat timeout", NS_M_EVICT_TIMEOUT);
        }
    }
}

typedef struct {
    ns_server_t *srv;
    uint64_t now, grace_until;
    size_t n;
} restore_ctx_t;

static int restore_cb(const ns_live_rec_t *r, void *ctx)
{
    restore_ctx_t *c = ctx;
    if (!ns_liveness_restore(c->srv->liveness, r->cluster, r->addr, r->broker_name, r->broker_id,
                             r->heartbeat_timeout_ms, c->now, c->grace_until))
        return NS_ENOMEM;
    c->n++;
    return 0;
}

int ns_broker_restore(ns_server_t *srv)
{
    ns_txn_t *txn = NULL;
    uint64_t now = ns_now_ms(&srv->loop);
    restore_ctx_t c = {srv, now, now + (uint64_t)srv->loop.cfg->broker_grace_window_ms, 0};
    int rc = ns_txn_begin(srv->loop.store, false, &txn);
    if (rc != NS_OK)
        return rc;
    rc = ns_live_iter(txn, restore_cb, &c);
    size_t topics = 0;
    if (rc == NS_OK)
        rc = ns_route_count(txn, &topics);
    ns_txn_abort(txn);
    if (rc == NS_OK)
        NS_LOG_INFO("restored %zu broker address(es) and %zu routed topic(s) from the store; "
                    "each is kept unseen for max(brokerGraceWindowMillis %lld ms, its "
                    "heartbeatTimeoutMillis)",
                    c.n, topics, (long long)srv->loop.cfg->broker_grace_window_ms);
    return rc;
}

void ns_broker_count_unconfirmed(ns_server_t *srv)
{
    long long n = 0;
    size_t count = ns_liveness_count(srv->liveness);
    for (size_t i = 0; i < count; i++)
        n += ns_liveness_at(srv->liveness, i)->conn == NULL; /* a registration sets conn */
    atomic_store(&srv->unconfirmed, n);
}
