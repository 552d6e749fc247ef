/* route_index.h - a hash index of the routes table's leaves, one snapshot
 * at a time (issue 31).
 *
 * What a lookup pays beyond the frame and the reply is the descent of the
 * routes tree (tree_walk.h): ~20 key compares of ~55 instructions at 100k
 * topics, ~1,200-1,500 instructions and four pages touched. This index
 * maps a topic's name (a seeded hash) to where its node lies in the newest
 * snapshot, page number and node index: one slot read, then that node's key
 * compared in full on its leaf page and the value taken from there, as the
 * descent would have. The bytes answered are still the snapshot's pages in
 * the map, read inside the LMDB read transaction; nothing is copied out.
 *
 * One table, written only by the thread that commits (after each commit of
 * a top-level write transaction, ns_route_index_after_commit) and read
 * lock-free by every loop. It answers for one snapshot, its version (the
 * transaction id it was brought to): a reader uses it only when that is its
 * own snapshot's id, read before and after its probe (a sequence lock: the
 * version is 0 while the writer changes the table), and otherwise descends.
 * An entry it reads mid-change points at a page of a snapshot at least as
 * new as its own, which LMDB does not write over while it is live; the
 * version check then throws the answer away. A miss is never an answer
 * either: the descent says whether the topic exists.
 *
 * Brought from snapshot W to W+1 without reading the whole tree: LMDB
 * copies every page a transaction changes, so a page of W's tree still in
 * W+1's is unchanged with everything under it, and every page of W's tree
 * that W+1 dropped is in W+1's record of the free pages' table, still
 * holding W's bytes until the next write transaction reuses it. So: the
 * routes leaves among W+1's freed pages lose their keys' entries (read from
 * those old pages), then W+1's tree is walked from its root, skipping every
 * page that was in W's, and its new leaves' keys are entered. A bitmap of
 * the pages of the indexed tree says which those are. That is valid only
 * between consecutive transactions and before the next one writes: the
 * commit holds the index's lock from before LMDB's commit to the end of the
 * update, and a write transaction that begins waits for it once it holds
 * LMDB's writer lock. Anything else (a gap in the ids, entries that do not
 * match, a table too full) rebuilds from the whole tree. The first build is
 * a refresh's (namesrvd's writer thread at its start), so no commit on the
 * way to serving (the start's own writes) pays for the whole tree.
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

#include "tree_walk.h"

typedef struct ns_route_index ns_route_index_t;
struct ns_store;

/* A new, empty index (version 0: no reader uses it), or NULL when out of
 * memory. Freed with ns_route_index_free once no thread uses the store. */
ns_route_index_t *ns_route_index_new(void);
void ns_route_index_free(ns_route_index_t *ix);

/* The commit protocol (see above). before_commit: the committing thread,
 * holding LMDB's writer lock; after_commit: the same thread, with whether
 * the commit succeeded (it then brings the index to the new snapshot) and
 * releases the lock. write_begun: a write transaction's thread once
 * mdb_txn_begin returned. */
void ns_route_index_before_commit(ns_route_index_t *ix);
void ns_route_index_after_commit(ns_route_index_t *ix, struct ns_store *s, bool committed);
void ns_route_index_write_begun(ns_route_index_t *ix);

/* Brings the index to the newest snapshot when it is not (a rebuild from
 * the whole tree); any thread, at any time (it reads only one snapshot).
 * Commits bring it along only after the first refresh. */
void ns_route_index_refresh(ns_route_index_t *ix, struct ns_store *s);

/* key (klen bytes) in t, the routes tree of the snapshot txnid: NS_OK with
 * *val and *vlen (in the map) when the index answers for that snapshot and
 * finds it, NS_EFALLBACK otherwise (the descent answers). Any thread. */
int ns_route_index_get(const ns_route_index_t *ix, const ns_tree_t *t, uint64_t txnid,
                       const void *key, size_t klen, const void **val, size_t *vlen);

/* The snapshot the index answers for (0: none), and what it holds and did;
 * tests and stats. */
uint64_t ns_route_index_version(const ns_route_index_t *ix);
typedef struct {
    size_t entries, tombs, slots;
    uint64_t diffs, rebuilds; /* updates by each way */
} ns_route_index_stats_t;
void ns_route_index_stats(ns_route_index_t *ix, ns_route_index_stats_t *out);

#endif
