/* test_admin_audit.c - the admin_audit table (store/admin_audit.c) on a real,
 * fresh store per test: append with dense sequence numbers, trimming to the
 * retention inside the appending transaction, iteration from a sequence,
 * an aborted transaction leaving no record, retention 0 writing nothing,
 * and ns_store_clear keeping the trail. */
#define _GNU_SOURCE
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

typedef nstest_store_fx_t fx_t;

static int setup(void **state)
{
    return nstest_store_fx_setup(state, "admin-audit", 0, 0);
}

static int teardown(void **state)
{
    return nstest_store_fx_teardown(state);
}

typedef struct {
    uint64_t seqs[64];
    char texts[64][32];
    size_t n;
} seen_t;

static int collect_cb(uint64_t seq, const char *json, size_t len, void *ctx)
{
    seen_t *s = ctx;
    assert_true(s->n < 64);
    assert_int_equal(strlen(json), len); /* NUL-terminated copy */
    s->seqs[s->n] = seq;
    snprintf(s->texts[s->n], sizeof s->texts[0], "%s", json);
    s->n++;
    return 0;
}

static void append(ns_store_t *st, int from, int to, int64_t retention)
{
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(st, true, &t), NS_OK);
    for (int i = from; i <= to; i++) {
        char rec[32];
        uint64_t seq = 0;
        snprintf(rec, sizeof rec, "{\"n\":%d}", i);
        assert_int_equal(ns_admin_audit_append(t, rec, strlen(rec), retention, &seq), NS_OK);
        assert_int_equal(seq, (uint64_t)i);
    }
    assert_int_equal(ns_txn_commit(t), NS_OK);
}

static seen_t read_all(ns_store_t *st, uint64_t from)
{
    seen_t s = {0};
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(st, false, &t), NS_OK);
    assert_int_equal(ns_admin_audit_iter(t, from, collect_cb, &s), NS_OK);
    ns_txn_abort(t);
    return s;
}

static void test_append_iter_trim(void **state)
{
    fx_t *fx = *state;
    append(fx->s, 1, 5, 100);
    seen_t s = read_all(fx->s, 0);
    assert_int_equal(s.n, 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(s.seqs[i], i + 1);
    assert_string_equal(s.texts[4], "{\"n\":5}");
    s = read_all(fx->s, 4);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.seqs[0], 4);
    /* retention 3: the newest three stay, the oldest go in the same txn */
    append(fx->s, 6, 7, 3);
    s = read_all(fx->s, 0);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.seqs[0], 5);
    assert_int_equal(s.seqs[2], 7);
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(fx->s, false, &t), NS_OK);
    size_t n = 0;
    assert_int_equal(ns_admin_audit_count(t, &n), NS_OK);
    assert_int_equal(n, 3);
    ns_txn_abort(t);
}

static void test_abort_and_off(void **state)
{
    fx_t *fx = *state;
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(fx->s, true, &t), NS_OK);
    assert_int_equal(ns_admin_audit_append(t, "{}", 2, 10, NULL), NS_OK);
    ns_txn_abort(t); /* the effect rolled back: so is its record */
    assert_int_equal(read_all(fx->s, 0).n, 0);
    /* retention 0: the trail is off, nothing written, no sequence used */
    assert_int_equal(ns_txn_begin(fx->s, true, &t), NS_OK);
    assert_int_equal(ns_admin_audit_append(t, "{}", 2, 0, NULL), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    assert_int_equal(read_all(fx->s, 0).n, 0);
    append(fx->s, 1, 1, 10); /* the aborted append did not consume seq 1 */
}

static void test_clear_keeps_trail(void **state)
{
    fx_t *fx = *state;
    ns_txn_t *t = NULL;
    append(fx->s, 1, 2, 10);
    assert_int_equal(ns_txn_begin(fx->s, true, &t), NS_OK);
    assert_int_equal(ns_kv_put(t, "NS", "k", "v"), NS_OK);
    assert_int_equal(ns_store_clear(t), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    assert_int_equal(read_all(fx->s, 0).n, 2);
    append(fx->s, 3, 3, 10); /* numbering goes on */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_append_iter_trim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_and_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clear_keeps_trail, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
