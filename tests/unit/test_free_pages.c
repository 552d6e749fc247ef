/* test_free_pages.c - ns_store_release_free_pages (store/free_pages.c) on a
 * real store synced as namesrvd syncs it: after transactions that rewrite a
 * KV namespace, every page LMDB lists free (but those of the newest
 * transaction, unless asked) is dropped from the page cache (mincore on the
 * map: those whose whole folio is free) and no other page is, every value
 * reads back the same, a list is dropped once, and the dropped pages that
 * later transactions write again hold those writes after a reopen. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/err.h"
#include "ns/store.h"
#include "store/internal.h"
#include "store/tree_walk.h"

#define KEYS 3000
#define TMPFS_MAGIC_ 0x01021994 /* linux/magic.h: the page cache is the file there */

typedef struct {
    char *dir;
    ns_store_t *s;
} fx_t;

static int open_store(fx_t *f)
{
    char err[512];
    ns_store_opts_t o = {f->dir, 0, 0, NS_SYNC_FULL, false, true, 0, 0};
    int rc = ns_store_open(&o, &f->s, err, sizeof err);
    if (rc != NS_OK)
        print_error("ns_store_open(%s): %s (%s)\n", f->dir, ns_errname(rc), err);
    return rc;
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = nstest_tmpdir("freepages");
    assert_int_equal(open_store(f), NS_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    ns_store_close(f->s);
    nstest_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* Value of key i in round r: 300 bytes, different each round. */
static void value_of(char *v, size_t cap, int i, int r)
{
    int n = snprintf(v, cap, "round %d key %d ", r, i);
    memset(v + n, 'a' + (i + r) % 26, cap - 1 - (size_t)n);
    v[cap - 1] = '\0';
}

/* Rewrites every step-th key (round r): in one transaction, or (each) a
 * transaction per key, whose pages LMDB takes from the free ones two
 * transactions later, so that live and free pages alternate. */
static void rewrite(fx_t *f, int r, int step, bool each)
{
    ns_txn_t *t = NULL;
    char k[32], v[301];
    for (int i = 0; i < KEYS; i += step) {
        if (t == NULL)
            assert_int_equal(ns_txn_begin(f->s, true, &t), NS_OK);
        snprintf(k, sizeof k, "key-%05d", i);
        value_of(v, sizeof v, i, r);
        assert_int_equal(ns_kv_put(t, "ns", k, v), NS_OK);
        if (each) {
            assert_int_equal(ns_txn_commit(t), NS_OK);
            t = NULL;
        }
    }
    if (t)
        assert_int_equal(ns_txn_commit(t), NS_OK);
}

/* Every key reads back as round r wrote it, every step-th as round rs. */
static void check_values(fx_t *f, int r, int rs, int step)
{
    ns_txn_t *t = NULL;
    char k[32], v[301];
    assert_int_equal(ns_txn_begin(f->s, false, &t), NS_OK);
    for (int i = 0; i < KEYS; i++) {
        ns_slice_t got;
        snprintf(k, sizeof k, "key-%05d", i);
        value_of(v, sizeof v, i, i % step == 0 ? rs : r);
        assert_int_equal(ns_kv_get(t, "ns", k, &got), NS_OK);
        assert_int_equal(got.len, strlen(v));
        assert_memory_equal(got.ptr, v, got.len);
    }
    ns_txn_abort(t);
}

typedef struct {
    size_t older, older_cached; /* pages of lists before the newest */
    size_t newest, newest_cached;
    size_t live_cached; /* of the KV table's pages read just now */
    size_t all_cached;  /* of every page in the file */
} residency_t;

static bool cached(const ns_tree_t *m, size_t pg)
{
    unsigned char in = 0;
    assert_int_equal(mincore((void *)(m->map + pg * m->psize), m->psize, &in), 0);
    return in & 1;
}

/* Where the free pages are: in the page cache or not. */
static residency_t residency(fx_t *f)
{
    residency_t r = {0};
    ns_txn_t *t = NULL;
    ns_tree_t m;
    MDB_cursor *c = NULL;
    MDB_val k, v;
    assert_int_equal(ns_txn_begin(f->s, false, &t), NS_OK);
    assert_int_equal(ns_tree_open(f->s->env, t->txn, "meta", &m), NS_OK);
    size_t newest = (size_t)mdb_txn_id(t->txn);
    assert_int_equal(mdb_cursor_open(t->txn, 0, &c), 0);
    while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) {
        size_t id;
        const size_t *ids = v.mv_data;
        memcpy(&id, k.mv_data, sizeof id);
        for (size_t i = 1; i <= ids[0]; i++) {
            if (ids[i] >= m.pages)
                continue; /* never written */
            bool in = cached(&m, ids[i]);
            if (id == newest) {
                r.newest++;
                r.newest_cached += in;
            } else {
                r.older++;
                r.older_cached += in;
            }
        }
    }
    mdb_cursor_close(c);
    for (size_t pg = 0; pg < m.pages; pg++)
        r.all_cached += cached(&m, pg);
    ns_tree_t kv;
    assert_int_equal(ns_tree_open(f->s->env, t->txn, "kv", &kv), NS_OK);
    r.live_cached = cached(&kv, kv.root);
    ns_txn_abort(t);
    return r;
}

static bool on_tmpfs(const char *dir)
{
    struct statfs sf;
    return statfs(dir, &sf) == 0 && (unsigned long)sf.f_type == TMPFS_MAGIC_;
}

static void test_free_pages_dropped(void **state)
{
    fx_t *f = *state;
    if (on_tmpfs(f->dir))
        skip(); /* tmpfs pages are the file: nothing can drop them */
    /* every key, then every 61st (a leaf holds ~12) a transaction each */
    rewrite(f, 0, 1, false);
    for (int r = 1; r < 4; r++)
        rewrite(f, r, 61, true);
    check_values(f, 0, 3, 61); /* every page of the table read: in the cache and mapped */
    residency_t before = residency(f);
    print_message("# before: %zu older free pages (%zu cached), %zu newest (%zu cached)\n",
                  before.older, before.older_cached, before.newest, before.newest_cached);
    assert_true(before.older >= 4);
    assert_true(before.older_cached > before.older / 2);

    uint64_t dropped = 0;
    assert_int_equal(ns_store_release_free_pages(f->s, false, &dropped), NS_OK);
    residency_t after = residency(f);
    print_message("# dropped %llu: %zu older free pages (%zu cached), %zu newest (%zu cached), all "
                  "cached %zu -> %zu\n",
                  (unsigned long long)dropped, after.older, after.older_cached, after.newest,
                  after.newest_cached, before.all_cached, after.all_cached);
    assert_int_equal(dropped, before.older);
    /* out of the cache (a page that shares a large folio with live ones
     * stays: the kernel drops whole folios), and no other page */
    assert_true(after.older_cached < before.older_cached);
    assert_int_equal(after.all_cached,
                     before.all_cached - (before.older_cached - after.older_cached));
    assert_int_equal(after.newest_cached, before.newest_cached); /* the snapshot before: kept */
    assert_true(after.live_cached);
    check_values(f, 0, 3, 61);

    /* each list once */
    assert_int_equal(ns_store_release_free_pages(f->s, false, &dropped), NS_OK);
    assert_int_equal(dropped, 0);
    /* the newest's too, when asked (the writer, idle) */
    assert_int_equal(ns_store_release_free_pages(f->s, true, &dropped), NS_OK);
    residency_t idle = residency(f);
    print_message("# newest too: dropped %llu, %zu newest (%zu cached)\n",
                  (unsigned long long)dropped, idle.newest, idle.newest_cached);
    assert_int_equal(dropped, before.newest);
    assert_true(idle.newest_cached < before.newest_cached);
    assert_int_equal(idle.all_cached,
                     after.all_cached - (before.newest_cached - idle.newest_cached));
    check_values(f, 0, 3, 61);

    /* LMDB writes the dropped pages again; the writes hold across a reopen */
    rewrite(f, 4, 7, false);
    rewrite(f, 4, 11, false);
    assert_int_equal(ns_store_release_free_pages(f->s, false, &dropped), NS_OK);
    assert_true(dropped > 0);
    rewrite(f, 5, 1, false);
    check_values(f, 5, 5, 1);
    ns_store_close(f->s);
    f->s = NULL;
    assert_int_equal(open_store(f), NS_OK);
    check_values(f, 5, 5, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_free_pages_dropped, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
