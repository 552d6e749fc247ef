/* nstest_store.c - a fresh real store for unit tests (nstest_store.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

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
