/* kv.c - KV config table: kvns (namespace set) and kv (ns \0 key -> value). */
#include <string.h>

#include <cJSON.h>

#include "internal.h"

int ns_kv_ns_create(ns_txn_t *t, const char *ns)
{
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_buf_append_str(&k, ns);
    if (rc == NS_OK)
        rc = ns_db_put(t, NS_DB_KVNS, &k, "", 0);
    ns_buf_free(&k);
    return rc;
}

bool ns_kv_ns_exists(ns_txn_t *t, const char *ns)
{
    ns_buf_t k = ns_key_view(ns);
    return ns_db_get(t, NS_DB_KVNS, &k, NULL) == NS_OK;
}

/* The digest loses the stored value of k = (ns, key), if any, and gains val
 * (if not NULL). */
static int digest_replace(ns_txn_t *t, const char *ns, const char *key, const ns_buf_t *k,
                          const char *val)
{
    ns_slice_t old;
    if (!ns_digest_kept(t))
        return NS_OK;
    int rc = ns_db_get(t, NS_DB_KV, k, &old);
    if (rc == NS_OK)
        rc = ns_digest_kv(t, ns, key, old.ptr, old.len, -1);
    else if (rc == NS_ENOTFOUND)
        rc = NS_OK;
    return rc == NS_OK && val ? ns_digest_kv(t, ns, key, (const uint8_t *)val, strlen(val), 1) : rc;
}

int ns_kv_put(ns_txn_t *t, const char *ns, const char *key, const char *val)
{
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_kv_ns_create(t, ns);
    if (rc == NS_OK)
        rc = ns_key2(&k, ns, key);
    rc = rc ? rc : digest_replace(t, ns, key, &k, val);
    if (rc == NS_OK)
        rc = ns_db_put(t, NS_DB_KV, &k, val, strlen(val));
    ns_buf_free(&k);
    return rc;
}

int ns_kv_get(ns_txn_t *t, const char *ns, const char *key, ns_slice_t *val)
{
    ns_skey_t k;
    int rc = ns_skey2(&k, ns, key);
    if (rc == NS_OK)
        rc = ns_db_get(t, NS_DB_KV, &k.buf, val);
    ns_skey_free(&k);
    return rc;
}

int ns_kv_del(ns_txn_t *t, const char *ns, const char *key)
{
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_key2(&k, ns, key);
    rc = rc ? rc : digest_replace(t, ns, key, &k, NULL);
    if (rc == NS_OK)
        rc = ns_db_del(t, NS_DB_KV, &k);
    ns_buf_free(&k);
    return rc;
}

struct kv_walk {
    ns_kv_cb cb;
    void *ctx;
    ns_buf_t val; /* NUL-terminated copy of the value */
};

static int kv_walk_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct kv_walk *w = ctx;
    ns_buf_reset(&w->val);
    if (ns_buf_append(&w->val, v, vl) != NS_OK)
        return NS_ENOMEM;
    return w->cb(ks, (const char *)w->val.data, vl, w->ctx);
}

int ns_kv_iter(ns_txn_t *t, const char *ns, ns_kv_cb cb, void *ctx)
{
    if (!ns_kv_ns_exists(t, ns))
        return NS_ENOTFOUND;
    struct kv_walk w = {cb, ctx, NS_BUF_INIT};
    ns_buf_t prefix = NS_BUF_INIT;
    int rc = ns_key2(&prefix, ns, NULL);
    if (rc == NS_OK)
        rc = ns_db_walk(t, NS_DB_KV, &prefix, kv_walk_cb, &w);
    ns_buf_free(&prefix);
    ns_buf_free(&w.val);
    return rc;
}

struct name_walk {
    ns_name_cb cb;
    void *ctx;
};

static int name_walk_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct name_walk *w = ctx;
    return w->cb(ks, w->ctx);
}

int ns_kv_ns_iter(ns_txn_t *t, ns_name_cb cb, void *ctx)
{
    struct name_walk w = {cb, ctx};
    return ns_db_walk(t, NS_DB_KVNS, NULL, name_walk_cb, &w);
}

int ns_kv_count(ns_txn_t *t, size_t *out)
{
    return ns_db_count(t, NS_DB_KV, out);
}

int ns_kv_import(ns_txn_t *t, const cJSON *table, size_t *replaced)
{
    int rc = NS_OK;
    *replaced = 0;
    for (const cJSON *ns = table->child; ns && rc == NS_OK; ns = ns->next) {
        rc = ns_kv_ns_create(t, ns->string);
        for (const cJSON *v = ns->child; v && rc == NS_OK; v = v->next) {
            ns_slice_t old;
            if (!cJSON_IsString(v))
                continue; /* null: dropped, as Java does on reload */
            if (ns_kv_get(t, ns->string, v->string, &old) == NS_OK &&
                (old.len != strlen(v->valuestring) || memcmp(old.ptr, v->valuestring, old.len)))
                (*replaced)++;
            rc = ns_kv_put(t, ns->string, v->string, v->valuestring);
        }
    }
    return rc;
}
