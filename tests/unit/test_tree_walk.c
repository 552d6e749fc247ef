/* test_tree_walk.c - the descent of an LMDB B-tree read from the map
 * (store/tree_walk.h) against mdb_get itself, on trees LMDB built: for every
 * key stored and for many that are not (each stored key's neighbours: one
 * byte shorter, one longer, its last byte one up and one down), the walk
 * gives the same answer and the very bytes mdb_get points to. Trees of one
 * leaf, of branches three and four levels deep, keys of 1 to 511 bytes with
 * every byte value and long shared prefixes, values inline and on overflow
 * pages, after deletes rebalanced the pages. Then the same tree copied out of
 * the map with damage in it: the walk declines or answers within the copy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lmdb.h>

#include "nstest.h"
#include "ns/err.h"
#include "store/lmdb_page.h"
#include "store/tree_walk.h"

typedef struct {
    char *dir;
    MDB_env *env;
    MDB_dbi dbi;
    uint8_t (*keys)[512];
    size_t *klen;
    size_t n;
} fx_t;

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = nstest_tmpdir("treewalk");
    assert_int_equal(mdb_env_create(&f->env), 0);
    assert_int_equal(mdb_env_set_maxdbs(f->env, 4), 0);
    assert_int_equal(mdb_env_set_mapsize(f->env, (size_t)256 << 20), 0);
    assert_int_equal(mdb_env_open(f->env, f->dir, MDB_NOSYNC, 0600), 0);
    f->keys = calloc(60000, sizeof *f->keys);
    f->klen = calloc(60000, sizeof *f->klen);
    assert_true(f->keys && f->klen);
    MDB_txn *txn;
    assert_int_equal(mdb_txn_begin(f->env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "routes", MDB_CREATE, &f->dbi), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    mdb_env_close(f->env);
    nstest_rmtree(f->dir);
    free(f->dir);
    free(f->keys);
    free(f->klen);
    free(f);
    return 0;
}

/* Puts key i (its bytes already in f->keys[i]) with a value of vlen bytes. */
static void put(fx_t *f, MDB_txn *txn, size_t i, size_t vlen)
{
    static uint8_t v[9000];
    memset(v, (int)(i & 0xff), vlen);
    MDB_val k = {f->klen[i], f->keys[i]}, d = {vlen, v};
    assert_int_equal(mdb_put(txn, f->dbi, &k, &d, 0), 0);
}

/* The routes tree of read transaction txn, as store/route.c reads it. */
static void tree_of(fx_t *f, MDB_txn *txn, ns_tree_t *t)
{
    assert_int_equal(ns_tree_open(f->env, txn, "routes", t), NS_OK);
}

/* The walk and mdb_get agree on key k: the same answer, the same bytes. */
static void same_answer(MDB_txn *txn, MDB_dbi dbi, const ns_tree_t *t, const uint8_t *k, size_t n)
{
    MDB_val key = {n, (void *)k}, v;
    const void *val = NULL;
    size_t vlen = 0;
    int want = mdb_get(txn, dbi, &key, &v);
    int got = ns_tree_get(t, k, n, &val, &vlen);
    if (want == MDB_NOTFOUND) {
        assert_int_equal(got, NS_ENOTFOUND);
        return;
    }
    assert_int_equal(want, 0);
    assert_int_equal(got, NS_OK);
    assert_ptr_equal(val, v.mv_data);
    assert_int_equal(vlen, v.mv_size);
}

