/* test_read_snapshot.c - the loop's read snapshot (src/daemon/net/ioloop.h) on
 * a real LMDB store: the reads of a loop iteration share one snapshot, the
 * frames of one read always do, a write committed between two reads is in
 * the snapshot of the second (the store's read epoch moved), the check's
 * release resets it, and a map resize waits for the read in progress only:
 * the next read lets go of the kept snapshot. */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/err.h"
#include "ns/store.h"
#include "src/daemon/net/ioloop.h"

typedef struct {
    char *dir;
    ns_store_t *store;
    ns_loop_t loop; /* only the read snapshot's fields are used */
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = nstest_tmpdir("rsnap");
    ns_store_opts_t o = {f->dir, 1u << 20, 64u << 20, NS_SYNC_NOSYNC, false, true, 0, 0};
    char err[256];
    assert_int_equal(ns_store_open(&o, &f->store, err, sizeof err), NS_OK);
    f->loop.store = f->store;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    ns_read_release(&f->loop);
    ns_txn_abort(f->loop.rtxn);
    ns_store_close(f->store);
    nstest_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void put(fx_t *f, const char *key, const char *val)
{
    ns_txn_t *w = NULL;
    assert_int_equal(ns_txn_begin(f->store, true, &w), NS_OK);
    assert_int_equal(ns_kv_put(w, "t", key, val), NS_OK);
    assert_int_equal(ns_txn_commit(w), NS_OK);
}

/* NS_OK when key is in the loop's current snapshot */
static int get(fx_t *f, const char *key)
{
    ns_txn_t *t = NULL;
    ns_slice_t v;
    assert_int_equal(ns_read_begin(&f->loop, &t), NS_OK);
    int rc = ns_kv_get(t, "t", key, &v);
    ns_read_end(&f->loop);
    return rc;
}

static void test_kept_between_reads(void **state)
{
    fx_t *f = *state;
    put(f, "a", "1");
    ns_txn_t *t1 = NULL, *t2 = NULL;
    assert_int_equal(ns_read_begin(&f->loop, &t1), NS_OK);
    ns_read_end_keep(&f->loop);
    assert_true(f->loop.rtxn_live); /* nothing was written: kept */
    uint64_t epoch = f->loop.rtxn_epoch;
    assert_int_equal(ns_read_begin(&f->loop, &t2), NS_OK);
    assert_ptr_equal(t1, t2);
    assert_true(f->loop.rtxn_epoch == epoch); /* the same snapshot, not renewed */
    ns_read_end_keep(&f->loop);
    ns_read_release(&f->loop); /* the loop's check */
    assert_false(f->loop.rtxn_live);
}

static void test_write_between_reads(void **state)
{
    fx_t *f = *state;
    ns_txn_t *t = NULL;
    ns_slice_t v;
    assert_int_equal(ns_read_begin(&f->loop, &t), NS_OK);
    assert_int_equal(ns_kv_get(t, "t", "b", &v), NS_ENOTFOUND);
    ns_read_end_keep(&f->loop);
    put(f, "b", "2"); /* committed (and answered) between two reads */
    assert_int_equal(get(f, "b"), NS_OK);

    /* committed during a read: the snapshot goes at its end, not later */
    assert_int_equal(ns_read_begin(&f->loop, &t), NS_OK);
    put(f, "c", "3");
    assert_int_equal(ns_kv_get(t, "t", "c", &v), NS_ENOTFOUND); /* one snapshot per read */
    ns_txn_t *nested = NULL;
    assert_int_equal(ns_read_begin(&f->loop, &nested), NS_OK); /* a frame of the same read */
    assert_ptr_equal(nested, t);
    assert_int_equal(ns_kv_get(nested, "t", "c", &v), NS_ENOTFOUND);
    ns_read_end_keep(&f->loop);
    assert_true(f->loop.rtxn_live); /* still in use by the outer one */
    ns_read_end_keep(&f->loop);
    assert_false(f->loop.rtxn_live); /* the epoch moved: let go at once */
    assert_int_equal(get(f, "c"), NS_OK);
}

typedef struct {
    ns_store_t *store;
    int rc;
} grow_t;

static void *grow_main(void *arg)
{
    grow_t *g = arg;
    g->rc = ns_store_grow(g->store);
    return NULL;
}

/* A resize makes the epoch odd before it waits for the readers: a kept
 * snapshot is let go at the next read, and that read's own snapshot at its
 * end unless it was renewed after the resize, so the resize finishes with
 * no loop check (no ns_read_release) in between. */
static void test_resize_waits_for_one_read(void **state)
{
    fx_t *f = *state;
    size_t before = 0, after = 0, used;
    ns_store_map_usage(f->store, &before, &used);
    const ns_store_epoch_t *epoch = ns_store_read_epoch(f->store);
    ns_txn_t *t = NULL;
    assert_int_equal(ns_read_begin(&f->loop, &t), NS_OK);
    ns_read_end_keep(&f->loop);
    assert_true(f->loop.rtxn_live);
    uint64_t e0 = atomic_load(epoch);
    assert_true((e0 & 1) == 0);
    grow_t g = {f->store, -1};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, grow_main, &g), 0);
    /* the resize announces itself, then waits for the kept snapshot */
    for (long spins = 0; atomic_load(epoch) == e0; spins++) {
        assert_true(spins < 100000000L);
        sched_yield();
    }
    assert_int_equal(ns_read_begin(&f->loop, &t), NS_OK); /* lets go; renews */
    ns_read_end_keep(&f->loop); /* kept only if renewed after the resize */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    int jrc = pthread_timedjoin_np(th, NULL, &deadline);
    if (jrc != 0) { /* the resize waits for the loop's check: let it finish */
        ns_read_release(&f->loop);
        pthread_join(th, NULL);
    }
    assert_int_equal(jrc, 0);
    assert_int_equal(g.rc, NS_OK);
    ns_store_map_usage(f->store, &after, &used);
    assert_true(after > before);
    assert_true(atomic_load(epoch) == e0 + 2); /* even again: snapshots are kept */
    put(f, "d", "4");                          /* the grown map is used */
    assert_int_equal(get(f, "d"), NS_OK);
    assert_int_equal(ns_read_begin(&f->loop, &t), NS_OK);
    ns_read_end_keep(&f->loop);
    assert_true(f->loop.rtxn_live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kept_between_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_between_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resize_waits_for_one_read, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
