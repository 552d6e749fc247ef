/* test_kvver.c - KV entry versions: the hlc of a local write and the order
 * two servers merge by (include/ns/kvver.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ns/kvver.h"

static void test_next_follows_the_wall_clock(void **state)
{
    (void)state;
    uint64_t h = ns_kvver_next(0, 1000);
    assert_true(h == (uint64_t)1000 << 16);
    assert_int_equal(ns_kvver_wall_ms(h), 1000);
    uint64_t h2 = ns_kvver_next(h, 1001);
    assert_true(h2 == (uint64_t)1001 << 16);
}

static void test_next_is_monotonic_when_the_clock_steps_back(void **state)
{
    (void)state;
    uint64_t h = ns_kvver_next(0, 5000);
    uint64_t h2 = ns_kvver_next(h, 4000); /* one second back */
    uint64_t h3 = ns_kvver_next(h2, 4000);
    assert_true(h2 == h + 1);
    assert_true(h3 == h + 2);
    /* the same ms twice: the counter runs */
    assert_true(ns_kvver_next(h3, 5000) == h3 + 1);
    /* a negative or zero wall clock never goes below last */
    assert_true(ns_kvver_next(h3, -1) == h3 + 1);
}

static void test_order_by_hlc_then_server_then_tombstone_then_value(void **state)
{
    (void)state;
    ns_kvver_t a = {10, 1, false}, b = {11, 0, false};
    assert_int_equal(ns_kvver_cmp(&a, "z", 1, &b, "a", 1), -1);
    assert_int_equal(ns_kvver_cmp(&b, "a", 1, &a, "z", 1), 1);
    b.hlc = 10;
    assert_int_equal(ns_kvver_cmp(&a, "a", 1, &b, "z", 1), 1); /* server 1 > 0 */
    b.server = 1;
    b.deleted = true;
    assert_int_equal(ns_kvver_cmp(&a, "z", 1, &b, NULL, 0), -1); /* a tie: the delete wins */
    b.deleted = false;
    assert_int_equal(ns_kvver_cmp(&a, "b", 1, &b, "a", 1), 1);
    assert_int_equal(ns_kvver_cmp(&a, "a", 1, &b, "ab", 2), -1);
    assert_int_equal(ns_kvver_cmp(&a, "ab", 2, &b, "ab", 2), 0);
    assert_int_equal(ns_kvver_cmp(&a, "", 0, &b, "", 0), 0);
    /* two tombstones of one version are equal whatever the value pointers */
    a.deleted = b.deleted = true;
    assert_int_equal(ns_kvver_cmp(&a, "x", 1, &b, NULL, 0), 0);
}

static void test_too_new(void **state)
{
    (void)state;
    uint64_t now = 1700000000000LL;
    assert_false(ns_kvver_too_new(ns_kvver_next(0, now + 3600000), now, 3600000));
    assert_true(ns_kvver_too_new(ns_kvver_next(0, now + 3600001), now, 3600000));
    assert_false(ns_kvver_too_new(0, now, 0));
}

static void test_format_and_parse(void **state)
{
    (void)state;
    ns_kvver_t v = {0x0123456789abcdefULL, 0xfedcba9876543210ULL, false}, w = {0};
    char s[34];
    ns_kvver_format(&v, s);
    assert_string_equal(s, "0123456789abcdef.fedcba9876543210");
    assert_true(ns_kvver_parse(s, &w));
    assert_true(w.hlc == v.hlc && w.server == v.server);
    assert_false(ns_kvver_parse("0123456789abcdef.fedcba987654321", &w));
    assert_false(ns_kvver_parse("0123456789abcdef-fedcba9876543210", &w));
    assert_false(ns_kvver_parse("0123456789ABCDEF.fedcba9876543210", &w));
    assert_false(ns_kvver_parse(NULL, &w));
}

/* Random states of one entry: the order is a total order (antisymmetric,
 * transitive), so the merge "keep the greater" ends the same whatever order
 * three servers exchange in. */
typedef struct {
    ns_kvver_t v;
    char val[3];
} st_t;

static void rand_state(st_t *s, unsigned *seed)
{
    s->v.hlc = (uint64_t)(rand_r(seed) % 3);
    s->v.server = (uint64_t)(rand_r(seed) % 2);
    s->v.deleted = rand_r(seed) % 3 == 0;
    s->val[0] = (char)('a' + rand_r(seed) % 2);
    s->val[1] = rand_r(seed) % 2 ? 'x' : 0;
    s->val[2] = 0;
}

static int cmp(const st_t *a, const st_t *b)
{
    return ns_kvver_cmp(&a->v, a->val, strlen(a->val), &b->v, b->val, strlen(b->val));
}

static const st_t *max_of(const st_t *a, const st_t *b)
{
    return cmp(a, b) >= 0 ? a : b;
}

static void test_order_is_total_and_merges_commute(void **state)
{
    (void)state;
    unsigned seed = 29;
    for (int i = 0; i < 20000; i++) {
        st_t a, b, c;
        rand_state(&a, &seed);
        rand_state(&b, &seed);
        rand_state(&c, &seed);
        int ab = cmp(&a, &b), ba = cmp(&b, &a);
        assert_int_equal(ab, -ba);
        if (ab <= 0 && cmp(&b, &c) <= 0)
            assert_true(cmp(&a, &c) <= 0);
        /* (a merge b) merge c == a merge (c merge b), compared as states */
        const st_t *x = max_of(max_of(&a, &b), &c), *y = max_of(&a, max_of(&c, &b));
        assert_int_equal(cmp(x, y), 0);
        if (ab == 0 && !a.v.deleted)
            assert_string_equal(a.val, b.val); /* equal states hold the same value */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_next_follows_the_wall_clock),
        cmocka_unit_test(test_next_is_monotonic_when_the_clock_steps_back),
        cmocka_unit_test(test_order_by_hlc_then_server_then_tombstone_then_value),
        cmocka_unit_test(test_too_new),
        cmocka_unit_test(test_format_and_parse),
        cmocka_unit_test(test_order_is_total_and_merges_commute),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
