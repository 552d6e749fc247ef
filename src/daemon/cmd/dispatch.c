/* dispatch.c - the request table and the one wrapper around every handler
 * (the contract is in dispatch.h).
 *
 * The wrapper does the cross-cutting work: unknown codes, who may send the
 * request (authMode: the row's auth column, auth.h), required header
 * fields, the read transaction, mapping a handler's NS_E* to the RocketMQ
 * reply, whether the caller speaks for the broker address a row names
 * (NS_ROW_SELF_*, in every authMode), the admin-trail record of the rows
 * that write one (NS_ROW_TRAIL:
 * the handler's write takes it, ns_req_submit; a refusal gets its own),
 * timing and slow-request logging; and, for write operations, holding the
 * reply target until the writer committed.
 *
 * A request's row is found once, by a direct index on its code
 * (ns_dispatch_row), and travels with it: an I/O loop that forwards the
 * request to the main loop forwards the row too. */
#include "cmd/dispatch.h"

#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/auth.h"
#include "core/trail_refused.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "ns/names.h"
#include "net/budget.h"

#define NS_ROW_ANY_LOOP 0x1u /* served by the loop that owns the connection */
#define NS_ROW_EXT 0x2u      /* Java answers with a (maybe empty) header object */
/* Writes an admin-trail record (trail.h) of its effect or of its refusal by
 * the handler; _BODY with the request's body in it. Two bits holding the
 * ns_req_trail_t the request gets. */
#define NS_ROW_TRAIL_SHIFT 2
#define NS_ROW_TRAIL ((unsigned)NS_REQ_TRAIL_FIELDS << NS_ROW_TRAIL_SHIFT)
#define NS_ROW_TRAIL_BODY ((unsigned)NS_REQ_TRAIL_BODY << NS_ROW_TRAIL_SHIFT)
/* Names a broker address (clusterName, brokerAddr) that only a caller
 * speaking for it may act for (a broker acts only for itself): two bits
 * holding the ns_auth_self_t the auth check applies (auth.h). */
#define NS_ROW_SELF_SHIFT 4
#define NS_ROW_SELF_ACT ((unsigned)NS_SELF_ACT << NS_ROW_SELF_SHIFT)
#define NS_ROW_SELF_REFRESH ((unsigned)NS_SELF_REFRESH << NS_ROW_SELF_SHIFT)
#define NS_ROW_SELF_CLAIM ((unsigned)NS_SELF_CLAIM << NS_ROW_SELF_SHIFT)
#define NS_ROW_SELF_MASK (3u << NS_ROW_SELF_SHIFT)
/* A reply that grows with the store (lists): not built while replies the
 * clients have not taken hold half of maxUnsentReplyBytes (SYSTEM_BUSY) */
#define NS_ROW_BULK 0x40u

struct ns_cmd_row {
    int code;
    const char *name;
    ns_cmd_kind_t kind;
    unsigned flags;
    const char *need[4]; /* required header fields, NULL-terminated */
    const char *missing; /* remark when one is missing (%s: its name, if present) */
    ns_handler_fn handler;
    ns_auth_need_t auth; /* what authMode asks of the sender (auth.h) */
};

#define ROW(name, kind, flags, auth, fn, missing, ...)                                             \
    {                                                                                              \
        NS_REQ_##name, #name, kind, flags, {__VA_ARGS__}, missing, ns_cmd_##fn, NS_NEED_##auth     \
    }
#define NONE NULL

/* What Java 5.3.3 answers BROKER_HEARTBEAT and QUERY_DATA_VERSION without
 * clusterName or brokerAddr: the NullPointerException its live-table key
 * (BrokerAddrInfo.hashCode) throws on the null field, as
 * NettyRemotingAbstract reports it (exception text, first stack frame).
 * clusterName is looked at first there, as here. */
#define JAVA_NULL_KEY_REMARK                                                                       \
    "java.lang.NullPointerException: Cannot invoke \"String.length()\" because \"this.%s\" is "    \
    "null, org.apache.rocketmq.namesrv.routeinfo.BrokerAddrInfo.hashCode(RouteInfoManager.java:"   \
    "1161)"

/* Heartbeats only touch liveness: reads of the store. REGISTER_BROKER is a
 * write: an unchanged one is answered from the read snapshot, any other
 * goes to the writer. */
