/* lmdb_page.h - LMDB 0.9's page format, for the two places that read pages
 * without LMDB: store/file.c (the meta pages and the free pages' tree, with
 * pread, before LMDB maps a file) and store/tree_walk.c (the lookup path's
 * descent of the routes tree, in the map).
 *
 * LMDB 0.9 writes one data format (MDB_DATA_VERSION 1), in host byte order
 * (a store does not move between machines of different endianness), with
 * MDB_DEVEL off:
 *   page: pgno 8, pad 2, flags 2, lower 2, upper 2, then (lower - 16) / 2
 *         u16 node offsets from the page's start, keys ascending; an
 *         overflow page holds its value right after these 16 bytes
 *   node: lo 2, hi 2, flags 2, ksize 2, the key, then on a leaf the data
 *         (lo | hi << 16 bytes, or with F_BIGDATA the 8-byte number of the
 *         overflow page that holds them); on a branch lo | hi << 16 |
 *         flags << 32 is the child's page number, and node 0's key is empty
 *   meta: pages 0 and 1, after the header: magic 4, version 4, address 8,
 *         mapsize 8, two 48-byte table records (free pages, main table),
 *         last page 8, txnid 8
 *   table record (MDB_db, 48 bytes): pad 4 (the page size in the free
 *         table's), flags 2, depth 2, branch, leaf and overflow pages and
 *         entries 8 each, root 8 (~0: empty) */
#ifndef NS_STORE_LMDB_PAGE_H
#define NS_STORE_LMDB_PAGE_H

#include <stdint.h>
#include <string.h>

#define NS_LMDB_PAGE_HDR 16
#define NS_LMDB_NODE_HDR 8
#define NS_LMDB_P_BRANCH 0x01
#define NS_LMDB_P_LEAF 0x02
#define NS_LMDB_P_OVERFLOW 0x04
#define NS_LMDB_P_META 0x08
#define NS_LMDB_P_LEAF2 0x20
#define NS_LMDB_P_SUBP 0x40
/* the flags that say what a page is (not P_DIRTY and the like) */
#define NS_LMDB_P_KIND                                                                             \
    (NS_LMDB_P_BRANCH | NS_LMDB_P_LEAF | NS_LMDB_P_OVERFLOW | NS_LMDB_P_META | NS_LMDB_P_LEAF2 |   \
     NS_LMDB_P_SUBP)
#define NS_LMDB_F_BIGDATA 0x01
#define NS_LMDB_META_MAGIC 0xBEEFC0DEu
#define NS_LMDB_DB_RECORD 48

static inline uint16_t ns_lmdb_rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static inline uint32_t ns_lmdb_rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t ns_lmdb_rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline unsigned ns_lmdb_page_kind(const uint8_t *pg)
{
    return ns_lmdb_rd16(pg + 10) & NS_LMDB_P_KIND;
}

static inline size_t ns_lmdb_page_lower(const uint8_t *pg)
{
    return ns_lmdb_rd16(pg + 12);
}

/* Where the nodes' area begins: they fill [upper, page size). */
static inline size_t ns_lmdb_page_upper(const uint8_t *pg)
{
    return ns_lmdb_rd16(pg + 14);
}

/* Node i's offset from the page's start (unchecked). */
static inline size_t ns_lmdb_node_off(const uint8_t *pg, unsigned i)
{
    return ns_lmdb_rd16(pg + NS_LMDB_PAGE_HDR + 2 * i);
}

static inline size_t ns_lmdb_node_ksize(const uint8_t *nd)
{
    return ns_lmdb_rd16(nd + 6);
}

static inline uint16_t ns_lmdb_node_flags(const uint8_t *nd)
{
    return ns_lmdb_rd16(nd + 4);
}

static inline size_t ns_lmdb_node_dsize(const uint8_t *nd)
{
    return (size_t)ns_lmdb_rd16(nd) | (size_t)ns_lmdb_rd16(nd + 2) << 16;
}

/* Page p's node count (psize bytes a page) in *n: -1 when its lower bound
 * does not fit the page. */
static inline int ns_lmdb_page_nodes(const uint8_t *p, size_t psize, unsigned *n)
{
    size_t lower = ns_lmdb_page_lower(p);
    if (lower < NS_LMDB_PAGE_HDR || lower > psize || (lower & 1))
        return -1;
    *n = (unsigned)(lower - NS_LMDB_PAGE_HDR) >> 1;
    return 0;
}

/* LMDB's free pages' table (dbi 0): transaction id -> an ID list of the
 * pages it freed, [count, ids descending], each LMDB's MDB_ID (midl.h, not
 * installed). The list's entries when its bytes (size) hold the count it
 * says, else NULL. */
#define NS_LMDB_FREE_DBI 0
typedef size_t ns_lmdb_id_t;
static inline const ns_lmdb_id_t *ns_lmdb_idl(const void *data, size_t size)
{
    const ns_lmdb_id_t *ids = data;
    if (size < sizeof *ids || size / sizeof *ids - 1 < ids[0])
        return NULL;
    return ids;
}

static inline uint64_t ns_lmdb_node_child(const uint8_t *nd)
{
    return (uint64_t)ns_lmdb_rd16(nd) | (uint64_t)ns_lmdb_rd16(nd + 2) << 16 |
           (uint64_t)ns_lmdb_rd16(nd + 4) << 32;
}

#endif
