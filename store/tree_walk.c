/* tree_walk.c - one key's descent of an LMDB B-tree in the map
 * (tree_walk.h has the layout and why). */
#include <stdbool.h>
#include <string.h>

#include "lmdb_page.h"
#include "ns/err.h"
#include "tree_walk.h"

#define PAGE_HDR NS_LMDB_PAGE_HDR
#define NODE_HDR NS_LMDB_NODE_HDR
#define MAX_DEPTH 64 /* LMDB's CURSOR_STACK is 32 */
#define PAD_KEY 511  /* LMDB's longest key (mdb_env_get_maxkeysize) */

int ns_tree_from_record(ns_tree_t *t, const void *rec, size_t len)
{
    const uint8_t *r = rec;
    if (len != NS_LMDB_DB_RECORD || ns_lmdb_rd16(r + 4) != 0)
        return NS_EFALLBACK;
    t->depth = ns_lmdb_rd16(r + 6);
    t->root = ns_lmdb_rd64(r + 40);
    if (t->root != NS_TREE_EMPTY && (t->depth == 0 || t->depth > MAX_DEPTH))
        return NS_EFALLBACK;
    return NS_OK;
}

int ns_tree_map_from_value(const void *val, size_t psize, const uint8_t **map)
{
    if (psize < 256 || psize > 65536 || (psize & (psize - 1)))
        return NS_EFALLBACK;
    uintptr_t page = (uintptr_t)val & ~(uintptr_t)(psize - 1);
    uint64_t pg = ns_lmdb_rd64((const uint8_t *)page);
    if (ns_lmdb_page_kind((const uint8_t *)page) != NS_LMDB_P_LEAF || pg < 2 || pg > page / psize)
        return NS_EFALLBACK;
    const uint8_t *m = (const uint8_t *)(page - (uintptr_t)(pg * psize));
    for (size_t i = 0; i < 2; i++) {
        const uint8_t *meta = m + i * psize;
        if (ns_lmdb_rd64(meta) != i || ns_lmdb_page_kind(meta) != NS_LMDB_P_META ||
            ns_lmdb_rd32(meta + PAGE_HDR) != NS_LMDB_META_MAGIC)
            return NS_EFALLBACK;
    }
    *map = m;
    return NS_OK;
}

int ns_tree_open(MDB_env *env, MDB_txn *txn, const char *name, ns_tree_t *t)
{
    MDB_val k = {strlen(name), (void *)name}, rec;
    MDB_envinfo info;
    MDB_stat st;
    if (mdb_get(txn, 1 /* the main table */, &k, &rec) != 0 ||
        ns_tree_from_record(t, rec.mv_data, rec.mv_size) != NS_OK ||
        mdb_env_info(env, &info) != 0 || mdb_env_stat(env, &st) != 0 ||
        ns_tree_map_from_value(rec.mv_data, st.ms_psize, &t->map) != NS_OK)
        return NS_EFALLBACK;
    t->psize = st.ms_psize;
    t->pages = (uint64_t)info.me_last_pgno + 1;
    if (info.me_mapsize / st.ms_psize < t->pages)
        t->pages = info.me_mapsize / st.ms_psize;
    return NS_OK;
}

/* The search key, and the bytes it shares with the keys that bracket the
 * nodes still in question: with lo below the key and hi above it, every key
 * between them shares min(lo, hi) bytes with it (they all do with both), so
 * a compare starts there. Across levels too: a child holds only keys
 * between its two separators, or LMDB's own search would not find them. */
typedef struct {
    const uint8_t *k; /* eight readable bytes past n */
    size_t n;
    size_t lo, hi;
} skey_t;

/* The first byte at or after i where a and b differ, both read eight bytes
 * at a time (both have eight readable bytes past n); n when none is before
 * n. *order: a's byte against b's there. */
static inline size_t diff_at(const uint8_t *a, const uint8_t *b, size_t i, size_t n, int *order)
{
    for (; i < n; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x == y)
            continue;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        i += (size_t)(__builtin_ctzll(x ^ y) >> 3); /* the first byte is the lowest */
#else
        i += (size_t)(__builtin_clzll(x ^ y) >> 3);
#endif
        if (i >= n) /* they differ only past n */
            return n;
        *order = a[i] < b[i] ? -1 : 1;
        return i;
    }
    return n;
}

/* diff_at byte by byte, for a node key that ends within eight bytes of its
 * page's end (at most one node of a page). */
static size_t diff_at_narrow(const uint8_t *a, const uint8_t *b, size_t i, size_t n, int *order)
{
    for (; i < n; i++)
        if (a[i] != b[i]) {
            *order = a[i] < b[i] ? -1 : 1;
            return i;
        }
    return n;
}

/* Node i of page p (psize bytes, n nodes): its start, or NULL when its
 * header and key do not lie in the page after the offsets. */
