/* test_route_key.c - the routes table keyed by hash (store/route_key.h) on
 * a real LMDB store: topics whose hashes collide, the moves when the
 * topic holding a hash's 8-byte key goes, the migration of a v11 table,
 * and verify's report of an entry under the wrong key.
 *
 * ns_route_hash_mask narrows the hash to a few values so that most topics
 * collide; every lookup is made in a read transaction (the lookups' own
 * descent of the map, tree_walk.h) and in a write one (mdb_get), and every
 * entry's place is checked the way ns_store_verify checks it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_store.h"
#include "ns/err.h"
#include "ns/store.h"
#include "store/internal.h"
#include "store/route_key.h"

#define TOPICS 96

typedef struct {
    char *dir;
    ns_store_t *s;
    bool live[TOPICS];
} fx_t;

static ns_store_t *open_at(const char *dir, uint32_t target)
{
    ns_store_opts_t o = {dir, 0, 0, NS_SYNC_NOSYNC, false, true, target, 0};
    char err[256];
    ns_store_t *s = NULL;
    assert_int_equal(ns_store_open(&o, &s, err, sizeof err), NS_OK);
    return s;
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = nstest_tmpdir("route_key");
    ns_route_hash_mask = 0x3; /* four hashes among 96 topics */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    ns_store_close(f->s);
    ns_route_hash_mask = UINT64_MAX;
    nstest_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void topic_name(int i, char *out, size_t n)
{
    snprintf(out, n, "%s-%d", i % 2 ? "T" : "SomeLongerTopicName", i);
}

static void put_routes(fx_t *f, int from, int to, int step)
{
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(f->s, true, &t), NS_OK);
    for (int i = from; i < to; i += step) {
        char name[64];
        topic_name(i, name, sizeof name);
        ns_buf_t std = NS_BUF_INIT;
        assert_int_equal(ns_buf_printf(&std, "{\"route of\":\"%s\"}", name), NS_OK);
        assert_int_equal(ns_route_put(t, name, &std, 1, NULL, 0), NS_OK);
        ns_buf_free(&std);
        f->live[i] = true;
    }
    assert_int_equal(ns_txn_commit(t), NS_OK);
}

static void del_routes(fx_t *f, int from, int to, int step)
{
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(f->s, true, &t), NS_OK);
    for (int i = from; i < to; i += step) {
        char name[64];
        topic_name(i, name, sizeof name);
        assert_int_equal(ns_route_del(t, name), NS_OK);
        f->live[i] = false;
    }
    assert_int_equal(ns_txn_commit(t), NS_OK);
}

/* Every topic's lookup in a transaction of kind write answers what was
 * put, or not found. */
static void lookups(fx_t *f, bool write)
{
    ns_txn_t *t = NULL;
    size_t live = 0, count = 0;
    assert_int_equal(ns_txn_begin(f->s, write, &t), NS_OK);
    for (int i = 0; i < TOPICS; i++) {
        char name[64], want[96];
        ns_slice_t r;
        size_t ins;
        bool derive;
        topic_name(i, name, sizeof name);
        int rc = ns_route_get(t, name, true, &r, &ins, &derive);
        if (!f->live[i]) {
            assert_int_equal(rc, NS_ENOTFOUND);
            continue;
        }
        live++;
        assert_int_equal(rc, NS_OK);
        snprintf(want, sizeof want, "{\"route of\":\"%s\"}", name);
        assert_int_equal(r.len, strlen(want));
        assert_memory_equal(r.ptr, want, r.len);
    }
    assert_int_equal(ns_route_count(t, &count), NS_OK);
    assert_int_equal(count, live);
    if (write)
        assert_int_equal(ns_txn_commit(t), NS_OK);
    else
        ns_txn_abort(t);
}

/* Every stored entry is where route_key.h puts it (verify's check);
 * returns how many are under a long key. */
