/* nsdescentbench - what overlapping the route lookups of one read would
 * take off their wall clock (issue 31; docs/performance.md, "The lookup's
 * own descent"): the lookup path's descent (store/tree_walk.h) one key at a
 * time, against batches of keys descended level by level, each level's
 * pages of the whole batch fetched from memory before any is searched.
 *
 *   nsdescentbench DIR TOPICS LOOKUPS [BATCH]
 *
 * Fills DIR (empty, or filled by this tool with the same TOPICS) with
 * TOPICS routes of 250-400 bytes under names like nsbench's, inserted in a
 * scattered order, then looks up LOOKUPS names drawn evenly, three rounds
 * of both ways, and prints nanoseconds per lookup (tools/bench_descent.sh
 * runs it pinned to one core).
 *
 * The batched descent is an experiment, not the library's: it lives here,
 * with the library's descent step included from store/tree_walk.c, so
 * every page it reads is checked as ns_tree_get checks it (a batch
 * would first have to find its topics before the frames are handled, which
 * namesrvd does not do). A probe of the store's design, so it lives in
 * store/ (the only code on LMDB), in a folder of its own. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <time.h>

#include "store/tree_walk.c"

enum { NAME_BYTES = 32, MAX_BATCH = 16, COMMIT_EVERY = 100000 };

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

/* Before one level's searches: the page headers of the whole batch, then
 * each page's first search nodes (a leaf's all, as ns_tree_get fetches). */
static void prefetch_level(const ns_tree_t *t, bool leaf, const uint64_t *pg, const bool *live,
                           int n)
{
    for (int j = 0; j < n; j++)
        if (live[j] && pg[j] < t->pages) {
            __builtin_prefetch(t->map + pg[j] * t->psize);
            __builtin_prefetch(t->map + pg[j] * t->psize + 64);
        }
    for (int j = 0; j < n; j++) {
        if (!live[j] || pg[j] >= t->pages)
            continue;
        const uint8_t *p = t->map + pg[j] * t->psize;
        size_t lower = ns_lmdb_page_lower(p), mask = t->psize - 1;
        unsigned m = lower > PAGE_HDR && lower <= t->psize ? (unsigned)(lower - PAGE_HDR) >> 1 : 0;
        for (unsigned i = 0; leaf && i < m && i < 32; i++)
            __builtin_prefetch(p + (ns_lmdb_node_off(p, i) & mask));
        if (!leaf && m > 0) {
            __builtin_prefetch(p + (ns_lmdb_node_off(p, m / 2) & mask));
            __builtin_prefetch(p + (ns_lmdb_node_off(p, m / 4) & mask));
            __builtin_prefetch(p + (ns_lmdb_node_off(p, m - 1 - m / 4) & mask));
        }
    }
}

/* ns_tree_get for n keys at once, level by level; vals[j] NULL when not
 * found (or declined). */
static void get_batch(const ns_tree_t *t, char (*keys)[NAME_BYTES], const size_t *kl, int n,
                      const void **vals)
{
    uint8_t copy[MAX_BATCH][NAME_BYTES + 8];
    skey_t k[MAX_BATCH];
    uint64_t pg[MAX_BATCH];
    bool live[MAX_BATCH];
    for (int j = 0; j < n; j++) {
        memcpy(copy[j], keys[j], kl[j]);
        memset(copy[j] + kl[j], 0, 8);
        k[j] = (skey_t){copy[j], kl[j], 0, 0};
        pg[j] = t->root;
        live[j] = t->root != NS_TREE_EMPTY;
        vals[j] = NULL;
    }
    for (unsigned level = 0; level < t->depth; level++) {
        prefetch_level(t, level + 1 == t->depth, pg, live, n);
        for (int j = 0; j < n; j++) {
            size_t vlen;
            if (live[j] && tree_step(t, level, &pg[j], &k[j], &vals[j], &vlen) != TREE_DESCENDED)
                live[j] = false;
        }
    }
}

static int fill(MDB_env *env, MDB_dbi dbi, long n)
{
    static char value[400];
    MDB_txn *txn;
    int rc = mdb_txn_begin(env, NULL, 0, &txn);
    for (long i = 0; rc == 0 && i < n; i++) {
        char name[NAME_BYTES];
        long t = (i * 7919) % n; /* scattered, as registrations insert */
        MDB_val k = {topic_name(name, t), name}, v = {250 + (size_t)(t * 7) % 150, value};
        rc = mdb_put(txn, dbi, &k, &v, 0);
        if (rc == 0 && (i + 1) % COMMIT_EVERY == 0 && (rc = mdb_txn_commit(txn)) == 0)
            rc = mdb_txn_begin(env, NULL, 0, &txn);
    }
    return rc ? rc : mdb_txn_commit(txn);
}