static const uint8_t *node_at(const uint8_t *p, size_t psize, unsigned n, unsigned i)
{
    size_t off = ns_lmdb_node_off(p, i);
    if (off < PAGE_HDR + 2 * (size_t)n || off + NODE_HDR > psize ||
        off + NODE_HDR + ns_lmdb_node_ksize(p + off) > psize)
        return NULL;
    return p + off;
}

/* Binary search of nodes [first, n) of page p (psize bytes) for key, as
 * mdb_cmp_memn orders keys (the shorter's bytes, then the shorter first):
 * the last node whose key is <= key (first - 1 when none) in *at, whether
 * it is equal in *exact; key->lo and key->hi follow the brackets, so each
 * compare starts at the bytes all keys left share with key. -1 when a node
 * is out of its page. A leaf searches from node 0, a branch from 1 (node 0
 * stands below every key). */
static int page_search(const uint8_t *p, size_t psize, unsigned n, unsigned first, skey_t *key,
                       int *at, bool *exact)
{
    const size_t min_off = PAGE_HDR + 2 * (size_t)n;
    if (min_off + NODE_HDR > psize)
        return -1;
    const size_t span = psize - NODE_HDR - min_off; /* a node's offset - min_off: at most this */
    const uint8_t *k = key->k;
    size_t kn = key->n, lo_lcp = key->lo, hi_lcp = key->hi;
    int lo = (int)first, hi = (int)n - 1, found = (int)first - 1;
    bool eq = false;
    while (lo <= hi) {
        int mid = (lo + hi) >> 1;
        size_t off = ns_lmdb_node_off(p, (unsigned)mid);
        if (off - min_off > span)
            return -1;
        const uint8_t *b = p + off + NODE_HDR;
        size_t bn = ns_lmdb_node_ksize(p + off), end = off + NODE_HDR + bn;
        size_t from = lo_lcp < hi_lcp ? lo_lcp : hi_lcp, m = kn < bn ? kn : bn, lcp;
        int c = 0;
        if (end + 8 <= psize)
            lcp = diff_at(k, b, from, m, &c);
        else if (end <= psize)
            lcp = diff_at_narrow(k, b, from, m, &c);
        else
            return -1;
        if (lcp == m) /* one is the other's prefix: the shorter first */
            c = kn < bn ? -1 : kn > bn;
        if (c < 0) {
            hi_lcp = lcp;
            hi = mid - 1;
            continue;
        }
        found = mid;
        lo_lcp = lcp;
        if (c == 0) {
            eq = true;
            break;
        }
        lo = mid + 1;
    }
    *at = found;
    *exact = eq;
    key->lo = lo_lcp;
    key->hi = hi_lcp;
    return 0;
}

/* The value of the leaf node nd in t's map. */
static int leaf_value(const ns_tree_t *t, const uint8_t *p, const uint8_t *nd, const void **val,
                      size_t *vlen)
{
    uint16_t flags = ns_lmdb_node_flags(nd);
    size_t dsize = ns_lmdb_node_dsize(nd);
    const uint8_t *data = nd + NODE_HDR + ns_lmdb_node_ksize(nd);
    if (flags == 0) {
        if ((size_t)(data - p) + dsize > t->psize)
            return NS_EFALLBACK;
        for (size_t i = 64; i < dsize; i += 64) /* the reply's copy comes next */
            __builtin_prefetch(data + i);
        *val = data;
        *vlen = dsize;
        return NS_OK;
    }
    if (flags != NS_LMDB_F_BIGDATA || (size_t)(data - p) + 8 > t->psize)
        return NS_EFALLBACK;
    uint64_t pg = ns_lmdb_rd64(data);
    uint64_t span = (PAGE_HDR + dsize + t->psize - 1) / t->psize;
    if (pg >= t->pages || span > t->pages - pg)
        return NS_EFALLBACK;
    const uint8_t *op = t->map + pg * t->psize;
    if (ns_lmdb_page_kind(op) != NS_LMDB_P_OVERFLOW)
        return NS_EFALLBACK;
    *val = op + PAGE_HDR;
    *vlen = dsize;
    return NS_OK;
}

/* One level of the descent of k at page *pg (the leaf when level is the
 * last): TREE_DESCENDED with *pg the child, or at the leaf the answer
 * (NS_OK with *val and *vlen, NS_ENOTFOUND); NS_EFALLBACK when a page is
 * not what the format says. */
