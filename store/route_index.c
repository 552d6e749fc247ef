/* route_index.c - the routes table's hash index, brought to each snapshot by
 * the committing thread and read lock-free (route_index.h has the design). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>

#include "internal.h"
#include "lmdb_page.h"
#include "ns/clock.h"
#include "ns/log.h"
#include "route_index.h"

#define MIN_SLOTS 1024u
#define TOMB UINT64_C(1) /* a deleted entry (page 1 is a meta page, never a leaf) */
#define TAG_MASK UINT64_C(0xFFF0000000000000)

/* An entry: the hash's top 12 bits, how many cache lines the node spans
 * past its first (4 bits, NS_TREE_LINES_MORE at most), the node's offset in
 * its leaf (16), the leaf's page number (32); 0 is an empty slot. The lines
 * are only a hint for ns_route_index_warm (it fetches the value's lines
 * with the node instead of after reading the node's header); nothing is
 * answered from them. */
_Static_assert(NS_TREE_LINES_MORE <= 15, "an entry keeps the lines in 4 bits");
typedef struct table {
    _Atomic uint64_t *slots; /* mmap'ed: zeros, given back with MADV_DONTNEED */
    size_t mask;
    struct table *next; /* the tables this one replaced (kept mapped, see .h) */
} table_t;

struct ns_route_index {
    _Atomic uint64_t version; /* the snapshot the table answers for; 0: none */
    _Atomic(table_t *) table;
    uint64_t seed;
    /* the committing thread's, under lock */
    pthread_mutex_t lock;
    size_t entries, tombs;
    uint8_t *bits; /* the indexed tree's pages */
    size_t nbits;
    uint64_t built; /* the snapshot table and bits describe; 0: none */
    /* a read transaction of snapshot built, kept until the next update: no
     * page of its tree is written over while it lives, so the next update
     * can read the leaves freed since */
    ns_txn_t *held;
    uint64_t diffs, rebuilds;
};

/* A seeded mix of the name, 8 bytes at a time (written here: a few
 * instructions per word matter on this path, and the seed keeps names
 * crafted to collide from doing so on every server). */
static inline uint64_t ix_hash(uint64_t seed, const uint8_t *k, size_t n)
{
    uint64_t h = seed ^ (n * UINT64_C(0x9E3779B97F4A7C15));
    for (; n >= 8; k += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, k, 8);
        h = (h ^ w) * UINT64_C(0xBF58476D1CE4E5B9);
        h ^= h >> 31;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, k, n);
        h = (h ^ w) * UINT64_C(0x94D049BB133111EB);
    }
    h ^= h >> 29;
    h *= UINT64_C(0xBF58476D1CE4E5B9);
    return h ^ (h >> 32);
}

static inline uint64_t ix_entry(uint64_t h, unsigned lines, unsigned node, uint64_t pg)
{
    return (h & TAG_MASK) | (uint64_t)lines << 48 | (uint64_t)node << 32 | pg;
}

int ns_route_index_get(const ns_route_index_t *ix, const ns_tree_t *t, uint64_t txnid,
                       const void *key, size_t klen, const void **val, size_t *vlen)
{
    if (atomic_load_explicit(&ix->version, memory_order_acquire) != txnid)
        return NS_EFALLBACK;
    table_t *tb = atomic_load_explicit(&((ns_route_index_t *)ix)->table, memory_order_acquire);
    if (tb == NULL)
        return NS_EFALLBACK;
    uint64_t h = ix_hash(ix->seed, key, klen);
    size_t i = (size_t)h & tb->mask;
    /* to an empty slot: a quarter at least are (ix_put); the count only
     * bounds a table emptied and refilled under the probe */
    for (size_t n = 0; n <= tb->mask; n++, i = (i + 1) & tb->mask) {
        uint64_t e = atomic_load_explicit(&tb->slots[i], memory_order_relaxed);
        if (e == 0)
            return NS_EFALLBACK; /* a miss: the descent says whether it exists */
        if (e == TOMB || ((e ^ h) & TAG_MASK))
            continue;
        int rc =
            ns_tree_leaf_at(t, (uint32_t)e, (unsigned)(e >> 32) & 0xFFFF, key, klen, val, vlen);
        if (rc == NS_ENOTFOUND) /* another name with the same tag */
            continue;
        if (rc != NS_OK)
            return NS_EFALLBACK;
        atomic_thread_fence(memory_order_acquire);
        return atomic_load_explicit(&ix->version, memory_order_relaxed) == txnid ? NS_OK
                                                                                 : NS_EFALLBACK;
    }
    return NS_EFALLBACK;
}

