/* cmd_broker.c - what brokers send to stay registered: REGISTER_BROKER,
 * QUERY_DATA_VERSION, BROKER_HEARTBEAT (docs/protocol.md §3.5, §3.7, §3.8).
 * How brokers leave (eviction of expired brokers, unregistration when a
 * broker's registration connection closes, restore at startup, §6.6, §6.7,
 * and the removal UNREGISTER_BROKER asks for) is core/broker_life.c; the
 * fencing below holds across both files.
 *
 * Fencing, so that an unregister decided for an older registration never
 * removes a newer one (Apache RocketMQ #11043, #5374):
 *  1. the writer applies unregisters and registrations in the order the
 *     loop saw them, so a registration that arrives after an eviction or
 *     close was decided is applied after it and survives;
 *  2. a registration refreshes the broker's liveness entry (timestamp and
 *     connection) the moment it arrives, so while it waits for the writer no
 *     expiry scan can decide to evict it and no close of its old connection
 *     can unregister it;
 *  3. an unchanged registration skips the writer only while the writer is
 *     idle, so it can never overtake a queued unregister;
 *  4. an unregister names the broker id it was decided for; if the address
 *     has registered under another id since (a slave promoted to master),
 *     the registry leaves it alone.
 * The liveness entry goes when the store says the broker was removed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "ns/body.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "cmd/cmd.h"
#include "core/broker_life.h"
#include "core/liveness.h"
#include "core/trail.h"

/* ---- REGISTER_BROKER ---- */

/* The payload of a registration's ns_wreq_t. */
typedef struct {
    ns_conn_t *prev_conn; /* held: the entry's connection before this request */
    bool took_conn;       /* this request moved the entry to its connection */
    char *cluster, *addr, *broker_name, *ha_addr, *zone;
    ns_register_args_t args;
    ns_regbody_t body;
    ns_register_result_t res;
    /* a large body is checked and decoded by the writer, not the loop */
    uint8_t *raw;
    size_t raw_len;
    int64_t crc;
    int version;
    size_t max_inflate;
    bool decoded;
    uint32_t fp;       /* fingerprint of the request (header fields and body) */
    char remark[160];  /* why the body was refused, when it was */
    char peer[64];     /* for the log line */
    const char *kind;  /* "new", "re-registered after restart" (or a stall), "known" */
    char dropped[200]; /* topics left out for their names (ns/names.h), or "" */
    /* the admin trail record of an identity conflict, if the writer finds
     * one (NULL: adminAuditRetention 0); written only then */
    ns_trail_t *conflict_trail;
} reg_op_t;

/* The INFO line of a registration that changed the store. */
static void log_registered(const reg_op_t *op, bool dv_changed)
{
    if (strcmp(op->kind, "known") == 0 && !dv_changed)
        return;
    NS_LOG_INFO("conn %s: broker %s %s (%s, id %lld) registered: %s%s", op->peer, op->broker_name,
                op->addr, op->cluster, (long long)op->args.broker_id,
                strcmp(op->kind, "known") == 0 ? "data version changed" : op->kind,
                strcmp(op->kind, "known") != 0 && dv_changed ? ", data version changed" : "");
}

/* Bodies up to this size (a few dozen topics, JSON or compressed) are
 * decoded on the loop thread, where an unchanged re-registration can be
 * answered without the writer; larger ones are decoded by the writer so
 * reads are not held up (a 10,000-topic compressed body is only ~25 KB but
 * takes ~5 ms to decode and check). Through the writer an unchanged
 * registration still writes nothing: LMDB commits no untouched page. */
#define LOOP_DECODE_MAX_BYTES (4 * 1024)

/* CRC-32 of everything that decides a registration: version, extFields and
 * body. A broker re-registering with the same bytes while the store has not
 * changed since those bytes were found to change nothing gets the same
 * answer without decoding the body again. */
static uint32_t request_fingerprint(const ns_cmd_t *cmd)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    uint8_t v[4];
    ns_be32_write(v, (uint32_t)cmd->version);
    crc = crc32(crc, v, 4);
    for (size_t i = 0; i < cmd->n_ext; i++) {
        crc = crc32(crc, (const Bytef *)cmd->ext[i].key, (uInt)cmd->ext[i].key_len + 1);
        crc = crc32(crc, (const Bytef *)cmd->ext[i].val, (uInt)cmd->ext[i].val_len + 1);
    }
    if (cmd->body_len)
        crc = crc32(crc, cmd->body, (uInt)cmd->body_len);
    return (uint32_t)crc;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Remembers that the request with fingerprint fp changed nothing, and the
 * reply it got, as of the writer's current done count. */
