/* test_writer.c - the writer thread of src/daemon/core/writer.c on a real LMDB
 * store and a real libuv loop: group commit in submission order, an op that
 * fails is taken out of its batch without undoing the others, a full map
 * grows and at its limit fails the batch while reads go on, and stopping
 * applies what is still queued. A "gate" op holds the writer inside its
 * apply (semaphores, no sleeps) so that the ops behind it are queued as one
 * batch. */
#include <semaphore.h>
#include <pthread.h>
#include <setjmp.h>
#include <time.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/err.h"
#include "ns/store.h"
#include "src/daemon/core/writer.h"

typedef struct {
    ns_wop_t op;
    const char *key; /* written to kv "t"/key; NULL: nothing */
    size_t value_bytes;
    int fail_with;  /* returned after the write */
    sem_t *gate;    /* waited on in apply (first run only) */
    sem_t *entered; /* posted when apply starts waiting on gate */
    int applies, done_rc, done_order;
    bool done;
} test_op_t;

typedef struct {
    char *dir;
    ns_store_t *store;
    uv_loop_t loop;
    ns_writer_t *w;
    int done_seq;
    int commits, resets; /* hook calls */
} fx_t;

static fx_t *current;

static int op_apply(ns_wop_t *o, ns_txn_t *txn, void *hook_ctx)
{
    test_op_t *op = (test_op_t *)o;
    if (op->gate && op->applies == 0) {
        sem_post(op->entered);
        sem_wait(op->gate);
    }
    op->applies++;
    int rc = NS_OK;
    if (op->key) {
        char *val = malloc(op->value_bytes + 1);
        if (val == NULL)
            return NS_ENOMEM;
        memset(val, 'v', op->value_bytes);
        val[op->value_bytes] = 0;
        rc = ns_kv_put(txn, "t", op->key, val);
        free(val);
    }
    return rc != NS_OK ? rc : op->fail_with;
}

static void op_done(ns_wop_t *o)
{
    test_op_t *op = (test_op_t *)o;
    op->done = true;
    op->done_rc = o->rc;
    op->done_order = current->done_seq++;
}

static int hook_commit(void *ctx, ns_txn_t *txn)
{
    ((fx_t *)ctx)->commits++;
    return NS_OK;
}

static void hook_reset(void *ctx)
{
    ((fx_t *)ctx)->resets++;
}

static void open_fx(fx_t *f, size_t map_max, size_t batch_max_bytes)
{
    f->dir = nstest_tmpdir("writer");
    ns_store_opts_t o = {f->dir, 1u << 20, map_max, NS_SYNC_NOSYNC, false, true, 0, 0};
    char err[256];
    assert_int_equal(ns_store_open(&o, &f->store, err, sizeof err), NS_OK);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    ns_writer_hooks_t hooks = {f, hook_commit, hook_reset, NULL, NULL};
    assert_int_equal(ns_writer_start(f->store, &f->loop, 64, batch_max_bytes, &hooks, &f->w),
                     NS_OK);
    current = f;
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    open_fx(f, 64u << 20, 0);
    *state = f;
    return 0;
}

static int setup_cut(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    open_fx(f, 64u << 20, 64u << 10); /* writerBatchMaxBytes 64 KiB */
    *state = f;
    return 0;
}

