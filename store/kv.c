/* kv.c - KV config table: kvns (namespace set), kv (ns \0 key -> value)
 * and kv_versions (the version or tombstone of each entry, v10; layout in
 * keys.h, the order in include/ns/kvver.h).
 *
 * Two kinds of write. The plain ones (ns_kv_put/del: import, restore,
 * tests) leave the entry at version (0, 0) by removing its row. The
 * versioned ones (the PUT/DELETE_KV_CONFIG requests, ns_kv_*_local) take
 * the next hlc of this store and leave a row, a tombstone for a delete; a
 * merge (ns_kv_merge, what kvSync pulled from a peer) writes the peer's
 * state when it orders above ours and never otherwise. */
#include <string.h>
#include <sys/random.h>

#include <cJSON.h>

#include "internal.h"
#include "ns/kvver.h"

#define KVVER_LEN 18
#define KVVER_FORMAT 1
#define META_HLC "kv_hlc"
#define META_SERVER_ID "kv_server_id"

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

static int put_value(ns_txn_t *t, const char *ns, const char *key, const char *val)
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

static int del_value(ns_txn_t *t, const char *ns, const char *key)
{
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_key2(&k, ns, key);
    rc = rc ? rc : digest_replace(t, ns, key, &k, NULL);
    if (rc == NS_OK)
        rc = ns_db_del(t, NS_DB_KV, &k);
    ns_buf_free(&k);
    return rc;
}

/* ---- versions ---- */

static void ver_encode(const ns_kvver_t *v, uint8_t out[KVVER_LEN])
{
    out[0] = KVVER_FORMAT;
    for (int i = 0; i < 8; i++) {
        out[1 + i] = (uint8_t)(v->hlc >> (8 * i));
        out[9 + i] = (uint8_t)(v->server >> (8 * i));
    }
    out[17] = v->deleted ? 1 : 0;
}

static int ver_decode(const uint8_t *p, size_t n, ns_kvver_t *v)
{
    if (n != KVVER_LEN || p[0] != KVVER_FORMAT || p[17] > 1)
        return NS_ECORRUPT;
    v->hlc = v->server = 0;
    for (int i = 7; i >= 0; i--) {
        v->hlc = v->hlc << 8 | p[1 + i];
        v->server = v->server << 8 | p[9 + i];
    }
    v->deleted = p[17] == 1;
    return NS_OK;
}

static bool have_versions(ns_txn_t *t)
{
    return t->s->have_db[NS_DB_KV_VERSIONS];
}

int ns_kv_version_get(ns_txn_t *t, const char *ns, const char *key, ns_kvver_t *out)
{
    ns_skey_t k;
    ns_slice_t v;
    if (!have_versions(t))
        return NS_ENOTFOUND;
    int rc = ns_skey2(&k, ns, key);
    rc = rc ? rc : ns_db_get(t, NS_DB_KV_VERSIONS, &k.buf, &v);
    rc = rc ? rc : ver_decode(v.ptr, v.len, out);
    ns_skey_free(&k);
    return rc;
}

/* Sets the row of (ns, key) to v, or removes it (v NULL). */
static int ver_set(ns_txn_t *t, const char *ns, const char *key, const ns_kvver_t *v)
{
    ns_buf_t k = NS_BUF_INIT;
    uint8_t enc[KVVER_LEN];
    if (!have_versions(t))
        return v ? NS_EINVAL : NS_OK; /* a store before v10 has no versions to drop */
    int rc = ns_key2(&k, ns, key);
    if (rc == NS_OK && v) {
        ver_encode(v, enc);
        rc = ns_db_put(t, NS_DB_KV_VERSIONS, &k, enc, sizeof enc);
    } else if (rc == NS_OK) {
        rc = ns_db_del(t, NS_DB_KV_VERSIONS, &k);
    }
    ns_buf_free(&k);
    return rc;
}