static void remember_unchanged(ns_server_t *srv, ns_live_entry_t *e, uint32_t fp,
                               const ns_register_result_t *res)
{
    free(e->fp_master);
    free(e->fp_ha);
    e->fp_master = dup_or_null(res->master_addr);
    e->fp_ha = dup_or_null(res->ha_addr);
    e->fp_valid = (res->master_addr == NULL || e->fp_master) && (res->ha_addr == NULL || e->fp_ha);
    e->fp = fp;
    e->fp_gen = ns_writer_done_count(srv->writer);
}

static void reg_op_free(void *p)
{
    reg_op_t *op = p;
    free(op->cluster);
    free(op->addr);
    free(op->broker_name);
    free(op->ha_addr);
    free(op->zone);
    ns_regbody_free(&op->body);
    ns_register_result_free(&op->res);
    free(op->raw);
    ns_trail_free(op->conflict_trail);
    if (op->prev_conn)
        ns_conn_unref(op->prev_conn);
}

/* Replies SUCCESS with the RegisterBrokerResult: masterAddr/haServerAddr in
 * the header, the ORDER_TOPIC_CONFIG KV table as body when it exists. txn is
 * the caller's read transaction, or NULL to use the loop's for the reply. */
static void reply_registered(ns_server_t *srv, const ns_reply_to_t *to,
                             const ns_register_result_t *res, ns_txn_t *txn, const char *remark)
{
    ns_rsp_t rsp = {0};
    bool own_txn = false;
    rsp.has_ext = true;
    rsp.remark = remark && remark[0] ? remark : NULL;
    if (res->ha_addr)
        ns_rsp_ext(&rsp, "haServerAddr", res->ha_addr);
    if (res->master_addr)
        ns_rsp_ext(&rsp, "masterAddr", res->master_addr);
    ns_buf_t *body = &srv->loop.scratch;
    ns_buf_reset(body);
    if (srv->loop.cfg->return_order_topic_config_to_broker && txn == NULL &&
        ns_read_begin(&srv->loop, &txn) == NS_OK)
        own_txn = true;
    if (txn && srv->loop.cfg->return_order_topic_config_to_broker &&
        ns_kv_table_body(txn, NS_ORDER_TOPIC_CONFIG_NS, body) == NS_OK) {
        rsp.body = body->data;
        rsp.body_len = body->len;
    }
    ns_reply(to, &rsp);
    if (own_txn)
        ns_read_end(&srv->loop);
}

/* Checks the CRC and decodes the body; a refusal is described in remark.
 * Returns true when the body is good. */
static bool body_check(reg_op_t *op, const uint8_t *p, size_t n, int64_t crc, int version,
                       size_t max_inflate)
{
    if (crc != 0 && (int64_t)ns_body_crc32(p, n) != crc) {
        snprintf(op->remark, sizeof op->remark, "crc32 not match");
        return false;
    }
    int rc = ns_regbody_decode(p, n, version, max_inflate, &op->body);
    if (rc != NS_OK) {
        snprintf(op->remark, sizeof op->remark, "Failed to decode RegisterBrokerBody: %s%s",
                 ns_strerror(rc), rc == NS_ETOOBIG ? " (maxInflateBytes)" : "");
        return false;
    }
    /* Java's default DataVersion: counter 0, stateVersion 0, the time the
     * body was decoded (the request's arrival here) */
    if (op->body.dv_timestamp_absent)
        op->body.data_version.timestamp = op->args.now_ms;
    char first[140];
    size_t n_bad = ns_regbody_drop_bad_names(&op->body, first, sizeof first);
    if (n_bad)
        snprintf(op->dropped, sizeof op->dropped, "%zu topic(s) not registered: %s%s", n_bad, first,
                 n_bad > 1 ? ", ..." : "");
    return true;
}

static int reg_apply(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    reg_op_t *op = (reg_op_t *)w->payload;
    ns_register_result_free(&op->res);
    if (op->raw && !op->decoded) {
        op->decoded = true;
        if (!body_check(op, op->raw, op->raw_len, op->crc, op->version, op->max_inflate))
            return NS_OK; /* refused before touching the store */
        free(op->raw);
        op->raw = NULL;
    }
    if (op->remark[0])
        return NS_OK;
    int rc = ns_registry_register(reg, txn, &op->args, &op->res);
    /* an identity conflict is recorded with the registration's effect */
    if (rc == NS_OK && op->res.identity != NS_IDENTITY_OK)
        rc = ns_trail_write(txn, op->conflict_trail, op->res.identity_rejected ? "refused" : "ok",
                            op->res.identity_rejected ? NS_RSP_SYSTEM_ERROR : NS_RSP_SUCCESS,
                            "broker identity conflict", op->res.identity_detail);
    return rc;
}

