/* nstest_store.c - a fresh real store for unit tests (nstest_store.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <lmdb.h>

#include "nstest.h"
#include "nstest_store.h"
#include "ns/err.h"

int nstest_store_open(const char *dir, size_t map_bytes, size_t max_bytes, ns_store_t **out)
{
    char err[512];
    ns_store_opts_t o = {dir, map_bytes, max_bytes, NS_SYNC_NOSYNC, false, true, 0, 0};
    int rc = ns_store_open(&o, out, err, sizeof err);
    if (rc != NS_OK)
        print_error("ns_store_open(%s): %s (%s)\n", dir, ns_errname(rc), err);
    return rc;
}

int nstest_store_fx_setup(void **state, const char *tag, size_t map_bytes, size_t max_bytes)
{
    nstest_store_fx_t *fx = calloc(1, sizeof *fx);
    if (fx == NULL)
        return -1;
    fx->dir = nstest_tmpdir(tag);
    if (fx->dir == NULL || nstest_store_open(fx->dir, map_bytes, max_bytes, &fx->s) != NS_OK) {
        nstest_rmtree(fx->dir);
        free(fx->dir);
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

int nstest_store_fx_teardown(void **state)
{
    nstest_store_fx_t *fx = *state;
    ns_store_close(fx->s);
    nstest_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

size_t nstest_free_tail_start(const char *dir)
{
    MDB_env *e = NULL;
    MDB_txn *t = NULL;
    MDB_cursor *c = NULL;
    MDB_envinfo info;
    MDB_val k, v;
    if (mdb_env_create(&e) != 0 || mdb_env_set_mapsize(e, (size_t)1 << 30) != 0 ||
        mdb_env_open(e, dir, MDB_RDONLY, 0600) != 0 ||
        mdb_txn_begin(e, NULL, MDB_RDONLY, &t) != 0 || mdb_cursor_open(t, 0, &c) != 0) {
        fprintf(stderr, "nstest_free_tail_start: cannot read %s\n", dir);
        abort();
    }
    mdb_env_info(e, &info);
    size_t last = info.me_last_pgno;
    uint8_t *is_free = calloc(last + 1, 1);
    if (is_free == NULL)
        abort();
    while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) { /* dbi 0: the free pages */
        const size_t *ids = v.mv_data;
        for (size_t i = 1; i <= ids[0]; i++)
            if (ids[i] <= last)
                is_free[ids[i]] = 1;
    }
    mdb_cursor_close(c);
    mdb_txn_abort(t);
    mdb_env_close(e);
    size_t p = last + 1;
    while (p > 2 && is_free[p - 1])
        p--;
    free(is_free);
    return p;
}
