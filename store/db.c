/* db.c - generic helpers over one table, keys and the record packer. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int ns_key2(ns_buf_t *k, const char *a, const char *b)
{
    ns_buf_reset(k);
    if (ns_buf_append_str(k, a) != NS_OK || ns_buf_append_u8(k, 0) != NS_OK)
        return NS_ENOMEM;
    if (b && ns_buf_append_str(k, b) != NS_OK)
        return NS_ENOMEM;
    return NS_OK;
}

int ns_skey2(ns_skey_t *k, const char *a, const char *b)
{
    size_t la = strlen(a), lb = b ? strlen(b) : 0, n = la + 1 + lb;
    ns_buf_init(&k->buf);
    k->heap = n >= sizeof k->room;
    if (!k->heap) {
        k->buf.data = k->room;
        k->buf.cap = sizeof k->room;
    } else if (ns_buf_reserve(&k->buf, n + 1) != NS_OK) {
        return NS_ENOMEM;
    }
    memcpy(k->buf.data, a, la);
    k->buf.data[la] = 0;
    if (lb)
        memcpy(k->buf.data + la + 1, b, lb);
    k->buf.data[n] = 0;
    k->buf.len = n;
    return NS_OK;
}

void ns_skey_free(ns_skey_t *k)
{
    if (k->heap)
        ns_buf_free(&k->buf);
}

int ns_db_put(ns_txn_t *t, int db, const ns_buf_t *key, const void *val, size_t n)
{
    MDB_dbi dbi;
    int rc = ns_dbi(t, db, &dbi);
    if (rc != NS_OK)
        return rc;
    MDB_val k = ns_val(key->data, key->len), v = ns_val(n ? val : "", n);
    ns_txn_wrote(t, key->len + n);
    return ns_lmdb_error(mdb_put(t->txn, dbi, &k, &v, 0));
}

_Static_assert(NS_DB_COUNT <= 32, "kept_lent holds a bit per table");

int ns_db_cursor_take(ns_txn_t *t, int db, MDB_cursor **out)
{
    MDB_dbi dbi;
    int rc = ns_dbi(t, db, &dbi);
    if (rc != NS_OK)
        return rc;
    uint32_t bit = 1u << db;
    if (!t->write || (t->kept_lent & bit))
        return ns_lmdb_error(mdb_cursor_open(t->txn, dbi, out));
    if (t->kept[db] == NULL && (rc = mdb_cursor_open(t->txn, dbi, &t->kept[db])) != 0) {
        t->kept[db] = NULL;
        return ns_lmdb_error(rc);
    }
    t->kept_lent |= bit;
    *out = t->kept[db];
    return NS_OK;
}

void ns_db_cursor_give(ns_txn_t *t, int db, MDB_cursor *cur)
{
    if (cur != NULL && cur == t->kept[db])
        t->kept_lent &= ~(1u << db);
    else if (cur != NULL)
        mdb_cursor_close(cur);
}

void ns_db_cursors_close(ns_txn_t *t)
{
    for (int db = 0; db < NS_DB_COUNT; db++) {
        if (t->kept[db] != NULL)
            mdb_cursor_close(t->kept[db]);
        t->kept[db] = NULL;
    }
    t->kept_lent = 0;
}

int ns_db_get(ns_txn_t *t, int db, const ns_buf_t *key, ns_slice_t *val)
{
    MDB_dbi dbi;
    int rc = ns_dbi(t, db, &dbi);
    if (rc != NS_OK)
        return rc;
    MDB_val k = ns_val(key->data, key->len), v;
    MDB_cursor *cur = NULL;
    if (!t->write) {
        rc = mdb_get(t->txn, dbi, &k, &v);
    } else if ((rc = ns_db_cursor_take(t, db, &cur)) == NS_OK) {
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY); /* a batch's gets in key order */
        ns_db_cursor_give(t, db, cur);
    } else {
        return rc;
    }
    if (rc != 0)
        return ns_lmdb_error(rc);
    if (val) {
        val->ptr = v.mv_data;
        val->len = v.mv_size;
    }
    return NS_OK;
}

int ns_db_del(ns_txn_t *t, int db, const ns_buf_t *key)
{
    MDB_dbi dbi;
    int rc = ns_dbi(t, db, &dbi);
    if (rc != NS_OK)
        return rc;
    MDB_val k = ns_val(key->data, key->len);
    ns_txn_wrote(t, key->len);
    rc = mdb_del(t->txn, dbi, &k, NULL);
    return rc == MDB_NOTFOUND ? NS_OK : ns_lmdb_error(rc);
}

/* The walk of ns_db_walk and ns_db_walk_after: keys with prefix, or every
 * key after `after` (exclusive) when after is not NULL. */
static int walk(ns_txn_t *t, int db, const ns_buf_t *prefix, const ns_buf_t *after,
                ns_db_walk_cb cb, void *ctx);

int ns_db_walk(ns_txn_t *t, int db, const ns_buf_t *prefix, ns_db_walk_cb cb, void *ctx)
{
    return walk(t, db, prefix, NULL, cb, ctx);
}

int ns_db_walk_after(ns_txn_t *t, int db, const ns_buf_t *after, ns_db_walk_cb cb, void *ctx)
{
    return walk(t, db, NULL, after && after->len ? after : NULL, cb, ctx);
}

