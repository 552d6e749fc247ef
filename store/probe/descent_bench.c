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
#include "store/probe/bench_routes.h"

enum { MAX_BATCH = 16 };

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
    ns_tree_t t;
    int rc = open_routes(argv[1], n, &env, &dbi, &txn);
    if (rc != 0 || ns_tree_open(env, txn, "routes", &t) != NS_OK) {
        fprintf(stderr, "nsdescentbench: %s\n", rc ? mdb_strerror(rc) : "tree not readable");
        return 1;
    }
    remap(env, &t, huge);
    char(*keys)[NAME_BYTES];
    size_t *kl;
    if (!draw_names(n, q, &keys, &kl))
        return 1;
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
