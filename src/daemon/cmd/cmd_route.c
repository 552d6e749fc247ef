/* cmd_route.c - route and topology reads: GET_ROUTEINFO_BY_TOPIC,
 * GET_BROKER_CLUSTER_INFO, GET_BROKER_MEMBER_GROUP and the topic lists
 * (docs/protocol.md §3.3, §3.4, §3.9, §3.13). All run in the loop's read
 * transaction. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ns/body.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "cmd/cmd.h"
#include "ns/strlist.h"
#include "ns/strmap.h"
#include "ns/strpairs.h"

static const char TOPIC_NOT_EXIST_FAQ[] =
    "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.";

static int no_route(ns_req_t *req, const char *topic)
{
    return ns_failf(req, NS_RSP_TOPIC_NOT_EXIST,
                    "No topic route info in name server for the topic: %s%s", topic,
                    TOPIC_NOT_EXIST_FAQ);
}

/* orderTopicConf for topic when orderMessageEnable (§3.3 step 3). */
static bool order_conf(ns_req_t *req, const char *topic, ns_slice_t *conf)
{
    return req->loop->cfg->order_message_enable &&
           ns_kv_get(req->txn, NS_ORDER_TOPIC_CONFIG_NS, topic, conf) == NS_OK;
}

/* §6.8 step 5: a group without a master whose queue is not writable shows
 * its lowest-id member as id 0. Rewrites the copies in parts. */
static int acting_master_rewrite(ns_route_parts_t *p)
{
    for (size_t i = 0; i < p->n_brokers; i++) {
        ns_broker_data_t *b = &p->brokers[i];
        if (b->n_addrs == 0 || b->addrs[0].id == NS_MASTER_ID || !b->enable_acting_master)
            continue;
        bool writable = true;
        for (size_t q = 0; q < p->n_queues; q++)
            if (strcmp(p->queues[q].broker_name, b->broker_name) == 0)
                writable = (p->queues[q].perm & NS_PERM_WRITE) != 0;
        if (writable)
            continue;
        ns_broker_addr_t *copy = malloc(b->n_addrs * sizeof *copy);
        if (ns_route_parts_own(p, copy) != NS_OK)
            return NS_ENOMEM;
        memcpy(copy, b->addrs, b->n_addrs * sizeof *copy);
        copy[0].id = NS_MASTER_ID; /* addrs are sorted: [0] has the lowest id */
        b->addrs = copy;
    }
    return NS_OK;
}

/* §6.10: drop groups that have a master in another zone. */
static void zone_filter(ns_route_parts_t *p, const char *zone)
{
    size_t nb = 0;
    for (size_t i = 0; i < p->n_brokers; i++) {
        ns_broker_data_t *b = &p->brokers[i];
        bool has_master = b->n_addrs > 0 && b->addrs[0].id == NS_MASTER_ID;
        bool other_zone = !b->zone_name || strcasecmp(b->zone_name, zone) != 0;
        if (has_master && other_zone) {
            size_t nq = 0;
            for (size_t q = 0; q < p->n_queues; q++)
                if (strcmp(p->queues[q].broker_name, b->broker_name) != 0)
                    p->queues[nq++] = p->queues[q];
            p->n_queues = nq;
            size_t nf = 0;
            for (size_t f = 0; f < p->n_filters; f++) {
                bool member = false;
                for (size_t a = 0; a < b->n_addrs; a++)
                    member = member || strcmp(b->addrs[a].addr, p->filters[f].broker_addr) == 0;
                if (!member)
                    p->filters[nf++] = p->filters[f];
            }
            p->n_filters = nf;
            continue;
        }
        p->brokers[nb++] = *b;
    }
    p->n_brokers = nb;
    p->route.n_brokers = nb;
    p->route.n_queues = p->n_queues;
    p->route.n_filters = p->n_filters;
}