static int walk(ns_txn_t *t, int db, const ns_buf_t *prefix, const ns_buf_t *after,
                ns_db_walk_cb cb, void *ctx)
{
    MDB_cursor *cur = NULL;
    char room[256]; /* the key copy; every real key fits, a longer one goes to big */
    ns_buf_t big = NS_BUF_INIT;
    int rc = ns_db_cursor_take(t, db, &cur);
    if (rc != NS_OK)
        return rc;
    size_t plen = prefix ? prefix->len : 0;
    MDB_val k = after ? ns_val(after->data, after->len) : ns_val(plen ? prefix->data : NULL, plen),
            v;
    int op = plen || after ? MDB_SET_RANGE : MDB_FIRST;
    for (rc = mdb_cursor_get(cur, &k, &v, op); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || (plen && memcmp(k.mv_data, prefix->data, plen) != 0))
            break;
        if (after && k.mv_size == after->len && memcmp(k.mv_data, after->data, after->len) == 0)
            continue; /* exclusive */
        const uint8_t *ks = (const uint8_t *)k.mv_data + plen;
        size_t kl = k.mv_size - plen;
        const char *key = room;
        if (kl < sizeof room) {
            memcpy(room, ks, kl);
            room[kl] = 0;
        } else {
            ns_buf_reset(&big);
            if (ns_buf_append(&big, ks, kl) != NS_OK) {
                rc = NS_ENOMEM;
                goto done;
            }
            key = (const char *)big.data;
        }
        if ((rc = cb(key, kl, v.mv_data, v.mv_size, ctx)) != 0)
            goto done;
    }
    rc = rc == 0 || rc == MDB_NOTFOUND ? NS_OK : ns_lmdb_error(rc);
done:
    ns_db_cursor_give(t, db, cur);
    ns_buf_free(&big);
    return rc;
}

int ns_db_count(ns_txn_t *t, int db, size_t *out)
{
    MDB_dbi dbi;
    MDB_stat st;
    int rc = ns_dbi(t, db, &dbi);
    if (rc == NS_OK && (rc = mdb_stat(t->txn, dbi, &st)) != 0)
        rc = ns_lmdb_error(rc);
    *out = rc == NS_OK ? st.ms_entries : 0;
    return rc;
}

/* ---- packer ---- */

int ns_pack_str(ns_buf_t *b, const char *s)
{
    uint32_t n = s ? (uint32_t)strlen(s) : UINT32_MAX;
    if (ns_buf_append(b, &n, 4) != NS_OK)
        return NS_ENOMEM;
    if (s == NULL)
        return NS_OK;
    return ns_buf_append(b, s, (size_t)n + 1); /* with the NUL */
}

int ns_pack_i64(ns_buf_t *b, int64_t v)
{
    return ns_buf_append(b, &v, 8);
}

int ns_pack_u8(ns_buf_t *b, uint8_t v)
{
    return ns_buf_append(b, &v, 1);
}

const char *ns_unpack_str(ns_unpack_t *u)
{
    uint32_t n;
    if (u->bad || u->end - u->p < 4) {
        u->bad = true;
        return NULL;
    }
    memcpy(&n, u->p, 4);
    u->p += 4;
    if (n == UINT32_MAX)
        return NULL;
    if ((size_t)(u->end - u->p) < (size_t)n + 1 || u->p[n] != 0) {
        u->bad = true;
        return NULL;
    }
    const char *s = (const char *)u->p;
    u->p += (size_t)n + 1;
    return s;
}

char *ns_unpack_strdup(ns_unpack_t *u)
{
    const char *s = ns_unpack_str(u);
    if (s == NULL)
        return NULL;
    char *d = strdup(s);
    if (d == NULL)
        u->bad = true;
    return d;
}

int64_t ns_unpack_i64(ns_unpack_t *u)
{
    int64_t v = 0;
    if (u->bad || u->end - u->p < 8) {
        u->bad = true;
        return 0;
    }
    memcpy(&v, u->p, 8);
    u->p += 8;
    return v;
}

uint8_t ns_unpack_u8(ns_unpack_t *u)
{
    if (u->bad || u->end - u->p < 1) {
        u->bad = true;
        return 0;
    }
    return *u->p++;
}

/* ---- meta ---- */

int ns_meta_get_u64(ns_txn_t *t, const char *key, uint64_t *out)
{
    ns_buf_t k = NS_BUF_INIT;
    ns_slice_t v = {NULL, 0};
    int rc = ns_buf_append_str(&k, key);
    if (rc == NS_OK)
        rc = ns_db_get(t, NS_DB_META, &k, &v);
    if (rc == NS_OK && v.len != 8)
        rc = NS_ECORRUPT;
    if (rc == NS_OK)
        memcpy(out, v.ptr, 8);
    ns_buf_free(&k);
    return rc;
}

int ns_meta_del(ns_txn_t *t, const char *key)
{
    ns_buf_t k = ns_key_view(key);
    return ns_db_del(t, NS_DB_META, &k);
}

int ns_meta_put_u64(ns_txn_t *t, const char *key, uint64_t v)
{
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_buf_append_str(&k, key);
    if (rc == NS_OK)
        rc = ns_db_put(t, NS_DB_META, &k, &v, 8);
    ns_buf_free(&k);
    return rc;
}
