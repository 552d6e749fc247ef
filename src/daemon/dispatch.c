/* dispatch.c - the request table and the one wrapper around every handler.
 *
 * A request is a row: code, name, read/write, handler. The wrapper does the
 * cross-cutting work: unknown codes, who may send the request (authMode,
 * auth.h: the row's auth column), the read transaction of read rows,
 * timing and slow-request logging. Handlers read their arguments, call the
 * store (reads) or queue a write, and reply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "auth.h"
#include "server.h"

typedef enum { NS_CMD_READ, NS_CMD_WRITE } ns_cmd_kind_t;

typedef struct {
    int code;
    const char *name;
    ns_cmd_kind_t kind;
    ns_handler_fn handler;
    ns_auth_need_t auth; /* what authMode asks of the sender (auth.h) */
} ns_cmd_row_t;

/* Write rows queue their mutation on the writer and reply after commit;
 * the ones that only touch liveness (heartbeats) are reads of the store. */
static const ns_cmd_row_t cmd_table[] = {
    {NS_REQ_PUT_KV_CONFIG, "PUT_KV_CONFIG", NS_CMD_WRITE, ns_cmd_put_kv_config, NS_NEED_ADMIN},
    {NS_REQ_GET_KV_CONFIG, "GET_KV_CONFIG", NS_CMD_READ, ns_cmd_get_kv_config, NS_NEED_READ},
    {NS_REQ_DELETE_KV_CONFIG, "DELETE_KV_CONFIG", NS_CMD_WRITE, ns_cmd_delete_kv_config,
     NS_NEED_ADMIN},
    {NS_REQ_REGISTER_BROKER, "REGISTER_BROKER", NS_CMD_READ, ns_cmd_register_broker,
     NS_NEED_BROKER_NAMED},
    {NS_REQ_UNREGISTER_BROKER, "UNREGISTER_BROKER", NS_CMD_WRITE, ns_cmd_unregister_broker,
     NS_NEED_BROKER_NAMED},
    {NS_REQ_GET_ROUTEINFO_BY_TOPIC, "GET_ROUTEINFO_BY_TOPIC", NS_CMD_READ,
     ns_cmd_get_routeinfo_by_topic, NS_NEED_READ},
    {NS_REQ_GET_BROKER_CLUSTER_INFO, "GET_BROKER_CLUSTER_INFO", NS_CMD_READ,
     ns_cmd_get_broker_cluster_info, NS_NEED_READ},
    {NS_REQ_WIPE_WRITE_PERM_OF_BROKER, "WIPE_WRITE_PERM_OF_BROKER", NS_CMD_WRITE,
     ns_cmd_wipe_write_perm_of_broker, NS_NEED_ADMIN},
    {NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER", NS_CMD_READ,
     ns_cmd_get_all_topic_list, NS_NEED_READ},
    {NS_REQ_DELETE_TOPIC_IN_NAMESRV, "DELETE_TOPIC_IN_NAMESRV", NS_CMD_WRITE,
     ns_cmd_delete_topic_in_namesrv, NS_NEED_ADMIN},
    {NS_REQ_REGISTER_TOPIC_IN_NAMESRV, "REGISTER_TOPIC_IN_NAMESRV", NS_CMD_WRITE,
     ns_cmd_register_topic_in_namesrv, NS_NEED_BROKER_TOPIC},
    {NS_REQ_GET_KVLIST_BY_NAMESPACE, "GET_KVLIST_BY_NAMESPACE", NS_CMD_READ,
     ns_cmd_get_kvlist_by_namespace, NS_NEED_READ},
    {NS_REQ_GET_TOPICS_BY_CLUSTER, "GET_TOPICS_BY_CLUSTER", NS_CMD_READ,
     ns_cmd_get_topics_by_cluster, NS_NEED_READ},
    {NS_REQ_GET_SYSTEM_TOPIC_LIST_FROM_NS, "GET_SYSTEM_TOPIC_LIST_FROM_NS", NS_CMD_READ,
     ns_cmd_get_system_topic_list, NS_NEED_READ},
    {NS_REQ_GET_UNIT_TOPIC_LIST, "GET_UNIT_TOPIC_LIST", NS_CMD_READ, ns_cmd_get_unit_topic_list,
     NS_NEED_READ},
    {NS_REQ_GET_HAS_UNIT_SUB_TOPIC_LIST, "GET_HAS_UNIT_SUB_TOPIC_LIST", NS_CMD_READ,
     ns_cmd_get_has_unit_sub_topic_list, NS_NEED_READ},
    {NS_REQ_GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST", NS_CMD_READ,
     ns_cmd_get_has_unit_sub_ununit_topic_list, NS_NEED_READ},
    {NS_REQ_UPDATE_NAMESRV_CONFIG, "UPDATE_NAMESRV_CONFIG", NS_CMD_WRITE,
     ns_cmd_update_namesrv_config, NS_NEED_ADMIN},
    {NS_REQ_GET_NAMESRV_CONFIG, "GET_NAMESRV_CONFIG", NS_CMD_READ, ns_cmd_get_namesrv_config,
     NS_NEED_READ},
    {NS_REQ_QUERY_DATA_VERSION, "QUERY_DATA_VERSION", NS_CMD_READ, ns_cmd_query_data_version,
     NS_NEED_READ},
    {NS_REQ_ADD_WRITE_PERM_OF_BROKER, "ADD_WRITE_PERM_OF_BROKER", NS_CMD_WRITE,
     ns_cmd_add_write_perm_of_broker, NS_NEED_ADMIN},
    {NS_REQ_GET_BROKER_MEMBER_GROUP, "GET_BROKER_MEMBER_GROUP", NS_CMD_READ,
     ns_cmd_get_broker_member_group, NS_NEED_READ},
    {NS_REQ_BROKER_HEARTBEAT, "BROKER_HEARTBEAT", NS_CMD_READ, ns_cmd_broker_heartbeat,
     NS_NEED_BROKER_NAMED},
    {NS_REQ_NS_USER_ADD, "NS_USER_ADD", NS_CMD_WRITE, ns_cmd_user_add, NS_NEED_USERS},
    {NS_REQ_NS_USER_UPDATE, "NS_USER_UPDATE", NS_CMD_WRITE, ns_cmd_user_update, NS_NEED_USERS},
    {NS_REQ_NS_USER_DELETE, "NS_USER_DELETE", NS_CMD_WRITE, ns_cmd_user_delete, NS_NEED_USERS},
    {NS_REQ_NS_USER_LIST, "NS_USER_LIST", NS_CMD_READ, ns_cmd_user_list, NS_NEED_USERS},
};