void ns_route_index_warm(const ns_route_index_t *ix, const ns_tree_t *t, uint64_t txnid,
                         const ns_slice_t *keys, size_t n)
{
    if (atomic_load_explicit(&ix->version, memory_order_acquire) != txnid)
        return;
    table_t *tb = atomic_load_explicit(&((ns_route_index_t *)ix)->table, memory_order_acquire);
    if (tb == NULL)
        return;
    n = n < NS_ROUTE_WARM_MAX ? n : NS_ROUTE_WARM_MAX;
    const _Atomic uint64_t *slot[NS_ROUTE_WARM_MAX];
    uint64_t tag[NS_ROUTE_WARM_MAX];
    for (size_t k = 0; k < n; k++) {
        uint64_t h = ix_hash(ix->seed, keys[k].ptr, keys[k].len);
        slot[k] = &tb->slots[(size_t)h & tb->mask];
        tag[k] = h & TAG_MASK;
        __builtin_prefetch((const void *)slot[k]);
    }
    ns_tree_spot_t at[NS_ROUTE_WARM_MAX];
    size_t live = 0;
    for (size_t k = 0; k < n; k++) { /* the first slot only: most names sit there */
        uint64_t e = atomic_load_explicit(slot[k], memory_order_relaxed);
        if (e > TOMB && (e & TAG_MASK) == tag[k])
            at[live++] = (ns_tree_spot_t){(uint32_t)e, (unsigned)(e >> 32) & 0xFFFF,
                                          (unsigned)(e >> 48) & NS_TREE_LINES_MORE};
    }
    ns_tree_warm(t, at, live);
}

/* ---- the table (committing thread) ---- */

static table_t *table_new(size_t slots)
{
    table_t *tb = calloc(1, sizeof *tb);
    if (tb == NULL)
        return NULL;
    void *m = mmap(NULL, slots * sizeof *tb->slots, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        free(tb);
        return NULL;
    }
    /* In 2 MiB pages where the kernel allows (THP "madvise" or "always"): a
     * probe lands anywhere in the table, and at 1M topics (16 MiB) each one
     * missed the TLB in 4 KiB pages; measured +6 % lookups at depth 8 there
     * (docs/performance.md). Tables under 2 MiB are not affected. */
    (void)madvise(m, slots * sizeof *tb->slots, MADV_HUGEPAGE);
    tb->slots = m;
    tb->mask = slots - 1;
    return tb;
}

/* Empties tb: its pages given back, zeros when read again. */
static void table_clear(table_t *tb)
{
    (void)madvise((void *)tb->slots, (tb->mask + 1) * sizeof *tb->slots, MADV_DONTNEED);
}

/* Enters (node, pg) for the key of hash h: node is its offset in leaf pg,
 * spanning lines cache lines past its first. */
static int ix_put(ns_route_index_t *ix, table_t *tb, uint64_t h, unsigned lines, unsigned node,
                  uint64_t pg)
{
    if ((ix->entries + ix->tombs + 1) * 4 > (tb->mask + 1) * 3)
        return -1; /* too full: rebuilt bigger */
    size_t i = (size_t)h & tb->mask;
    uint64_t e;
    while ((e = atomic_load_explicit(&tb->slots[i], memory_order_relaxed)) != 0 && e != TOMB)
        i = (i + 1) & tb->mask;
    if (e == TOMB)
        ix->tombs--;
    atomic_store_explicit(&tb->slots[i], ix_entry(h, lines, node, pg), memory_order_relaxed);
    ix->entries++;
    return 0;
}