static int setup_small(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    open_fx(f, 2u << 20, 0); /* the map may grow once, to 2 MiB */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    if (f->w)
        ns_writer_stop(f->w);
    uv_run(&f->loop, UV_RUN_DEFAULT); /* the writer's handle closes */
    assert_int_equal(uv_loop_close(&f->loop), 0);
    ns_store_close(f->store);
    nstest_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* Runs the loop until every op of ops[n] is done (10 s at most). */
static void wait_done(fx_t *f, test_op_t *ops, size_t n)
{
    int64_t until = nstest_mono_ms() + 10000;
    for (;;) {
        bool all = true;
        for (size_t i = 0; i < n; i++)
            all = all && ops[i].done;
        if (all)
            return;
        assert_true(nstest_mono_ms() < until);
        uv_run(&f->loop, UV_RUN_ONCE);
    }
}

static int kv_has(fx_t *f, const char *key)
{
    ns_txn_t *t = NULL;
    ns_slice_t v;
    assert_int_equal(ns_txn_begin(f->store, false, &t), NS_OK);
    int rc = ns_kv_get(t, "t", key, &v);
    ns_txn_abort(t);
    return rc;
}

static void init_op(test_op_t *op, const char *key)
{
    memset(op, 0, sizeof *op);
    op->op.apply = op_apply;
    op->op.done = op_done;
    op->key = key;
    op->value_bytes = 8;
}

/* Submits the gate op and waits until the writer is inside it. */
static void hold_writer(fx_t *f, test_op_t *gate_op, sem_t *gate, sem_t *entered)
{
    sem_init(gate, 0, 0);
    sem_init(entered, 0, 0);
    gate_op->gate = gate;
    gate_op->entered = entered;
    ns_writer_submit(f->w, &gate_op->op);
    sem_wait(entered);
}

static void test_one_batch_in_order(void **state)
{
    fx_t *f = *state;
    sem_t gate, entered;
    test_op_t ops[5];
    static const char *keys[] = {"gate", "a", "b", "c", "d"};
    for (int i = 0; i < 5; i++)
        init_op(&ops[i], keys[i]);
    hold_writer(f, &ops[0], &gate, &entered);
    for (int i = 1; i < 5; i++)
        ns_writer_submit(f->w, &ops[i].op);
    assert_int_equal(ns_writer_pending(f->w), 5);
    sem_post(&gate); /* the four behind the gate are one batch */
    wait_done(f, ops, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ops[i].done_rc, NS_OK);
        assert_int_equal(ops[i].done_order, i); /* replies in submission order */
        assert_int_equal(kv_has(f, keys[i]), NS_OK);
    }
    ns_writer_stats_t st;
    ns_writer_stats(f->w, &st);
    assert_int_equal(st.batches, 2);
    assert_int_equal(st.ops, 5);
    assert_int_equal(f->commits, 2); /* before_commit once per batch */
    assert_int_equal(ns_writer_pending(f->w), 0);
    assert_int_equal(ns_writer_done_count(f->w), 5);
    sem_destroy(&gate);
    sem_destroy(&entered);
}

/* writerBatchMaxBytes: four 40 KB writes queued behind the gate are two
 * batches, not one (the op that crosses 64 KiB ends its batch), replied in
 * submission order. */
static void test_batch_cut_at_max_bytes(void **state)
{
    fx_t *f = *state;
    sem_t gate, entered;
    test_op_t ops[5];
    static const char *keys[] = {"gate", "a", "b", "c", "d"};
    for (int i = 0; i < 5; i++) {
        init_op(&ops[i], keys[i]);
        ops[i].value_bytes = i ? 40000 : 8;
    }
    hold_writer(f, &ops[0], &gate, &entered);
    for (int i = 1; i < 5; i++)
        ns_writer_submit(f->w, &ops[i].op);
    sem_post(&gate);
    wait_done(f, ops, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ops[i].done_rc, NS_OK);
        assert_int_equal(ops[i].done_order, i);
        assert_int_equal(ops[i].applies, 1);
        assert_int_equal(kv_has(f, keys[i]), NS_OK);
    }
    ns_writer_stats_t st;
    ns_writer_stats(f->w, &st);
    assert_int_equal(st.batches, 3); /* gate; a b; c d */
    assert_int_equal(st.ops, 5);
    assert_int_equal(f->commits, 3);
    assert_int_equal(ns_writer_pending(f->w), 0);
    sem_destroy(&gate);
    sem_destroy(&entered);
}

