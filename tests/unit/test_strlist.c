/* test_strlist.c - the owned string list (src/base/strlist.c): copies in
 * order across the array's growth, and empty again after free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ns/err.h"
#include "ns/strlist.h"

static void test_add_copies_in_order(void **state)
{
    (void)state;
    ns_strlist_t l = NS_STRLIST_INIT;
    char name[16];
    for (int i = 0; i < 100; i++) { /* past several doublings */
        snprintf(name, sizeof name, "topic-%d", i);
        assert_int_equal(ns_strlist_add(&l, name), NS_OK);
        name[0] = 'X'; /* the list holds its own copy */
    }
    assert_int_equal(l.n, 100);
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "topic-%d", i);
        assert_string_equal(l.v[i], name);
    }
    ns_strlist_free(&l);
    assert_null(l.v);
    assert_int_equal(l.n, 0);
    assert_int_equal(ns_strlist_add(&l, ""), NS_OK); /* usable again */
    assert_string_equal(l.v[0], "");
    ns_strlist_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_copies_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
