/* cluster.c - cluster membership: clusters (cluster \0 brokerName -> ""). */
#include <string.h>

#include "internal.h"

int ns_cluster_add(ns_txn_t *t, const char *cluster, const char *broker_name)
{
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_key2(&k, cluster, broker_name);
    if (rc == NS_OK && ns_digest_kept(t)) {
        rc = ns_db_get(t, NS_DB_CLUSTERS, &k, NULL);
        rc = rc == NS_ENOTFOUND ? ns_digest_member(t, cluster, broker_name, 1) : rc;
    }
    if (rc == NS_OK)
        rc = ns_db_put(t, NS_DB_CLUSTERS, &k, "", 0);
    ns_buf_free(&k);
    return rc;
}

int ns_cluster_del(ns_txn_t *t, const char *cluster, const char *broker_name)
{
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_key2(&k, cluster, broker_name);
    if (rc == NS_OK && ns_digest_kept(t)) {
        rc = ns_db_get(t, NS_DB_CLUSTERS, &k, NULL);
        rc = rc == NS_OK          ? ns_digest_member(t, cluster, broker_name, -1)
             : rc == NS_ENOTFOUND ? NS_OK
                                  : rc;
    }
    if (rc == NS_OK)
        rc = ns_db_del(t, NS_DB_CLUSTERS, &k);
    ns_buf_free(&k);
    return rc;
}

int ns_cluster_has(ns_txn_t *t, const char *cluster, const char *broker_name)
{
    ns_skey_t k;
    int rc = ns_skey2(&k, cluster, broker_name);
    if (rc == NS_OK)
        rc = ns_db_get(t, NS_DB_CLUSTERS, &k.buf, NULL);
    ns_skey_free(&k);
    return rc;
}

static int stop_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    return 1;
}

int ns_cluster_exists(ns_txn_t *t, const char *cluster)
{
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_key2(&k, cluster, NULL);
    if (rc == NS_OK)
        rc = ns_db_walk(t, NS_DB_CLUSTERS, &k, stop_cb, NULL);
    ns_buf_free(&k);
    return rc == 1 ? NS_OK : rc == NS_OK ? NS_ENOTFOUND : rc;
}

struct pair_walk {
    ns_pair_cb cb;
    ns_name_cb name_cb;
    void *ctx;
};

static int pair_walk_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct pair_walk *w = ctx;
    const char *a = ks;
    size_t alen = strnlen(a, kl);
    if (w->name_cb)
        return w->name_cb(a, w->ctx); /* prefix walk: ks is the broker name */
    if (alen >= kl)
        return NS_ECORRUPT;
    return w->cb(a, a + alen + 1, w->ctx);
}

int ns_cluster_iter(ns_txn_t *t, ns_pair_cb cb, void *ctx)
{
    struct pair_walk w = {cb, NULL, ctx};
    return ns_db_walk(t, NS_DB_CLUSTERS, NULL, pair_walk_cb, &w);
}

int ns_cluster_iter_after(ns_txn_t *t, const char *cluster, const char *broker_name, ns_pair_cb cb,
                          void *ctx)
{
    struct pair_walk w = {cb, NULL, ctx};
    ns_buf_t k = NS_BUF_INIT;
    int rc = cluster ? ns_key2(&k, cluster, broker_name ? broker_name : "") : NS_OK;
    rc = rc ? rc : ns_db_walk_after(t, NS_DB_CLUSTERS, &k, pair_walk_cb, &w);
    ns_buf_free(&k);
    return rc;
}

int ns_cluster_brokers_iter(ns_txn_t *t, const char *cluster, ns_name_cb cb, void *ctx)
{
    struct pair_walk w = {NULL, cb, ctx};
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_key2(&k, cluster, NULL);
    if (rc == NS_OK)
        rc = ns_db_walk(t, NS_DB_CLUSTERS, &k, pair_walk_cb, &w);
    ns_buf_free(&k);
    return rc;
}