int ns_kv_server_id(ns_txn_t *t, uint64_t *out)
{
    int rc = ns_meta_get_u64(t, META_SERVER_ID, out);
    if (rc != NS_ENOTFOUND || !t->write)
        return rc;
    *out = 0;
    while (*out == 0) /* 0 is the id of the entries written before versions */
        if (getrandom(out, sizeof *out, 0) != (ssize_t)sizeof *out)
            return NS_EIO;
    return ns_meta_put_u64(t, META_SERVER_ID, *out);
}

int ns_kv_hlc_get(ns_txn_t *t, uint64_t *out)
{
    int rc = ns_meta_get_u64(t, META_HLC, out);
    if (rc == NS_ENOTFOUND) {
        *out = 0;
        rc = NS_OK;
    }
    return rc;
}

/* The version of a local write at now_ms: the next hlc, kept in meta. */
static int next_version(ns_txn_t *t, int64_t now_ms, bool deleted, ns_kvver_t *v)
{
    uint64_t last = 0;
    int rc = ns_kv_hlc_get(t, &last);
    rc = rc ? rc : ns_kv_server_id(t, &v->server);
    if (rc == NS_OK) {
        v->hlc = ns_kvver_next(last, now_ms);
        v->deleted = deleted;
        rc = ns_meta_put_u64(t, META_HLC, v->hlc);
    }
    return rc;
}

int ns_kv_put(ns_txn_t *t, const char *ns, const char *key, const char *val)
{
    int rc = put_value(t, ns, key, val);
    return rc ? rc : ver_set(t, ns, key, NULL);
}

int ns_kv_del(ns_txn_t *t, const char *ns, const char *key)
{
    int rc = del_value(t, ns, key);
    return rc ? rc : ver_set(t, ns, key, NULL);
}

int ns_kv_put_local(ns_txn_t *t, const char *ns, const char *key, const char *val, int64_t now_ms,
                    ns_kvver_t *out)
{
    ns_kvver_t v;
    int rc = next_version(t, now_ms, false, &v);
    rc = rc ? rc : put_value(t, ns, key, val);
    rc = rc ? rc : ver_set(t, ns, key, &v);
    if (rc == NS_OK && out)
        *out = v;
    return rc;
}

int ns_kv_del_local(ns_txn_t *t, const char *ns, const char *key, int64_t now_ms, ns_kvver_t *out)
{
    ns_kvver_t v;
    int rc = next_version(t, now_ms, true, &v);
    rc = rc ? rc : del_value(t, ns, key);
    rc = rc ? rc : ver_set(t, ns, key, &v);
    if (rc == NS_OK && out)
        *out = v;
    return rc;
}

int ns_kv_state_get(ns_txn_t *t, const char *ns, const char *key, ns_kvver_t *ver, ns_slice_t *val)
{
    int vrc = ns_kv_version_get(t, ns, key, ver);
    int rc = ns_kv_get(t, ns, key, val);
    if (vrc != NS_OK && vrc != NS_ENOTFOUND)
        return vrc;
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        return rc;
    if (vrc == NS_ENOTFOUND) {
        memset(ver, 0, sizeof *ver);
        return rc; /* (0, 0) with a value; absent without */
    }
    if (ver->deleted) {
        val->ptr = NULL;
        val->len = 0;
        return rc == NS_ENOTFOUND ? NS_OK : NS_ECORRUPT; /* I10 */
    }
    return rc == NS_OK ? NS_OK : NS_ECORRUPT; /* I10 */
}