/* Removes (node, pg), the entry of the key of hash h. */
static int ix_del(ns_route_index_t *ix, table_t *tb, uint64_t h, unsigned lines, unsigned node,
                  uint64_t pg)
{
    uint64_t want = ix_entry(h, lines, node, pg), e;
    for (size_t i = (size_t)h & tb->mask;
         (e = atomic_load_explicit(&tb->slots[i], memory_order_relaxed)) != 0;
         i = (i + 1) & tb->mask)
        if (e == want) {
            atomic_store_explicit(&tb->slots[i], TOMB, memory_order_relaxed);
            ix->entries--;
            ix->tombs++;
            return 0;
        }
    return -1; /* not there: the table is not what it should be */
}

/* ---- the tree's pages ---- */

static bool bit_get(const ns_route_index_t *ix, uint64_t pg)
{
    return pg < ix->nbits && (ix->bits[pg >> 3] >> (pg & 7) & 1);
}

static void bit_set(ns_route_index_t *ix, uint64_t pg, bool on)
{
    if (on)
        ix->bits[pg >> 3] |= (uint8_t)(1u << (pg & 7));
    else
        ix->bits[pg >> 3] &= (uint8_t) ~(1u << (pg & 7));
}

/* Room for pages [0, pages); the new ones clear. */
static int bits_fit(ns_route_index_t *ix, uint64_t pages)
{
    if (pages <= ix->nbits)
        return 0;
    size_t have = (ix->nbits + 7) / 8, want = (size_t)(pages + pages / 4 + 64) / 8 + 1;
    uint8_t *b = realloc(ix->bits, want);
    if (b == NULL)
        return -1;
    memset(b + have, 0, want - have);
    ix->bits = b;
    ix->nbits = want * 8;
    return 0;
}

/* Page pg of t, checked as LMDB's format has it: its node count in *n, and
 * whether it is a leaf; NULL when it is not a branch or a leaf. */
static const uint8_t *page_at(const ns_tree_t *t, uint64_t pg, unsigned *n, bool *leaf)
{
    if (pg < 2 || pg >= t->pages)
        return NULL;
    const uint8_t *p = t->map + pg * t->psize;
    unsigned kind = ns_lmdb_page_kind(p);
    if (ns_lmdb_page_nodes(p, t->psize, n) != 0 ||
        (kind != NS_LMDB_P_LEAF && kind != NS_LMDB_P_BRANCH))
        return NULL;
    *leaf = kind == NS_LMDB_P_LEAF;
    return p;
}

/* The cache lines the node at off of a leaf spans past its first, at most
 * NS_TREE_LINES_MORE: its header, key and (unless kept on overflow pages)
 * value. */
static unsigned node_lines(const uint8_t *nd, size_t off)
{
    size_t data = ns_lmdb_node_flags(nd) & NS_LMDB_F_BIGDATA ? 8 : ns_lmdb_node_dsize(nd);
    size_t last = (off + NS_LMDB_NODE_HDR + ns_lmdb_node_ksize(nd) + data - 1) / 64 - off / 64;
    return last < NS_TREE_LINES_MORE ? (unsigned)last : NS_TREE_LINES_MORE;
}

/* Node i of page p (n nodes), its key in *k and *kn; NULL when out of it. */
static const uint8_t *node_key(const ns_tree_t *t, const uint8_t *p, unsigned n, unsigned i,
                               const uint8_t **k, size_t *kn)
{
    size_t off = ns_lmdb_node_off(p, i);
    if (off < NS_LMDB_PAGE_HDR + 2 * (size_t)n || off + NS_LMDB_NODE_HDR > t->psize)
        return NULL;
    *kn = ns_lmdb_node_ksize(p + off);
    *k = p + off + NS_LMDB_NODE_HDR;
    return off + NS_LMDB_NODE_HDR + *kn > t->psize ? NULL : p + off;
}

