/* group.c - broker groups: groups (brokerName -> packed BrokerData).
 * Value: cluster, zone (nullable), actingMaster u8, count i64, then
 * (id i64, addr) pairs sorted by id. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void ns_group_rec_free(ns_group_rec_t *g)
{
    if (g == NULL)
        return;
    free(g->broker_name);
    free(g->cluster);
    free(g->zone_name);
    for (size_t i = 0; i < g->n_addrs; i++)
        free((char *)g->addrs[i].addr);
    free(g->addrs);
    memset(g, 0, sizeof *g);
}

static int group_decode(const char *name, size_t name_len, const uint8_t *v, size_t vl,
                        ns_group_rec_t *out)
{
    ns_unpack_t u = {v, v + vl, false};
    memset(out, 0, sizeof *out);
    out->broker_name = strndup(name, name_len);
    out->cluster = ns_unpack_strdup(&u);
    out->zone_name = ns_unpack_strdup(&u);
    out->enable_acting_master = ns_unpack_u8(&u) != 0;
    int64_t n = ns_unpack_i64(&u);
    if (u.bad || n < 0 || n > 1 << 20 || out->broker_name == NULL || out->cluster == NULL)
        goto bad;
    out->addrs = calloc((size_t)n + 1, sizeof *out->addrs);
    if (out->addrs == NULL)
        goto bad;
    for (int64_t i = 0; i < n; i++) {
        out->addrs[i].id = ns_unpack_i64(&u);
        out->addrs[i].addr = ns_unpack_strdup(&u);
        out->n_addrs++;
        if (u.bad || out->addrs[i].addr == NULL)
            goto bad;
    }
    return NS_OK;
bad:
    ns_group_rec_free(out);
    return NS_ECORRUPT;
}

int ns_group_get(ns_txn_t *t, const char *broker_name, ns_group_rec_t *out)
{
    ns_buf_t k = ns_key_view(broker_name);
    ns_slice_t v;
    int rc = ns_db_get(t, NS_DB_GROUPS, &k, &v);
    if (rc == NS_OK)
        rc = group_decode(broker_name, k.len, v.ptr, v.len, out);
    return rc;
}

/* The digest loses the stored group broker_name (if any) and gains g (if
 * not NULL). */
static int digest_replace(ns_txn_t *t, const char *broker_name, const ns_group_rec_t *g)
{
    ns_group_rec_t old;
    if (!ns_digest_kept(t))
        return NS_OK;
    int rc = ns_group_get(t, broker_name, &old);
    if (rc == NS_OK) {
        rc = ns_digest_group(t, &old, -1);
        ns_group_rec_free(&old);
    } else if (rc == NS_ENOTFOUND) {
        rc = NS_OK;
    }
    return rc == NS_OK && g ? ns_digest_group(t, g, 1) : rc;
}

int ns_group_put(ns_txn_t *t, const ns_group_rec_t *g)
{
    ns_buf_t k = NS_BUF_INIT, v = NS_BUF_INIT;
    int rc = ns_buf_append_str(&k, g->broker_name);
    rc = rc ? rc : ns_pack_str(&v, g->cluster);
    rc = rc ? rc : ns_pack_str(&v, g->zone_name);
    rc = rc ? rc : ns_pack_u8(&v, g->enable_acting_master);
    rc = rc ? rc : ns_pack_i64(&v, (int64_t)g->n_addrs);
    for (size_t i = 0; rc == NS_OK && i < g->n_addrs; i++) {
        rc = ns_pack_i64(&v, g->addrs[i].id);
        rc = rc ? rc : ns_pack_str(&v, g->addrs[i].addr);
    }
    rc = rc ? rc : digest_replace(t, g->broker_name, g);
    if (rc == NS_OK)
        rc = ns_db_put(t, NS_DB_GROUPS, &k, v.data, v.len);
    ns_buf_free(&k);
    ns_buf_free(&v);
    return rc;
}

int ns_group_del(ns_txn_t *t, const char *broker_name)
{
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_buf_append_str(&k, broker_name);
    rc = rc ? rc : digest_replace(t, broker_name, NULL);
    if (rc == NS_OK)
        rc = ns_db_del(t, NS_DB_GROUPS, &k);
    ns_buf_free(&k);
    return rc;
}

struct group_walk {
    ns_group_cb cb;
    void *ctx;
};

static int group_walk_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct group_walk *w = ctx;
    ns_group_rec_t g;
    int rc = group_decode(ks, kl, v, vl, &g);
    if (rc != NS_OK)
        return rc;
    rc = w->cb(&g, w->ctx);
    ns_group_rec_free(&g);
    return rc;
}

int ns_group_iter(ns_txn_t *t, ns_group_cb cb, void *ctx)
{
    struct group_walk w = {cb, ctx};
    return ns_db_walk(t, NS_DB_GROUPS, NULL, group_walk_cb, &w);
}

int ns_group_iter_after(ns_txn_t *t, const char *broker_name, ns_group_cb cb, void *ctx)
{
    struct group_walk w = {cb, ctx};
    ns_buf_t k = NS_BUF_INIT;
    int rc = broker_name ? ns_buf_append_str(&k, broker_name) : NS_OK;
    rc = rc ? rc : ns_db_walk_after(t, NS_DB_GROUPS, &k, group_walk_cb, &w);
    ns_buf_free(&k);
    return rc;
}

const char *ns_group_addr_of(const ns_group_rec_t *g, int64_t id)
{
    for (size_t i = 0; i < g->n_addrs; i++)
        if (g->addrs[i].id == id)
            return g->addrs[i].addr;
    return NULL;
}

int ns_group_set_addr(ns_group_rec_t *g, int64_t id, const char *addr)
{
    char *copy = strdup(addr);
    if (copy == NULL)
        return NS_ENOMEM;
    size_t i = 0;
    while (i < g->n_addrs && g->addrs[i].id < id)
        i++;
    if (i < g->n_addrs && g->addrs[i].id == id) {
        free((char *)g->addrs[i].addr);
        g->addrs[i].addr = copy;
        return NS_OK;
    }
    ns_broker_addr_t *a = realloc(g->addrs, (g->n_addrs + 1) * sizeof *a);
    if (a == NULL) {
        free(copy);
        return NS_ENOMEM;
    }
    memmove(a + i + 1, a + i, (g->n_addrs - i) * sizeof *a);
    a[i].id = id;
    a[i].addr = copy;
    g->addrs = a;
    g->n_addrs++;
    return NS_OK;
}

size_t ns_group_remove_addr(ns_group_rec_t *g, const char *addr)
{
    size_t removed = 0, j = 0;
    for (size_t i = 0; i < g->n_addrs; i++) {
        if (strcmp(g->addrs[i].addr, addr) == 0) {
            free((char *)g->addrs[i].addr);
            removed++;
        } else {
            g->addrs[j++] = g->addrs[i];
        }
    }
    g->n_addrs = j;
    return removed;
}

void ns_group_view(const ns_group_rec_t *g, ns_broker_data_t *out)
{
    out->cluster = g->cluster;
    out->broker_name = g->broker_name;
    out->zone_name = g->zone_name;
    out->enable_acting_master = g->enable_acting_master;
    out->addrs = g->addrs;
    out->n_addrs = g->n_addrs;
}
