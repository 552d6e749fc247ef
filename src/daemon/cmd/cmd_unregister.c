/* cmd_unregister.c - UNREGISTER_BROKER (docs/protocol.md §3.6): the broker
 * leaves through the writer like every other removal (core/broker_life.c). */
#include "ns/err.h"
#include "cmd/cmd.h"
#include "core/broker_life.h"
#include "core/liveness.h"

int ns_cmd_unregister_broker(ns_req_t *req)
{
    const char *cluster = ns_req_str(req, "clusterName"), *addr = ns_req_str(req, "brokerAddr");
    const char *name = ns_req_str(req, "brokerName");
    ns_live_entry_t *e = ns_liveness_get(req->loop->main->liveness, cluster, addr);
    if (e)
        e->evicting = true;
    ns_wreq_t *w = ns_broker_unregister_new(cluster, addr, name, ns_req_i64(req, "brokerId", -1),
                                            "UNREGISTER_BROKER request", -1);
    if (w == NULL)
        return NS_ENOMEM;
    ns_req_submit(req, w);
    return NS_OK;
}
