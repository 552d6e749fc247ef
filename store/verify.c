/* verify.c - the invariant checker (invariants I1-I10 of keys.h).
 * Walks every table once in the caller's transaction and appends one line
 * per violation. Used by `namesrvctl verify` and the crash tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
    ns_txn_t *t;
    ns_buf_t *report;
    int n;
    ns_buf_t k;
} vctx_t;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
/* fmt is always one of this file's literals with two %s. */
static void violation(vctx_t *v, const char *fmt, const char *a, const char *b)
{
    v->n++;
    ns_buf_printf(v->report, fmt, a, b ? b : "");
    ns_buf_append_u8(v->report, '\n');
}
#pragma GCC diagnostic pop

/* I1 */
static int kv_cb(const char *ks, size_t kl, const uint8_t *val, size_t vl, void *ctx)
{
    vctx_t *v = ctx;
    if (strnlen(ks, kl) >= kl) /* ks reads as the namespace */
        violation(v, "I1 kv: malformed key in namespace '%s'%s", ks, NULL);
    else if (!ns_kv_ns_exists(v->t, ks))
        violation(v, "I1 kv: namespace '%s' has keys but no kvns entry%s", ks, NULL);
    return 0;
}

/* I2 */
static int cluster_cb(const char *cluster, const char *broker, void *ctx)
{
    vctx_t *v = ctx;
    ns_group_rec_t g;
    int rc = ns_group_get(v->t, broker, &g);
    if (rc == NS_ENOTFOUND)
        violation(v, "I2 clusters: cluster '%s' lists unknown broker group '%s'", cluster, broker);
    else if (rc == NS_OK)
        ns_group_rec_free(&g);
    else
        return rc;
    return 0;
}

/* True if the group's cluster has a registration record for addr. */
static bool live_for_group(vctx_t *v, const ns_group_rec_t *g, const char *addr)
{
    ns_live_rec_t r;
    if (ns_live_get(v->t, g->cluster, addr, &r) == NS_OK) {
        ns_live_rec_free(&r);
        return true;
    }
    return false;
}

/* I3, I5 */
static int group_cb(ns_group_rec_t *g, void *ctx)
{
    vctx_t *v = ctx;
    int rc = ns_cluster_has(v->t, g->cluster, g->broker_name);
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        return rc;
    if (rc == NS_ENOTFOUND)
        violation(v, "I3 groups: group '%s' is not listed under its cluster '%s'", g->broker_name,
                  g->cluster);
    for (size_t i = 0; i < g->n_addrs; i++) {
        for (size_t j = i + 1; j < g->n_addrs; j++)
            if (strcmp(g->addrs[i].addr, g->addrs[j].addr) == 0)
                violation(v, "I5 groups: group '%s' maps address %s under two ids", g->broker_name,
                          g->addrs[i].addr);
        if (!live_for_group(v, g, g->addrs[i].addr))
            violation(v, "I5 groups: group '%s' member %s has no registration record",
                      g->broker_name, g->addrs[i].addr);
    }
    return 0;
}

/* I4 */
static int live_cb(const ns_live_rec_t *r, void *ctx)
{
    vctx_t *v = ctx;
    ns_group_rec_t g;
    int rc = ns_group_get(v->t, r->broker_name, &g);
    if (rc == NS_ENOTFOUND) {
        violation(v, "I4 live: registration %s names unknown group '%s'", r->addr, r->broker_name);
        return 0;
    }
    if (rc != NS_OK)
        return rc;
    const char *mine = ns_group_addr_of(&g, r->broker_id);
    bool member = false;
    for (size_t i = 0; i < g.n_addrs; i++)
        member = member || strcmp(g.addrs[i].addr, r->addr) == 0;
    if (!member)
        violation(v, "I4 live: registration %s is not a member of group '%s'", r->addr,
                  r->broker_name);
    else if (mine == NULL || strcmp(mine, r->addr) != 0)
        violation(v, "I4 live: registration %s has another id in group '%s'", r->addr,
                  r->broker_name);
    int crc = ns_cluster_has(v->t, r->cluster, r->broker_name);
    if (crc == NS_ENOTFOUND)
        violation(v, "I4 live: cluster '%s' does not list group '%s'", r->cluster, r->broker_name);
    ns_group_rec_free(&g);
    return crc == NS_ENOTFOUND ? 0 : crc;
}

/* I6 (queues -> index) and I7/I8 per topic */
typedef struct {
    vctx_t *v;
    int groups; /* queue entries whose group exists */
} topic_state_t;

