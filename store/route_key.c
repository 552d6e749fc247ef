/* route_key.c - the routes table's hashed keys (route_key.h). */
#include "route_key.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

uint64_t ns_route_hash_mask = UINT64_MAX;

size_t ns_route_key(const char *name, size_t n, bool long_key, uint8_t *key)
{
    uint64_t h = XXH3_64bits(name, n) & ns_route_hash_mask;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    h = __builtin_bswap64(h); /* big-endian: byte order is number order */
#endif
    memcpy(key, &h, NS_ROUTE_HASH_BYTES);
    if (!long_key)
        return NS_ROUTE_HASH_BYTES;
    memcpy(key + NS_ROUTE_HASH_BYTES, name, n);
    return NS_ROUTE_HASH_BYTES + n;
}

bool ns_route_entry_split(const MDB_val *v, const char **name, size_t *n, MDB_val *route)
{
    uint16_t nl;
    if (v->mv_size < 2)
        return false;
    memcpy(&nl, v->mv_data, 2);
    if (nl == 0 || v->mv_size - 2 < nl)
        return false;
    *name = (const char *)v->mv_data + 2;
    *n = nl;
    route->mv_data = (uint8_t *)v->mv_data + 2 + nl;
    route->mv_size = v->mv_size - 2 - nl;
    return true;
}

/* Whether the entry v is of name (n bytes); -1 when v is not an entry. */
static int entry_is(const MDB_val *v, const char *name, size_t n)
{
    const char *en;
    size_t el;
    MDB_val route;
    if (!ns_route_entry_split(v, &en, &el, &route))
        return -1;
    return el == n && memcmp(en, name, n) == 0;
}

int ns_route_entry_reserve(MDB_txn *txn, MDB_dbi dbi, const char *name, size_t n, size_t len,
                           uint8_t **route)
{
    uint8_t key[NS_ROUTE_HASH_BYTES + NS_ROUTE_NAME_MAX];
    if (n == 0 || n > NS_ROUTE_NAME_MAX || len > SIZE_MAX - 2 - n)
        return MDB_BAD_VALSIZE;
    MDB_val k = {ns_route_key(name, n, false, key), key}, v;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc == 0) {
        int is = entry_is(&v, name, n);
        if (is < 0)
            return MDB_CORRUPTED;
        if (!is) /* another topic holds the hash */
            k.mv_size = ns_route_key(name, n, true, key);
    } else if (rc != MDB_NOTFOUND) {
        return rc;
    }
    uint16_t nl = (uint16_t)n;
    v.mv_size = 2 + n + len;
    v.mv_data = NULL;
    if ((rc = mdb_put(txn, dbi, &k, &v, MDB_RESERVE)) != 0)
        return rc;
    uint8_t *p = v.mv_data;
    memcpy(p, &nl, 2);
    memcpy(p + 2, name, n);
    *route = p + 2 + n;
    return 0;
}

/* After the 8-byte key of hash key8 was deleted: the first topic stored
 * under a long key of that hash, if any, moves up into it. */
static int promote(MDB_txn *txn, MDB_dbi dbi, const uint8_t *key8)
{
    MDB_cursor *cur;
    MDB_val k = {NS_ROUTE_HASH_BYTES, (void *)key8}, v;
    uint8_t *copy = NULL;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc != 0)
        return rc;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND || (rc == 0 && (k.mv_size <= NS_ROUTE_HASH_BYTES ||
                                           memcmp(k.mv_data, key8, NS_ROUTE_HASH_BYTES) != 0))) {
        rc = 0; /* no other topic has this hash */
        goto out;
    }
    if (rc != 0)
        goto out;
    if ((copy = malloc(v.mv_size ? v.mv_size : 1)) == NULL) {
        rc = ENOMEM;
        goto out;
    }
    memcpy(copy, v.mv_data, v.mv_size); /* the delete rewrites the page v is on */
    MDB_val moved = {v.mv_size, copy};
    k.mv_size = NS_ROUTE_HASH_BYTES;
    k.mv_data = (void *)key8;
    rc = mdb_cursor_del(cur, 0);
    rc = rc ? rc : mdb_put(txn, dbi, &k, &moved, 0);
out:
    free(copy);
    mdb_cursor_close(cur);
    return rc;
}

int ns_route_entry_del(MDB_txn *txn, MDB_dbi dbi, const char *name, size_t n)
{
    uint8_t key[NS_ROUTE_HASH_BYTES + NS_ROUTE_NAME_MAX];
    if (n == 0 || n > NS_ROUTE_NAME_MAX)
        return 0; /* never stored */
    MDB_val k = {ns_route_key(name, n, false, key), key}, v;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc != 0)
        return rc;
    int is = entry_is(&v, name, n);
    if (is < 0)
        return MDB_CORRUPTED;
    if (!is) {
        k.mv_size = ns_route_key(name, n, true, key);
        rc = mdb_del(txn, dbi, &k, NULL);
        return rc == MDB_NOTFOUND ? 0 : rc;
    }
    if ((rc = mdb_del(txn, dbi, &k, NULL)) != 0)
        return rc;
    return promote(txn, dbi, key);
}
