/* test_route_index.c - the routes table's hash index (store/route_index.h)
 * on a real LMDB store, against mdb_get in the same snapshot: after every
 * commit of a seeded run of puts, rewrites (values that grow onto overflow
 * pages and shrink back) and deletes, or after runs of several commits
 * (the writer's bursts), over names of several shapes (long
 * shared prefixes, 1 to 200 bytes), the index answers for the new snapshot,
 * finds every stored topic at the very bytes mdb_get gives, finds no topic
 * that is not stored, holds one entry per topic, and got there by its diff
 * (not a rebuild) for most commits. A snapshot older than the index's is
 * never answered from it; a store opened with routes is indexed by a
 * refresh; a map resize lets the held snapshot go (a rebuild follows only
 * if something was committed); a table that fills up is rebuilt bigger and stays right through
 * churn that leaves tombstones; and a reader
 * thread looking up while commits run always gets mdb_get's answer. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/err.h"
#include "ns/store.h"
#include "store/internal.h"
#include "store/route_index.h"

#define NAMES 3000

typedef struct {
    char *dir;
    ns_store_t *store;
    char (*name)[256];
    bool *present;
} fx_t;

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* Name i: one of five shapes, some sharing long prefixes. */
static void make_name(char *out, size_t i)
{
    static const char long_prefix[] = "rmq_sys_a_rather_long_shared_prefix_for_many_topics_"
                                      "that_outlasts_any_window_of_eight_bytes_";
    switch (i % 5) {
    case 0:
        sprintf(out, "BenchTopic-%07zu", i);
        break;
    case 1:
        sprintf(out, "%%RETRY%%please_rename_unique_group_name_%zu", i);
        break;
    case 2:
        sprintf(out, "%s%zu", long_prefix, i);
        break;
    case 3:
        if (i < 450) /* 90 names of one byte */
            sprintf(out, "%c", (int)(' ' + i / 5));
        else
            sprintf(out, "T%zx", i);
        break;
    default:
        memset(out, 'x' + (int)(i % 3), 120 + i % 80);
        sprintf(out + 120 + i % 80, "%zu", i);
    }
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = nstest_tmpdir("rindex");
    ns_store_opts_t o = {f->dir, 128u << 20, 256u << 20, NS_SYNC_NOSYNC, false, true, 0, 0};
    char err[256];
    assert_int_equal(ns_store_open(&o, &f->store, err, sizeof err), NS_OK);
    f->name = calloc(NAMES, sizeof *f->name);
    f->present = calloc(NAMES, sizeof *f->present);
    assert_true(f->name && f->present);
    for (size_t i = 0; i < NAMES; i++)
        make_name(f->name[i], i);
    rng_state = 0x5eed;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    ns_store_close(f->store);
    nstest_rmtree(f->dir);
    free(f->dir);
    free(f->name);
    free(f->present);
    free(f);
    return 0;
}

static void start_index(fx_t *f)
{
    assert_int_equal(ns_store_route_index_start(f->store), NS_OK);
    ns_store_route_index_refresh(f->store);
}

static void put(ns_txn_t *w, const char *topic, size_t len)
{
    static uint8_t body[6000];
    memset(body, (int)(len & 0x7f) + 1, len);
    ns_buf_t std = {body, len, len};
    assert_int_equal(ns_route_put(w, topic, &std, 0, NULL, 0), NS_OK);
}

/* One commit of n random changes to the model's topics. */
static void commit_changes(fx_t *f, int n)
{
    ns_txn_t *w;
    assert_int_equal(ns_txn_begin(f->store, true, &w), NS_OK);
    for (int j = 0; j < n; j++) {
        size_t i = rnd() % NAMES;
        uint32_t r = rnd() % 10;
        if (f->present[i] && r < 3) {
            assert_int_equal(ns_route_del(w, f->name[i]), NS_OK);
            f->present[i] = false;
        } else {
            /* mostly a few hundred bytes; now and then on overflow pages */
            put(w, f->name[i], r == 9 ? 3000 + rnd() % 3000 : 20 + rnd() % 600);
            f->present[i] = true;
        }
    }
    assert_int_equal(ns_txn_commit(w), NS_OK);
}

/* commit_changes, then the index brought along. */
static void commit_refresh(fx_t *f, int n)
{
    commit_changes(f, n);
    ns_store_route_index_refresh(f->store);
}

/* Every name, looked up through the index in a new snapshot, against
 * mdb_get there. Returns the topics found. */