static int topic_queue_cb(const char *topic, const ns_queue_data_t *q, void *ctx)
{
    topic_state_t *ts = ctx;
    vctx_t *v = ts->v;
    ns_buf_reset(&v->k);
    if (ns_key2(&v->k, q->broker_name, topic) != NS_OK)
        return NS_ENOMEM;
    if (ns_db_get(v->t, NS_DB_BROKER_TOPICS, &v->k, NULL) != NS_OK)
        violation(v, "I6 queues: (%s, %s) missing from broker_topics", topic, q->broker_name);
    ns_group_rec_t g;
    if (ns_group_get(v->t, q->broker_name, &g) == NS_OK) {
        ts->groups++;
        ns_group_rec_free(&g);
    }
    return 0;
}

static int topic_cb(const char *topic, const ns_queue_data_t *first, void *ctx)
{
    vctx_t *v = ctx;
    topic_state_t ts = {v, 0};
    int rc = ns_queue_iter_topic(v->t, topic, topic_queue_cb, &ts);
    if (rc != NS_OK)
        return rc;
    ns_slice_t route;
    size_t ins;
    bool derive = false;
    bool has_route = ns_route_get(v->t, topic, true, &route, &ins, &derive) == NS_OK;
    if (ts.groups > 0 && !has_route)
        violation(v, "I7 routes: topic '%s' has live queue data but no route%s", topic, NULL);
    if (ts.groups == 0 && has_route)
        violation(v, "I7 routes: topic '%s' has a route but no existing group%s", topic, NULL);
    return 0;
}

/* I6 (index -> queues) */
static int index_cb(const char *ks, size_t kl, const uint8_t *val, size_t vl, void *ctx)
{
    vctx_t *v = ctx;
    size_t blen = strnlen(ks, kl);
    if (blen >= kl)
        return 0;
    const char *broker = ks, *topic = ks + blen + 1;
    ns_queue_data_t q;
    if (ns_queue_get(v->t, topic, broker, &q) != NS_OK)
        violation(v, "I6 broker_topics: (%s, %s) has no queue data", broker, topic);
    return 0;
}

/* I7: every stored route belongs to a topic with queue data */
static int route_cb(const char *ks, size_t kl, const uint8_t *val, size_t vl, void *ctx)
{
    vctx_t *v = ctx;
    if (!ns_topic_exists(v->t, ks))
        violation(v, "I7 routes: route stored for topic '%s' without queue data%s", ks, NULL);
    /* not an invariant of the data: the lookups' own descent reads this
     * store as LMDB does (store/tree_walk.h) */
    if (!ns_route_walk_agrees(v->t, ks, kl, val, vl))
        violation(v, "routes: the lookup's descent does not find topic '%s' where LMDB does%s", ks,
                  NULL);
    return 0;
}

/* I10: a version row says live or deleted as the kv table does */
static int kvver_cb(const char *ks, size_t kl, const uint8_t *val, size_t vl, void *ctx)
{
    vctx_t *v = ctx;
    size_t nl = strnlen(ks, kl);
    ns_kvver_t ver;
    ns_slice_t value;
    if (nl >= kl) {
        violation(v, "I10 kv_versions: malformed key in namespace '%s'%s", ks, NULL);
        return 0;
    }
    int rc = ns_kv_state_get(v->t, ks, ks + nl + 1, &ver, &value);
    if (rc == NS_ECORRUPT)
        violation(v, "I10 kv_versions: the version of '%s/%s' disagrees with the kv table", ks,
                  ks + nl + 1);
    return rc == NS_ECORRUPT || rc == NS_ENOTFOUND ? 0 : rc;
}

int ns_store_verify(ns_txn_t *t, ns_buf_t *report)
{
    vctx_t v = {t, report, 0, NS_BUF_INIT};
    int rc = ns_db_walk(t, NS_DB_KV, NULL, kv_cb, &v);
    rc = rc ? rc : ns_cluster_iter(t, cluster_cb, &v);
    rc = rc ? rc : ns_group_iter(t, group_cb, &v);
    rc = rc ? rc : ns_live_iter(t, live_cb, &v);
    rc = rc ? rc : ns_topic_iter(t, topic_cb, &v);
    rc = rc ? rc : ns_db_walk(t, NS_DB_BROKER_TOPICS, NULL, index_cb, &v);
    rc = rc ? rc : ns_db_walk(t, NS_DB_ROUTES, NULL, route_cb, &v);
    if (rc == NS_OK && t->s->have_db[NS_DB_KV_VERSIONS])
        rc = ns_db_walk(t, NS_DB_KV_VERSIONS, NULL, kvver_cb, &v);
    /* I9: the fleet digest is what the data sums to (store/digest.c) */
    int bad = rc == NS_OK ? ns_digest_verify(t, report) : 0;
    ns_buf_free(&v.k);
    return rc != NS_OK ? rc : bad < 0 ? bad : v.n + bad;
}
