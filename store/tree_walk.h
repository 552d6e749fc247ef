/* tree_walk.h - one key's descent of an LMDB B-tree read straight from the
 * map, without a cursor (issue 31).
 *
 * mdb_get is a general cursor: it sets up a cursor and its sub-cursor,
 * checks the transaction's dirty lists and calls the table's compare
 * through a pointer at every step. For the route lookup that is 900
 * instructions at 100 topics and 2,000 at a million, more than everything
 * else a lookup costs. A read transaction's snapshot is immutable pages in
 * the map, in LMDB's one data format of 0.9 (the one store/file.c reads the
 * meta pages of): a descent of a table with no flags (byte-wise keys, no
 * duplicates) is a binary search per page and a pointer to the value.
 *
 * The page format is in lmdb_page.h. Keys compare as memcmp over the
 * shorter, then the shorter first (mdb_cmp_memn).
 *
 * Every offset, size and page number is checked against the page and the
 * map before it is followed; what does not fit the format (or a flag this
 * code does not know) is NS_EFALLBACK, and the caller asks mdb_get instead,
 * which reports damage in its own words. So a damaged page costs a lookup
 * mdb_get's answer, never a read outside the map. The descent makes no LMDB
 * calls (ns_tree_open alone does), so it is tested on pages LMDB wrote
 * (tests/unit/test_tree_walk.c) and fuzzed on pages it did not
 * (tests/fuzz/fuzz_tree_walk.c). */
#ifndef NS_STORE_TREE_WALK_H
#define NS_STORE_TREE_WALK_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

/* One table's tree in one snapshot. */
typedef struct {
    const uint8_t *map; /* the map's first byte */
    size_t psize;       /* page size */
    uint64_t pages;     /* pages the descent may read: [0, pages) */
    uint64_t root;      /* the root's page number; UINT64_MAX: empty */
    unsigned depth;     /* levels, root to leaf */
} ns_tree_t;

#define NS_TREE_EMPTY UINT64_MAX

/* Fills t's root and depth from a table's 48-byte MDB_db record as the main
 * table holds it (pad 4, flags 2, depth 2, branch, leaf and overflow page
 * counts and entries 8 each, root 8). NS_EFALLBACK when the table has flags
 * (a compare or duplicates this walk does not follow) or the record is not
 * 48 bytes. */
int ns_tree_from_record(ns_tree_t *t, const void *rec, size_t len);

/* The map's first byte from val, a value LMDB returned from a leaf page of
 * the map (not an overflow page), and the page size: that page's start is
 * val rounded down to psize (the map begins at a page boundary), its first
 * 8 bytes its page number. NS_EFALLBACK unless what that gives starts with
 * the two meta pages (P_META, LMDB's magic). mdb_env_info's me_mapaddr is
 * not it: that is the address a fixed map asked for, NULL for ours. */
int ns_tree_map_from_value(const void *val, size_t psize, const uint8_t **map);

/* The tree of the table called name in read transaction txn's snapshot of
 * env: its record from the main table, the map's place from the record's
 * page, the page size, and the pages in use as the newest meta page counts
 * them (never fewer than the snapshot's). NS_EFALLBACK when LMDB does not
 * give them or they do not check out. */
int ns_tree_open(MDB_env *env, MDB_txn *txn, const char *name, ns_tree_t *t);

/* The value of key in t: NS_OK with *val (in the map) and *vlen,
 * NS_ENOTFOUND, or NS_EFALLBACK when a page is not what the format says. */
int ns_tree_get(const ns_tree_t *t, const void *key, size_t klen, const void **val, size_t *vlen);

/* The node at byte off of leaf page pg in t (as the page's node pointers
 * gave it when the route index was built for this snapshot), when its key
 * is key: NS_OK with its value as ns_tree_get gives it, NS_ENOTFOUND when
 * the node holds another key, NS_EFALLBACK when pg is not a leaf of the
 * map or off not inside its nodes' area (the route index's check of an
 * entry, route_index.h). Reading the node straight from its offset, not
 * through the pointer array, spares a lookup one cache miss that waits
 * for another. */
int ns_tree_leaf_at(const ns_tree_t *t, uint64_t pg, unsigned off, const void *key, size_t klen,
                    const void **val, size_t *vlen);

/* A node of a leaf page: the page's number and the node's offset, as
 * ns_tree_leaf_at takes them, and how many cache lines the node spans past
 * its first (its header, key and value) as far as the caller knows:
 * NS_TREE_LINES_MORE means that many at least. */
#define NS_TREE_LINES_MORE 15u
typedef struct {
    uint64_t pg;
    unsigned off;
    unsigned lines;
} ns_tree_spot_t;
/* Brings into cache what ns_tree_leaf_at will read for each of at[0, n)
 * (at most NS_TREE_WARM_MAX; the rest are left alone), all together, so
 * that their cache misses overlap (the route index's ns_route_index_warm):
 * the pages' headers and the nodes' lines, values included (the reply's
 * copy reads them next); for a node of NS_TREE_LINES_MORE lines, the rest
 * of its value once its header, on its way with the others, says where it
 * ends. Prefetches of addresses inside the map's pages [0, t->pages) and
 * the nodes' headers read there; it answers nothing and changes nothing. */
#define NS_TREE_WARM_MAX 16
void ns_tree_warm(const ns_tree_t *t, const ns_tree_spot_t *at, size_t n);

#endif