static const ns_cmd_row_t cmd_table[] = {
    /* No topic is Java's TOPIC_NOT_EXIST for "null", after needWaitForService */
    ROW(GET_ROUTEINFO_BY_TOPIC, NS_CMD_READ, NS_ROW_ANY_LOOP, READ, get_routeinfo_by_topic, NULL,
        NONE),
    ROW(PUT_KV_CONFIG, NS_CMD_WRITE, NS_ROW_TRAIL, ADMIN, put_kv_config, "namespace or key is null",
        "namespace", "key"),
    ROW(GET_KV_CONFIG, NS_CMD_READ, NS_ROW_EXT, READ, get_kv_config, "namespace or key is null",
        "namespace", "key"),
    ROW(DELETE_KV_CONFIG, NS_CMD_WRITE, NS_ROW_TRAIL, ADMIN, delete_kv_config,
        "namespace or key is null", "namespace", "key"),
    ROW(REGISTER_BROKER, NS_CMD_WRITE, NS_ROW_EXT | NS_ROW_SELF_CLAIM, BROKER_NAMED,
        register_broker, "register broker failed: header field %s is missing", "clusterName",
        "brokerAddr", "brokerName"),
    ROW(UNREGISTER_BROKER, NS_CMD_WRITE, NS_ROW_TRAIL | NS_ROW_SELF_ACT, BROKER_NAMED,
        unregister_broker, "clusterName or brokerAddr is null", "clusterName", "brokerAddr"),
    ROW(GET_BROKER_CLUSTER_INFO, NS_CMD_READ, NS_ROW_BULK, READ, get_broker_cluster_info, NULL,
        NONE),
    ROW(WIPE_WRITE_PERM_OF_BROKER, NS_CMD_WRITE, NS_ROW_TRAIL, ADMIN, wipe_write_perm_of_broker,
        "brokerName is null", "brokerName"),
    ROW(GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NS_CMD_READ, NS_ROW_BULK, READ, get_all_topic_list,
        NULL, NONE),
    ROW(DELETE_TOPIC_IN_NAMESRV, NS_CMD_WRITE, NS_ROW_TRAIL, ADMIN, delete_topic_in_namesrv,
        "topic is null", "topic"),
    /* no topic: Java's SUCCESS (its table throws on the null key, swallowed) */
    ROW(REGISTER_TOPIC_IN_NAMESRV, NS_CMD_WRITE, NS_ROW_TRAIL, BROKER_TOPIC,
        register_topic_in_namesrv, NULL, NONE),
    ROW(GET_KVLIST_BY_NAMESPACE, NS_CMD_READ, NS_ROW_BULK, READ, get_kvlist_by_namespace,
        "namespace is null", "namespace"),
    ROW(GET_TOPICS_BY_CLUSTER, NS_CMD_READ, NS_ROW_BULK, READ, get_topics_by_cluster, NULL, NONE),
    ROW(GET_SYSTEM_TOPIC_LIST_FROM_NS, NS_CMD_READ, NS_ROW_BULK, READ, get_system_topic_list, NULL,
        NONE),
    ROW(GET_UNIT_TOPIC_LIST, NS_CMD_READ, NS_ROW_BULK, READ, get_unit_topic_list, NULL, NONE),
    ROW(GET_HAS_UNIT_SUB_TOPIC_LIST, NS_CMD_READ, NS_ROW_BULK, READ, get_has_unit_sub_topic_list,
        NULL, NONE),
    ROW(GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, NS_CMD_READ, NS_ROW_BULK, READ,
        get_has_unit_sub_ununit_topic_list, NULL, NONE),
    ROW(UPDATE_NAMESRV_CONFIG, NS_CMD_ADMIN, NS_ROW_TRAIL_BODY, ADMIN, update_namesrv_config, NULL,
        NONE),
    ROW(GET_NAMESRV_CONFIG, NS_CMD_ADMIN, 0, READ, get_namesrv_config, NULL, NONE),
    ROW(QUERY_DATA_VERSION, NS_CMD_READ, NS_ROW_SELF_REFRESH, READ, query_data_version,
        JAVA_NULL_KEY_REMARK, "clusterName", "brokerAddr"),
    ROW(ADD_WRITE_PERM_OF_BROKER, NS_CMD_WRITE, NS_ROW_TRAIL, ADMIN, add_write_perm_of_broker,
        "brokerName is null", "brokerName"),
    ROW(GET_BROKER_MEMBER_GROUP, NS_CMD_READ, 0, READ, get_broker_member_group, NULL, NONE),
    ROW(BROKER_HEARTBEAT, NS_CMD_READ, NS_ROW_SELF_ACT, BROKER_NAMED, broker_heartbeat,
        JAVA_NULL_KEY_REMARK, "clusterName", "brokerAddr"),
    ROW(NS_USER_ADD, NS_CMD_WRITE, NS_ROW_TRAIL, USERS, user_add, "userAccessKey is missing",
        "userAccessKey"),
    ROW(NS_USER_UPDATE, NS_CMD_WRITE, NS_ROW_TRAIL, USERS, user_update, "userAccessKey is missing",
        "userAccessKey"),
    ROW(NS_USER_DELETE, NS_CMD_WRITE, NS_ROW_TRAIL, USERS, user_delete, "userAccessKey is missing",
        "userAccessKey"),
    ROW(NS_USER_LIST, NS_CMD_READ, NS_ROW_BULK, USERS, user_list, NULL, NONE),
    ROW(NS_FLEET_DIGEST, NS_CMD_READ, NS_ROW_BULK, READ, fleet_digest, NULL, NONE),
    ROW(NS_KV_SYNC_GET, NS_CMD_READ, NS_ROW_BULK, READ, kv_sync_get, NULL, NONE),
    ROW(NS_SEED_PAGE, NS_CMD_READ, NS_ROW_BULK, READ, seed_page, NULL, NONE),
};