static size_t check_all(fx_t *f)
{
    ns_txn_t *r;
    ns_tree_t t;
    MDB_dbi dbi = f->store->dbi[NS_DB_ROUTES];
    assert_int_equal(ns_txn_begin(f->store, false, &r), NS_OK);
    uint64_t id = (uint64_t)mdb_txn_id(r->txn);
    assert_int_equal(ns_route_index_version(f->store->route_index), id);
    assert_int_equal(ns_tree_open(f->store->env, r->txn, "routes", &t), NS_OK);
    size_t found = 0;
    for (size_t i = 0; i < NAMES; i++) {
        MDB_val k = {strlen(f->name[i]), f->name[i]}, v;
        const void *val;
        size_t vlen;
        int want = mdb_get(r->txn, dbi, &k, &v);
        int rc =
            ns_route_index_get(f->store->route_index, &t, id, k.mv_data, k.mv_size, &val, &vlen);
        if (want == 0) {
            if (rc != NS_OK)
                fail_msg("'%s' stored but not found by the index (%d)", f->name[i], rc);
            assert_ptr_equal(val, v.mv_data);
            assert_int_equal(vlen, v.mv_size);
            found++;
        } else {
            assert_int_equal(want, MDB_NOTFOUND);
            if (rc != NS_EFALLBACK)
                fail_msg("'%s' not stored but the index answers", f->name[i]);
        }
        /* an older snapshot's id is never answered */
        assert_int_equal(ns_route_index_get(f->store->route_index, &t, id - 1, k.mv_data, k.mv_size,
                                            &val, &vlen),
                         NS_EFALLBACK);
    }
    ns_txn_abort(r);
    size_t entries, slots;
    ns_store_route_index_size(f->store, &entries, &slots);
    assert_int_equal(entries, found);
    return found;
}

/* 160 commits, the index refreshed after every one (every) or after a run
 * of 1 to 5 of them (the writer's bursts). */
static void follow_commits(fx_t *f, bool every)
{
    start_index(f);
    size_t most = 0;
    for (int c = 0; c < 160; c++) {
        /* small commits, now and then a big one that splits many pages */
        commit_changes(f, c % 16 == 0 ? 1500 : 1 + (int)(rnd() % 40));
        if (!every && rnd() % 3 != 0)
            continue;
        ns_store_route_index_refresh(f->store);
        size_t found = check_all(f);
        most = found > most ? found : most;
    }
    ns_route_index_stats_t st;
    ns_route_index_stats(f->store->route_index, &st);
    print_message("   %zu topics at most, %llu diffs, %llu rebuilds, %zu slots\n", most,
                  (unsigned long long)st.diffs, (unsigned long long)st.rebuilds, st.slots);
    assert_true(most > 1000);
    /* the first build and the table's growths rebuild */
    assert_true(st.diffs >= (every ? 140u : 30u));
}

static void test_follows_every_commit(void **state)
{
    follow_commits(*state, true);
}

static void test_follows_runs_of_commits(void **state)
{
    follow_commits(*state, false);
}

static void test_map_resize_then_rebuild(void **state)
{
    fx_t *f = *state;
    ns_route_index_stats_t a, b, c;
    start_index(f);
    commit_refresh(f, 1000);
    check_all(f);
    ns_route_index_stats(f->store->route_index, &a);
    ns_store_route_index_let_go(f->store);
    ns_store_route_index_refresh(f->store); /* nothing committed: held again */
    check_all(f);
    ns_route_index_stats(f->store->route_index, &b);
    assert_int_equal(b.rebuilds, a.rebuilds);
    assert_int_equal(b.diffs, a.diffs);
    commit_changes(f, 300);
    assert_int_equal(ns_store_grow(f->store), NS_OK); /* lets the snapshot go first */
    ns_store_route_index_refresh(f->store);           /* committed meanwhile: rebuilt */
    check_all(f);
    ns_route_index_stats(f->store->route_index, &c);
    assert_int_equal(c.rebuilds, b.rebuilds + 1);
    assert_int_equal(c.diffs, b.diffs);
}

static void test_refresh_indexes_an_opened_store(void **state)
{
    fx_t *f = *state;
    for (int c = 0; c < 5; c++)
        commit_changes(f, 400); /* no index yet */
    assert_int_equal(ns_store_route_index_start(f->store), NS_OK);
    commit_changes(f, 10); /* started, not refreshed: nothing built */
    assert_int_equal(ns_route_index_version(f->store->route_index), 0);
    ns_store_route_index_refresh(f->store);
    assert_true(check_all(f) > 500);
    ns_store_route_index_refresh(f->store); /* nothing new: nothing done */
    ns_route_index_stats_t st;
    ns_route_index_stats(f->store->route_index, &st);
    assert_int_equal(st.rebuilds, 1);
}