_Static_assert(NS_IDENTITY_KINDS <= NS_M_IDENTITY_KINDS, "raise NS_M_IDENTITY_KINDS");

/* Main loop: an identity conflict the registration ran into, logged with
 * both sides and counted; with brokerConflict=reject it was refused. */
static void note_identity(ns_server_t *srv, const reg_op_t *op)
{
    NS_M_INC(srv->loop.m.identity_conflicts[op->res.identity]);
    NS_LOG_WARN("conn %s: REGISTER_BROKER %s (%s, %s, id %lld): broker identity conflict %s%s: %s",
                op->peer, op->broker_name, op->addr, op->cluster, (long long)op->args.broker_id,
                ns_identity_conflict_name(op->res.identity),
                op->res.identity_rejected ? ", refused (brokerConflict=reject)"
                                          : ", registered as Java would (brokerConflict=warn)",
                op->res.identity_detail ? op->res.identity_detail : "");
}

static int reg_done(ns_wreq_t *w, int rc)
{
    reg_op_t *op = (reg_op_t *)w->payload;
    ns_server_t *srv = w->srv;
    bool refused = rc != NS_OK || op->res.failed || op->remark[0] || op->res.identity_rejected;
    if (op->took_conn && refused) {
        /* refused: the broker stays bound to its previous connection */
        ns_live_entry_t *e = ns_liveness_get(srv->liveness, op->cluster, op->addr);
        if (e && e->conn == w->to.conn) {
            e->conn = op->prev_conn && !ns_conn_is_closed(op->prev_conn) ? op->prev_conn : NULL;
            if (op->prev_conn && e->conn == NULL && !e->evicting)
                ns_broker_unregister(srv, e, "its registration connection closed",
                                     NS_M_EVICT_CONN_CLOSED);
        }
    }
    if (rc != NS_OK)
        return rc;
    if (op->remark[0]) {
        NS_LOG_WARN("REGISTER_BROKER %s (%s): %s", op->broker_name, op->addr, op->remark);
        return ns_remark(&w->to, NS_EINVAL, op->remark);
    }
    if (op->res.failed) {
        NS_LOG_WARN("conn %s: REGISTER_BROKER %s (%s): refused: a one-topic increment from a "
                    "broker that never did a full registration",
                    op->peer, op->broker_name, op->addr);
        return ns_remark(&w->to, NS_EINVAL, "register broker failed");
    }
    if (op->res.identity != NS_IDENTITY_OK)
        note_identity(srv, op);
    if (op->res.identity_rejected)
        return ns_remark(&w->to, NS_EINVAL,
                         "broker identity conflict: refused (brokerConflict=reject)");
    if (op->res.conflict) {
        ns_liveness_remove(srv->liveness, op->cluster, op->addr);
        reply_registered(srv, &w->to, &op->res, NULL, op->dropped);
        return NS_OK;
    }
    if (op->res.dv_changed)
        NS_M_INC(srv->loop.m.reg_changed);
    else
        NS_M_INC(srv->loop.m.reg_unchanged);
    ns_conn_t *conn = w->to.conn; /* the request's: never NULL (request.h) */
    ns_live_entry_t *e = ns_liveness_register(srv->liveness, op->cluster, op->addr, op->broker_name,
                                              op->args.broker_id, op->args.heartbeat_timeout_ms,
                                              conn, ns_now_ms(&srv->loop));
    ns_conn_note_broker(conn);
    if (op->dropped[0])
        NS_LOG_WARN("REGISTER_BROKER %s (%s): %s", op->broker_name, op->addr, op->dropped);
    log_registered(op, op->res.dv_changed);
    reply_registered(srv, &w->to, &op->res, NULL, op->dropped);
    ns_broker_notify_minid(srv, &op->res.minid_change);
    /* registered over a connection that closed meanwhile: it is gone */
    if (e && ns_conn_is_closed(conn))
        ns_broker_unregister(srv, e, "its connection closed during registration",
                             NS_M_EVICT_CONN_CLOSED);
    return NS_OK;
}

static const ns_wreq_ops_t reg_ops = {reg_apply, reg_done, reg_op_free};

