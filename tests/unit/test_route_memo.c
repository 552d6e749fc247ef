/* test_route_memo.c - the route memo of a reusable read transaction
 * (store/route_memo.h) on a real LMDB store: a route looked up again in the
 * same snapshot comes from the memo and is the same bytes; a write
 * committed between two renews, or a map resize, makes the memo forget; a
 * renew with no write between keeps it; names that share a slot, names too
 * long to keep, and a memo switched off for missing all still give the
 * store's answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/err.h"
#include "ns/store.h"
#include "store/internal.h"
#include "store/route_memo.h"

typedef struct {
    char *dir;
    ns_store_t *store;
    ns_txn_t *rtxn; /* the reusable read transaction, as a loop keeps it */
} fx_t;

static int open_fx(void **state, size_t slots)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = nstest_tmpdir("rmemo");
    ns_store_opts_t o = {f->dir, 1u << 20, 64u << 20, NS_SYNC_NOSYNC, false, true, 0, slots};
    char err[256];
    assert_int_equal(ns_store_open(&o, &f->store, err, sizeof err), NS_OK);
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return open_fx(state, 64);
}

static int setup_one_slot(void **state)
{
    return open_fx(state, 1);
}

static int teardown(void **state)
{
    fx_t *f = *state;
    ns_txn_abort(f->rtxn);
    ns_store_close(f->store);
    nstest_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* Writes topic's route: its standard form is "{<topic>:<version>}". */
static void put_route(fx_t *f, const char *topic, int version)
{
    char body[256];
    snprintf(body, sizeof body, "{%s:%d}", topic, version);
    ns_buf_t std = NS_BUF_INIT;
    assert_int_equal(ns_buf_append_str(&std, body), NS_OK);
    ns_txn_t *w = NULL;
    assert_int_equal(ns_txn_begin(f->store, true, &w), NS_OK);
    assert_int_equal(ns_route_put(w, topic, &std, 1, NULL, 0), NS_OK);
    assert_int_equal(ns_txn_commit(w), NS_OK);
    ns_buf_free(&std);
}

static void renew(fx_t *f)
{
    if (f->rtxn)
        ns_txn_read_reset(f->rtxn);
    assert_int_equal(ns_txn_read_renew(f->store, &f->rtxn), NS_OK);
}

/* The route the snapshot gives for topic must be version's. */
static const uint8_t *expect_route(fx_t *f, const char *topic, int version)
{
    char want[256];
    snprintf(want, sizeof want, "{%s:%d}", topic, version);
    ns_slice_t v;
    size_t ins = 0;
    bool derive = false;
    assert_int_equal(ns_route_get(f->rtxn, topic, true, &v, &ins, &derive), NS_OK);
    assert_int_equal(v.len, strlen(want));
    assert_memory_equal(v.ptr, want, v.len);
    return v.ptr;
}

static void test_same_snapshot_hits(void **state)
{
    fx_t *f = *state;
    put_route(f, "TopicA", 1);
    renew(f);
    assert_non_null(f->rtxn->memo);
    const uint8_t *first = expect_route(f, "TopicA", 1);
    uint32_t hits = f->rtxn->memo->hits;
    const uint8_t *again = expect_route(f, "TopicA", 1);
    assert_int_equal(f->rtxn->memo->hits, hits + 1);
    assert_ptr_equal(first, again); /* the same bytes in the map */
    /* a topic not in the store is not found, and not remembered */
    ns_slice_t v;
    size_t ins;
    bool derive;
    assert_int_equal(ns_route_get(f->rtxn, "Missing", true, &v, &ins, &derive), NS_ENOTFOUND);
    assert_int_equal(ns_route_get(f->rtxn, "Missing", true, &v, &ins, &derive), NS_ENOTFOUND);
}

static void test_kept_across_renews_without_writes(void **state)
{
    fx_t *f = *state;
    put_route(f, "TopicA", 1);
    renew(f);
    expect_route(f, "TopicA", 1);
    renew(f); /* no write between: the same snapshot */
    uint32_t hits = f->rtxn->memo->hits;
    expect_route(f, "TopicA", 1);
    assert_int_equal(f->rtxn->memo->hits, hits + 1);
}

static void test_write_between_renews_forgets(void **state)
{
    fx_t *f = *state;
    put_route(f, "TopicA", 1);
    put_route(f, "TopicB", 1);
    renew(f);
    expect_route(f, "TopicA", 1);
    expect_route(f, "TopicB", 1);
    put_route(f, "TopicA", 2); /* while the snapshot is reset, as a loop's is */
    renew(f);
    uint32_t hits = f->rtxn->memo->hits;
    expect_route(f, "TopicA", 2);
    expect_route(f, "TopicB", 1); /* unchanged, but looked up anew */
    assert_int_equal(f->rtxn->memo->hits, hits);
    /* a write while the snapshot is held is not seen until the next renew */
    put_route(f, "TopicA", 3);
    expect_route(f, "TopicA", 2);
    renew(f);
    expect_route(f, "TopicA", 3);
}

static void test_map_resize_forgets(void **state)
{
    fx_t *f = *state;
    put_route(f, "TopicA", 1);
    renew(f);
    expect_route(f, "TopicA", 1);
    ns_txn_read_reset(f->rtxn);
    uint32_t gen = f->rtxn->memo->gen;
    assert_int_equal(ns_store_grow(f->store), NS_OK); /* no write: the same txn id */
    assert_int_equal(ns_txn_read_renew(f->store, &f->rtxn), NS_OK);
    assert_int_not_equal(f->rtxn->memo->gen, gen); /* the old map may be gone */
    expect_route(f, "TopicA", 1);                  /* from the map where it lies now */
}

static void test_long_names_not_kept(void **state)
{
    fx_t *f = *state;
    char longname[NS_ROUTE_MEMO_KEY_MAX + 10];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    put_route(f, longname, 1);
    renew(f);
    uint32_t hits = f->rtxn->memo->hits;
    expect_route(f, longname, 1);
    expect_route(f, longname, 1);
    assert_int_equal(f->rtxn->memo->hits, hits);
}

/* One slot: every other name evicts the last; all answers stay right, and
 * a memo that only misses switches itself off for a while. */
static void test_shared_slot_and_switch_off(void **state)
{
    fx_t *f = *state;
    put_route(f, "T1", 1);
    put_route(f, "T2", 1);
    put_route(f, "T3", 1);
    renew(f);
    for (unsigned i = 0; i < NS_ROUTE_MEMO_WINDOW + 10; i++)
        expect_route(f, i % 2 ? "T1" : "T2", 1);
    assert_true(f->rtxn->memo->skip > 0);
    expect_route(f, "T3", 1); /* bypassed: straight from the tree */
    assert_true(f->rtxn->memo->skip > 0);
    /* and it comes back after the skip */
    uint32_t left = f->rtxn->memo->skip;
    for (uint32_t i = 0; i < left; i++)
        expect_route(f, "T3", 1);
    assert_int_equal(f->rtxn->memo->skip, 0);
    expect_route(f, "T3", 1);
    uint32_t hits = f->rtxn->memo->hits;
    expect_route(f, "T3", 1);
    assert_int_equal(f->rtxn->memo->hits, hits + 1);
}

static void test_no_memo_when_off(void **state)
{
    fx_t *f = *state;
    ns_store_close(f->store);
    ns_store_opts_t o = {f->dir, 1u << 20, 64u << 20, NS_SYNC_NOSYNC, false, true, 0, 0};
    char err[256];
    assert_int_equal(ns_store_open(&o, &f->store, err, sizeof err), NS_OK);
    put_route(f, "TopicA", 1);
    renew(f);
    assert_null(f->rtxn->memo);
    expect_route(f, "TopicA", 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_snapshot_hits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kept_across_renews_without_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_between_renews_forgets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_resize_forgets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_names_not_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_slot_and_switch_off, setup_one_slot, teardown),
        cmocka_unit_test_setup_teardown(test_no_memo_when_off, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