/* Enters (add) or removes every key of leaf page p (n nodes, page pg),
 * KEYS_AHEAD at a time: their slots are fetched together first (a table of
 * millions of slots misses the cache at each; the 1M-topic set-up's
 * rebuilds took 212 ns a topic one by one). */
#define KEYS_AHEAD 16
static int leaf_keys(ns_route_index_t *ix, table_t *tb, const ns_tree_t *t, const uint8_t *p,
                     unsigned n, uint64_t pg, bool add)
{
    uint64_t h[KEYS_AHEAD];
    unsigned lines[KEYS_AHEAD];
    for (unsigned base = 0; base < n; base += KEYS_AHEAD) {
        unsigned m = n - base < KEYS_AHEAD ? n - base : KEYS_AHEAD;
        for (unsigned j = 0; j < m; j++) {
            const uint8_t *k, *nd;
            size_t kn;
            if ((nd = node_key(t, p, n, base + j, &k, &kn)) == NULL)
                return -1;
            h[j] = ix_hash(ix->seed, k, kn);
            lines[j] = node_lines(nd, ns_lmdb_node_off(p, base + j));
            __builtin_prefetch((const void *)&tb->slots[(size_t)h[j] & tb->mask], 1);
        }
        for (unsigned j = 0; j < m; j++)
            if ((add ? ix_put : ix_del)(ix, tb, h[j], lines[j],
                                        (unsigned)ns_lmdb_node_off(p, base + j), pg) != 0)
                return -1;
    }
    return 0;
}

/* Marks and enters the subtree at pg (level from the root), skipping the
 * pages marked already when skip_known (unchanged since the indexed tree). */
static int walk(ns_route_index_t *ix, table_t *tb, const ns_tree_t *t, uint64_t pg, unsigned level,
                bool skip_known)
{
    unsigned n;
    bool leaf;
    if (bit_get(ix, pg)) /* unchanged; or, in a rebuild, a page reached twice */
        return skip_known ? 0 : -1;
    const uint8_t *p = page_at(t, pg, &n, &leaf);
    if (p == NULL || pg >= ix->nbits || leaf != (level + 1 == t->depth) || n > 0xFFFF)
        return -1;
    bit_set(ix, pg, true);
    if (leaf)
        return leaf_keys(ix, tb, t, p, n, pg, true);
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *k;
        size_t kn;
        const uint8_t *nd = node_key(t, p, n, i, &k, &kn);
        if (nd == NULL || walk(ix, tb, t, ns_lmdb_node_child(nd), level + 1, skip_known) != 0)
            return -1;
    }
    return 0;
}

/* One record of LMDB's free pages' table (v: an ID list): the routes
 * pages of the indexed tree among its pages leave the bitmap, and the keys
 * of the leaves among them the table. */
static int freed_list(ns_route_index_t *ix, table_t *tb, const ns_tree_t *t, const MDB_val *v)
{
    const ns_lmdb_id_t *ids = ns_lmdb_idl(v->mv_data, v->mv_size);
    if (ids == NULL)
        return -1;
    for (size_t i = 1; i <= ids[0]; i++) {
        unsigned n;
        bool leaf;
        if (!bit_get(ix, ids[i]))
            continue; /* not a page of the routes tree */
        bit_set(ix, ids[i], false);
        const uint8_t *p = page_at(t, ids[i], &n, &leaf);
        if (p == NULL || (leaf && leaf_keys(ix, tb, t, p, n, ids[i], false) != 0))
            return -1;
    }
    return 0;
}

