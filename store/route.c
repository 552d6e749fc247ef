/* route.c - materialised routes: routes (topic -> both encodings).
 * Route: [u32 std_insert][u32 std_len][std bytes][u32 legacy_insert][legacy]
 * (u32 in host byte order, as LMDB's own file is: a store does not move
 * between machines of different endianness). Since schema v4 legacy_insert may be ROUTE_DERIVED
 * with no legacy bytes: the legacy form is derived from std when read, which
 * halves what a registration of many topics writes. Since schema v12 the
 * table is keyed by the name's hash and the route follows the name in the
 * value (route_key.h); before, the key was the name and the value the
 * route. Written by the writer in the transaction that changes the topic;
 * read on the lookup path from the snapshot's memo (route_memo.h), else by
 * one descent of the tree in the map (tree_walk.h), else (a write
 * transaction, or a page the walk declines) with mdb_get. */
#include <string.h>

#include "internal.h"
#include "route_key.h"
#include "route_memo.h"

#define ROUTE_DERIVED UINT32_MAX
#define HASHED_SCHEMA 12 /* the schema that keys routes by hash */

static bool hashed(const ns_txn_t *t)
{
    return t->s->schema >= HASHED_SCHEMA;
}

int ns_route_put(ns_txn_t *t, const char *topic, const ns_buf_t *std, size_t std_insert,
                 const ns_buf_t *legacy, size_t legacy_insert)
{
    MDB_dbi dbi;
    int rc = ns_dbi(t, NS_DB_ROUTES, &dbi);
    if (rc != NS_OK)
        return rc;
    size_t legacy_len = legacy ? legacy->len : 0, n = strlen(topic);
    if (std->len >= UINT32_MAX || legacy_len >= UINT32_MAX)
        return NS_ETOOBIG;
    size_t total = 12 + std->len + legacy_len;
    uint8_t *p;
    ns_txn_wrote(t, n + total);
    if (hashed(t)) {
        rc = ns_route_entry_reserve(t->txn, dbi, topic, n, total, &p);
    } else {
        MDB_val k = ns_val(topic, n), v = ns_val(NULL, total);
        rc = mdb_put(t->txn, dbi, &k, &v, MDB_RESERVE); /* write straight into the page */
        p = v.mv_data;
    }
    if (rc != 0)
        return ns_lmdb_error(rc);
    uint32_t w[2] = {(uint32_t)std_insert, (uint32_t)std->len};
    memcpy(p, w, 8);
    if (std->len) /* an empty ns_buf_t has data == NULL: memcpy(NULL, 0) is UB */
        memcpy(p + 8, std->data, std->len);
    uint32_t li = legacy ? (uint32_t)legacy_insert : ROUTE_DERIVED;
    memcpy(p + 8 + std->len, &li, 4);
    if (legacy_len)
        memcpy(p + 12 + std->len, legacy->data, legacy_len);
    return NS_OK;
}

/* The routes tree of read transaction t's snapshot (ns_tree_open), read
 * once per snapshot and map. NULL: ask mdb_get (a write transaction, whose pages
 * are not in the map yet, or a record the walk does not follow). */
static const ns_tree_t *routes_tree(ns_txn_t *t)
{
    if (t->write)
        return NULL;
    uint64_t id = (uint64_t)mdb_txn_id(t->txn);
    if (t->tree_state != NS_TREE_UNREAD && id == t->tree_txnid && t->s->map_moves == t->tree_moves)
        return t->tree_state == NS_TREE_READ ? &t->tree : NULL;
    t->tree_txnid = id;
    t->tree_moves = t->s->map_moves;
    t->tree_state = NS_TREE_OFF;
    if (ns_tree_open(t->s->env, t->txn, ns_db_names[NS_DB_ROUTES], &t->tree) != NS_OK)
        return NULL;
    t->tree_state = NS_TREE_READ;
    return &t->tree;
}

/* The value stored under key k in t: from the walk when it answers, else
 * mdb_get. */
static int stored_value(ns_txn_t *t, MDB_dbi dbi, MDB_val *k, MDB_val *v)
{
    const ns_tree_t *tree = routes_tree(t);
    if (tree) {
        const void *val;
        size_t vlen;
        int rc = ns_tree_get(tree, k->mv_data, k->mv_size, &val, &vlen);
        if (rc == NS_OK) {
            v->mv_data = (void *)val;
            v->mv_size = vlen;
        }
        if (rc != NS_EFALLBACK)
            return rc;
    }
    int rc = mdb_get(t->txn, dbi, k, v);
    return rc ? ns_lmdb_error(rc) : NS_OK;
}

/* topic's (n bytes) route in t: the value under its name before v12; since,
 * the route in the entry of its hash that is of topic (route_key.h). */