/* Every stored key, each one's four neighbours and 2,000 random keys. */
static void check_all(fx_t *f, unsigned want_depth_at_least)
{
    MDB_txn *txn;
    ns_tree_t t;
    assert_int_equal(mdb_txn_begin(f->env, NULL, MDB_RDONLY, &txn), 0);
    tree_of(f, txn, &t);
    assert_true(t.depth >= want_depth_at_least);
    uint8_t k[513];
    for (size_t i = 0; i < f->n; i++) {
        size_t n = f->klen[i];
        memcpy(k, f->keys[i], n);
        same_answer(txn, f->dbi, &t, k, n);
        if (n > 1)
            same_answer(txn, f->dbi, &t, k, n - 1);
        if (n < 511) {
            k[n] = (uint8_t)rnd();
            same_answer(txn, f->dbi, &t, k, n + 1);
        }
        k[n - 1]++;
        same_answer(txn, f->dbi, &t, k, n);
        k[n - 1] -= 2;
        same_answer(txn, f->dbi, &t, k, n);
    }
    for (int i = 0; i < 2000; i++) {
        size_t n = 1 + rnd() % 40;
        for (size_t j = 0; j < n; j++)
            k[j] = j < 6 ? (uint8_t) "topic-"[j] : (uint8_t)rnd();
        same_answer(txn, f->dbi, &t, k, n);
    }
    mdb_txn_abort(txn);
}

/* Stores n keys made by make(i, key) -> length, values of vmin..vmax bytes. */
static void fill(fx_t *f, size_t n, size_t (*make)(size_t, uint8_t *), size_t vmin, size_t vmax)
{
    MDB_txn *txn;
    assert_int_equal(mdb_txn_begin(f->env, NULL, 0, &txn), 0);
    for (size_t i = 0; i < n; i++) {
        f->klen[f->n] = make(i, f->keys[f->n]);
        put(f, txn, f->n, vmin + rnd() % (vmax - vmin + 1));
        f->n++;
    }
    assert_int_equal(mdb_txn_commit(txn), 0);
}

static size_t bench_name(size_t i, uint8_t *k)
{
    return (size_t)sprintf((char *)k, "BenchTopic-%07zu", (i * 7919) % 50000);
}

static size_t long_name(size_t i, uint8_t *k)
{
    /* 190 bytes every name shares: ~18 keys a branch page, four levels */
    memset(k, 'x', 190);
    return 190 + bench_name(i, k + 190);
}

static size_t any_bytes(size_t i, uint8_t *k)
{
    (void)i;
    size_t n = 1 + rnd() % 511;
    for (size_t j = 0; j < n; j++)
        k[j] = (uint8_t)rnd();
    return n;
}

static size_t shared_prefix(size_t i, uint8_t *k)
{
    /* 0-40 bytes of one prefix, then a few bytes that differ: prefixes of
     * each other, bytes 0x00 and 0xff around the eight-byte word edges */
    size_t p = rnd() % 41, n = p + rnd() % 12;
    memset(k, 'a', p);
    for (size_t j = p; j < n; j++)
        k[j] = (uint8_t)((rnd() & 1) ? 0xff : rnd() % 3);
    if (n == 0)
        k[n++] = (uint8_t)i;
    return n;
}

static void test_empty_table(void **state)
{
    fx_t *f = *state;
    MDB_txn *txn;
    ns_tree_t t;
    assert_int_equal(mdb_txn_begin(f->env, NULL, MDB_RDONLY, &txn), 0);
    tree_of(f, txn, &t);
    const void *v;
    size_t n;
    assert_int_equal(ns_tree_get(&t, "x", 1, &v, &n), NS_ENOTFOUND);
    mdb_txn_abort(txn);
}

static void test_one_leaf(void **state)
{
    fx_t *f = *state;
    rng_state = 1;
    fill(f, 5, bench_name, 10, 300);
    check_all(f, 1);
}

static void test_names_three_and_four_levels(void **state)
{
    fx_t *f = *state;
    rng_state = 2;
    fill(f, 5000, bench_name, 250, 450); /* ~8 routes a leaf: three levels */
    check_all(f, 3);
    fill(f, 15000, long_name, 250, 450);
    check_all(f, 4);
}

static void test_any_bytes_and_overflow(void **state)
{
    fx_t *f = *state;
    rng_state = 3;
    fill(f, 3000, any_bytes, 0, 200);
    fill(f, 300, any_bytes, 2000, 9000); /* on overflow pages */
    check_all(f, 2);
}