#define SLOW_REQUEST_MS 100

static const ns_cmd_row_t *find_row(int code)
{
    for (size_t i = 0; i < sizeof cmd_table / sizeof cmd_table[0]; i++)
        if (cmd_table[i].code == code)
            return &cmd_table[i];
    return NULL;
}

int ns_read_begin(ns_server_t *srv, ns_txn_t **txn)
{
    if (srv->rtxn_users == 0) {
        int rc = ns_txn_read_renew(srv->store, &srv->rtxn);
        if (rc != NS_OK)
            return rc;
    }
    srv->rtxn_users++;
    *txn = srv->rtxn;
    return NS_OK;
}

void ns_read_end(ns_server_t *srv)
{
    if (--srv->rtxn_users == 0)
        ns_txn_read_reset(srv->rtxn);
}

uint64_t ns_now_ms(ns_server_t *srv)
{
    return uv_now(srv->loop);
}

int64_t ns_wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

void ns_dispatch(ns_server_t *srv, ns_conn_t *conn, const ns_cmd_t *cmd)
{
    ns_req_t req = {srv, conn, cmd, NULL,
                    {conn, cmd->opaque, cmd->serialize_type, (cmd->flag & NS_FLAG_ONEWAY) != 0}};
    srv->requests++;
    if (cmd->flag & NS_FLAG_RESPONSE) {
        NS_LOG_DEBUG("conn %s: unexpected response frame (opaque %d) dropped", ns_conn_peer(conn),
                     cmd->opaque);
        return;
    }
    const ns_cmd_row_t *row = find_row(cmd->code);
    if (row == NULL) {
        char remark[64];
        snprintf(remark, sizeof remark, " request type %d not supported", cmd->code);
        NS_LOG_DEBUG("conn %s: %s", ns_conn_peer(conn), remark);
        ns_reply_code(&req.to, NS_RSP_REQUEST_CODE_NOT_SUPPORTED, remark);
        return;
    }
    uint64_t t0 = uv_hrtime();
    int rc = row->kind == NS_CMD_READ ? ns_read_begin(srv, &req.txn) : NS_OK;
    if (rc != NS_OK) {
        NS_LOG_ERROR("%s: cannot open a read transaction: %s", row->name, ns_strerror(rc));
        ns_reply_code(&req.to, NS_RSP_SYSTEM_ERROR, "store unavailable");
    } else if (ns_auth_check(&req, row->name, row->auth)) {
        /* (after the read txn: the user lookup shares its snapshot) */
        row->handler(&req);
    }
    if (req.txn)
        ns_read_end(srv);
    uint64_t ms = (uv_hrtime() - t0) / 1000000;
    if (ms >= SLOW_REQUEST_MS)
        NS_LOG_WARN("conn %s: slow %s took %llu ms", ns_conn_peer(conn), row->name,
                    (unsigned long long)ms);
}