#define TREE_DESCENDED 1
static inline int tree_step(const ns_tree_t *t, unsigned level, uint64_t *pg, skey_t *k,
                            const void **val, size_t *vlen)
{
    if (*pg >= t->pages)
        return NS_EFALLBACK;
    const uint8_t *p = t->map + *pg * t->psize;
    unsigned kind = ns_lmdb_page_kind(p), n;
    if (ns_lmdb_page_nodes(p, t->psize, &n) != 0)
        return NS_EFALLBACK;
    bool leaf = level + 1 == t->depth;
    if (kind != (leaf ? NS_LMDB_P_LEAF : NS_LMDB_P_BRANCH) || (!leaf && n < 2))
        return NS_EFALLBACK;
    if (leaf && n <= 32) /* a cold leaf: fetch its nodes at once, not one miss per step */
        for (unsigned i = 0; i < n; i++)
            __builtin_prefetch(p + (ns_lmdb_node_off(p, i) & (t->psize - 1)));
    int at;
    bool exact;
    if (page_search(p, t->psize, n, leaf ? 0 : 1, k, &at, &exact) != 0)
        return NS_EFALLBACK;
    if (leaf)
        return exact ? leaf_value(t, p, p + ns_lmdb_node_off(p, (unsigned)at), val, vlen)
                     : NS_ENOTFOUND;
    const uint8_t *nd = node_at(p, t->psize, n, (unsigned)at);
    if (nd == NULL)
        return NS_EFALLBACK;
    *pg = ns_lmdb_node_child(nd);
    return TREE_DESCENDED;
}

int ns_tree_get(const ns_tree_t *t, const void *key, size_t klen, const void **val, size_t *vlen)
{
    if (t->root == NS_TREE_EMPTY)
        return NS_ENOTFOUND;
    if (t->psize < 256 || t->psize > 65536 || klen == 0 || klen > PAD_KEY)
        return NS_EFALLBACK; /* mdb_get's own answer: MDB_BAD_VALSIZE */
    uint8_t copy[PAD_KEY + 8];
    memcpy(copy, key, klen);
    memset(copy + klen, 0, 8);
    skey_t k = {copy, klen, 0, 0};
    uint64_t pg = t->root;
    for (unsigned level = 0; level < t->depth; level++) {
        int rc = tree_step(t, level, &pg, &k, val, vlen);
        if (rc != TREE_DESCENDED)
            return rc;
    }
    return NS_EFALLBACK;
}

int ns_tree_leaf_at(const ns_tree_t *t, uint64_t pg, unsigned off, const void *key, size_t klen,
                    const void **val, size_t *vlen)
{
    if (pg >= t->pages)
        return NS_EFALLBACK;
    const uint8_t *p = t->map + pg * t->psize;
    unsigned n;
    if (ns_lmdb_page_kind(p) != NS_LMDB_P_LEAF || ns_lmdb_page_nodes(p, t->psize, &n) != 0 ||
        off < ns_lmdb_page_upper(p) || off < PAGE_HDR + 2 * (size_t)n ||
        off + NODE_HDR > t->psize || (off & 1))
        return NS_EFALLBACK;
    const uint8_t *nd = p + off;
    if (off + NODE_HDR + ns_lmdb_node_ksize(nd) > t->psize)
        return NS_EFALLBACK;
    if (ns_lmdb_node_ksize(nd) != klen || memcmp(nd + NODE_HDR, key, klen) != 0)
        return NS_ENOTFOUND;
    return leaf_value(t, p, nd, val, vlen);
}

void ns_tree_warm(const ns_tree_t *t, const ns_tree_spot_t *at, size_t n)
{
    n = n < NS_TREE_WARM_MAX ? n : NS_TREE_WARM_MAX;
    bool more = false;
    for (size_t k = 0; k < n; k++)
        if (at[k].pg < t->pages && at[k].off < t->psize) {
            const uint8_t *p = t->map + at[k].pg * t->psize;
            size_t lines = at[k].lines < NS_TREE_LINES_MORE ? at[k].lines : NS_TREE_LINES_MORE;
            size_t end = (at[k].off & ~(size_t)63) + 64 * (lines + 1);
            end = end < t->psize ? end : t->psize;
            __builtin_prefetch(p);
            for (size_t o = at[k].off; o < end; o = (o | 63) + 1)
                __builtin_prefetch(p + o);
            more |= lines == NS_TREE_LINES_MORE;
        }
    for (size_t k = 0; more && k < n; k++) /* the rest of the longest: their headers say */
        if (at[k].lines >= NS_TREE_LINES_MORE && at[k].pg < t->pages &&
            at[k].off + NODE_HDR <= t->psize) {
            const uint8_t *p = t->map + at[k].pg * t->psize, *nd = p + at[k].off;
            if (ns_lmdb_node_flags(nd) & NS_LMDB_F_BIGDATA)
                continue;
            size_t end = at[k].off + NODE_HDR + ns_lmdb_node_ksize(nd) + ns_lmdb_node_dsize(nd);
            end = end < t->psize ? end : t->psize;
            for (size_t o = (at[k].off & ~(size_t)63) + 64 * (NS_TREE_LINES_MORE + 1); o < end;
                 o += 64)
                __builtin_prefetch(p + o);
        }
}