static void test_growth_and_churn_stay_right(void **state)
{
    fx_t *f = *state;
    start_index(f);
    /* from a table of 1,024 slots, grown by rebuilds as topics come */
    for (size_t i = 0; i < NAMES; i += 100) {
        ns_txn_t *w;
        assert_int_equal(ns_txn_begin(f->store, true, &w), NS_OK);
        for (size_t j = i; j < i + 100 && j < NAMES; j++) {
            put(w, f->name[j], 20 + rnd() % 300);
            f->present[j] = true;
        }
        assert_int_equal(ns_txn_commit(w), NS_OK);
        ns_store_route_index_refresh(f->store);
        check_all(f);
    }
    ns_route_index_stats_t before, after;
    ns_route_index_stats(f->store->route_index, &before);
    assert_true(before.rebuilds >= 3);
    assert_true(before.slots >= 4096);
    /* a sixth of the names go or come back in each commit: tombstones, and
     * new names that land on them or past them */
    for (int c = 0; c < 24; c++) {
        ns_txn_t *w;
        assert_int_equal(ns_txn_begin(f->store, true, &w), NS_OK);
        for (size_t i = (size_t)c % 6; i < NAMES; i += 6) {
            if (f->present[i])
                assert_int_equal(ns_route_del(w, f->name[i]), NS_OK);
            else
                put(w, f->name[i], 20 + rnd() % 300);
            f->present[i] = !f->present[i];
        }
        assert_int_equal(ns_txn_commit(w), NS_OK);
        ns_store_route_index_refresh(f->store);
        check_all(f);
    }
    ns_route_index_stats(f->store->route_index, &after);
    print_message("   %llu diffs, %llu rebuilds; %zu entries, %zu tombstones in %zu slots\n",
                  (unsigned long long)(after.diffs - before.diffs),
                  (unsigned long long)(after.rebuilds - before.rebuilds), after.entries,
                  after.tombs, after.slots);
    assert_true(after.diffs > before.diffs);
    assert_true((after.entries + after.tombs) * 4 <= after.slots * 3);
}

typedef struct {
    fx_t *f;
    atomic_bool stop;
    long lookups, answered;
} reader_t;

/* A loop's reads: renew, look every tenth name up through the store's own
 * path and through the index, compare with mdb_get, reset. */
static void *reader_main(void *arg)
{
    reader_t *rd = arg;
    ns_txn_t *r = NULL;
    MDB_dbi dbi = rd->f->store->dbi[NS_DB_ROUTES];
    while (!atomic_load(&rd->stop)) {
        if (ns_txn_read_renew(rd->f->store, &r) != NS_OK)
            abort();
        uint64_t id = (uint64_t)mdb_txn_id(r->txn);
        ns_tree_t t;
        if (ns_tree_open(rd->f->store->env, r->txn, "routes", &t) == NS_OK)
            for (size_t i = rd->lookups % 10; i < NAMES; i += 10) {
                MDB_val k = {strlen(rd->f->name[i]), rd->f->name[i]}, v;
                const void *val;
                size_t vlen;
                int want = mdb_get(r->txn, dbi, &k, &v);
                int rc = ns_route_index_get(rd->f->store->route_index, &t, id, k.mv_data, k.mv_size,
                                            &val, &vlen);
                rd->lookups++;
                if (rc == NS_OK) {
                    rd->answered++;
                    if (want != 0 || val != v.mv_data || vlen != v.mv_size)
                        abort(); /* an answer from another snapshot */
                }
            }
        ns_txn_read_reset(r);
    }
    ns_txn_abort(r);
    return NULL;
}

static void test_readers_during_commits(void **state)
{
    fx_t *f = *state;
    start_index(f);
    commit_refresh(f, 2000);
    reader_t rd = {.f = f};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, reader_main, &rd), 0);
    for (int c = 0; c < 150; c++)
        commit_refresh(f, 1 + (int)(rnd() % 60));
    atomic_store(&rd.stop, true);
    pthread_join(th, NULL);
    print_message("   %ld lookups, %ld answered by the index\n", rd.lookups, rd.answered);
    assert_true(rd.lookups > 0);
    check_all(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_follows_every_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_follows_runs_of_commits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_resize_then_rebuild, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refresh_indexes_an_opened_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_growth_and_churn_stay_right, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readers_during_commits, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
