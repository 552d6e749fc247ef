/* nstest.h - shared helpers for the test suite. */
#ifndef NS_TEST_H
#define NS_TEST_H
#include <stddef.h>
#include <stdint.h>
#endif
