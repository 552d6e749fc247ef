/* nstest.h - shared helpers for the test suite: fixtures, hex, temp dirs. */
#ifndef NS_TEST_H
#define NS_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"

/* Reads a whole file; caller frees *out. Returns 0 or -1. */
int nstest_read_file(const char *path, uint8_t **out, size_t *len);
/* Reads NS_FIXTURES_DIR/<rel>; aborts the test (cmocka fail) if missing. */
uint8_t *nstest_fixture(const char *rel, size_t *len);
/* Hex text -> bytes; caller frees. Returns NULL on bad hex. */
uint8_t *nstest_hex_decode(const char *hex, size_t *len);
/* Creates a fresh empty directory under $TMPDIR (or /tmp); caller frees the
 * path and removes it with nstest_rmtree(). */
char *nstest_tmpdir(const char *tag);
void nstest_rmtree(const char *path);

#endif
