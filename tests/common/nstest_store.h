/* nstest_store.h - a fresh real LMDB store for unit tests (nstest_store.c):
 * a temp directory with a store opened in it, never mocked. */
#ifndef NS_TEST_STORE_H
#define NS_TEST_STORE_H

#include <stddef.h>

#include "ns/store.h"

/* Opens (creating) the store in dir without fsync; map_bytes/max_bytes 0
 * for the defaults. Prints the reason on failure; returns the NS_* code. */
int nstest_store_open(const char *dir, size_t map_bytes, size_t max_bytes, ns_store_t **out);

/* The usual fixture: a temp directory nstest_tmpdir(tag) with a store. */
typedef struct {
    char *dir;
    ns_store_t *s;
} nstest_store_fx_t;
/* setup(): *state becomes a new nstest_store_fx_t; -1 and nothing left
 * behind on failure. teardown() closes the store and removes the tree. */
int nstest_store_fx_setup(void **state, const char *tag, size_t map_bytes, size_t max_bytes);
int nstest_store_fx_teardown(void **state);

/* The lowest page of the store file in dir from which every page up to its
 * meta page's last one is free (LMDB's free pages' table, read with LMDB):
 * a file cut there is whole, one page less is cut short (store/file.c). */
size_t nstest_free_tail_start(const char *dir);

#endif