#define SLOW_REQUEST_MS 100
#define N_ROWS (sizeof cmd_table / sizeof cmd_table[0])
_Static_assert(N_ROWS < NS_M_ROW_UNKNOWN, "NS_M_ROWS too small for the request table");

const ns_cmd_row_t *ns_dispatch_by_code[NS_DISPATCH_DIRECT];

/* Before main (no thread runs yet): the direct index from cmd_table. A
 * row that writes records runs on the main loop (run sets the record kind
 * there only). */
__attribute__((constructor)) static void index_rows(void)
{
    for (size_t i = 0; i < N_ROWS; i++) {
        const ns_cmd_row_t *row = &cmd_table[i];
        (void)NS_FAILS_ASSERT(!(row->flags & NS_ROW_ANY_LOOP) ||
                              !(row->flags & (NS_ROW_TRAIL | NS_ROW_TRAIL_BODY)));
        if (row->code >= 0 && row->code < NS_DISPATCH_DIRECT)
            ns_dispatch_by_code[row->code] = row;
    }
}

const ns_cmd_row_t *ns_dispatch_row_far(int code)
{
    for (size_t i = 0; i < N_ROWS; i++)
        if (cmd_table[i].code == code)
            return &cmd_table[i];
    return NULL;
}

const char *ns_dispatch_row_name(int m_row)
{
    if (m_row >= 1 && (size_t)m_row <= N_ROWS)
        return cmd_table[m_row - 1].name;
    return m_row == NS_M_ROW_UNKNOWN ? "UNSUPPORTED" : NULL;
}

/* Fills req->need with the row's required fields; returns the first one
 * the request lacks, or NULL. */
static const char *missing_field(const ns_cmd_row_t *row, ns_req_t *req)
{
    for (size_t i = 0; i < sizeof row->need / sizeof row->need[0] && row->need[i]; i++)
        if ((req->need[i] = ns_cmd_ext_get(req->cmd, row->need[i])) == NULL)
            return row->need[i];
    return NULL;
}

/* A refusal by the handler (its own answer, NS_EREFUSED, or an invalid
 * request, NS_EINVAL) of a row that writes records, whose write did not
 * take the record: recorded in a write of its own, with the reply's code
 * and remark. Failures (memory, store) leave none, as a failed write's
 * record is rolled back with it. */
static void trail_refusal(ns_req_t *req, int rc)
{
    int code;
    const char *remark;
    if (req->trail == NS_REQ_TRAIL_NONE || req->trail_made ||
        (rc != NS_EREFUSED && rc != NS_EINVAL))
        return;
    ns_reply_error_of(&req->to, rc, &code, &remark);
    ns_trail_refused(req, code, remark);
}

