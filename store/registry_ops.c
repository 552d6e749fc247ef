/* registry_ops.c - unregistration (§6.5, fenced by broker id) and the admin
 * mutations of routes: write permission (§3.10), topic deletion (§3.11) and
 * single-topic registration (§3.12). Each marks the topics whose route it
 * changes, as registry.c does. */
#include <stdlib.h>
#include <string.h>

#include "ns/err.h"
#include "ns/log.h"
#include "ns/strlist.h"
#include "registry_int.h"

/* Collects names into an ns_strlist_t: a walk cannot change what it walks. */
static int collect_cb(const char *name, void *ctx)
{
    return ns_strlist_add(ctx, name);
}

static int mark_topic_cb(const char *topic, void *ctx)
{
    return ns_registry_mark(ctx, topic);
}

/* Clears the write bit on every queue data of a group (an acting-master
 * group that lost its master, docs/protocol.md §6.5). */
static int clear_write(ns_registry_t *r, ns_txn_t *t, const char *broker_name)
{
    int count = 0;
    return ns_registry_write_perm(r, t, broker_name, false, &count);
}

static bool str_same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* True when the group maps addr under an id other than broker_id. */
static bool moved_to_other_id(const ns_group_rec_t *g, const char *addr, int64_t broker_id)
{
    for (size_t i = 0; i < g->n_addrs; i++)
        if (strcmp(g->addrs[i].addr, addr) == 0 && g->addrs[i].id != broker_id)
            return true;
    return false;
}

int ns_registry_unregister(ns_registry_t *r, ns_txn_t *t, const char *cluster, const char *addr,
                           const char *broker_name, int64_t broker_id, bool *removed,
                           ns_minid_change_t **change)
{
    ns_live_rec_t lr = {0};
    ns_group_rec_t g = {0};
    *removed = false;
    if (change)
        *change = NULL;
    int rc = ns_live_get(t, cluster, addr, &lr);
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        goto out;
    bool have_live = rc == NS_OK;
    if (broker_name == NULL)
        broker_name = have_live ? lr.broker_name : NULL;
    rc = broker_name ? ns_group_get(t, broker_name, &g) : NS_ENOTFOUND;
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        goto out;
    bool have_group = rc == NS_OK;
    rc = NS_OK;
    /* The address belongs to what it registered: an unregister naming
     * another broker, or a group outside the cluster named, removes
     * nothing, so the live record and the group's address (I4, I5) go
     * together or not at all. */
    if (have_live && !str_same(lr.broker_name, broker_name)) {
        NS_LOG_INFO("unregister of %s as %s in %s names another broker than the one registered "
                    "there (%s); ignored",
                    addr, broker_name, cluster, lr.broker_name ? lr.broker_name : "?");
        goto out;
    }
    if (!have_live && have_group && (rc = ns_cluster_has(t, cluster, broker_name)) != NS_OK) {
        if (rc == NS_ENOTFOUND) {
            NS_LOG_INFO("unregister of %s in %s: group %s is not in that cluster; ignored", addr,
                        cluster, broker_name);
            rc = NS_OK;
        }
        goto out;
    }
    if (have_group && broker_id >= 0 && moved_to_other_id(&g, addr, broker_id)) {
        NS_LOG_INFO("unregister of %s id %lld in %s is stale (the address registered under "
                    "another id since); ignored",
                    addr, (long long)broker_id, broker_name);
        goto out;
    }
    /* the live record and its filter servers go */
    if (have_live && (rc = ns_live_del(t, cluster, addr)) != NS_OK)
        goto out;
    *removed = have_live;
    /* the address leaves its group (by address) */
    bool was_min = have_group && g.n_addrs > 0 && g.addrs[0].id == broker_id;
    if (!have_group || ns_group_remove_addr(&g, addr) == 0)
        goto out;
    *removed = true;
    if (g.n_addrs == 0) {
        /* the group is gone: it leaves its cluster, with its queue data and
         * the topics left empty */
        NS_LOG_INFO("broker group %s removed (last address %s)", broker_name, addr);
        rc = ns_group_del(t, broker_name);
        rc = rc ? rc : ns_cluster_del(t, cluster, broker_name);
        rc = rc ? rc : ns_queue_del_broker(t, broker_name, mark_topic_cb, r);
        goto out;
    }
    rc = ns_group_put(t, &g);
    rc = rc ? rc : ns_registry_mark_broker(r, t, broker_name);
    /* an acting-master group without a master loses write permission */
    if (rc == NS_OK && g.enable_acting_master && ns_group_addr_of(&g, NS_MASTER_ID) == NULL)
        rc = clear_write(r, t, broker_name);
    /* the smallest id went in an acting-master group: the rest are told, §6.15 */
    if (rc == NS_OK && change && was_min && g.enable_acting_master)
        rc = ns_registry_minid_change(&g, addr, NULL, false, change);
out:
    ns_group_rec_free(&g);
    ns_live_rec_free(&lr);
    return rc;
}

