/* test_clock.c - ns_clock_stall: when a periodic task's late run counts as a
 * stall of its loop (include/ns/clock.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ns/clock.h"

static void test_first_run_is_in_time(void **state)
{
    (void)state;
    uint64_t last = 0;
    assert_int_equal(ns_clock_stall(&last, 123456, 5000), 0);
    assert_int_equal(last, 123456);
}

static void test_late_by_up_to_the_bound_is_in_time(void **state)
{
    (void)state;
    uint64_t last = 10000;
    assert_int_equal(ns_clock_stall(&last, 15000, 5000), 0); /* on time */
    assert_int_equal(ns_clock_stall(&last, 15000 + 5000 + NS_CLOCK_STALL_MS, 5000), 0);
    assert_int_equal(last, 21000);
    /* a short period: noise below the bound is not a stall either */
    last = 10000;
    assert_int_equal(ns_clock_stall(&last, 10100 + NS_CLOCK_STALL_MS, 100), 0);
}

static void test_later_is_a_stall_of_the_excess(void **state)
{
    (void)state;
    uint64_t last = 10000;
    /* due at 15000, ran at 215000: held up 200 s */
    assert_int_equal(ns_clock_stall(&last, 215000, 5000), 200000);
    assert_int_equal(last, 215000);
    /* the next run is measured from this one */
    assert_int_equal(ns_clock_stall(&last, 220000, 5000), 0);
    last = 10000;
    assert_int_equal(ns_clock_stall(&last, 10000 + 100 + NS_CLOCK_STALL_MS + 1, 100),
                     NS_CLOCK_STALL_MS + 1);
}

static void test_clock_that_went_back(void **state)
{
    (void)state;
    uint64_t last = 50000;
    assert_int_equal(ns_clock_stall(&last, 40000, 1000), 0);
    assert_int_equal(last, 40000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_run_is_in_time),
        cmocka_unit_test(test_late_by_up_to_the_bound_is_in_time),
        cmocka_unit_test(test_later_is_a_stall_of_the_excess),
        cmocka_unit_test(test_clock_that_went_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