/* From the snapshot built to the snapshot id of txn (route_index.h): the
 * keys of the leaves the transactions between them freed go, those of the
 * new pages come. (Even when they rewrote most of the tree this beats a
 * rebuild, which reads every leaf, most of them cold: +3 % on a 1M-topic
 * set-up whose commits rebuilt past 40 % of pages freed.) */
static int diff(ns_route_index_t *ix, table_t *tb, MDB_txn *txn, const ns_tree_t *t, uint64_t id)
{
    MDB_cursor *cur;
    if (mdb_cursor_open(txn, NS_LMDB_FREE_DBI, &cur) != 0)
        return -1;
    size_t from = (size_t)ix->built + 1, got;
    MDB_val k = {sizeof from, &from}, v;
    int rc = 0;
    for (int op = MDB_SET_RANGE; rc == 0 && mdb_cursor_get(cur, &k, &v, op) == 0; op = MDB_NEXT) {
        if (k.mv_size != sizeof got)
            rc = -1;
        else if (memcpy(&got, k.mv_data, sizeof got), got > id)
            break;
        else
            rc = freed_list(ix, tb, t, &v);
    }
    mdb_cursor_close(cur);
    if (rc != 0)
        return -1;
    return t->root == NS_TREE_EMPTY ? 0 : walk(ix, tb, t, t->root, 0, true);
}

/* The whole tree of t (entries of them in txn) into an empty table, a new
 * one when the current is too small for twice the entries. */
static int rebuild(ns_route_index_t *ix, const ns_tree_t *t, size_t entries)
{
    table_t *tb = atomic_load_explicit(&ix->table, memory_order_relaxed);
    size_t want = MIN_SLOTS;
    while (want < entries * 2 && want < ((size_t)1 << 40))
        want *= 2;
    if (tb == NULL || tb->mask + 1 < want) {
        table_t *nt = table_new(want);
        if (nt == NULL)
            return -1;
        if (tb) { /* a late reader of the old one reads zeros: a miss */
            table_clear(tb);
            nt->next = tb;
        }
        atomic_store_explicit(&ix->table, nt, memory_order_release);
        tb = nt;
    } else {
        table_clear(tb);
    }
    ix->entries = ix->tombs = 0;
    memset(ix->bits, 0, (ix->nbits + 7) / 8);
    return t->root == NS_TREE_EMPTY ? 0 : walk(ix, tb, t, t->root, 0, false);
}

/* Brings the index to the newest snapshot: by diff when it still holds
 * the snapshot it was built for, else a rebuild; then holds the new one.
 * Under ix->lock. */
static void update(ns_route_index_t *ix, ns_store_t *s)
{
    ns_txn_t *r;
    ns_tree_t t;
    MDB_stat st;
    if (ns_txn_begin(s, false, &r) != NS_OK)
        goto none;
    uint64_t id = (uint64_t)mdb_txn_id(r->txn);
    if (id == ix->built && atomic_load_explicit(&ix->version, memory_order_relaxed) == id) {
        ns_txn_abort(ix->held); /* nothing committed since: the same snapshot */
        ix->held = r;
        return;
    }
    atomic_store_explicit(&ix->version, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release); /* readers stop before the table changes */
    if (!s->have_db[NS_DB_ROUTES] ||
        ns_tree_open(s->env, r->txn, ns_db_names[NS_DB_ROUTES], &t) != NS_OK ||
        t.pages > UINT32_MAX || bits_fit(ix, t.pages) != 0 ||
        mdb_stat(r->txn, s->dbi[NS_DB_ROUTES], &st) != 0)
        goto none_txn;
    table_t *tb = atomic_load_explicit(&ix->table, memory_order_relaxed);
    bool done = ix->held && tb && id > ix->built &&
                (ix->entries + ix->tombs) * 10 <= (tb->mask + 1) * 6 &&
                diff(ix, tb, r->txn, &t, id) == 0;
    int64_t t0 = done ? 0 : ns_clock_mono_ms();
    if (!done && rebuild(ix, &t, st.ms_entries) != 0)
        goto none_txn;
    if (!done) /* the first build, a growth, after a resize or a burst of writes */
        NS_LOG_INFO("store %s: routes index built: %zu topics in %zu slots, %lld ms", s->dir,
                    ix->entries, (size_t)atomic_load(&ix->table)->mask + 1,
                    (long long)(ns_clock_mono_ms() - t0));
    ix->diffs += done;
    ix->rebuilds += !done;
    ix->built = id;
    atomic_store_explicit(&ix->version, id, memory_order_release);
    ns_txn_abort(ix->held); /* the pages it kept are out of the table now */
    ix->held = r;
    return;
none_txn:
    ns_txn_abort(r);
none: /* readers descend until a rebuild succeeds */
    ix->built = 0;
    atomic_store_explicit(&ix->version, 0, memory_order_release);
    ns_txn_abort(ix->held);
    ix->held = NULL;
}

