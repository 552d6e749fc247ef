/* cmd_admin.c - admin writes on routes: WIPE/ADD_WRITE_PERM_OF_BROKER,
 * DELETE_TOPIC_IN_NAMESRV, REGISTER_TOPIC_IN_NAMESRV (PROTOCOL.md
 * §3.10-§3.12). Each is one writer operation answered after the commit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/body.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "server.h"

static int perm_run(ns_sop_t *sop, ns_txn_t *txn, ns_registry_t *reg)
{
    bool add = sop->s[1] != NULL;
    return ns_registry_write_perm(reg, txn, sop->s[0], add, &sop->count);
}

static void perm_reply(ns_sop_t *sop)
{
    char count[16];
    ns_rsp_t rsp = {0};
    snprintf(count, sizeof count, "%d", sop->count);
    ns_rsp_ext(&rsp, sop->s[1] ? "addTopicCount" : "wipeTopicCount", count);
    ns_reply(&sop->to, &rsp);
}

static void write_perm(ns_req_t *req, bool add)
{
    const char *name = ns_req_str(req, "brokerName");
    if (name == NULL) {
        ns_reply_code(&req->to, NS_RSP_SYSTEM_ERROR, "brokerName is null");
        return;
    }
    /* s[1] non-NULL marks "add" */
    ns_sop_submit(req, perm_run, perm_reply, name, add ? "add" : NULL, NULL, NULL, NULL);
}

void ns_cmd_wipe_write_perm_of_broker(ns_req_t *req)
{
    write_perm(req, false);
}

void ns_cmd_add_write_perm_of_broker(ns_req_t *req)
{
    write_perm(req, true);
}

static int delete_run(ns_sop_t *sop, ns_txn_t *txn, ns_registry_t *reg)
{
    return ns_registry_delete_topic(reg, txn, sop->s[0], sop->s[1]);
}

void ns_cmd_delete_topic_in_namesrv(ns_req_t *req)
{
    const char *topic = ns_req_str(req, "topic");
    if (topic == NULL) {
        ns_reply_code(&req->to, NS_RSP_SYSTEM_ERROR, "topic is null");
        return;
    }
    ns_sop_submit(req, delete_run, NULL, topic, ns_req_str(req, "clusterName"), NULL, NULL, NULL);
}

typedef struct {
    ns_queue_data_t *q;
    size_t n;
} queue_list_t;

static void queue_list_free(void *p)
{
    queue_list_t *l = p;
    if (l)
        ns_queue_datas_free(l->q, l->n);
    free(l);
}

static int register_topic_run(ns_sop_t *sop, ns_txn_t *txn, ns_registry_t *reg)
{
    queue_list_t *l = sop->extra;
    return ns_registry_register_topic(reg, txn, sop->s[0], l->q, l->n);
}

void ns_cmd_register_topic_in_namesrv(ns_req_t *req)
{
    const char *topic = ns_req_str(req, "topic");
    queue_list_t *l = calloc(1, sizeof *l);
    if (l == NULL) {
        ns_reply_code(&req->to, NS_RSP_SYSTEM_ERROR, "out of memory");
        return;
    }
    int rc = req->cmd->body_len
                 ? ns_json_queue_datas_decode(req->cmd->body, req->cmd->body_len, &l->q, &l->n)
                 : NS_OK;
    if (rc != NS_OK) {
        queue_list_free(l);
        ns_reply_code(&req->to, NS_RSP_SYSTEM_ERROR, "Failed to decode TopicRouteData body");
        return;
    }
    if (topic == NULL && l->n > 0) /* Java's table refuses a null key; it logs, answers SUCCESS */
        NS_LOG_WARN("REGISTER_TOPIC_IN_NAMESRV without topic: nothing registered");
    if (l->n == 0 || topic == NULL) { /* nothing to register: no write at all */
        queue_list_free(l);
        ns_reply_code(&req->to, NS_RSP_SUCCESS, NULL);
        return;
    }
    ns_sop_submit(req, register_topic_run, NULL, topic, NULL, NULL, l, queue_list_free);
}