/* The slow path: assemble from the tables (zone filter, acting master). */
static int route_from_tables(ns_req_t *req, const char *topic, bool standard, const char *zone)
{
    ns_route_cache_t cache;
    ns_route_parts_t parts = {0};
    ns_buf_t *body = &req->loop->scratch;
    ns_slice_t conf;
    char *conf_str = NULL;
    ns_route_cache_init(&cache);
    int rc = ns_route_assemble(req->txn, &cache, topic, &parts);
    if (rc == NS_ENOTFOUND) {
        ns_route_cache_free(&cache);
        return no_route(req, topic);
    }
    if (rc == NS_OK && req->loop->cfg->support_acting_master &&
        strncmp(topic, "rmq_sys_SYNC_BROKER_MEMBER_", 27) != 0)
        rc = acting_master_rewrite(&parts);
    if (rc == NS_OK && order_conf(req, topic, &conf)) {
        conf_str = strndup((const char *)conf.ptr, conf.len);
        parts.route.order_topic_conf = conf_str;
    }
    if (rc == NS_OK && zone) {
        zone_filter(&parts, zone);
        standard = false; /* the zone-filtered route is always re-encoded legacy */
    }
    ns_buf_reset(body);
    if (rc == NS_OK)
        rc = ns_json_route_encode(body, &parts.route, standard, NULL);
    rc = ns_cmd_reply_body(req, rc, body);
    free(conf_str);
    ns_route_parts_free(&parts);
    ns_route_cache_free(&cache);
    return rc;
}

/* The extFields a route lookup reads, found in one pass (as ns_req_str
 * finds each: the first entry of that key). */
typedef struct {
    const char *topic, *accept_std, *zone, *zone_mode;
} route_args_t;

/* k[0..5) is "topic": two loads, not a call to memcmp (which gcc keeps for
 * an odd length). */
static inline bool key_is_topic(const char *k)
{
    uint32_t w;
    memcpy(&w, k, 4);
    return memcmp(&w, "topi", 4) == 0 && k[4] == 'c';
}

static void route_args(const ns_cmd_t *cmd, route_args_t *a)
{
    unsigned seen = 0;
    memset(a, 0, sizeof *a);
    for (size_t i = 0; i < cmd->n_ext && seen != 15u; i++) {
        const ns_ext_field_t *e = &cmd->ext[i];
        unsigned bit = 0;
        if (e->key == NULL)
            continue;
        if (e->key_len == 5 && key_is_topic(e->key))
            bit = 1;
        else if (e->key_len == 22 && memcmp(e->key, "acceptStandardJsonOnly", 22) == 0)
            bit = 2;
        else if (e->key_len == 11 && memcmp(e->key, "__ZONE_NAME", 11) == 0)
            bit = 4;
        else if (e->key_len == 11 && memcmp(e->key, "__ZONE_MODE", 11) == 0)
            bit = 8;
        if (bit == 0 || (seen & bit))
            continue;
        seen |= bit;
        *(bit == 1   ? &a->topic
          : bit == 2 ? &a->accept_std
          : bit == 4 ? &a->zone
                     : &a->zone_mode) = e->val;
    }
}

bool ns_cmd_route_topic(const ns_cmd_t *cmd, ns_slice_t *topic)
{
    for (size_t i = 0; i < cmd->n_ext; i++) {
        const ns_ext_field_t *e = &cmd->ext[i];
        if (e->key && e->key_len == 5 && key_is_topic(e->key) && e->val) {
            topic->ptr = (const uint8_t *)e->val;
            topic->len = e->val_len;
            return true;
        }
    }
    return false;
}