/* ---- life ---- */

ns_route_index_t *ns_route_index_new(void)
{
    ns_route_index_t *ix = calloc(1, sizeof *ix);
    if (ix == NULL)
        return NULL;
    if (getrandom(&ix->seed, sizeof ix->seed, 0) != (ssize_t)sizeof ix->seed)
        ix->seed = (uint64_t)time(NULL) * UINT64_C(0x9E3779B97F4A7C15) ^ (uintptr_t)ix;
    pthread_mutex_init(&ix->lock, NULL);
    return ix;
}

void ns_route_index_free(ns_route_index_t *ix)
{
    if (ix == NULL)
        return;
    table_t *tb = atomic_load_explicit(&ix->table, memory_order_relaxed);
    while (tb) {
        table_t *next = tb->next;
        munmap((void *)tb->slots, (tb->mask + 1) * sizeof *tb->slots);
        free(tb);
        tb = next;
    }
    ns_txn_abort(ix->held);
    free(ix->bits);
    pthread_mutex_destroy(&ix->lock);
    free(ix);
}

void ns_route_index_refresh(ns_route_index_t *ix, ns_store_t *s)
{
    pthread_mutex_lock(&ix->lock);
    update(ix, s);
    pthread_mutex_unlock(&ix->lock);
}

void ns_route_index_let_go(ns_route_index_t *ix)
{
    pthread_mutex_lock(&ix->lock);
    ns_txn_abort(ix->held); /* the table stays right for snapshot built */
    ix->held = NULL;
    pthread_mutex_unlock(&ix->lock);
}

uint64_t ns_route_index_version(const ns_route_index_t *ix)
{
    return atomic_load_explicit(&ix->version, memory_order_acquire);
}

void ns_route_index_stats(ns_route_index_t *ix, ns_route_index_stats_t *out)
{
    pthread_mutex_lock(&ix->lock);
    table_t *tb = atomic_load_explicit(&ix->table, memory_order_relaxed);
    out->entries = ix->entries;
    out->tombs = ix->tombs;
    out->slots = tb ? tb->mask + 1 : 0;
    out->diffs = ix->diffs;
    out->rebuilds = ix->rebuilds;
    pthread_mutex_unlock(&ix->lock);
}

/* ---- the store's ---- */

int ns_store_route_index_start(ns_store_t *s)
{
    if (s->route_index == NULL && (s->route_index = ns_route_index_new()) == NULL)
        return NS_ENOMEM;
    return NS_OK;
}

void ns_store_route_index_refresh(ns_store_t *s)
{
    if (s->route_index)
        ns_route_index_refresh(s->route_index, s);
}

void ns_store_route_index_let_go(ns_store_t *s)
{
    if (s->route_index)
        ns_route_index_let_go(s->route_index);
}

void ns_store_route_index_size(ns_store_t *s, size_t *entries, size_t *slots)
{
    ns_route_index_stats_t st = {0};
    if (s->route_index)
        ns_route_index_stats(s->route_index, &st);
    *entries = st.entries;
    *slots = st.slots;
}