static int route_value(ns_txn_t *t, MDB_dbi dbi, const char *topic, size_t n, MDB_val *route)
{
    MDB_val k = ns_val(topic, n), v;
    if (!hashed(t))
        return stored_value(t, dbi, &k, route);
    uint8_t key[NS_ROUTE_HASH_BYTES + NS_ROUTE_NAME_MAX];
    if (n == 0 || n > NS_ROUTE_NAME_MAX)
        return NS_ENOTFOUND;
    k = ns_val(key, ns_route_key(topic, n, false, key));
    for (int pass = 0;; pass++) {
        const char *en;
        size_t el;
        int rc = stored_value(t, dbi, &k, &v);
        if (rc != NS_OK)
            return rc;
        if (!ns_route_entry_split(&v, &en, &el, route))
            return NS_ECORRUPT;
        if (el == n && memcmp(en, topic, n) == 0)
            return NS_OK;
        if (pass) /* the long key is of another name */
            return NS_ECORRUPT;
        k.mv_size = ns_route_key(topic, n, true, key); /* another topic holds the hash */
    }
}

bool ns_route_walk_agrees(ns_txn_t *t, const void *key, size_t n, const void *val, size_t vlen)
{
    const ns_tree_t *tree = routes_tree(t);
    const void *got;
    size_t glen;
    if (tree == NULL)
        return true; /* a write transaction: nothing is read from the map */
    int rc = ns_tree_get(tree, key, n, &got, &glen);
    return rc == NS_EFALLBACK || (rc == NS_OK && got == val && glen == vlen);
}

int ns_route_entry_topic(ns_txn_t *t, const void *key, size_t kn, const void *val, size_t vlen,
                         ns_buf_t *name, const char **why)
{
    MDB_val v = ns_val(val, vlen), route, k8;
    const char *en = key, *on;
    size_t el = kn, ol;
    uint8_t want[NS_ROUTE_HASH_BYTES + NS_ROUTE_NAME_MAX];
    MDB_dbi dbi;
    *why = NULL;
    ns_buf_reset(name);
    if (hashed(t) && !ns_route_entry_split(&v, &en, &el, &route)) {
        *why = "a value that does not start with the topic's name";
        en = "?";
        el = 1;
    }
    int rc = ns_buf_append(name, en, el);
    rc = rc ? rc : ns_buf_append(name, "", 1);
    if (rc != NS_OK || !hashed(t) || *why)
        return rc;
    name->len--; /* the NUL stays past len */
    bool is_long = kn > NS_ROUTE_HASH_BYTES;
    if (el > NS_ROUTE_NAME_MAX || ns_route_key(en, el, is_long, want) != kn ||
        memcmp(want, key, kn) != 0) {
        *why = "stored under a key that is not its name's";
        return NS_OK;
    }
    if (!is_long || (rc = ns_dbi(t, NS_DB_ROUTES, &dbi)) != NS_OK)
        return rc;
    k8 = ns_val(want, NS_ROUTE_HASH_BYTES);
    rc = mdb_get(t->txn, dbi, &k8, &v);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return ns_lmdb_error(rc);
    if (rc == MDB_NOTFOUND || !ns_route_entry_split(&v, &on, &ol, &route) ||
        (ol == el && memcmp(on, en, el) == 0))
        *why = "stored under the long key while the short key of its hash is not another topic's";
    return NS_OK;
}

int ns_route_get(ns_txn_t *t, const char *topic, bool standard, ns_slice_t *out, size_t *insert_at,
                 bool *derive)
{
    MDB_dbi dbi;
    int rc = ns_dbi(t, NS_DB_ROUTES, &dbi);
    if (rc != NS_OK)
        return rc;
    MDB_val k = ns_val(topic, strlen(topic)), v;
    ns_route_memo_slot_t *fill = NULL;
    if (t->memo == NULL || !ns_route_memo_find(t->memo, &k, &v, &fill)) {
        rc = route_value(t, dbi, topic, k.mv_size, &v);
        if (rc != NS_OK)
            return rc;
        if (fill)
            ns_route_memo_fill(t->memo, fill, &k, &v);
    }
    const uint8_t *p = v.mv_data;
    uint32_t w[2], li;
    if (v.mv_size < 12)
        return NS_ECORRUPT;
    memcpy(w, p, 8);
    if ((size_t)w[1] > v.mv_size - 12)
        return NS_ECORRUPT;
    memcpy(&li, p + 8 + w[1], 4);
    *derive = !standard && li == ROUTE_DERIVED;
    if (standard || *derive) {
        out->ptr = p + 8;
        out->len = w[1];
        *insert_at = w[0];
    } else {
        out->ptr = p + 12 + w[1];
        out->len = v.mv_size - 12 - w[1];
        *insert_at = li;
    }
    if (*insert_at > out->len)
        return NS_ECORRUPT;
    return NS_OK;
}

int ns_route_del(ns_txn_t *t, const char *topic)
{
    MDB_dbi dbi;
    int rc = ns_dbi(t, NS_DB_ROUTES, &dbi);
    if (rc != NS_OK)
        return rc;
    size_t n = strlen(topic);
    ns_txn_wrote(t, n);
    if (hashed(t)) {
        rc = ns_route_entry_del(t->txn, dbi, topic, n);
    } else {
        MDB_val k = ns_val(topic, n);
        rc = mdb_del(t->txn, dbi, &k, NULL);
        rc = rc == MDB_NOTFOUND ? 0 : rc;
    }
    return rc ? ns_lmdb_error(rc) : NS_OK;
}

int ns_route_count(ns_txn_t *t, size_t *out)
{
    return ns_db_count(t, NS_DB_ROUTES, out);
}