int ns_cmd_get_routeinfo_by_topic(ns_req_t *req)
{
    ns_loop_t *loop = req->loop;
    route_args_t args;
    route_args(req->cmd, &args);
    const char *topic = args.topic; /* not required: see below */
    if (loop->cfg->need_wait_for_service &&
        ns_now_ms(loop) - loop->start_ms < (uint64_t)loop->cfg->wait_seconds_for_service * 1000)
        return ns_remark(&req->to, NS_EAGAIN, "name server not ready");
    if (topic == NULL) /* Java finds no route for a null topic and prints it */
        return no_route(req, "null");
    bool standard = req->cmd->version >= NS_VERSION_V4_9_4 || ns_req_is_true(args.accept_std);
    const char *zone = args.zone;
    if (!ns_req_is_true(args.zone_mode) || zone == NULL || zone[strspn(zone, " \t")] == 0)
        zone = NULL;
    if (zone || loop->cfg->support_acting_master)
        return route_from_tables(req, topic, standard, zone);
    /* The fast path: one lookup of the materialised route. */
    ns_slice_t route, conf;
    size_t insert_at = 0;
    bool derive = false;
    int rc = ns_route_get(req->txn, topic, standard, &route, &insert_at, &derive);
    if (rc == NS_OK && derive) { /* an old client: its form from the standard one */
        ns_buf_reset(&loop->derived);
        rc = ns_json_route_legacy(&loop->derived, route.ptr, route.len, insert_at, &insert_at);
        route.ptr = loop->derived.data;
        route.len = loop->derived.len;
    }
    if (rc == NS_ENOTFOUND)
        return no_route(req, topic);
    if (rc != NS_OK)
        return rc;
    ns_rsp_t rsp; /* ext[] unused (n_ext 0): not zeroed, 128 bytes per lookup */
    rsp.code = NS_RSP_SUCCESS;
    rsp.remark = NULL;
    rsp.has_ext = false;
    rsp.n_ext = 0;
    rsp.body = route.ptr;
    rsp.body_len = route.len;
    rsp.body_mapped = !derive; /* in the map, not in loop->derived */
    if (order_conf(req, topic, &conf)) {
        ns_buf_t *body = &loop->scratch;
        char *c = strndup((const char *)conf.ptr, conf.len);
        ns_buf_reset(body);
        rc = c ? ns_buf_append(body, route.ptr, insert_at) : NS_ENOMEM;
        rc = rc ? rc : ns_json_order_conf_member(body, c, standard);
        rc = rc ? rc : ns_buf_append(body, route.ptr + insert_at, route.len - insert_at);
        free(c);
        if (rc != NS_OK)
            return rc;
        rsp.body = body->data;
        rsp.body_len = body->len;
        rsp.body_mapped = false;
    }
    ns_reply(&req->to, &rsp); /* written or copied before the snapshot is released */
    return NS_OK;
}

/* ---- cluster info and member group ---- */

typedef struct {
    ns_group_rec_t *groups;
    ns_broker_data_t *views;
    size_t n;
    ns_strpairs_t pairs; /* (cluster, broker name), in that order */
    ns_cluster_entry_t *entries;
    size_t n_entries;
} topo_t;

static int topo_group_cb(ns_group_rec_t *g, void *ctx)
{
    topo_t *t = ctx;
    ns_group_rec_t *ng = ns_array_grow(t->groups, t->n, sizeof *ng);
    if (ng == NULL)
        return NS_ENOMEM;
    t->groups = ng;
    t->groups[t->n++] = *g;
    memset(g, 0, sizeof *g); /* moved */
    return 0;
}

static int topo_pair_cb(const char *cluster, const char *broker, void *ctx)
{
    topo_t *t = ctx;
    return ns_strpairs_add(&t->pairs, cluster, broker, strlen(broker));
}

static void topo_free(topo_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        ns_group_rec_free(&t->groups[i]);
    ns_strpairs_free(&t->pairs);
    free(t->groups);
    free(t->views);
    free(t->entries);
}

