/* route_index.h - a hash index of the routes table's leaves, one snapshot
 * at a time (issue 31).
 *
 * What a lookup pays beyond the frame and the reply is the descent of the
 * routes tree (tree_walk.h): ~20 key compares of ~55 instructions at 100k
 * topics, ~1,200-1,500 instructions and four pages touched. This index
 * maps a topic's name (a seeded hash) to where its node lies in the newest
 * snapshot, page number and the node's offset in it (as the page's node
 * pointers had it when the entry was made), and how many cache lines the
 * node spans (so that the warming of a read's lookups fetches their values
 * with their nodes): one slot read, then that node's key compared in full
 * on its leaf page and the value taken from there, as the descent would
 * have. The bytes answered are still the snapshot's pages in
 * the map, read inside the LMDB read transaction; nothing is copied out.
 *
 * One table, written by one thread (namesrvd's writer, after its batches:
 * ns_route_index_refresh) and read lock-free by every loop. It answers for
 * one snapshot, its version (the transaction id it was brought to): a
 * reader uses it only when that is its own snapshot's id, read before and
 * after its probe (a sequence lock: the version is 0 while the table
 * changes), and otherwise descends. An entry it reads mid-change points at
 * a page of a snapshot at least as new as its own, which LMDB does not
 * write over while it is live; the version check then throws the answer
 * away. A miss is never an answer either: the descent says whether the
 * topic exists.
 *
 * Brought from snapshot B to a later X without reading the whole tree:
 * LMDB copies every page a transaction changes, so a page of B's tree still
 * in X's is unchanged with everything under it, and every page of B's tree
 * that a later transaction dropped is in that transaction's record of the
 * free pages' table. The index keeps a read transaction of B open until it
 * moves on, so LMDB writes over none of those pages meanwhile (nor drops
 * the records) and they still hold B's bytes. So: the routes leaves among
 * the pages freed by the transactions after B lose their keys' entries
 * (read from those old pages), then X's tree is walked from its root,
 * skipping every page that was in B's, and its new leaves' keys are
 * entered. A bitmap of the pages of the indexed tree says which those are.
 * Anything else (no snapshot held: the first time, after a map resize,
 * which must not wait for it; entries that do not match; a table too
 * full) rebuilds from the whole tree. namesrvd's writer refreshes after a
 * batch when nothing more is queued; in a burst it lets the snapshot go (so
 * LMDB may reuse the pages) and rebuilds once idle (core/writer.c).
 *
 * Linear probing from the hash's slot to an empty one. Deleted entries
 * leave tombstones; a table whose entries and tombstones pass 60 % before
 * a commit, or 75 % during one, is rebuilt into one of at least twice the
 * entries (past ~70 % a linear probe's runs grow long: at 71 % a run of 73
 * slots was seen in 4,096). A replaced
 * table's memory is given back (MADV_DONTNEED: a late reader reads zeros,
 * a miss) and its address range kept until the store closes. */
#ifndef NS_STORE_ROUTE_INDEX_H
#define NS_STORE_ROUTE_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "ns/buf.h"
#include "tree_walk.h"

typedef struct ns_route_index ns_route_index_t;
struct ns_store;

/* A new, empty index (version 0: no reader uses it), or NULL when out of
 * memory. Freed with ns_route_index_free once no other thread uses the
 * store, before its environment closes. */
ns_route_index_t *ns_route_index_new(void);
void ns_route_index_free(ns_route_index_t *ix);

/* Brings the index to the newest snapshot when it is not (by diff, or a
 * rebuild), and holds that snapshot until the next call. The thread that
 * calls it also calls ns_route_index_let_go and ns_route_index_free (the
 * held transaction is its). */
void ns_route_index_refresh(ns_route_index_t *ix, struct ns_store *s);
/* Ends the held snapshot (a map resize waits for every read transaction);
 * the next refresh rebuilds unless nothing was committed. */
void ns_route_index_let_go(ns_route_index_t *ix);

/* key (klen bytes) in t, the routes tree of the snapshot txnid: NS_OK with
 * *val and *vlen (in the map) when the index answers for that snapshot and
 * finds it, NS_EFALLBACK otherwise (the descent answers). Any thread. */
int ns_route_index_get(const ns_route_index_t *ix, const ns_tree_t *t, uint64_t txnid,
                       const void *key, size_t klen, const void **val, size_t *vlen);
/* Brings into cache what ns_route_index_get will read for each of keys[0,
 * n) (at most NS_ROUTE_WARM_MAX; the rest are left alone): their slots,
 * then their leaves' headers and nodes (ns_tree_warm), each step for all
 * keys before the next, so that their cache misses overlap instead of
 * following one another. Answers nothing and changes nothing; any
 * thread, as ns_route_index_get. */
#define NS_ROUTE_WARM_MAX NS_TREE_WARM_MAX
void ns_route_index_warm(const ns_route_index_t *ix, const ns_tree_t *t, uint64_t txnid,
                         const ns_slice_t *keys, size_t n);

/* The snapshot the index answers for (0: none), and what it holds and did;
 * tests and stats. */
uint64_t ns_route_index_version(const ns_route_index_t *ix);
typedef struct {
    size_t entries, tombs, slots;
    uint64_t diffs, rebuilds; /* updates by each way */
} ns_route_index_stats_t;
void ns_route_index_stats(ns_route_index_t *ix, ns_route_index_stats_t *out);

#endif
