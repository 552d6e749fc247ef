/* live_table.c - the liveness of every broker address for operators:
 * GET_BROKER_CLUSTER_INFO with the extField withLiveness=true (sent by
 * `namesrvctl clusters`; Java clients never send it) gets one more member
 * in its body,
 *   "brokerLiveTable":{"<addr>":{"cluster":..,"brokerName":..,"brokerId":n,
 *     "lastUpdateTimestamp":ms,"heartbeatTimeoutMillis":n,"deadline":ms,
 *     "graceUntil":ms|null,"onGrace":bool,"evicting":bool}}
 * with wall-clock milliseconds. lastUpdateTimestamp is Java's name for the
 * last heartbeat (for an entry on grace: the time it was restored). An entry
 * restored at start-up that has not registered or heartbeated since is
 * "onGrace": it lives until graceUntil, not on a heartbeat. */
#include <string.h>

#include "ns/err.h"
#include "cmd/cmd.h"
#include "core/liveness.h"

/* Monotonic loop time -> wall clock. */
static int64_t to_wall(uint64_t mono, uint64_t now_mono, int64_t now_wall)
{
    return mono <= now_mono ? now_wall - (int64_t)(now_mono - mono)
                            : now_wall + (int64_t)(mono - now_mono);
}

static int append_entry(ns_buf_t *b, const ns_live_entry_t *e, uint64_t now, int64_t wall,
                        bool first)
{
    /* restored at start-up and not heard from since (a registration or a
     * heartbeat clears grace_until_ms) */
    bool grace = e->grace_until_ms != 0;
    int rc = ns_buf_append_str(b, first ? "" : ",");
    rc = rc ? rc : ns_buf_append_json_str(b, e->addr, strlen(e->addr), false);
    rc = rc ? rc : ns_buf_append_str(b, ":{\"cluster\":");
    rc = rc ? rc : ns_buf_append_json_str(b, e->cluster, strlen(e->cluster), false);
    rc = rc ? rc : ns_buf_append_str(b, ",\"brokerName\":");
    rc = rc ? rc
            : ns_buf_append_json_str(b, e->broker_name ? e->broker_name : "",
                                     e->broker_name ? strlen(e->broker_name) : 0, false);
    rc = rc ? rc
            : ns_buf_printf(
                  b,
                  ",\"brokerId\":%lld,\"lastUpdateTimestamp\":%lld,"
                  "\"heartbeatTimeoutMillis\":%lld,\"deadline\":%lld,",
                  (long long)e->broker_id, (long long)to_wall(e->last_update_ms, now, wall),
                  (long long)e->timeout_ms,
                  e->deadline_ms == UINT64_MAX ? -1LL
                                               : (long long)to_wall(e->deadline_ms, now, wall));
    if (rc == NS_OK && e->grace_until_ms > 0)
        rc = ns_buf_printf(b, "\"graceUntil\":%lld,",
                           (long long)to_wall(e->grace_until_ms, now, wall));
    else if (rc == NS_OK)
        rc = ns_buf_append_str(b, "\"graceUntil\":null,");
    rc = rc ? rc
            : ns_buf_printf(b, "\"onGrace\":%s,\"evicting\":%s}", grace ? "true" : "false",
                            e->evicting ? "true" : "false");
    return rc;
}

int ns_live_table_append(ns_loop_t *loop, ns_buf_t *body)
{
    ns_server_t *srv = ns_server_at(loop); /* liveness is the main loop's */
    if (body->len == 0 || body->data[body->len - 1] != '}' || srv == NULL || srv->liveness == NULL)
        return NS_EINVAL;
    uint64_t now = ns_now_ms(loop);
    int64_t wall = ns_wall_ms();
    body->len--; /* reopen the object */
    int rc =
        ns_buf_append_str(body, body->len > 1 ? ",\"brokerLiveTable\":{" : "\"brokerLiveTable\":{");
    size_t n = ns_liveness_count(srv->liveness);
    for (size_t i = 0; rc == NS_OK && i < n; i++)
        rc = append_entry(body, ns_liveness_at(srv->liveness, i), now, wall, i == 0);
    return rc ? rc : ns_buf_append_str(body, "}}");
}