static int topo_load(ns_txn_t *txn, topo_t *t)
{
    memset(t, 0, sizeof *t);
    int rc = ns_group_iter(txn, topo_group_cb, t);
    rc = rc ? rc : ns_cluster_iter(txn, topo_pair_cb, t);
    if (rc != NS_OK)
        return rc;
    t->views = calloc(t->n + 1, sizeof *t->views);
    t->entries = calloc(t->pairs.n + 1, sizeof *t->entries);
    if (t->views == NULL || t->entries == NULL)
        return NS_ENOMEM;
    for (size_t i = 0; i < t->n; i++)
        ns_group_view(&t->groups[i], &t->views[i]);
    /* pairs are sorted by cluster: one entry per run */
    for (size_t i = 0; i < t->pairs.n; i++) {
        if (t->n_entries == 0 || strcmp(t->entries[t->n_entries - 1].name, t->pairs.a[i]) != 0) {
            t->entries[t->n_entries].name = t->pairs.a[i];
            t->entries[t->n_entries].broker_names = (const char *const *)&t->pairs.b[i];
            t->n_entries++;
        }
        t->entries[t->n_entries - 1].n_broker_names++;
    }
    return NS_OK;
}

int ns_cmd_get_broker_cluster_info(ns_req_t *req)
{
    topo_t t;
    ns_buf_t *body = &req->loop->scratch;
    ns_buf_reset(body);
    int rc = topo_load(req->txn, &t);
    if (rc == NS_OK)
        rc = ns_json_cluster_info_encode(body, t.views, t.n, t.entries, t.n_entries);
    if (rc == NS_OK && ns_req_bool(req, "withLiveness")) /* namesrvctl clusters */
        rc = ns_live_table_append(req->loop, body);
    topo_free(&t);
    return ns_cmd_reply_body(req, rc, body);
}

int ns_cmd_get_broker_member_group(ns_req_t *req)
{
    const char *cluster = ns_req_str(req, "clusterName"), *name = ns_req_str(req, "brokerName");
    ns_group_rec_t g = {0};
    ns_buf_t *body = &req->loop->scratch;
    ns_buf_reset(body);
    int rc = name ? ns_group_get(req->txn, name, &g) : NS_ENOTFOUND;
    if (rc == NS_ENOTFOUND)
        rc = NS_OK;
    if (rc == NS_OK)
        rc = ns_json_member_group_encode(body, cluster, name, g.addrs, g.n_addrs);
    ns_group_rec_free(&g);
    if (rc != NS_OK)
        return rc;
    ns_rsp_t rsp = {0};
    rsp.remark = "not set any response code"; /* what Java answers (scenario corpus) */
    rsp.body = body->data;
    rsp.body_len = body->len;
    ns_reply(&req->to, &rsp);
    return NS_OK;
}

/* ---- topic lists ---- */

typedef struct {
    ns_strlist_t names;
    int want_flag; /* -1: all; else sysflag filter mode */
} names_t;

enum { ALL_TOPICS = -1, UNIT = 0, UNIT_SUB = 1, UNIT_SUB_NOT_UNIT = 2 };

static int topic_cb(const char *topic, const ns_queue_data_t *q, void *ctx)
{
    names_t *l = ctx;
    int f = q->topic_sys_flag;
    bool keep = l->want_flag == ALL_TOPICS || (l->want_flag == UNIT && (f & NS_TOPIC_FLAG_UNIT)) ||
                (l->want_flag == UNIT_SUB && (f & NS_TOPIC_FLAG_UNIT_SUB)) ||
                (l->want_flag == UNIT_SUB_NOT_UNIT && (f & NS_TOPIC_FLAG_UNIT_SUB) &&
                 !(f & NS_TOPIC_FLAG_UNIT));
    return keep ? ns_strlist_add(&l->names, topic) : 0;
}

static int reply_topic_list(ns_req_t *req, names_t *l, int rc, const char *broker_addr)
{
    ns_buf_t *body = &req->loop->scratch;
    ns_buf_reset(body);
    if (rc == NS_OK)
        rc = ns_json_topic_list_encode(body, (const char *const *)l->names.v, l->names.n,
                                       broker_addr);
    ns_strlist_free(&l->names);
    return ns_cmd_reply_body(req, rc, body);
}

