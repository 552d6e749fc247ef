/* cmd.h - the handlers (cmd_*.c), one per request code, and the helpers
 * they share. Handlers follow the contract in dispatch.h. */
#ifndef NS_CMD_H
#define NS_CMD_H

#include "ns/err.h"
#include "core/request.h"

/* Handlers (cmd_*.c), one per request code: NS_OK after replying, or an
 * error for the wrapper to answer. */
typedef int (*ns_handler_fn)(ns_req_t *req);
#define NS_HANDLER_DECL(name) int ns_cmd_##name(ns_req_t *req);
NS_HANDLER_DECL(put_kv_config)
NS_HANDLER_DECL(get_kv_config)
NS_HANDLER_DECL(delete_kv_config)
NS_HANDLER_DECL(get_kvlist_by_namespace)
NS_HANDLER_DECL(register_broker)
NS_HANDLER_DECL(unregister_broker)
NS_HANDLER_DECL(broker_heartbeat)
NS_HANDLER_DECL(query_data_version)
NS_HANDLER_DECL(get_broker_member_group)
NS_HANDLER_DECL(get_routeinfo_by_topic)
/* The topic a GET_ROUTEINFO_BY_TOPIC request names (its first "topic"
 * field, as the handler reads it), borrowed from cmd; false when none. */
bool ns_cmd_route_topic(const ns_cmd_t *cmd, ns_slice_t *topic);
NS_HANDLER_DECL(get_broker_cluster_info)
NS_HANDLER_DECL(get_all_topic_list)
NS_HANDLER_DECL(get_topics_by_cluster)
NS_HANDLER_DECL(get_system_topic_list)
NS_HANDLER_DECL(get_unit_topic_list)
NS_HANDLER_DECL(get_has_unit_sub_topic_list)
NS_HANDLER_DECL(get_has_unit_sub_ununit_topic_list)
NS_HANDLER_DECL(wipe_write_perm_of_broker)
NS_HANDLER_DECL(add_write_perm_of_broker)
NS_HANDLER_DECL(delete_topic_in_namesrv)
NS_HANDLER_DECL(register_topic_in_namesrv)
NS_HANDLER_DECL(update_namesrv_config)
NS_HANDLER_DECL(get_namesrv_config)
NS_HANDLER_DECL(user_add)
NS_HANDLER_DECL(user_update)
NS_HANDLER_DECL(user_delete)
NS_HANDLER_DECL(user_list)
NS_HANDLER_DECL(fleet_digest)
NS_HANDLER_DECL(kv_sync_get)
NS_HANDLER_DECL(seed_page)
#undef NS_HANDLER_DECL

/* The largest body a reply may carry: maxFrameBytes, what this server
 * and Java clients (frameMaxLength, 16 MiB by default) accept as a frame,
 * less room for the header. */
#define NS_CMD_REPLY_HEADER_ROOM 4096
#define NS_CMD_REPLY_MAX(req) ((size_t)(req)->loop->cfg->max_frame_bytes - NS_CMD_REPLY_HEADER_ROOM)
/* A body over NS_CMD_REPLY_MAX: SYSTEM_ERROR with a remark that says so,
 * and a log line, instead of a frame the client would drop as too long
 * and close its connection over (dispatch.c). */
int ns_cmd_reply_too_large(ns_req_t *req, size_t len);

/* A SUCCESS reply carrying body when rc is NS_OK; returns rc either way, for
 * the wrapper to answer an error. A body larger than a frame may be is
 * refused (ns_cmd_reply_too_large). */
static inline int ns_cmd_reply_body(ns_req_t *req, int rc, const ns_buf_t *body)
{
    if (rc != NS_OK)
        return rc;
    if (body->len > NS_CMD_REPLY_MAX(req))
        return ns_cmd_reply_too_large(req, body->len);
    ns_rsp_t rsp = {0};
    rsp.body = body->data;
    rsp.body_len = body->len;
    ns_reply(&req->to, &rsp);
    return NS_OK;
}

/* The KVTable body of namespace ns (cmd_kv.c); NS_ENOTFOUND if absent. */
int ns_kv_table_body(ns_txn_t *txn, const char *ns, ns_buf_t *out);

/* GET_BROKER_CLUSTER_INFO withLiveness=true (live_table.c): appends the
 * brokerLiveTable member to the encoded ClusterInfo object in body. */
int ns_live_table_append(ns_loop_t *loop, ns_buf_t *body);

#endif
