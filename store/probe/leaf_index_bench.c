/* nsleafidxbench - what an index of the routes table's leaves would take
 * off a lookup (docs/performance.md, "The lookup's own descent"): the
 * library's descent (ns_tree_get) against a sorted array of each leaf's
 * first key, read as one big-endian 8-byte window past the names' common
 * prefix, searched with integer compares, then one leaf searched by the
 * library's own step (tree_step). A probe, not part of nsstore: a scratch
 * LMDB of TOPICS routes of 250-400 bytes named BenchTopic-%07u inserted in
 * a scattered order (as nsdescentbench builds it), LOOKUPS names drawn
 * evenly; every lookup of both ways must find its route. The index here
 * suits these names (their windows differ between leaves); real names need
 * a general window and ties resolved by full compares.
 *
 *   nsleafidxbench DIR TOPICS LOOKUPS
 *
 * Prints the tree, the index's size and ns a lookup each way; under
 * callgrind, run_tree and run_index are the two loops to compare
 * (tools/bench_leaf_index.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "store/tree_walk.c"
#include "store/probe/bench_routes.h"

typedef struct {
    uint64_t *win; /* each leaf's first key, 8 bytes from off, big-endian */
    uint64_t *pg;  /* and its page */
    size_t n, off;
} leaf_index_t;

static uint64_t window(const uint8_t *k, size_t n, size_t off)
{
    uint64_t w = 0;
    for (size_t i = 0; i < 8; i++)
        w = w << 8 | (off + i < n ? k[off + i] : 0);
    return w;
}

/* One entry per leaf, in key order: a cursor over the table, each value's
 * page header giving its leaf. The window starts past the bytes every key
 * shares with the first. */
static int index_build(MDB_txn *txn, MDB_dbi dbi, size_t psize, size_t entries, leaf_index_t *ix)
{
    MDB_cursor *c;
    MDB_val k, v, first = {0, NULL};
    ix->win = malloc(entries * sizeof *ix->win);
    ix->pg = malloc(entries * sizeof *ix->pg);
    if (ix->win == NULL || ix->pg == NULL || mdb_cursor_open(txn, dbi, &c) != 0)
        return 1;
    ix->off = SIZE_MAX;
    while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) {
        if (first.mv_data == NULL)
            first = k;
        size_t i = 0;
        while (i < k.mv_size && i < first.mv_size &&
               ((const uint8_t *)k.mv_data)[i] == ((const uint8_t *)first.mv_data)[i])
            i++;
        if (i < ix->off)
            ix->off = i;
    }
    uint64_t last = UINT64_MAX;
    for (int op = MDB_FIRST; mdb_cursor_get(c, &k, &v, op) == 0; op = MDB_NEXT) {
        uintptr_t page = (uintptr_t)v.mv_data & ~(uintptr_t)(psize - 1);
        uint64_t pg = ns_lmdb_rd64((const uint8_t *)page);
        if (pg == last)
            continue;
        ix->win[ix->n] = ix->n == 0 ? 0 : window(k.mv_data, k.mv_size, ix->off);
        ix->pg[ix->n++] = last = pg;
    }
    mdb_cursor_close(c);
    return 0;
}

static __attribute__((noinline)) int index_get(const ns_tree_t *t, const leaf_index_t *ix,
                                               const char *key, size_t klen, const void **val,
                                               size_t *vlen)
{
    uint64_t w = window((const uint8_t *)key, klen, ix->off);
    size_t lo = 0, n = ix->n;
    while (n > 1) { /* the last leaf whose first window is at most w */
        size_t half = n / 2;
        lo = ix->win[lo + half] <= w ? lo + half : lo;
        n -= half;
    }
    uint8_t copy[NAME_BYTES + 8];
    memcpy(copy, key, klen);
    memset(copy + klen, 0, 8);
    skey_t k = {copy, klen, 0, 0};
    uint64_t pg = ix->pg[lo];
    return tree_step(t, t->depth - 1, &pg, &k, val, vlen);
}

static __attribute__((noinline)) long run_tree(const ns_tree_t *t, char (*keys)[NAME_BYTES],
                                               const size_t *kl, long q, unsigned *sink)
{
    long found = 0;
    for (long i = 0; i < q; i++) {
        const void *v;
        size_t vl;
        if (ns_tree_get(t, keys[i], kl[i], &v, &vl) == NS_OK) {
            found++;
            *sink ^= *(const uint8_t *)v;
        }
    }
    return found;
}

static __attribute__((noinline)) long run_index(const ns_tree_t *t, const leaf_index_t *ix,
                                                char (*keys)[NAME_BYTES], const size_t *kl, long q,
                                                unsigned *sink)
{
    long found = 0;
    for (long i = 0; i < q; i++) {
        const void *v;
        size_t vl;
        if (index_get(t, ix, keys[i], kl[i], &v, &vl) == NS_OK) {
            found++;
            *sink ^= *(const uint8_t *)v;
        }
    }
    return found;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: nsleafidxbench DIR TOPICS LOOKUPS\n");
        return 2;
    }
    long n = atol(argv[2]), q = atol(argv[3]);
    if (n < 2 || q < 1 || n % 7919 == 0)
        return 2;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    ns_tree_t t;
    leaf_index_t ix = {0};
    int rc = open_routes(argv[1], n, &env, &dbi, &txn);
    if (rc != 0 || ns_tree_open(env, txn, "routes", &t) != NS_OK ||
        index_build(txn, dbi, t.psize, (size_t)n, &ix) != 0) {
        fprintf(stderr, "nsleafidxbench: %s\n", rc ? mdb_strerror(rc) : "tree not readable");
        return 1;
    }
    char(*keys)[NAME_BYTES];
    size_t *kl;
    if (!draw_names(n, q, &keys, &kl))
        return 1;
    unsigned sink = 0; /* the values' first bytes: the reads cannot be left out */
    double t0 = now_s();
    long a = run_tree(&t, keys, kl, q, &sink);
    double t1 = now_s();
    long b = run_index(&t, &ix, keys, kl, q, &sink);
    double t2 = now_s();
    printf("topics %ld depth %u: %zu leaves, index %zu KiB (window at byte %zu); "
           "descent %.0f ns a lookup, index %.0f ns (found %ld, %ld of %ld; %u)\n",
           n, t.depth, ix.n, ix.n * 16 / 1024, ix.off, (t1 - t0) / (double)q * 1e9,
           (t2 - t1) / (double)q * 1e9, a, b, q, sink & 1);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    free(keys);
    free(kl);
    free(ix.win);
    free(ix.pg);
    return a == q && b == q ? 0 : 1;
}