/* Runs the row's handler in the wrapper: fields, transaction, errors,
 * admin records. */
static void call(const ns_cmd_row_t *row, ns_req_t *req)
{
    /* who may send it (authMode, auth.h): before anything else is said;
     * with authMode off only the user rows and those naming a broker
     * address are checked (ns_auth_check says yes to the others: not
     * called, its frame costs more than the test) */
    if ((row->auth == NS_NEED_USERS || (row->flags & NS_ROW_SELF_MASK) ||
         ns_auth_mode() != NS_AUTH_OFF) &&
        !ns_auth_check(req, row->name, row->auth,
                       (ns_auth_self_t)((row->flags & NS_ROW_SELF_MASK) >> NS_ROW_SELF_SHIFT)))
        return;
    const char *missing = missing_field(row, req);
    int rc = NS_OK;
    if (missing) {
        char remark[256];
        const char *at = strstr(row->missing, "%s"); /* where the field's name goes */
        if (at)
            snprintf(remark, sizeof remark, "%.*s%s%s", (int)(at - row->missing), row->missing,
                     missing, at + 2);
        else
            snprintf(remark, sizeof remark, "%s", row->missing);
        ns_reply_error(&req->to, ns_remark(&req->to, NS_EINVAL, remark));
        return;
    }
    if (row->kind != NS_CMD_ADMIN && (rc = ns_read_begin(req->loop, &req->txn)) != NS_OK) {
        NS_LOG_ERROR("%s: cannot open a read transaction: %s", row->name, ns_strerror(rc));
        rc = ns_remark(&req->to, rc, "store unavailable");
    } else {
        rc = row->handler(req);
        if (rc != NS_OK)
            trail_refusal(req, rc);
    }
    if (rc != NS_OK)
        ns_reply_error(&req->to, rc);
    if (req->txn)
        ns_read_end(req->loop);
}

void ns_dispatch_warm(ns_loop_t *loop, ns_txn_t *txn, const ns_cmd_msg_t *msgs, size_t n)
{
    (void)loop;
    ns_slice_t topics[NS_CONN_READ_AHEAD];
    size_t k = 0;
    for (size_t i = 0; i < n && k < NS_CONN_READ_AHEAD; i++)
        if (msgs[i].cmd.code == NS_REQ_GET_ROUTEINFO_BY_TOPIC &&
            ns_cmd_route_topic(&msgs[i].cmd, &topics[k]))
            k++;
    if (k > 1)
        ns_route_warm(txn, topics, k);
}