static int topic_list(ns_req_t *req, int mode, bool gated_by_topic_list)
{
    names_t l = {NS_STRLIST_INIT, mode};
    bool enabled = gated_by_topic_list ? req->loop->cfg->enable_topic_list
                                       : req->loop->cfg->enable_all_topic_list;
    if (!enabled)
        return ns_remark(&req->to, NS_EPERM, "disable");
    return reply_topic_list(req, &l, ns_topic_iter(req->txn, topic_cb, &l), NULL);
}

int ns_cmd_get_all_topic_list(ns_req_t *req)
{
    return topic_list(req, ALL_TOPICS, false);
}

int ns_cmd_get_unit_topic_list(ns_req_t *req)
{
    return topic_list(req, UNIT, true);
}

int ns_cmd_get_has_unit_sub_topic_list(ns_req_t *req)
{
    return topic_list(req, UNIT_SUB, true);
}

int ns_cmd_get_has_unit_sub_ununit_topic_list(ns_req_t *req)
{
    return topic_list(req, UNIT_SUB_NOT_UNIT, true);
}

typedef struct {
    ns_txn_t *txn;
    names_t *out;
    ns_strmap_t seen; /* a topic on several brokers is listed once */
} by_cluster_t;

static int cluster_topic_cb(const char *topic, void *ctx)
{
    by_cluster_t *b = ctx;
    if (ns_strmap_get(&b->seen, topic))
        return 0;
    if (ns_strmap_put(&b->seen, topic, b) != NS_OK)
        return NS_ENOMEM;
    return ns_strlist_add(&b->out->names, topic);
}

static int cluster_broker_cb(const char *broker, void *ctx)
{
    by_cluster_t *b = ctx;
    return ns_queue_iter_broker(b->txn, broker, cluster_topic_cb, b);
}

int ns_cmd_get_topics_by_cluster(ns_req_t *req)
{
    names_t l = {NS_STRLIST_INIT, ALL_TOPICS};
    const char *cluster = ns_req_str(req, "cluster");
    if (!req->loop->cfg->enable_topic_list)
        return ns_remark(&req->to, NS_EPERM, "disable");
    by_cluster_t b = {req->txn, &l, NS_STRMAP_INIT};
    int rc = cluster ? ns_cluster_brokers_iter(req->txn, cluster, cluster_broker_cb, &b) : NS_OK;
    ns_strmap_clear(&b.seen);
    return reply_topic_list(req, &l, rc, NULL);
}

static int pair_names_cb(const char *cluster, const char *broker, void *ctx)
{
    names_t *l = ctx;
    if (l->names.n == 0 || strcmp(l->names.v[l->names.n - 1], cluster) != 0)
        return ns_strlist_add(&l->names, cluster);
    return 0;
}

static int first_addr_cb(ns_group_rec_t *g, void *ctx)
{
    names_t *l = ctx;
    int rc = ns_strlist_add(&l->names, g->broker_name);
    if (rc == 0 && g->n_addrs > 0 && l->want_flag == ALL_TOPICS) {
        l->want_flag = (int)l->names.n; /* remember where the first address went */
        rc = ns_strlist_add(&l->names, g->addrs[0].addr);
    }
    return rc;
}

int ns_cmd_get_system_topic_list(ns_req_t *req)
{
    names_t l = {NS_STRLIST_INIT, ALL_TOPICS};
    int rc = ns_cluster_iter(req->txn, pair_names_cb, &l);
    rc = rc ? rc : ns_group_iter(req->txn, first_addr_cb, &l);
    char *addr = NULL;
    if (rc == NS_OK && l.want_flag >= 0) { /* take the address back out of the list */
        addr = l.names.v[l.want_flag];
        memmove(&l.names.v[l.want_flag], &l.names.v[l.want_flag + 1],
                (l.names.n - (size_t)l.want_flag - 1) * sizeof *l.names.v);
        l.names.n--;
    }
    rc = reply_topic_list(req, &l, rc, addr);
    free(addr);
    return rc;
}
