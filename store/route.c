/* route.c - materialised routes: routes (topic -> both encodings).
 * Value: [u32 std_insert][u32 std_len][std bytes][u32 legacy_insert][legacy]
 * (u32 in host byte order, as LMDB's own file is: a store does not move
 * between machines of different endianness). Since schema v4 legacy_insert may be ROUTE_DERIVED
 * with no legacy bytes: the legacy form is derived from std when read, which
 * halves what a registration of many topics writes. Written by the writer in
 * the transaction that changes the topic; read on the lookup path from the
 * snapshot's memo (route_memo.h), else from the routes index when it answers
 * for the snapshot (route_index.h), else by one descent of the tree in the
 * map (tree_walk.h), else (a write transaction, or a page the walk
 * declines) with mdb_get. */
#include <string.h>

#include "internal.h"
#include "route_index.h"
#include "route_memo.h"

#define ROUTE_DERIVED UINT32_MAX

int ns_route_put(ns_txn_t *t, const char *topic, const ns_buf_t *std, size_t std_insert,
                 const ns_buf_t *legacy, size_t legacy_insert)
{
    size_t legacy_len = legacy ? legacy->len : 0;
    if (std->len >= UINT32_MAX || legacy_len >= UINT32_MAX)
        return NS_ETOOBIG;
    MDB_cursor *cur = NULL;
    int rc = ns_db_cursor_take(t, NS_DB_ROUTES, &cur); /* a batch puts in topic order */
    if (rc != NS_OK)
        return rc;
    size_t total = 12 + std->len + legacy_len;
    MDB_val k = ns_val(topic, strlen(topic)), v = ns_val(NULL, total);
    ns_txn_wrote(t, k.mv_size + total);
    rc = mdb_cursor_put(cur, &k, &v, MDB_RESERVE); /* write straight into the page */
    ns_db_cursor_give(t, NS_DB_ROUTES, cur);
    if (rc != 0)
        return ns_lmdb_error(rc);
    uint8_t *p = v.mv_data;
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

/* topic's stored value in t: from the index or the walk when they answer,
 * else mdb_get. */
static int route_value(ns_txn_t *t, MDB_dbi dbi, MDB_val *k, MDB_val *v)
{
    const ns_tree_t *tree = routes_tree(t);
    if (tree) {
        const void *val;
        size_t vlen;
        int rc = NS_EFALLBACK;
        if (t->s->route_index)
            rc = ns_route_index_get(t->s->route_index, tree, t->tree_txnid, k->mv_data, k->mv_size,
                                    &val, &vlen);
        if (rc != NS_OK)
            rc = ns_tree_get(tree, k->mv_data, k->mv_size, &val, &vlen);
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

void ns_route_warm(ns_txn_t *t, const ns_slice_t *topics, size_t n)
{
    const ns_tree_t *tree = routes_tree(t);
    if (tree && t->s->route_index)
        ns_route_index_warm(t->s->route_index, tree, t->tree_txnid, topics, n);
}

bool ns_route_walk_agrees(ns_txn_t *t, const char *topic, size_t n, const void *val, size_t vlen)
{
    const ns_tree_t *tree = routes_tree(t);
    const void *got;
    size_t glen;
    if (tree == NULL)
        return true; /* a write transaction: nothing is read from the map */
    int rc = ns_tree_get(tree, topic, n, &got, &glen);
    if (rc != NS_EFALLBACK && (rc != NS_OK || got != val || glen != vlen))
        return false;
    /* the index answers only where LMDB finds the topic, or not at all */
    if (t->s->route_index == NULL ||
        ns_route_index_get(t->s->route_index, tree, t->tree_txnid, topic, n, &got, &glen) != NS_OK)
        return true;
    return got == val && glen == vlen;
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
        rc = route_value(t, dbi, &k, &v);
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
    /* The word after the standard form (the legacy form's marker) only for
     * old clients: it lies a cache line or more past the standard form's
     * start, one more miss a lookup waited on at 1M topics (+10 % at depth 8) */
    *derive = false;
    if (!standard) {
        memcpy(&li, p + 8 + w[1], 4);
        *derive = li == ROUTE_DERIVED;
    }
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
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_buf_append_str(&k, topic);
    rc = rc ? rc : ns_db_del(t, NS_DB_ROUTES, &k);
    ns_buf_free(&k);
    return rc;
}

int ns_route_count(ns_txn_t *t, size_t *out)
{
    return ns_db_count(t, NS_DB_ROUTES, out);
}