static void test_failing_op_is_taken_out(void **state)
{
    fx_t *f = *state;
    sem_t gate, entered;
    test_op_t ops[4];
    static const char *keys[] = {"gate", "a", "bad", "c"};
    for (int i = 0; i < 4; i++)
        init_op(&ops[i], keys[i]);
    hold_writer(f, &ops[0], &gate, &entered);
    ops[2].fail_with = NS_EINVAL; /* after its own write */
    for (int i = 1; i < 4; i++)
        ns_writer_submit(f->w, &ops[i].op);
    sem_post(&gate);
    wait_done(f, ops, 4);
    assert_int_equal(ops[1].done_rc, NS_OK);
    assert_int_equal(ops[2].done_rc, NS_EINVAL);
    assert_int_equal(ops[3].done_rc, NS_OK);
    assert_int_equal(kv_has(f, "a"), NS_OK);
    assert_int_equal(kv_has(f, "bad"), NS_ENOTFOUND); /* its partial write never committed */
    assert_int_equal(kv_has(f, "c"), NS_OK);
    assert_true(ops[1].applies >= 2); /* the batch ran again without it */
    assert_int_equal(ops[2].applies, 1);
    sem_destroy(&gate);
    sem_destroy(&entered);
}

static void test_full_map_fails_the_batch_reads_go_on(void **state)
{
    fx_t *f = *state;
    test_op_t small, big[3];
    init_op(&small, "small");
    ns_writer_submit(f->w, &small.op);
    wait_done(f, &small, 1);
    assert_int_equal(small.done_rc, NS_OK);
    static const char *keys[] = {"big1", "big2", "big3"};
    for (int i = 0; i < 3; i++) {
        init_op(&big[i], keys[i]);
        big[i].value_bytes = 1u << 20; /* three MiB do not fit in two */
        ns_writer_submit(f->w, &big[i].op);
    }
    wait_done(f, big, 3);
    bool some_full = false;
    for (int i = 0; i < 3; i++)
        some_full = some_full || big[i].done_rc == NS_EMAPFULL;
    assert_true(some_full);
    ns_writer_stats_t st;
    ns_writer_stats(f->w, &st);
    assert_true(st.grows >= 1);
    assert_int_equal(kv_has(f, "small"), NS_OK); /* reads are still served */
}

/* Opens the gate once the stop has taken the queue: ns_writer_stop marks
 * every queued op NS_ESHUTDOWN (under the writer's lock) when it takes it. */
typedef struct {
    sem_t *gate;
    const ns_wop_t *last_queued;
} poster_t;

static void *post_when_taken(void *arg)
{
    poster_t *p = arg;
    int64_t end = nstest_mono_ms() + 10000;
    while (__atomic_load_n(&p->last_queued->rc, __ATOMIC_ACQUIRE) != NS_ESHUTDOWN &&
           nstest_mono_ms() < end)
        nstest_sleep_ms(1);
    sem_post(p->gate);
    return NULL;
}

/* A stop lets the batch in flight commit and answers what is still queued
 * NS_ESHUTDOWN without applying it: SIGTERM must not wait for a long queue. */
static void test_stop_fails_what_is_queued(void **state)
{
    fx_t *f = *state;
    sem_t gate, entered;
    test_op_t ops[3];
    pthread_t poster;
    static const char *keys[] = {"gate", "x", "y"};
    for (int i = 0; i < 3; i++)
        init_op(&ops[i], keys[i]);
    hold_writer(f, &ops[0], &gate, &entered);
    for (int i = 1; i < 3; i++)
        ns_writer_submit(f->w, &ops[i].op);
    /* the batch in flight ends only after the stop has taken the queue */
    poster_t p = {&gate, &ops[2].op};
    assert_int_equal(pthread_create(&poster, NULL, post_when_taken, &p), 0);
    ns_writer_stop(f->w); /* joins the thread and runs the done callbacks */
    f->w = NULL;
    pthread_join(poster, NULL);
    for (int i = 0; i < 3; i++)
        assert_true(ops[i].done);
    assert_int_equal(ops[0].done_rc, NS_OK);
    assert_int_equal(ops[1].done_rc, NS_ESHUTDOWN);
    assert_int_equal(ops[2].done_rc, NS_ESHUTDOWN);
    assert_int_equal(kv_has(f, "gate"), NS_OK);
    assert_int_equal(kv_has(f, "y"), NS_ENOTFOUND);
    sem_destroy(&gate);
    sem_destroy(&entered);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_batch_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_cut_at_max_bytes, setup_cut, teardown),
        cmocka_unit_test_setup_teardown(test_failing_op_is_taken_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_map_fails_the_batch_reads_go_on, setup_small,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stop_fails_what_is_queued, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
