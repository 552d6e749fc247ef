/* free_pages.c - the pages LMDB keeps free inside the file, given back to
 * the OS's memory (include/ns/store.h, ns_store_release_free_pages).
 *
 * A write transaction copies every page it changes and frees the old copy.
 * LMDB lists those in its free pages' table under the id of the transaction
 * that freed them and writes over them two transactions later at the
 * earliest. Until then they stay in the page cache and mapped in this
 * process, where the readers put them while they were live (and the
 * kernel's fault-around, which maps the cached pages around every read
 * fault: docs/performance.md, "Memory"): after the capacity set-up 865 of
 * the file's 5,822 pages, 3.4 MiB of RSS; ~127 MiB at a million topics.
 *
 * After each batch the writer drops the pages listed free by every
 * transaction but the newest (whose pages the loops may still be reading in
 * the snapshot before it; those too once it has been idle for a second):
 * unmapped here (MADV_DONTNEED on the read-only shared map) and forgotten
 * by the page cache (POSIX_FADV_DONTNEED), so a later fault-around finds
 * nothing to map there. Nothing on disk changes: both calls only forget
 * clean cached copies (a page still dirty in the cache stays), LMDB never
 * writes a page that a live snapshot can see, so a long reader on an old
 * snapshot (a backup, the verify walk) that reads one again reads it back
 * unchanged from the file, and when LMDB reuses a page it writes it whole,
 * without reading it. A record is dropped once: the newest transaction id
 * dropped is kept and only later ones are read (leftovers of a record LMDB
 * took pages from come back under a newer id and are dropped again, which
 * costs two system calls and nothing else). */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "lmdb_page.h"
#include "tree_walk.h"

/* Unmaps and uncaches the n pages from first on. */
static void drop_run(const ns_tree_t *map, int fd, uint64_t first, uint64_t n)
{
    if (first >= map->pages)
        return; /* loose pages past the last one written: never cached */
    if (n > map->pages - first)
        n = map->pages - first;
    size_t off = (size_t)first * map->psize, len = (size_t)n * map->psize;
    (void)madvise((void *)(map->map + off), len, MADV_DONTNEED);
    (void)posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
}

/* One record's ID list, in runs of consecutive pages. */
static uint64_t drop_list(const ns_tree_t *map, int fd, const MDB_val *v)
{
    const ns_lmdb_id_t *ids = ns_lmdb_idl(v->mv_data, v->mv_size);
    if (ids == NULL)
        return 0; /* not an ID list: leave it */
    uint64_t n = ids[0], run_hi = 0, run_n = 0;
    for (uint64_t i = 1; i <= n; i++) { /* descending */
        if (run_n && ids[i] + run_n == run_hi) {
            run_n++;
            continue;
        }
        if (run_n)
            drop_run(map, fd, run_hi + 1 - run_n, run_n);
        run_hi = ids[i];
        run_n = 1;
    }
    if (run_n)
        drop_run(map, fd, run_hi + 1 - run_n, run_n);
    return n;
}

int ns_store_release_free_pages(ns_store_t *s, bool newest_too, uint64_t *pages)
{
    *pages = 0;
    ns_txn_t *t = NULL;
    MDB_cursor *cur = NULL;
    ns_tree_t map;
    int fd = -1;
    int rc = ns_txn_begin(s, false, &t);
    if (rc != NS_OK)
        return rc;
    uint64_t newest = (uint64_t)mdb_txn_id(t->txn);
    /* the map's place and the pages in the file, from a table's record */
    if (ns_tree_open(s->env, t->txn, "meta", &map) != NS_OK || mdb_env_get_fd(s->env, &fd) != 0 ||
        mdb_cursor_open(t->txn, NS_LMDB_FREE_DBI, &cur) != 0)
        goto out; /* nothing dropped: only memory kept */
    size_t from = (size_t)s->free_dropped + 1;
    MDB_val k = {sizeof from, &from}, v;
    for (int op = MDB_SET_RANGE; mdb_cursor_get(cur, &k, &v, op) == 0; op = MDB_NEXT) {
        size_t id;
        if (k.mv_size != sizeof id)
            break;
        memcpy(&id, k.mv_data, sizeof id);
        if (id > newest || (id == newest && !newest_too))
            break; /* the newest's pages: live in the snapshot before it */
        *pages += drop_list(&map, fd, &v);
        s->free_dropped = id;
    }
out:
    if (cur)
        mdb_cursor_close(cur);
    ns_txn_abort(t);
    return NS_OK;
}