/* Header fields into op (the required ones the dispatcher checked). */
static int reg_header(ns_req_t *req, reg_op_t *op)
{
    const char *cluster = ns_req_str(req, "clusterName"), *addr = ns_req_str(req, "brokerAddr");
    const char *name = ns_req_str(req, "brokerName"), *ha = ns_req_str(req, "haServerAddr");
    const char *zone = ns_req_str(req, "__ZONE_NAME");
    op->cluster = strdup(cluster);
    op->addr = strdup(addr);
    op->broker_name = strdup(name);
    op->ha_addr = strdup(ha ? ha : "");
    op->zone = zone ? strdup(zone) : NULL;
    if (!op->cluster || !op->addr || !op->broker_name || !op->ha_addr || (zone && !op->zone))
        return NS_ENOMEM;
    ns_register_args_t *a = &op->args;
    a->cluster = op->cluster;
    a->addr = op->addr;
    a->broker_name = op->broker_name;
    a->ha_addr = op->ha_addr;
    a->zone_name = op->zone;
    a->broker_id = ns_req_i64(req, "brokerId", 0);
    a->heartbeat_timeout_ms =
        ns_req_i64(req, "heartbeatTimeoutMillis", NS_DEFAULT_HEARTBEAT_TIMEOUT_MS);
    if (a->heartbeat_timeout_ms <= 0)
        a->heartbeat_timeout_ms = NS_DEFAULT_HEARTBEAT_TIMEOUT_MS;
    a->old_version = ns_req_str(req, "enableActingMaster") == NULL;
    a->enable_acting_master = ns_req_bool(req, "enableActingMaster");
    a->delete_absent_topics = req->loop->cfg->delete_topic_with_broker_registration;
    a->reject_identity_conflicts = strcmp(req->loop->cfg->broker_conflict, "reject") == 0;
    a->audit_retention = req->loop->cfg->audit_retention;
    a->now_ms = ns_wall_ms();
    a->body = &op->body;
    return NS_OK;
}

int ns_cmd_register_broker(ns_req_t *req)
{
    ns_server_t *srv = req->loop->main; /* a main-loop row */
    const ns_cmd_t *cmd = req->cmd;
    ns_wreq_t *w = ns_wreq_new(&reg_ops, sizeof(reg_op_t));
    if (w == NULL)
        return NS_ENOMEM;
    reg_op_t *op = (reg_op_t *)w->payload;
    int rc = reg_header(req, op);
    if (rc != NS_OK)
        goto drop;
    int64_t crc = ns_req_i64(req, "bodyCrc32", 0);
    size_t max_inflate = (size_t)srv->loop.cfg->max_inflate_bytes;
    ns_live_entry_t *e = ns_liveness_get(srv->liveness, op->cluster, op->addr);
    snprintf(op->peer, sizeof op->peer, "%s", ns_req_peer(req));
    /* grace_until_ms: restored at start-up (or on grace after a stall of the
     * loop) and not heard from since */
    op->kind = e == NULL                ? "new"
               : e->grace_until_ms == 0 ? "known"
               : e->grace_after_stall   ? "re-registered after a stall"
                                        : "re-registered after restart";
    op->fp = request_fingerprint(cmd);
    if (e && !e->evicting && e->fp_valid && e->fp == op->fp &&
        ns_writer_pending(srv->writer) == 0 && e->fp_gen == ns_writer_done_count(srv->writer)) {
        /* the very request that changed nothing, and nothing changed since */
        ns_register_result_t same = {.master_addr = e->fp_master, .ha_addr = e->fp_ha};
        NS_M_INC(srv->loop.m.reg_unchanged);
        ns_liveness_register(srv->liveness, op->cluster, op->addr, op->broker_name,
                             op->args.broker_id, op->args.heartbeat_timeout_ms, req->conn,
                             ns_now_ms(&srv->loop));
        ns_conn_note_broker(req->conn);
        reply_registered(srv, &req->to, &same, req->txn, NULL);
        goto drop;
    }
    if (cmd->body_len > LOOP_DECODE_MAX_BYTES) {
        if ((op->raw = malloc(cmd->body_len)) == NULL) {
            rc = NS_ENOMEM;
            goto drop;
        }
        memcpy(op->raw, cmd->body, cmd->body_len);
        op->raw_len = cmd->body_len;
        op->crc = crc;
        op->version = cmd->version;
        op->max_inflate = max_inflate;
    } else if (!body_check(op, cmd->body, cmd->body_len, crc, cmd->version, max_inflate)) {
        NS_LOG_WARN("conn %s: REGISTER_BROKER %s: %s", ns_conn_peer(req->conn), op->broker_name,
                    op->remark);
        rc = ns_remarkf(req, NS_EINVAL, "%s", op->remark);
        goto drop;
    } else if (e && !e->evicting && ns_writer_pending(srv->writer) == 0 &&
               ns_registry_unchanged(req->txn, &op->args, &op->res)) {
        log_registered(op, false);
        /* An unchanged re-registration costs no write (only when the writer
         * is idle, so it cannot overtake a queued unregister). */
        e = ns_liveness_register(srv->liveness, op->cluster, op->addr, op->broker_name,
                                 op->args.broker_id, op->args.heartbeat_timeout_ms, req->conn,
                                 ns_now_ms(&srv->loop));
        /* not for a body without a timestamp: the same bytes later mean
         * another DataVersion (the time of that registration) */
        if (e && !op->body.dv_timestamp_absent)
            remember_unchanged(srv, e, op->fp, &op->res);
        NS_M_INC(srv->loop.m.reg_unchanged);
        ns_conn_note_broker(req->conn);
        reply_registered(srv, &req->to, &op->res, req->txn, op->dropped);
        goto drop;
    }
    /* Fencing rule 2: the broker is alive and speaks over this connection;
     * an expiry scan or a close of its previous connection while this
     * registration waits for the writer must not unregister it (§6.7). */
    if (e) {
        if (e->conn != req->conn) {
            op->prev_conn = e->conn;
            if (op->prev_conn)
                ns_conn_ref(op->prev_conn);
            op->took_conn = true;
        }
        e->conn = req->conn;
        ns_liveness_heartbeat(srv->liveness, op->cluster, op->addr, ns_now_ms(&srv->loop));
    }
    w->op.bytes = sizeof *op + cmd->body_len; /* writerQueueMaxBytes (budget.h) */
    /* REGISTER_BROKER's row keeps no trail record: one is made here for
     * the identity conflict the writer may find, written only then */
    op->conflict_trail =
        ns_trail_new(cmd, ns_req_peer(req), srv->loop.cfg->admin_audit_retention, false);
    ns_req_submit(req, w);
    return NS_OK;
drop:
    ns_wreq_free(w);
    return rc;
}

