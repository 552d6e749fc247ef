/* nskeysbench - what a route lookup's B-tree descent costs in LMDB itself,
 * with the routes table's keys as they are (topic names, memcmp order) and
 * as issue 31's lever would make them (an 8-byte hash of the name under
 * MDB_INTEGERKEY, the name kept in the value to tell collisions apart), and
 * the names looked up by the lookup path's own descent (walk: store/tree_walk.h)
 * instead of mdb_get.
 *
 *   nskeysbench DIR TOPICS names|hashed|walk LOOKUPS
 *
 * Fills DIR (an empty directory, or one this tool filled with the same
 * arguments) with TOPICS values of 300 bytes, inserted in a scattered order
 * as registrations insert them, then runs LOOKUPS mdb_get calls of
 * scattered topics inside measure_lookups(): tools/bench_keys.sh counts
 * that function's instructions with callgrind. Prints the tree's shape.
 *
 * A probe of the store's design, so it lives in store/ (the only code on
 * LMDB), in a folder of its own: it is no part of the nsstore library, and
 * it measures the library's cost for a key shape, touching no namesrvd data. */
#include <errno.h>
#include <lmdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/err.h"
#include "store/tree_walk.h"

enum { VALUE_BYTES = 300, NAME_BYTES = 32, COMMIT_EVERY = 100000 };

/* FNV-1a, 64 bits: any well-mixed hash costs about the same per lookup. */
static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (uint8_t)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static void topic_name(char *out, long i)
{
    snprintf(out, NAME_BYTES, "BenchTopic-%07ld", i);
}

/* The key of name; a hash only for hashed keys (its cost is the design's). */
static MDB_val key_of(bool hashed, const char *name, uint64_t *h)
{
    if (!hashed)
        return (MDB_val){strlen(name), (void *)name};
    *h = name_hash(name);
    return (MDB_val){sizeof *h, h};
}

static int fill(MDB_env *env, MDB_dbi dbi, bool hashed, long n)
{
    MDB_txn *txn;
    char name[NAME_BYTES], value[VALUE_BYTES];
    memset(value, 'x', sizeof value);
    int rc = mdb_txn_begin(env, NULL, 0, &txn);
    for (long i = 0; rc == 0 && i < n; i++) {
        topic_name(name, (long)(((uint64_t)i * 2654435761u) % (uint64_t)n));
        uint64_t h;
        MDB_val k = key_of(hashed, name, &h), v = {sizeof value, value};
        memcpy(value, name, strlen(name) + 1);
        rc = mdb_put(txn, dbi, &k, &v, 0);
        if (rc == 0 && i % COMMIT_EVERY == COMMIT_EVERY - 1) {
            if ((rc = mdb_txn_commit(txn)) != 0)
                return rc; /* the transaction is gone either way */
            rc = mdb_txn_begin(env, NULL, 0, &txn);
            if (rc != 0)
                return rc;
        }
    }
    if (rc != 0) {
        mdb_txn_abort(txn);
        return rc;
    }
    return mdb_txn_commit(txn);
}

/* The measured part: q lookups, each checking the name it found (not static:
 * callgrind toggles on its name). */
size_t measure_lookups(MDB_txn *txn, MDB_dbi dbi, bool hashed, const ns_tree_t *walk, long q,
                       char (*names)[NAME_BYTES]);
__attribute__((noinline)) size_t measure_lookups(MDB_txn *txn, MDB_dbi dbi, bool hashed,
                                                 const ns_tree_t *walk, long q,
                                                 char (*names)[NAME_BYTES])
{
    size_t found = 0;
    for (long i = 0; i < q; i++) {
        uint64_t h;
        MDB_val k = key_of(hashed, names[i], &h), v;
        const void *val;
        if (walk) {
            if (ns_tree_get(walk, k.mv_data, k.mv_size, &val, &v.mv_size) != NS_OK)
                continue;
            v.mv_data = (void *)val;
        } else if (mdb_get(txn, dbi, &k, &v) != 0) {
            continue;
        }
        found += strcmp(v.mv_data, names[i]) == 0;
    }
    return found;
}

int main(int argc, char **argv)
{
    if (argc != 5 ||
        (strcmp(argv[3], "names") && strcmp(argv[3], "hashed") && strcmp(argv[3], "walk"))) {
        fprintf(stderr, "usage: nskeysbench DIR TOPICS names|hashed|walk LOOKUPS\n");
        return 2;
    }
    long n = atol(argv[2]), q = atol(argv[4]);
    bool hashed = strcmp(argv[3], "hashed") == 0, walk = strcmp(argv[3], "walk") == 0;
    ns_tree_t tree;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_stat st;
    char(*names)[NAME_BYTES] = calloc((size_t)q, NAME_BYTES);
    int rc = names ? mdb_env_create(&env) : ENOMEM;
    rc = rc ? rc : mdb_env_set_mapsize(env, (size_t)8 << 30);
    rc = rc ? rc : mdb_env_set_maxdbs(env, 1);
    rc = rc ? rc : mdb_env_open(env, argv[1], MDB_NOSYNC | MDB_NORDAHEAD, 0644);
    rc = rc ? rc : mdb_txn_begin(env, NULL, 0, &txn);
    rc = rc ? rc : mdb_dbi_open(txn, "routes", MDB_CREATE | (hashed ? MDB_INTEGERKEY : 0), &dbi);
    rc = rc ? rc : mdb_stat(txn, dbi, &st);
    rc = rc ? rc : mdb_txn_commit(txn);
    if (rc == 0 && st.ms_entries == 0)
        rc = fill(env, dbi, hashed, n);
    rc = rc ? rc : mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    rc = rc ? rc : mdb_stat(txn, dbi, &st);
    if (rc == 0 && walk && ns_tree_open(env, txn, "routes", &tree) != NS_OK)
        rc = MDB_INCOMPATIBLE;
    if (rc != 0) {
        fprintf(stderr, "nskeysbench: %s\n", mdb_strerror(rc));
        return 1;
    }
    for (long i = 0; i < q; i++)
        topic_name(names[i], (long)(((uint64_t)i * 40503u + 7) % (uint64_t)n));
    size_t found = measure_lookups(txn, dbi, hashed, walk ? &tree : NULL, q, names);
    printf("%s keys, %ld topics: depth %u, %zu branch + %zu leaf pages; %zu of %ld found\n",
           argv[3], n, st.ms_depth, st.ms_branch_pages, st.ms_leaf_pages, found, q);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    free(names);
    return found == (size_t)q ? 0 : 1;
}