static void test_shared_prefixes_after_deletes(void **state)
{
    fx_t *f = *state;
    rng_state = 4;
    fill(f, 20000, shared_prefix, 1, 600);
    MDB_txn *txn;
    assert_int_equal(mdb_txn_begin(f->env, NULL, 0, &txn), 0);
    size_t kept = 0;
    for (size_t i = 0; i < f->n; i++) {
        MDB_val k = {f->klen[i], f->keys[i]};
        if (rnd() % 3 == 0) { /* the key may be stored twice: one delete takes it */
            int rc = mdb_del(txn, f->dbi, &k, NULL);
            assert_true(rc == 0 || rc == MDB_NOTFOUND);
        } else {
            memmove(f->keys[kept], f->keys[i], f->klen[i]);
            f->klen[kept++] = f->klen[i];
        }
    }
    f->n = kept;
    assert_int_equal(mdb_txn_commit(txn), 0);
    check_all(f, 2);
}

/* A copy of the map with bytes of its pages changed: whatever the walk
 * answers lies inside the copy (ASan checks every read), else it declines
 * or finds nothing. */
static void test_damaged_copy(void **state)
{
    fx_t *f = *state;
    rng_state = 5;
    fill(f, 4000, bench_name, 100, 3000);
    MDB_txn *txn;
    ns_tree_t live, t;
    assert_int_equal(mdb_txn_begin(f->env, NULL, MDB_RDONLY, &txn), 0);
    tree_of(f, txn, &live);
    size_t bytes = (size_t)live.pages * live.psize;
    uint8_t *copy = malloc(bytes);
    assert_non_null(copy);
    for (int round = 0; round < 300; round++) {
        memcpy(copy, live.map, bytes);
        for (int j = 0; j < 1 + round % 8; j++) /* damage past the two meta pages */
            copy[2 * live.psize + rnd() % (bytes - 2 * live.psize)] = (uint8_t)rnd();
        t = live;
        t.map = copy;
        for (size_t i = 0; i < f->n; i += 7) {
            const void *v;
            size_t n;
            int rc = ns_tree_get(&t, f->keys[i], f->klen[i], &v, &n);
            assert_true(rc == NS_OK || rc == NS_ENOTFOUND || rc == NS_EFALLBACK);
            if (rc == NS_OK)
                assert_true((const uint8_t *)v >= copy && n <= bytes &&
                            (const uint8_t *)v - copy <= (ptrdiff_t)(bytes - n));
        }
    }
    free(copy);
    mdb_txn_abort(txn);
}

static void test_record_and_map_checks(void **state)
{
    (void)state;
    uint8_t rec[NS_LMDB_DB_RECORD] = {0};
    ns_tree_t t;
    rec[4] = 0x04; /* MDB_DUPSORT: not a table this walk follows */
    assert_int_equal(ns_tree_from_record(&t, rec, sizeof rec), NS_EFALLBACK);
    assert_int_equal(ns_tree_from_record(&t, rec, sizeof rec - 1), NS_EFALLBACK);
    rec[4] = 0;
    rec[6] = 0; /* depth 0 with a root */
    assert_int_equal(ns_tree_from_record(&t, rec, sizeof rec), NS_EFALLBACK);
    /* a "map" whose meta pages are not LMDB's */
    static uint8_t fake[4 * 4096] __attribute__((aligned(4096)));
    memset(fake, 0, sizeof fake);
    fake[3 * 4096] = 3;      /* page 3 says it is page 3 */
    fake[3 * 4096 + 10] = 2; /* P_LEAF */
    const uint8_t *map;
    assert_int_equal(ns_tree_map_from_value(fake + 3 * 4096 + 100, 4096, &map), NS_EFALLBACK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_empty_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_leaf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names_three_and_four_levels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_any_bytes_and_overflow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_prefixes_after_deletes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_copy, setup, teardown),
        cmocka_unit_test(test_record_and_map_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