/* The file out of the page cache and read back whole through the map:
 * with huge, the map asks for transparent huge pages first (MADV_HUGEPAGE),
 * so each fault reads a 2 MiB folio and maps it with one PMD entry where the
 * kernel and the file system allow (FilePmdMapped in /proc/self/smaps). */
static void remap(MDB_env *env, const ns_tree_t *t, int huge)
{
    int fd;
    if (mdb_env_get_fd(env, &fd) != 0)
        return;
    size_t len = (size_t)t->pages * t->psize,
           span = (len + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    if (huge && madvise((void *)t->map, span, MADV_HUGEPAGE) != 0)
        perror("madvise(MADV_HUGEPAGE)");
    madvise((void *)t->map, span, MADV_DONTNEED);
    fdatasync(fd);
    posix_fadvise(fd, 0, (off_t)len, POSIX_FADV_DONTNEED);
    unsigned sink = 0;
    for (size_t off = 0; off < len; off += t->psize)
        sink += t->map[off];
    char cmd[160];
    snprintf(cmd, sizeof cmd,
             "awk '/data.mdb/ {m = 1} m && /^(Rss|FilePmdMapped):/ {print \"  \" $0} /^VmFlags/ {m "
             "= 0}' "
             "/proc/%d/smaps",
             (int)getpid());
    printf("map %s (%u):\n", huge ? "with MADV_HUGEPAGE" : "4 KiB pages", sink & 1);
    fflush(stdout);
    if (system(cmd) != 0)
        fprintf(stderr, "smaps not read\n");
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: nsdescentbench DIR TOPICS LOOKUPS [BATCH [HUGE]]\n");
        return 2;
    }
    long n = atol(argv[2]), q = atol(argv[3]);
    int b = argc > 4 ? atoi(argv[4]) : 8;
    int huge = argc > 5 ? atoi(argv[5]) : 0;
    if (n < 1 || q < 1 || b < 1 || b > MAX_BATCH || n % 7919 == 0)
        return 2;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_stat st;
    ns_tree_t t;
    int rc = mdb_env_create(&env);
    rc = rc ? rc : mdb_env_set_maxdbs(env, 2);
    rc = rc ? rc : mdb_env_set_mapsize(env, (size_t)n * 1024 + (64u << 20));
    rc = rc ? rc : mdb_env_open(env, argv[1], MDB_NOSYNC | MDB_NORDAHEAD, 0644);
    rc = rc ? rc : mdb_txn_begin(env, NULL, 0, &txn);
    rc = rc ? rc : mdb_dbi_open(txn, "routes", MDB_CREATE, &dbi);
    rc = rc ? rc : mdb_stat(txn, dbi, &st);
    rc = rc ? rc : mdb_txn_commit(txn);
    if (rc == 0 && st.ms_entries != (size_t)n)
        rc = fill(env, dbi, n);
    rc = rc ? rc : mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (rc != 0 || ns_tree_open(env, txn, "routes", &t) != NS_OK) {
        fprintf(stderr, "nsdescentbench: %s\n", rc ? mdb_strerror(rc) : "tree not readable");
        return 1;
    }
    remap(env, &t, huge);
    char(*keys)[NAME_BYTES] = malloc((size_t)q * NAME_BYTES);
    size_t *kl = malloc((size_t)q * sizeof *kl);
    if (keys == NULL || kl == NULL)
        return 1;
    uint64_t s = 88172645463325252ull;
    for (long i = 0; i < q; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        kl[i] = topic_name(keys[i], (long)(s % (uint64_t)n));
    }
    for (int round = 0; round < 3; round++) {
        long found[2] = {0, 0};
        unsigned sink = 0; /* the values' first bytes: the reads cannot be left out */
        double t0 = now_s();
        for (long i = 0; i < q; i++) {
            const void *v;
            size_t vl;
            if (ns_tree_get(&t, keys[i], kl[i], &v, &vl) == NS_OK) {
                found[0]++;
                sink ^= *(const uint8_t *)v;
            }
        }
        double t1 = now_s();
        for (long i = 0; i + b <= q; i += b) {
            const void *vals[MAX_BATCH];
            get_batch(&t, keys + i, kl + i, b, vals);
            for (int j = 0; j < b; j++)
                if (vals[j]) {
                    found[1]++;
                    sink ^= *(const uint8_t *)vals[j];
                }
        }
        double t2 = now_s();
        printf("topics %ld depth %u: one by one %.0f ns a lookup, batches of %d %.0f ns "
               "(found %ld, %ld; %u)\n",
               n, t.depth, (t1 - t0) / (double)q * 1e9, b, (t2 - t1) / (double)(q - q % b) * 1e9,
               found[0], found[1], sink);
    }
    mdb_txn_abort(txn);
    mdb_env_close(env);
    free(keys);
    free(kl);
    return 0;
}
