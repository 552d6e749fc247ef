/* bench_routes.h - the scratch routes table the store's probes look up in
 * (descent_bench.c, leaf_index_bench.c): TOPICS routes of 250-400 bytes
 * under names like nsbench's, inserted in a scattered order, as
 * registrations insert them. Static functions, for one probe each. */
#ifndef NS_PROBE_BENCH_ROUTES_H
#define NS_PROBE_BENCH_ROUTES_H

#include <lmdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { NAME_BYTES = 32, COMMIT_EVERY = 100000 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t topic_name(char *out, long i)
{
    return (size_t)snprintf(out, NAME_BYTES, "BenchTopic-%07ld", i);
}

static int fill(MDB_env *env, MDB_dbi dbi, long n)
{
    static char value[400];
    MDB_txn *txn;
    int rc = mdb_txn_begin(env, NULL, 0, &txn);
    for (long i = 0; rc == 0 && i < n; i++) {
        char name[NAME_BYTES];
        long t = (i * 7919) % n; /* scattered (n must not be a multiple of 7919) */
        MDB_val k = {topic_name(name, t), name}, v = {250 + (size_t)(t * 7) % 150, value};
        rc = mdb_put(txn, dbi, &k, &v, 0);
        if (rc == 0 && (i + 1) % COMMIT_EVERY == 0 && (rc = mdb_txn_commit(txn)) == 0)
            rc = mdb_txn_begin(env, NULL, 0, &txn);
    }
    return rc ? rc : mdb_txn_commit(txn);
}

/* q names of the n drawn evenly (xorshift, the same every run) into
 * keys[q] and their lengths into kl[q], both malloc'd (the caller frees);
 * false when out of memory. */
static bool draw_names(long n, long q, char (**keys)[NAME_BYTES], size_t **kl)
{
    *keys = malloc((size_t)q * NAME_BYTES);
    *kl = malloc((size_t)q * sizeof **kl);
    if (*keys == NULL || *kl == NULL)
        return false;
    uint64_t s = 88172645463325252ull;
    for (long i = 0; i < q; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        (*kl)[i] = topic_name((*keys)[i], (long)(s % (uint64_t)n));
    }
    return true;
}

/* Opens (filling when it does not hold n routes) the table "routes" in dir,
 * and begins a read transaction on it. An LMDB error code. */
__attribute__((unused)) static int open_routes(const char *dir, long n, MDB_env **env, MDB_dbi *dbi,
                                               MDB_txn **rtxn)
{
    MDB_txn *txn;
    MDB_stat st;
    int rc = mdb_env_create(env);
    rc = rc ? rc : mdb_env_set_maxdbs(*env, 2);
    rc = rc ? rc : mdb_env_set_mapsize(*env, (size_t)n * 1024 + (64u << 20));
    rc = rc ? rc : mdb_env_open(*env, dir, MDB_NOSYNC | MDB_NORDAHEAD, 0644);
    rc = rc ? rc : mdb_txn_begin(*env, NULL, 0, &txn);
    rc = rc ? rc : mdb_dbi_open(txn, "routes", MDB_CREATE, dbi);
    rc = rc ? rc : mdb_stat(txn, *dbi, &st);
    rc = rc ? rc : mdb_txn_commit(txn);
    if (rc == 0 && st.ms_entries != (size_t)n)
        rc = fill(*env, *dbi, n);
    return rc ? rc : mdb_txn_begin(*env, NULL, MDB_RDONLY, rtxn);
}

#endif
