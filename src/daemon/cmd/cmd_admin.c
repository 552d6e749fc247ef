/* cmd_admin.c - admin writes on routes: WIPE/ADD_WRITE_PERM_OF_BROKER,
 * DELETE_TOPIC_IN_NAMESRV, REGISTER_TOPIC_IN_NAMESRV (docs/protocol.md
 * §3.10-§3.12). Each is one writer operation answered after the commit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "ns/body.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "core/trail.h"
#include "ns/log.h"

typedef struct {
    char *broker_name;
    bool add;
    int count; /* topics touched, from the last apply */
} perm_op_t;

static void perm_free(void *p)
{
    free(((perm_op_t *)p)->broker_name);
}

static int perm_apply(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    perm_op_t *p = (perm_op_t *)w->payload;
    p->count = 0;
    int rc = ns_registry_write_perm(reg, txn, p->broker_name, p->add, &p->count);
    ns_trail_set_count(w->trail, p->count);
    return rc;
}

static int perm_done(ns_wreq_t *w, int rc)
{
    perm_op_t *p = (perm_op_t *)w->payload;
    char count[16];
    ns_rsp_t rsp = {0};
    if (rc != NS_OK)
        return rc;
    snprintf(count, sizeof count, "%d", p->count);
    ns_rsp_ext(&rsp, p->add ? "addTopicCount" : "wipeTopicCount", count);
    ns_reply(&w->to, &rsp);
    return NS_OK;
}

static const ns_wreq_ops_t perm_ops = {perm_apply, perm_done, perm_free};

static int write_perm(ns_req_t *req, bool add)
{
    ns_wreq_t *w = ns_wreq_new(&perm_ops, sizeof(perm_op_t));
    perm_op_t *p = w ? (perm_op_t *)w->payload : NULL;
    if (p == NULL || (p->broker_name = strdup(ns_req_str(req, "brokerName"))) == NULL) {
        ns_wreq_free(w);
        return NS_ENOMEM;
    }
    p->add = add;
    ns_req_submit(req, w);
    return NS_OK;
}

int ns_cmd_wipe_write_perm_of_broker(ns_req_t *req)
{
    return write_perm(req, false);
}

int ns_cmd_add_write_perm_of_broker(ns_req_t *req)
{
    return write_perm(req, true);
}

typedef struct {
    char *topic, *cluster; /* cluster NULL: everywhere */
    ns_queue_data_t *q;    /* REGISTER_TOPIC_IN_NAMESRV */
    size_t n;
} topic_op_t;

static void topic_free(void *p)
{
    topic_op_t *t = p;
    free(t->topic);
    free(t->cluster);
    if (t->q)
        ns_queue_datas_free(t->q, t->n);
}

static int delete_apply(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    topic_op_t *t = (topic_op_t *)w->payload;
    return ns_registry_delete_topic(reg, txn, t->topic, t->cluster);
}

static int register_apply(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    topic_op_t *t = (topic_op_t *)w->payload;
    return ns_registry_register_topic(reg, txn, t->topic, t->q, t->n);
}

static const ns_wreq_ops_t delete_ops = {delete_apply, NULL, topic_free};
static const ns_wreq_ops_t register_ops = {register_apply, NULL, topic_free};

/* A topic operation with the request's topic (and cluster) copied. */
static ns_wreq_t *topic_op_new(ns_req_t *req, const ns_wreq_ops_t *ops, const char *cluster)
{
    ns_wreq_t *w = ns_wreq_new(ops, sizeof(topic_op_t));
    topic_op_t *t = w ? (topic_op_t *)w->payload : NULL;
    if (t == NULL || (t->topic = strdup(ns_req_str(req, "topic"))) == NULL ||
        (cluster && (t->cluster = strdup(cluster)) == NULL)) {
        ns_wreq_free(w);
        return NULL;
    }
    return w;
}

int ns_cmd_delete_topic_in_namesrv(ns_req_t *req)
{
    ns_wreq_t *w = topic_op_new(req, &delete_ops, ns_req_str(req, "clusterName"));
    if (w == NULL)
        return NS_ENOMEM;
    ns_req_submit(req, w);
    return NS_OK;
}

/* Java's remark for a body it cannot decode (its SYSTEM_ERROR) */
#define BAD_TOPIC_BODY "Failed to decode TopicRouteData body"

/* No topic: Java decodes the body (a bad one is its SYSTEM_ERROR), then its
 * topic table throws on the null key, which registerTopic logs and
 * swallows: SUCCESS, nothing stored. */
static int register_without_topic(ns_req_t *req)
{
    ns_queue_data_t *q = NULL;
    size_t n = 0;
    if (req->cmd->body_len &&
        ns_json_queue_datas_decode(req->cmd->body, req->cmd->body_len, &q, &n) != NS_OK)
        return ns_remark(&req->to, NS_EINVAL, BAD_TOPIC_BODY);
    if (n > 0)
        NS_LOG_WARN("REGISTER_TOPIC_IN_NAMESRV without topic: nothing registered");
    ns_queue_datas_free(q, n);
    ns_reply_code(&req->to, NS_RSP_SUCCESS, NULL);
    return NS_OK;
}

int ns_cmd_register_topic_in_namesrv(ns_req_t *req)
{
    if (ns_req_str(req, "topic") == NULL)
        return register_without_topic(req);
    ns_wreq_t *w = topic_op_new(req, &register_ops, NULL);
    if (w == NULL)
        return NS_ENOMEM;
    topic_op_t *t = (topic_op_t *)w->payload;
    int rc = req->cmd->body_len
                 ? ns_json_queue_datas_decode(req->cmd->body, req->cmd->body_len, &t->q, &t->n)
                 : NS_OK;
    if (rc != NS_OK || t->n == 0) {
        ns_wreq_free(w);
        if (rc != NS_OK)
            return ns_remark(&req->to, NS_EINVAL, BAD_TOPIC_BODY);
        ns_reply_code(&req->to, NS_RSP_SUCCESS, NULL); /* nothing to register: no write */
        return NS_OK;
    }
    ns_req_submit(req, w);
    return NS_OK;
}
