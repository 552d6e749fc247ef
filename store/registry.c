/* registry.c - route mutations in the writer's transaction
 * (include/ns/store.h): the dirty-topic set, registration (§6.2) and the
 * unchanged check; the audit record is registry_audit.c, unregistration
 * and the admin mutations registry_ops.c.
 *
 * ns_registry_register keeps the rules of docs/protocol.md §6.2 in the order
 * given there, each under a comment that names the rule, so the two read
 * side by side. Writes are skipped whenever the stored value is already the
 * one we would write: an unchanged re-registration dirties no page. */
#include "ns/store.h"

#include <stdlib.h>
#include <string.h>

#include "ns/body.h"
#include "ns/err.h"
#include "ns/log.h"
#include "ns/strlist.h"
#include "registry_int.h"

static void dirty_clear(dirty_t *d)
{
    ns_buf_reset(&d->names);
    d->n = 0;
}

int ns_registry_new(ns_registry_t **out)
{
    ns_registry_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NS_ENOMEM;
    *out = r;
    return NS_OK;
}

void ns_registry_free(ns_registry_t *r)
{
    if (r == NULL)
        return;
    ns_buf_free(&r->dirty.names);
    free(r->dirty.offs);
    ns_route_scratch_free(&r->scratch);
    free(r);
}

void ns_registry_batch_reset(void *ctx)
{
    ns_registry_t *r = ctx;
    dirty_clear(&r->dirty);
}

int ns_registry_mark(ns_registry_t *r, const char *topic)
{
    dirty_t *d = &r->dirty;
    size_t *offs = ns_array_grow(d->offs, d->n, sizeof *offs);
    if (offs == NULL)
        return NS_ENOMEM;
    d->offs = offs;
    d->offs[d->n] = d->names.len;
    if (ns_buf_append(&d->names, topic, strlen(topic) + 1) != NS_OK)
        return NS_ENOMEM;
    d->n++;
    return NS_OK;
}

static int mark_cb(const char *topic, void *ctx)
{
    return ns_registry_mark(ctx, topic);
}

/* Marks every topic that has queue data for broker_name. */
int ns_registry_mark_broker(ns_registry_t *r, ns_txn_t *t, const char *broker_name)
{
    return ns_queue_iter_broker(t, broker_name, mark_cb, r);
}