int ns_kv_merge(ns_txn_t *t, const char *ns, const char *key, const ns_kvver_t *rv, const char *val,
                bool *applied)
{
    ns_kvver_t lv;
    ns_slice_t lval = {NULL, 0};
    uint64_t last = 0;
    *applied = false;
    if ((rv->deleted && rv->hlc == 0) || (!rv->deleted && val == NULL))
        return NS_EINVAL; /* a tombstone always has a version; a value a value */
    int rc = ns_kv_state_get(t, ns, key, &lv, &lval);
    bool absent = rc == NS_ENOTFOUND;
    if (rc != NS_OK && !absent)
        return rc;
    size_t vlen = val ? strlen(val) : 0;
    /* the hlc seen moves ours on, so a later local write orders after it */
    rc = ns_kv_hlc_get(t, &last);
    if (rc == NS_OK && rv->hlc > last)
        rc = ns_meta_put_u64(t, META_HLC, rv->hlc);
    if (rc != NS_OK || (!absent && ns_kvver_cmp(rv, val, vlen, &lv, lval.ptr, lval.len) <= 0))
        return rc;
    bool zero = rv->hlc == 0 && rv->server == 0;
    if (rv->deleted)
        rc = del_value(t, ns, key);
    else
        rc = put_value(t, ns, key, val);
    rc = rc ? rc : ver_set(t, ns, key, zero ? NULL : rv);
    *applied = rc == NS_OK;
    return rc;
}

/* ---- tombstones ---- */

struct sweep {
    int64_t before_ms;
    size_t max, left;
    ns_buf_t keys; /* the keys to remove, each with its length before it */
    size_t n;
};

static int sweep_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct sweep *w = ctx;
    ns_kvver_t ver;
    if (ver_decode(v, vl, &ver) != NS_OK || !ver.deleted)
        return 0; /* a bad row is verify's to report */
    if (w->n >= w->max || ns_kvver_wall_ms(ver.hlc) >= w->before_ms) {
        w->left++;
        return 0;
    }
    uint32_t n32 = (uint32_t)kl;
    int rc = ns_buf_append(&w->keys, &n32, sizeof n32);
    rc = rc ? rc : ns_buf_append(&w->keys, ks, kl);
    w->n++;
    return rc;
}

int ns_kv_tombstones_sweep(ns_txn_t *t, int64_t before_ms, size_t max, size_t *removed,
                           size_t *left)
{
    struct sweep w = {before_ms, max, 0, NS_BUF_INIT, 0};
    *removed = *left = 0;
    if (!have_versions(t))
        return NS_OK;
    int rc = ns_db_walk(t, NS_DB_KV_VERSIONS, NULL, sweep_cb, &w);
    for (size_t off = 0; rc == NS_OK && off < w.keys.len;) {
        uint32_t n32;
        memcpy(&n32, w.keys.data + off, sizeof n32);
        ns_buf_t k = {w.keys.data + off + sizeof n32, n32, n32};
        rc = t->write ? ns_db_del(t, NS_DB_KV_VERSIONS, &k) : NS_OK;
        off += sizeof n32 + n32;
    }
    if (rc == NS_OK) {
        *removed = w.n;
        *left = w.left;
    }
    ns_buf_free(&w.keys);
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

struct kv_after_walk {
    ns_txn_t *t;
    ns_kv_entry_cb cb;
    void *ctx;
    ns_buf_t val;
};

static int kv_after_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct kv_after_walk *w = ctx;
    size_t nlen = strnlen(ks, kl);
    ns_kvver_t ver;
    if (nlen >= kl)
        return NS_ECORRUPT;
    int rc = ns_kv_version_get(w->t, ks, ks + nlen + 1, &ver);
    if (rc == NS_ENOTFOUND) { /* written before versions, or by an import: (0, 0) */
        memset(&ver, 0, sizeof ver);
        rc = NS_OK;
    }
    if (rc != NS_OK)
        return rc;
    ns_buf_reset(&w->val);
    if (ns_buf_append(&w->val, v, vl) != NS_OK || ns_buf_append_u8(&w->val, 0) != NS_OK)
        return NS_ENOMEM;
    return w->cb(ks, ks + nlen + 1, (const char *)w->val.data, vl, &ver, w->ctx);
}

int ns_kv_iter_after(ns_txn_t *t, const char *ns, const char *key, ns_kv_entry_cb cb, void *ctx)
{
    struct kv_after_walk w = {t, cb, ctx, NS_BUF_INIT};
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns ? ns_key2(&k, ns, key ? key : "") : NS_OK;
    rc = rc ? rc : ns_db_walk_after(t, NS_DB_KV, &k, kv_after_cb, &w);
    ns_buf_free(&k);
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