/* Runs cmd against its row (NULL: an unknown code) on loop. */
static void run(ns_loop_t *loop, ns_conn_t *conn, const ns_cmd_t *cmd, const ns_cmd_row_t *row)
{
    ns_req_t req = {.loop = loop, .conn = conn, .cmd = cmd};
    req.to.conn = conn;
    req.to.opaque = cmd->opaque;
    req.to.serialize_type = cmd->serialize_type;
    req.to.oneway = (cmd->flag & NS_FLAG_ONEWAY) != 0;
    req.to.m_row = NS_M_ROW_UNKNOWN;
    if (cmd->flag & NS_FLAG_RESPONSE) {
        NS_LOG_DEBUG("conn %s: unexpected response frame (opaque %d) dropped", ns_conn_peer(conn),
                     cmd->opaque);
        return;
    }
    if (row == NULL) {
        char remark[64];
        snprintf(remark, sizeof remark, " request type %d not supported", cmd->code);
        NS_LOG_INFO("conn %s: refused:%s", ns_conn_peer(conn), remark);
        ns_reply_code(&req.to, NS_RSP_REQUEST_CODE_NOT_SUPPORTED, remark);
        return;
    }
    /* an I/O loop forwards what it may not run: a broken invariant, not a crash */
    if (!(row->flags & NS_ROW_ANY_LOOP)) {
        if (NS_FAILS_ASSERT(loop->io == NULL)) {
            ns_reply_error(&req.to, NS_EINTERNAL);
            return;
        }
        /* a request forwarded by the I/O loop of a connection whose peer
         * does not read its replies is not run: nothing more is built for
         * it while others wait (on its own loop it stops reading, conn.c) */
        if (ns_conn_backed_up(conn)) {
            ns_refusal(ns_conn_peer(conn), NS_REFUSE_UNSENT,
                       "%s refused: the peer has not read its earlier replies", row->name);
            ns_reply_code(&req.to, NS_RSP_SYSTEM_BUSY,
                          "the connection has not read its earlier replies; read them first");
            return;
        }
        /* rows that write records are main-loop rows (they write) */
        req.trail = (uint8_t)((row->flags >> NS_ROW_TRAIL_SHIFT) & 3u);
    }
    if ((row->flags & NS_ROW_BULK) && ns_budget_unsent_pressed()) {
        ns_refusal(ns_conn_peer(conn), NS_REFUSE_UNSENT,
                   "%s refused: replies not taken by their clients hold half of "
                   "maxUnsentReplyBytes",
                   row->name);
        ns_reply_code(&req.to, NS_RSP_SYSTEM_BUSY,
                      "server busy: replies not yet taken by their clients hold half of "
                      "maxUnsentReplyBytes; try again later");
        return;
    }
    req.to.ext_always = (row->flags & NS_ROW_EXT) != 0;
    char bad[192];
    if (!cmd->ext_names_ok && !ns_names_check_header(cmd, bad, sizeof bad)) {
        ns_refusal(ns_conn_peer(conn), NS_REFUSE_NAME, "%s refused: %s", row->name, bad);
        ns_reply_code(&req.to, NS_RSP_INVALID_PARAMETER, bad);
        return;
    }
    uint64_t t0 = uv_hrtime();
    req.to.m_row = (uint8_t)(row - cmd_table + 1);
    req.to.t0_ns = t0;
    loop->m_replied = false;
    call(row, &req);
    uint64_t ns = uv_hrtime() - t0, ms = ns / 1000000;
    if (loop->m_replied) /* else the writer answers it: timed in ns_reply */
        ns_hist_observe(&loop->m.latency[NS_M_LAT_READ], NS_HIST_LATENCY, ns);
    if (ms >= SLOW_REQUEST_MS)
        NS_LOG_WARN("conn %s: slow %s took %llu ms", ns_conn_peer(conn), row->name,
                    (unsigned long long)ms);
}

bool ns_dispatch_may_write(const ns_cmd_row_t *row)
{
    return row != NULL && (row->kind == NS_CMD_WRITE || row->code == NS_REQ_REGISTER_BROKER);
}

void ns_dispatch(ns_loop_t *loop, ns_conn_t *conn, const ns_cmd_t *cmd, const ns_cmd_row_t *row)
{
    run(loop, conn, cmd, row);
}

bool ns_dispatch_local(ns_loop_t *loop, ns_conn_t *conn, const ns_cmd_t *cmd,
                       const ns_cmd_row_t *row)
{
    if (row && !(row->flags & NS_ROW_ANY_LOOP) && !(cmd->flag & NS_FLAG_RESPONSE))
        return false; /* the main loop's */
    /* authMode on: served here only when the check passes here (auth.h);
     * the main loop checks, and refuses, the rest */
    if (row && ns_auth_mode() != NS_AUTH_OFF &&
        !ns_auth_check_here(loop, conn, cmd, row->auth,
                            (ns_auth_self_t)((row->flags & NS_ROW_SELF_MASK) >> NS_ROW_SELF_SHIFT)))
        return false;
    run(loop, conn, cmd, row);
    return true;
}

int ns_cmd_reply_too_large(ns_req_t *req, size_t len)
{
    int64_t max = req->loop->cfg->max_frame_bytes;
    NS_LOG_WARN("conn %s: request code %d: reply of %zu bytes not sent: over maxFrameBytes "
                "(%lld) less %d for the header",
                ns_req_peer(req), (int)req->cmd->code, len, (long long)max,
                NS_CMD_REPLY_HEADER_ROOM);
    return ns_failf(req, NS_RSP_SYSTEM_ERROR,
                    "reply too large: %zu bytes, over maxFrameBytes (%lld) less %d for the "
                    "header; Java clients drop frames over frameMaxLength (16 MiB)",
                    len, (long long)max, NS_CMD_REPLY_HEADER_ROOM);
}
