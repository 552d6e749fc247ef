/* live.c - registered broker addresses: live (cluster \0 addr -> packed).
 * Value: brokerName, id i64, haAddr, dv (3 x i64), timeout i64,
 * registered_ms i64, n i64, filter servers. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void ns_live_rec_free(ns_live_rec_t *r)
{
    if (r == NULL)
        return;
    free(r->cluster);
    free(r->addr);
    free(r->broker_name);
    free(r->ha_addr);
    for (size_t i = 0; i < r->n_filter_servers; i++)
        free(r->filter_servers[i]);
    free(r->filter_servers);
    memset(r, 0, sizeof *r);
}

static int live_decode(const uint8_t *k, size_t kl, const uint8_t *v, size_t vl, ns_live_rec_t *out)
{
    memset(out, 0, sizeof *out);
    size_t clen = strnlen((const char *)k, kl);
    if (clen >= kl)
        return NS_ECORRUPT;
    out->cluster = strndup((const char *)k, clen);
    out->addr = strndup((const char *)k + clen + 1, kl - clen - 1);
    ns_unpack_t u = {v, v + vl, false};
    out->broker_name = ns_unpack_strdup(&u);
    out->broker_id = ns_unpack_i64(&u);
    out->ha_addr = ns_unpack_strdup(&u);
    out->dv.counter = ns_unpack_i64(&u);
    out->dv.state_version = ns_unpack_i64(&u);
    out->dv.timestamp = ns_unpack_i64(&u);
    out->heartbeat_timeout_ms = ns_unpack_i64(&u);
    out->registered_ms = ns_unpack_i64(&u);
    int64_t n = ns_unpack_i64(&u);
    if (u.bad || n < 0 || n > 1 << 20 || !out->cluster || !out->addr || !out->broker_name)
        goto bad;
    out->filter_servers = calloc((size_t)n + 1, sizeof(char *));
    if (out->filter_servers == NULL)
        goto bad;
    for (int64_t i = 0; i < n; i++) {
        out->filter_servers[i] = ns_unpack_strdup(&u);
        out->n_filter_servers++;
        if (u.bad || out->filter_servers[i] == NULL)
            goto bad;
    }
    return NS_OK;
bad:
    ns_live_rec_free(out);
    return NS_ECORRUPT;
}

int ns_live_get(ns_txn_t *t, const char *cluster, const char *addr, ns_live_rec_t *out)
{
    ns_skey_t k;
    ns_slice_t v;
    int rc = ns_skey2(&k, cluster, addr);
    if (rc == NS_OK)
        rc = ns_db_get(t, NS_DB_LIVE, &k.buf, &v);
    if (rc == NS_OK)
        rc = live_decode(k.buf.data, k.buf.len, v.ptr, v.len, out);
    ns_skey_free(&k);
    return rc;
}

/* The digest loses the stored record (cluster, addr) if any and gains r
 * (if not NULL). */
static int digest_replace(ns_txn_t *t, const char *cluster, const char *addr,
                          const ns_live_rec_t *r)
{
    ns_live_rec_t old;
    if (!ns_digest_kept(t))
        return NS_OK;
    int rc = ns_live_get(t, cluster, addr, &old);
    if (rc == NS_OK) {
        rc = ns_digest_live(t, &old, -1);
        ns_live_rec_free(&old);
    } else if (rc == NS_ENOTFOUND) {
        rc = NS_OK;
    }
    return rc == NS_OK && r ? ns_digest_live(t, r, 1) : rc;
}

int ns_live_put(ns_txn_t *t, const ns_live_rec_t *r)
{
    ns_buf_t k = NS_BUF_INIT, v = NS_BUF_INIT;
    int rc = ns_key2(&k, r->cluster, r->addr);
    rc = rc ? rc : ns_pack_str(&v, r->broker_name);
    rc = rc ? rc : ns_pack_i64(&v, r->broker_id);
    rc = rc ? rc : ns_pack_str(&v, r->ha_addr);
    rc = rc ? rc : ns_pack_i64(&v, r->dv.counter);
    rc = rc ? rc : ns_pack_i64(&v, r->dv.state_version);
    rc = rc ? rc : ns_pack_i64(&v, r->dv.timestamp);
    rc = rc ? rc : ns_pack_i64(&v, r->heartbeat_timeout_ms);
    rc = rc ? rc : ns_pack_i64(&v, r->registered_ms);
    rc = rc ? rc : ns_pack_i64(&v, (int64_t)r->n_filter_servers);
    for (size_t i = 0; rc == NS_OK && i < r->n_filter_servers; i++)
        rc = ns_pack_str(&v, r->filter_servers[i]);
    rc = rc ? rc : digest_replace(t, r->cluster, r->addr, r);
    if (rc == NS_OK)
        rc = ns_db_put(t, NS_DB_LIVE, &k, v.data, v.len);
    ns_buf_free(&k);
    ns_buf_free(&v);
    return rc;
}

int ns_live_del(ns_txn_t *t, const char *cluster, const char *addr)
{
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_key2(&k, cluster, addr);
    rc = rc ? rc : digest_replace(t, cluster, addr, NULL);
    if (rc == NS_OK)
        rc = ns_db_del(t, NS_DB_LIVE, &k);
    ns_buf_free(&k);
    return rc;
}

struct live_walk {
    ns_live_cb cb;
    void *ctx;
};

static int live_walk_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct live_walk *w = ctx;
    ns_live_rec_t r;
    int rc = live_decode((const uint8_t *)ks, kl, v, vl, &r);
    if (rc != NS_OK)
        return rc;
    rc = w->cb(&r, w->ctx);
    ns_live_rec_free(&r);
    return rc;
}

int ns_live_iter(ns_txn_t *t, ns_live_cb cb, void *ctx)
{
    struct live_walk w = {cb, ctx};
    return ns_db_walk(t, NS_DB_LIVE, NULL, live_walk_cb, &w);
}

int ns_live_iter_after(ns_txn_t *t, const char *cluster, const char *addr, ns_live_cb cb, void *ctx)
{
    struct live_walk w = {cb, ctx};
    ns_buf_t k = NS_BUF_INIT;
    int rc = cluster ? ns_key2(&k, cluster, addr ? addr : "") : NS_OK;
    rc = rc ? rc : ns_db_walk_after(t, NS_DB_LIVE, &k, live_walk_cb, &w);
    ns_buf_free(&k);
    return rc;
}