static size_t placed(fx_t *f)
{
    ns_txn_t *t = NULL;
    MDB_cursor *cur;
    MDB_val k, v;
    ns_buf_t name = NS_BUF_INIT;
    size_t longs = 0;
    assert_int_equal(ns_txn_begin(f->s, false, &t), NS_OK);
    assert_int_equal(mdb_cursor_open(t->txn, t->s->dbi[NS_DB_ROUTES], &cur), 0);
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        const char *why = "unset";
        assert_int_equal(
            ns_route_entry_topic(t, k.mv_data, k.mv_size, v.mv_data, v.mv_size, &name, &why),
            NS_OK);
        if (why)
            fail_msg("%s: %s", (const char *)name.data, why);
        assert_true(ns_route_walk_agrees(t, k.mv_data, k.mv_size, v.mv_data, v.mv_size));
        longs += k.mv_size > NS_ROUTE_HASH_BYTES;
    }
    mdb_cursor_close(cur);
    ns_txn_abort(t);
    ns_buf_free(&name);
    return longs;
}

static void checked(fx_t *f)
{
    lookups(f, false);
    lookups(f, true);
    placed(f);
}

/* Topics that share a hash: each found, each in its place, and the
 * ones under long keys moved up as the holders of the short ones go. */
static void test_collisions(void **state)
{
    fx_t *f = *state;
    f->s = open_at(f->dir, 0);
    put_routes(f, 0, TOPICS, 1);
    checked(f);
    assert_int_equal(placed(f), TOPICS - 4); /* four hashes: four short keys */
    put_routes(f, 0, TOPICS, 3);             /* rewritten in place, short and long */
    checked(f);
    del_routes(f, 0, TOPICS, 2); /* holders of short keys among them */
    checked(f);
    del_routes(f, 1, TOPICS, 4);
    checked(f);
    put_routes(f, 0, TOPICS, 5);
    checked(f);
    del_routes(f, 0, TOPICS, 1);
    checked(f);
    assert_int_equal(placed(f), 0);
}

/* A v11 store's routes (keyed by name) are rekeyed by the migration to
 * v12, colliding ones too. */
static void test_migration(void **state)
{
    fx_t *f = *state;
    f->s = open_at(f->dir, 11);
    assert_int_equal(ns_store_schema_version(f->s), 11);
    put_routes(f, 0, TOPICS, 1);
    del_routes(f, 0, TOPICS, 7);
    checked(f); /* keys are names: nothing to check of their place */
    ns_store_close(f->s);
    f->s = open_at(f->dir, 0);
    assert_true(ns_store_schema_version(f->s) >= 12);
    checked(f);
    assert_true(placed(f) > 0);
    del_routes(f, 0, TOPICS, 3);
    checked(f);
}

/* An entry under a key that is not its name's is reported by verify. */
static void test_misplaced_entry_reported(void **state)
{
    fx_t *f = *state;
    f->s = open_at(f->dir, 0);
    ns_route_hash_mask = UINT64_MAX;
    put_routes(f, 0, 2, 1);
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(f->s, true, &t), NS_OK);
    uint8_t key[NS_ROUTE_HASH_BYTES + 32], *route;
    char name[64];
    topic_name(0, name, sizeof name);
    size_t kn = ns_route_key(name, strlen(name), false, key);
    key[kn - 1] ^= 1; /* the hash of another name */
    MDB_val k = {kn, key}, v;
    assert_int_equal(mdb_get(t->txn, t->s->dbi[NS_DB_ROUTES], &k, &v), MDB_NOTFOUND);
    MDB_val put = {2 + strlen(name) + 12, NULL};
    assert_int_equal(mdb_put(t->txn, t->s->dbi[NS_DB_ROUTES], &k, &put, MDB_RESERVE), 0);
    uint16_t nl = (uint16_t)strlen(name);
    route = put.mv_data;
    memcpy(route, &nl, 2);
    memcpy(route + 2, name, nl);
    memset(route + 2 + nl, 0, 12);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    ns_buf_t report = NS_BUF_INIT;
    assert_int_equal(ns_txn_begin(f->s, false, &t), NS_OK);
    assert_true(ns_store_verify(t, &report) > 0);
    ns_txn_abort(t);
    assert_non_null(strstr((const char *)report.data, "is stored under a key that is not its "
                                                      "name's"));
    ns_buf_free(&report);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_collisions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_misplaced_entry_reported, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