void ns_reply(const ns_reply_to_t *to, const ns_rsp_t *rsp)
{
    if (to->oneway || to->conn == NULL || ns_conn_is_closed(to->conn))
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
    int rc = ns_conn_send(to->conn, &c);
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

void ns_reply_to_hold(ns_reply_to_t *to)
{
    if (to->conn)
        ns_conn_ref(to->conn);
}

void ns_reply_to_release(ns_reply_to_t *to)
{
    if (to->conn)
        ns_conn_unref(to->conn);
    to->conn = NULL;
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

bool ns_req_bool(const ns_req_t *req, const char *key)
{
    const char *v = ns_cmd_ext_get(req->cmd, key);
    return v && strcasecmp(v, "true") == 0;
}

const char *ns_err_remark(int rc)
{
    switch (rc) {
    case NS_EMAPFULL:
        return "store is full: the LMDB map reached mapMaxBytes; nothing was written";
    case NS_ECORRUPT:
        return "store is corrupt; nothing was written";
    case NS_EIO:
        return "store I/O error; nothing was written";
    case NS_ENOMEM:
        return "out of memory";
    default:
        return ns_strerror(rc);
    }
}

static int sop_apply(ns_wop_t *op, ns_txn_t *txn, void *hook_ctx)
{
    ns_sop_t *sop = (ns_sop_t *)op;
    sop->count = 0;
    return sop->run(sop, txn, hook_ctx);
}

static void sop_free(ns_sop_t *sop)
{
    for (int i = 0; i < 3; i++)
        free(sop->s[i]);
    if (sop->free_extra)
        sop->free_extra(sop->extra);
    ns_reply_to_release(&sop->to);
    free(sop);
}

static void sop_done(ns_wop_t *op)
{
    ns_sop_t *sop = (ns_sop_t *)op;
    if (op->rc != NS_OK)
        ns_reply_code(&sop->to, NS_RSP_SYSTEM_ERROR, ns_err_remark(op->rc));
    else if (sop->reply)
        sop->reply(sop);
    else
        ns_reply_code(&sop->to, NS_RSP_SUCCESS, NULL);
    sop_free(sop);
}

void ns_sop_submit(ns_req_t *req, int (*run)(ns_sop_t *, ns_txn_t *, ns_registry_t *),
                   void (*reply)(ns_sop_t *), const char *s0, const char *s1, const char *s2,
                   void *extra, void (*free_extra)(void *))
{
    ns_sop_t *sop = calloc(1, sizeof *sop);
    const char *in[3] = {s0, s1, s2};
    bool ok = sop != NULL;
    for (int i = 0; ok && i < 3; i++)
        if (in[i] && (sop->s[i] = strdup(in[i])) == NULL)
            ok = false;
    if (!ok) {
        if (sop)
            sop_free(sop);
        else if (free_extra)
            free_extra(extra);
        ns_reply_code(&req->to, NS_RSP_SYSTEM_ERROR, "out of memory");
        return;
    }
    sop->op.apply = sop_apply;
    sop->op.done = sop_done;
    sop->srv = req->srv;
    sop->to = req->to;
    ns_reply_to_hold(&sop->to);
    sop->run = run;
    sop->reply = reply;
    sop->extra = extra;
    sop->free_extra = free_extra;
    ns_writer_submit(req->srv->writer, &sop->op);
}