static int cmp_topic(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Materialises the routes of the dirty topics once each, in key order:
 * consecutive puts then land on the same LMDB leaf pages instead of random
 * ones. */
int ns_registry_before_commit(void *ctx, ns_txn_t *txn)
{
    ns_registry_t *r = ctx;
    dirty_t *d = &r->dirty;
    ns_route_cache_t cache;
    const char **topics = calloc(d->n + 1, sizeof *topics);
    int rc = topics ? NS_OK : NS_ENOMEM;
    ns_route_cache_init(&cache);
    for (size_t i = 0; i < d->n && rc == NS_OK; i++)
        topics[i] = (const char *)d->names.data + d->offs[i];
    if (rc == NS_OK)
        qsort(topics, d->n, sizeof *topics, cmp_topic);
    for (size_t i = 0; i < d->n && rc == NS_OK; i++)
        if (i == 0 || strcmp(topics[i], topics[i - 1]) != 0)
            rc = ns_route_materialise(txn, &cache, topics[i], &r->scratch);
    free(topics);
    ns_route_cache_free(&cache);
    dirty_clear(d);
    return rc;
}

static int topic_all_cb(const char *topic, const ns_queue_data_t *q, void *ctx)
{
    return ns_registry_mark(ctx, topic);
}

int ns_registry_mark_all(ns_registry_t *r, ns_txn_t *t)
{
    return ns_topic_iter(t, topic_all_cb, r);
}

/* ---- NOTIFY_MIN_BROKER_ID_CHANGE descriptions (sent by notify.c) ---- */

ns_minid_change_t *ns_minid_change_new(const char *broker_name)
{
    ns_minid_change_t *c = calloc(1, sizeof *c);
    if (c && (c->broker_name = strdup(broker_name)) == NULL) {
        free(c);
        c = NULL;
    }
    return c;
}

void ns_minid_change_free(ns_minid_change_t *c)
{
    if (c == NULL)
        return;
    ns_strlist_free(&c->to);
    free(c->broker_name);
    free(c->min_broker_addr);
    free(c->offline_broker_addr);
    free(c->ha_broker_addr);
    free(c);
}

void ns_register_result_free(ns_register_result_t *res)
{
    free(res->master_addr);
    free(res->ha_addr);
    free(res->identity_detail);
    res->master_addr = res->ha_addr = res->identity_detail = NULL;
    ns_minid_change_free(res->minid_change);
    res->minid_change = NULL;
}

/* The 905 for group g whose smallest id is now g->addrs[0]: offline and ha
 * as the header carries them (NULL = absent); recipients every member but
 * the smallest one, or all when skip_min is false. */
int ns_registry_minid_change(const ns_group_rec_t *g, const char *offline, const char *ha,
                             bool skip_min, ns_minid_change_t **out)
{
    ns_minid_change_t *c = ns_minid_change_new(g->broker_name);
    int rc = c ? NS_OK : NS_ENOMEM;
    if (rc == NS_OK) {
        c->min_broker_id = g->addrs[0].id;
        if ((c->min_broker_addr = strdup(g->addrs[0].addr)) == NULL ||
            (offline && (c->offline_broker_addr = strdup(offline)) == NULL) ||
            (ha && (c->ha_broker_addr = strdup(ha)) == NULL))
            rc = NS_ENOMEM;
    }
    for (size_t i = skip_min ? 1 : 0; rc == NS_OK && i < g->n_addrs; i++)
        rc = ns_strlist_add(&c->to, g->addrs[i].addr);
    if (rc != NS_OK) {
        ns_minid_change_free(c);
        c = NULL;
    }
    *out = c;
    return rc;
}

static bool str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

bool ns_queue_data_eq(const ns_queue_data_t *a, const ns_queue_data_t *b)
{
    return a->perm == b->perm && a->read_queue_nums == b->read_queue_nums &&
           a->write_queue_nums == b->write_queue_nums && a->topic_sys_flag == b->topic_sys_flag;
}

/* A slave learns its master's address and HA address (docs/protocol.md
 * §6.2). NS_OK, NS_ENOMEM (res may then hold part: ns_register_result_free),
 * or a store error. */
static int fill_master(ns_txn_t *t, const ns_register_args_t *a, const ns_group_rec_t *g,
                       ns_register_result_t *res)
{
    const char *master = a->broker_id != NS_MASTER_ID ? ns_group_addr_of(g, NS_MASTER_ID) : NULL;
    if (master == NULL)
        return NS_OK;
    ns_live_rec_t m;
    int rc = ns_live_get(t, a->cluster, master, &m);
    if (rc == NS_ENOTFOUND)
        return NS_OK;
    if (rc != NS_OK)
        return rc;
    res->master_addr = strdup(master);
    res->ha_addr = m.ha_addr ? strdup(m.ha_addr) : NULL;
    rc = res->master_addr == NULL || (m.ha_addr && res->ha_addr == NULL) ? NS_ENOMEM : NS_OK;
    ns_live_rec_free(&m);
    return rc;
}

/* The queue data a registration would store for one topic: the body's
 * queue numbers and perm, without the write bit for an acting-master prime
 * slave (docs/protocol.md §6.2). */
static void queue_for(const ns_register_args_t *a, const ns_group_rec_t *g, bool prime_slave,
                      const ns_topic_config_t *tc, ns_queue_data_t *q)
{
    q->broker_name = a->broker_name;
    q->read_queue_nums = tc->read_queue_nums;
    q->write_queue_nums = tc->write_queue_nums;
    q->perm = tc->perm;
    q->topic_sys_flag = tc->topic_sys_flag;
    if (prime_slave && g->enable_acting_master)
        q->perm &= ~NS_PERM_WRITE;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

struct absent_ctx {
    ns_registry_t *r;
    ns_txn_t *t;
    const char *broker_name;
    char **names;
    size_t n;
    ns_strlist_t gone;
};

static int absent_cb(const char *topic, void *ctx)
{
    struct absent_ctx *c = ctx;
    const char *key = topic;
    if (bsearch(&key, c->names, c->n, sizeof *c->names, cmp_str) != NULL)
        return 0;
    return ns_strlist_add(&c->gone, topic);
}

/* Topics with queue data for the broker that the body does not list
 * (collected first: we cannot delete while walking the index). */
static int absent_topics(ns_txn_t *t, const ns_register_args_t *a, struct absent_ctx *c)
{
    c->n = a->body->n_topics;
    c->names = malloc((c->n + 1) * sizeof *c->names);
    if (c->names == NULL)
        return NS_ENOMEM;
    for (size_t i = 0; i < c->n; i++)
        c->names[i] = a->body->topics[i].topic_name;
    qsort(c->names, c->n, sizeof *c->names, cmp_str);
    return ns_queue_iter_broker(t, a->broker_name, absent_cb, c);
}

static void absent_free(struct absent_ctx *c)
{
    ns_strlist_free(&c->gone);
    free(c->names);
}

/* Queue data and static mappings from a master or prime slave (the lowest
 * slave of a 5.x group): only what changed is written (docs/protocol.md
 * §6.3). */
static int apply_topics(ns_registry_t *r, ns_txn_t *t, const ns_register_args_t *a,
                        const ns_group_rec_t *g, bool prime_slave, bool register_first,
                        bool dv_changed, audit_diff_t *audit)
{
    const ns_regbody_t *body = a->body;
    int rc = NS_OK;
    struct absent_ctx c = {r, t, a->broker_name, NULL, 0, NS_STRLIST_INIT};
    /* Topics the broker no longer lists leave the routes (only with
     * deleteTopicWithBrokerRegistration; the history records exactly those) */
    if (a->delete_absent_topics && body->n_mappings == 0) {
        if ((rc = absent_topics(t, a, &c)) != NS_OK)
            goto out;
        for (size_t i = 0; i < c.gone.n; i++) {
            const char *topic = c.gone.v[i];
            if (audit)
                rc = ns_audit_list_add(&audit->removed, &audit->n_removed, topic, NULL, NULL);
            rc = rc ? rc : ns_queue_del(t, topic, a->broker_name);
            rc = rc ? rc : ns_registry_mark(r, topic);
            if (rc != NS_OK)
                goto out;
        }
    }
    /* With the same DataVersion an existing topic keeps what is stored (§6.3);
     * otherwise each topic's record is compared and replaced in one step. */
    bool keep_existing = !register_first && !dv_changed;
    for (size_t i = 0; i < body->n_topics; i++) {
        const ns_topic_config_t *tc = &body->topics[i];
        ns_queue_data_t want, have;
        bool exists = false, wrote = false;
        queue_for(a, g, prime_slave, tc, &want);
        if (keep_existing) {
            rc = ns_queue_get(t, tc->topic_name, a->broker_name, &have);
            if (rc != NS_OK && rc != NS_ENOTFOUND)
                goto out;
            exists = rc == NS_OK;
            rc = exists ? NS_OK : ns_queue_put(t, tc->topic_name, &want);
            wrote = !exists;
        } else {
            rc = ns_queue_update(t, tc->topic_name, &want, &have, &exists, &wrote);
        }
        if (rc == NS_OK && audit && !exists)
            rc = ns_audit_list_add(&audit->added, &audit->n_added, tc->topic_name, tc, NULL);
        else if (rc == NS_OK && audit && wrote)
            rc = ns_audit_list_add(&audit->changed, &audit->n_changed, tc->topic_name, tc, &have);
        if (rc == NS_OK && wrote)
            rc = ns_registry_mark(r, tc->topic_name);
        if (rc != NS_OK)
            goto out;
    }
    if (dv_changed || register_first) {
        for (size_t i = 0; i < body->n_mappings && rc == NS_OK; i++) {
            rc = ns_mapping_put(t, &body->mappings[i]);
            rc = rc ? rc : ns_registry_mark(r, body->mappings[i].topic);
        }
    }
out:
    absent_free(&c);
    return rc;
}

static bool filters_eq(char *const *a, size_t na, char *const *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return true;
}

/* The persistent part of the live record, with its filter servers (a body
 * without a filter-server list keeps the stored one). Written only when
 * something differs; *filters_changed tells whether routes must be redone. */
static int put_live(ns_txn_t *t, const ns_register_args_t *a, const ns_live_rec_t *prev,
                    bool have_prev, bool *filters_changed)
{
    ns_live_rec_t nr = {0};
    nr.cluster = (char *)a->cluster;
    nr.addr = (char *)a->addr;
    nr.broker_name = (char *)a->broker_name;
    nr.broker_id = a->broker_id;
    nr.ha_addr = (char *)a->ha_addr;
    nr.dv = a->body->data_version;
    nr.heartbeat_timeout_ms = a->heartbeat_timeout_ms;
    nr.registered_ms = a->now_ms;
    if (a->body->has_filter_server_list) {
        nr.filter_servers = a->body->filter_servers;
        nr.n_filter_servers = a->body->n_filter_servers;
    } else if (have_prev) {
        nr.filter_servers = prev->filter_servers;
        nr.n_filter_servers = prev->n_filter_servers;
    }
    *filters_changed = !have_prev ? nr.n_filter_servers > 0
                                  : !filters_eq(nr.filter_servers, nr.n_filter_servers,
                                                prev->filter_servers, prev->n_filter_servers);
    if (have_prev && !*filters_changed && str_eq(prev->broker_name, nr.broker_name) &&
        prev->broker_id == nr.broker_id && str_eq(prev->ha_addr, nr.ha_addr) &&
        ns_dataversion_equal(&prev->dv, &nr.dv) &&
        prev->heartbeat_timeout_ms == nr.heartbeat_timeout_ms)
        return NS_OK; /* nothing to write */
    return ns_live_put(t, &nr);
}

/* Removes a->addr from the group its live record names when that is not
 * a->broker_name (the record goes too). */
static int leave_other_group(ns_registry_t *r, ns_txn_t *t, const ns_register_args_t *a)
{
    ns_live_rec_t lr = {0};
    bool removed = false;
    int rc = ns_live_get(t, a->cluster, a->addr, &lr);
    if (rc == NS_ENOTFOUND)
        return NS_OK;
    if (rc == NS_OK && lr.broker_name && !str_eq(lr.broker_name, a->broker_name)) {
        NS_LOG_INFO("broker %s: %s registered under %s before; it leaves that group",
                    a->broker_name, a->addr, lr.broker_name);
        rc = ns_registry_unregister(r, t, a->cluster, a->addr, lr.broker_name, -1, &removed, NULL);
    }
    ns_live_rec_free(&lr);
    return rc;
}

const char *ns_identity_conflict_name(ns_identity_conflict_t k)
{
    static const char *const names[NS_IDENTITY_KINDS] = {
        "none", "name_in_other_cluster", "addr_under_other_name", "id_at_other_addr"};
    return k < NS_IDENTITY_KINDS ? names[k] : "?";
}

/* The JSON object of a conflict: what this registration claims and what
 * the store holds (the other side, under held_key). */
static int identity_detail(const ns_register_args_t *a, ns_identity_conflict_t k,
                           const char *held_key, const char *held, char **out)
{
    ns_buf_t b = NS_BUF_INIT;
    const char *kind = ns_identity_conflict_name(k);
    int rc = ns_buf_append_str(&b, "{\"conflict\":");
    rc = rc ? rc : ns_buf_append_json_str(&b, kind, strlen(kind), true);
    rc = rc ? rc : ns_buf_append_str(&b, ",\"clusterName\":");
    rc = rc ? rc : ns_buf_append_json_str(&b, a->cluster, strlen(a->cluster), true);
    rc = rc ? rc : ns_buf_append_str(&b, ",\"brokerName\":");
    rc = rc ? rc : ns_buf_append_json_str(&b, a->broker_name, strlen(a->broker_name), true);
    rc = rc ? rc : ns_buf_printf(&b, ",\"brokerId\":%lld,\"brokerAddr\":", (long long)a->broker_id);
    rc = rc ? rc : ns_buf_append_json_str(&b, a->addr, strlen(a->addr), true);
    rc = rc ? rc : ns_buf_printf(&b, ",\"%s\":", held_key);
    rc = rc ? rc : ns_buf_append_json_str(&b, held, strlen(held), true);
    rc = rc ? rc : ns_buf_append_str(&b, "}");
    if (rc == NS_OK && (*out = ns_buf_strdup(&b)) == NULL)
        rc = NS_ENOMEM;
    ns_buf_free(&b);
    return rc;
}

/* Looks for the identity conflicts of ns_identity_conflict_t, in that
 * order, before anything is written; the first found goes to res. */
static int find_identity_conflict(ns_txn_t *t, const ns_register_args_t *a,
                                  ns_register_result_t *res)
{
    ns_group_rec_t g = {0};
    ns_live_rec_t lr = {0};
    const char *held = NULL;
    int rc = ns_group_get(t, a->broker_name, &g);
    if (rc == NS_OK && strcmp(g.cluster, a->cluster) != 0) {
        res->identity = NS_IDENTITY_NAME_IN_OTHER_CLUSTER;
        rc = identity_detail(a, res->identity, "heldByCluster", g.cluster, &res->identity_detail);
        goto out;
    }
    if (rc == NS_OK)
        held = ns_group_addr_of(&g, a->broker_id);
    else if (rc != NS_ENOTFOUND)
        goto out;
    rc = ns_live_get(t, a->cluster, a->addr, &lr);
    if (rc == NS_OK && strcmp(lr.broker_name, a->broker_name) != 0) {
        res->identity = NS_IDENTITY_ADDR_UNDER_OTHER_NAME;
        rc = identity_detail(a, res->identity, "heldByBrokerName", lr.broker_name,
                             &res->identity_detail);
        goto out;
    }
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        goto out;
    rc = NS_OK;
    if (held && strcmp(held, a->addr) != 0) {
        res->identity = NS_IDENTITY_ID_AT_OTHER_ADDR;
        rc = identity_detail(a, res->identity, "heldByAddr", held, &res->identity_detail);
    }
out:
    ns_group_rec_free(&g);
    ns_live_rec_free(&lr);
    return rc;
}

int ns_registry_register(ns_registry_t *r, ns_txn_t *t, const ns_register_args_t *a,
                         ns_register_result_t *res)
{
    ns_group_rec_t g = {0};
    ns_live_rec_t prev = {0};
    bool have_prev = false, group_changed = false, register_first = false;
    audit_diff_t audit = {NS_BUF_INIT, NS_BUF_INIT, NS_BUF_INIT, 0, 0, 0};
    int rc;
    memset(res, 0, sizeof *res);

    /* identity conflicts: found first, refused before any write */
    if ((rc = find_identity_conflict(t, a, res)) != NS_OK)
        goto out;
    if (res->identity != NS_IDENTITY_OK && a->reject_identity_conflicts) {
        res->identity_rejected = true;
        goto out;
    }
    /* the broker's name is a member of its cluster */
    rc = ns_cluster_has(t, a->cluster, a->broker_name);
    if (rc == NS_ENOTFOUND)
        rc = ns_cluster_add(t, a->cluster, a->broker_name);
    if (rc != NS_OK)
        goto out;
    /* the broker group exists: found, or created for a first registration */
    rc = ns_group_get(t, a->broker_name, &g);
    if (rc == NS_ENOTFOUND) {
        g.broker_name = strdup(a->broker_name);
        g.cluster = strdup(a->cluster);
        if (g.broker_name == NULL || g.cluster == NULL) {
            rc = NS_ENOMEM;
            goto out;
        }
        register_first = group_changed = true;
    } else if (rc != NS_OK) {
        goto out;
    }
    /* Java: the smallest id before this registration (0 for an empty group) */
    int64_t prev_min_id = g.n_addrs ? g.addrs[0].id : 0;
    /* the acting-master flag and the zone follow the latest registration */
    if (g.enable_acting_master != a->enable_acting_master) {
        g.enable_acting_master = a->enable_acting_master;
        group_changed = true;
    }
    if (!str_eq(g.zone_name, a->zone_name)) {
        free(g.zone_name);
        g.zone_name = a->zone_name ? strdup(a->zone_name) : NULL;
        if (a->zone_name && g.zone_name == NULL) {
            rc = NS_ENOMEM;
            goto out;
        }
        group_changed = true;
    }
    /* one address appears under one id only */
    for (size_t i = 0; i < g.n_addrs; i++) {
        if (g.addrs[i].id != a->broker_id && strcmp(g.addrs[i].addr, a->addr) == 0) {
            free((char *)g.addrs[i].addr);
            memmove(&g.addrs[i], &g.addrs[i + 1], (g.n_addrs - i - 1) * sizeof *g.addrs);
            g.n_addrs--;
            i--;
            group_changed = true;
        }
    }
    const char *old = ns_group_addr_of(&g, a->broker_id);
    /* a stale master/slave switch (an older stateVersion than the id's live
     * holder) loses to the live one */
    if (old && strcmp(old, a->addr) != 0) {
        ns_live_rec_t other;
        rc = ns_live_get(t, a->cluster, old, &other);
        if (rc == NS_OK) {
            bool stale = other.dv.state_version > a->body->data_version.state_version;
            ns_live_rec_free(&other);
            if (stale) {
                NS_LOG_WARN("broker %s: registration of %s (id %lld) has an older stateVersion "
                            "than live %s; ignored",
                            a->broker_name, a->addr, (long long)a->broker_id, old);
                rc = ns_live_del(t, a->cluster, a->addr);
                res->conflict = true;
                goto save_group;
            }
        } else if (rc != NS_ENOTFOUND) {
            goto out;
        }
    }
    /* an increment (one topic) may not create an id the group does not know yet */
    if (old == NULL && a->body->n_topics == 1) {
        res->failed = true;
        rc = NS_OK;
        goto save_group;
    }
    /* An address is one broker: registered under another name, it leaves
     * that group first (its live record is written again below), so no
     * group keeps it without a live record once it is unregistered (I5). */
    if ((rc = leave_other_group(r, t, a)) != NS_OK)
        goto out;
    /* the group maps the id to this address (a new id is a first registration) */
    if (old == NULL || strcmp(old, a->addr) != 0) {
        if ((rc = ns_group_set_addr(&g, a->broker_id, a->addr)) != NS_OK)
            goto out;
        group_changed = true;
        register_first = register_first || old == NULL;
    }
    /* only the master and the prime slave (the lowest slave of a 5.x group)
     * write queue data; the live record from before tells whether the
     * DataVersion changed */
    bool is_master = a->broker_id == NS_MASTER_ID;
    bool prime_slave =
        !a->old_version && !is_master && g.n_addrs > 0 && a->broker_id == g.addrs[0].id;
    rc = ns_live_get(t, a->cluster, a->addr, &prev);
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        goto out;
    have_prev = rc == NS_OK;
    res->dv_changed = !have_prev || !ns_dataversion_equal(&prev.dv, &a->body->data_version);
    /* their topics' queue data, and the audit record of what changed */
    if (is_master || prime_slave) {
        rc = apply_topics(r, t, a, &g, prime_slave, register_first, res->dv_changed,
                          res->dv_changed && a->audit_retention > 0 ? &audit : NULL);
        if (rc != NS_OK)
            goto out;
        if (res->dv_changed && a->audit_retention > 0 &&
            (rc = ns_audit_write(t, a, have_prev ? &prev.dv : NULL, &audit)) != NS_OK)
            goto out;
    }
    /* the live record and filter servers; new filter servers redo the routes */
    bool filters_changed = false;
    if ((rc = put_live(t, a, &prev, have_prev, &filters_changed)) != NS_OK)
        goto out;
    if (filters_changed && (rc = ns_registry_mark_broker(r, t, a->broker_name)) != NS_OK)
        goto out;
    /* a slave is answered with its master's addresses */
    if ((rc = fill_master(t, a, &g, res)) != NS_OK)
        goto out;
    /* a lower smallest id: the other members are told (one left: it), §6.15 */
    if (a->broker_id < prev_min_id &&
        (rc = ns_registry_minid_change(&g, NULL, a->ha_addr && *a->ha_addr ? a->ha_addr : NULL,
                                       g.n_addrs > 1, &res->minid_change)) != NS_OK)
        goto out;
save_group:
    if (rc == NS_OK && group_changed) {
        rc = ns_group_put(t, &g);
        rc = rc ? rc : ns_registry_mark_broker(r, t, a->broker_name);
    }
out:
    ns_audit_diff_free(&audit);
    ns_group_rec_free(&g);
    ns_live_rec_free(&prev);
    if (rc != NS_OK)
        ns_register_result_free(res);
    return rc;
}

bool ns_registry_unchanged(ns_txn_t *t, const ns_register_args_t *a, ns_register_result_t *res)
{
    ns_group_rec_t g = {0};
    ns_live_rec_t prev = {0};
    bool same = false;
    memset(res, 0, sizeof *res);
    if (ns_cluster_has(t, a->cluster, a->broker_name) != NS_OK ||
        ns_group_get(t, a->broker_name, &g) != NS_OK)
        return false; /* an error too: the writer then decides */
    if (ns_live_get(t, a->cluster, a->addr, &prev) != NS_OK)
        goto out;
    const char *mine = ns_group_addr_of(&g, a->broker_id);
    if (mine == NULL || strcmp(mine, a->addr) != 0 ||
        g.enable_acting_master != a->enable_acting_master || !str_eq(g.zone_name, a->zone_name))
        goto out;
    for (size_t i = 0; i < g.n_addrs; i++)
        if (g.addrs[i].id != a->broker_id && strcmp(g.addrs[i].addr, a->addr) == 0)
            goto out;
    if (!ns_dataversion_equal(&prev.dv, &a->body->data_version) || prev.broker_id != a->broker_id ||
        !str_eq(prev.broker_name, a->broker_name) || !str_eq(prev.ha_addr, a->ha_addr) ||
        prev.heartbeat_timeout_ms != a->heartbeat_timeout_ms)
        goto out;
    if (a->body->has_filter_server_list &&
        !filters_eq(a->body->filter_servers, a->body->n_filter_servers, prev.filter_servers,
                    prev.n_filter_servers))
        goto out;
    bool is_master = a->broker_id == NS_MASTER_ID;
    bool prime_slave = !a->old_version && !is_master && a->broker_id == g.addrs[0].id;
    if ((is_master || prime_slave) && a->delete_absent_topics)
        goto out; /* absent topics would have to be looked for */
    if (is_master || prime_slave) {
        for (size_t i = 0; i < a->body->n_topics; i++) {
            ns_queue_data_t have;
            if (ns_queue_get(t, a->body->topics[i].topic_name, a->broker_name, &have) != NS_OK)
                goto out; /* a missing topic is re-added */
        }
    }
    same = fill_master(t, a, &g, res) == NS_OK;
out:
    ns_group_rec_free(&g);
    ns_live_rec_free(&prev);
    if (!same)
        ns_register_result_free(res);
    return same;
}