/* ---- heartbeats ---- */

/* clusterName and brokerAddr are required by the row (Java's null-key
 * SYSTEM_ERROR, dispatch.c); brokerName Java never reads. */
int ns_cmd_broker_heartbeat(ns_req_t *req)
{
    ns_liveness_t *lv = req->loop->main->liveness;
    ns_live_entry_t *e = req->self_looked ? req->self_live
                                          : ns_liveness_get(lv, ns_req_str(req, "clusterName"),
                                                            ns_req_str(req, "brokerAddr"));
    if (e != NULL)
        ns_liveness_touch(lv, e, ns_now_ms(req->loop));
    NS_M_INC(req->loop->m.heartbeats);
    ns_reply_code(&req->to, NS_RSP_SUCCESS, NULL);
    return NS_OK;
}

int ns_cmd_query_data_version(ns_req_t *req)
{
    const char *cluster = ns_req_str(req, "clusterName"), *addr = ns_req_str(req, "brokerAddr");
    ns_live_rec_t rec = {0};
    ns_dataversion_t dv = {0, 0, 0};
    ns_rsp_t rsp = {0};
    rsp.has_ext = true;
    bool have_body = req->cmd->body_len > 0 &&
                     ns_json_dataversion_decode(req->cmd->body, req->cmd->body_len, &dv) == NS_OK;
    int rc = ns_live_get(req->txn, cluster, addr, &rec); /* both required by the row */
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        return rc;
    bool known = rc == NS_OK;
    bool changed = !known || !have_body || !ns_dataversion_equal(&rec.dv, &dv);
    if (known && req->speaks_for) { /* only the broker itself keeps it alive (auth.h) */
        ns_liveness_heartbeat(req->loop->main->liveness, cluster, addr, ns_now_ms(req->loop));
        NS_M_INC(req->loop->m.heartbeats);
    }
    ns_rsp_ext(&rsp, "changed", changed ? "true" : "false");
    ns_buf_t *body = &req->loop->scratch;
    ns_buf_reset(body);
    if (known && ns_json_dataversion_encode(body, &rec.dv) == NS_OK) {
        rsp.body = body->data;
        rsp.body_len = body->len;
    }
    ns_reply(&req->to, &rsp);
    ns_live_rec_free(&rec);
    return NS_OK;
}