int ns_registry_write_perm(ns_registry_t *r, ns_txn_t *t, const char *broker_name, bool add,
                           int *count)
{
    ns_strlist_t c = NS_STRLIST_INIT;
    *count = 0;
    int rc = ns_queue_iter_broker(t, broker_name, collect_cb, &c);
    for (size_t i = 0; rc == NS_OK && i < c.n; i++) {
        ns_queue_data_t q;
        rc = ns_queue_get(t, c.v[i], broker_name, &q);
        if (rc == NS_ENOTFOUND) {
            rc = NS_OK;
            continue;
        }
        if (rc != NS_OK)
            break;
        int perm = add ? (NS_PERM_READ | NS_PERM_WRITE) : (q.perm & ~NS_PERM_WRITE);
        (*count)++;
        if (perm == q.perm)
            continue;
        q.perm = perm;
        rc = ns_queue_put(t, c.v[i], &q);
        rc = rc ? rc : ns_registry_mark(r, c.v[i]);
    }
    ns_strlist_free(&c);
    return rc;
}

static int collect_broker_cb(const char *topic, const ns_queue_data_t *q, void *ctx)
{
    return collect_cb(q->broker_name, ctx);
}

int ns_registry_delete_topic(ns_registry_t *r, ns_txn_t *t, const char *topic, const char *cluster)
{
    ns_strlist_t c = NS_STRLIST_INIT;
    int rc;
    if (cluster && *cluster)
        rc = ns_cluster_brokers_iter(t, cluster, collect_cb, &c);
    else
        rc = ns_queue_iter_topic(t, topic, collect_broker_cb, &c);
    for (size_t i = 0; rc == NS_OK && i < c.n; i++)
        rc = ns_queue_del(t, topic, c.v[i]);
    rc = rc ? rc : ns_registry_mark(r, topic);
    ns_strlist_free(&c);
    return rc;
}

/* NS_OK when a broker group is named broker_name, NS_ENOTFOUND when not. */
static int group_known(ns_txn_t *t, const char *broker_name)
{
    ns_group_rec_t g;
    int rc = ns_group_get(t, broker_name, &g);
    if (rc == NS_OK)
        ns_group_rec_free(&g);
    return rc;
}

/* Java (RouteInfoManager.registerTopic): a new topic is taken whole or not
 * at all; an existing one takes the queue datas in order up to the first
 * unknown broker. Either way the request is answered SUCCESS. */
int ns_registry_register_topic(ns_registry_t *r, ns_txn_t *t, const char *topic,
                               const ns_queue_data_t *q, size_t n)
{
    int rc = NS_OK;
    bool is_new = !ns_topic_exists(t, topic);
    for (size_t i = 0; is_new && i < n; i++) {
        if ((rc = group_known(t, q[i].broker_name)) == NS_ENOTFOUND) {
            NS_LOG_WARN("REGISTER_TOPIC_IN_NAMESRV %s: unknown broker %s; new topic not registered",
                        topic, q[i].broker_name);
            return NS_OK;
        }
        if (rc != NS_OK)
            return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if ((rc = group_known(t, q[i].broker_name)) == NS_ENOTFOUND) {
            NS_LOG_WARN("REGISTER_TOPIC_IN_NAMESRV %s: unknown broker %s; the rest not merged",
                        topic, q[i].broker_name);
            return NS_OK; /* the first unknown broker ends the merge (§3.12) */
        }
        if (rc != NS_OK)
            break;
        ns_queue_data_t have;
        if (ns_queue_get(t, topic, q[i].broker_name, &have) == NS_OK &&
            ns_queue_data_eq(&have, &q[i]))
            continue;
        rc = ns_queue_put(t, topic, &q[i]);
        rc = rc ? rc : ns_registry_mark(r, topic);
        if (rc != NS_OK)
            break;
    }
    return rc;
}
