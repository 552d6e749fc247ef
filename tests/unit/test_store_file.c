/* test_store_file.c - ns_store_file_check (store/file.c) on files LMDB
 * wrote: a file that ends before the pages its meta page counts is whole
 * when every page past its end is free (LMDB leaves pages it took and freed
 * within one transaction unwritten: seen after a kill -9 in crash_kv_crash),
 * and cut short when a page past its end is in use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <lmdb.h>

#include "nstest.h"
#include "nstest_store.h"
#include "ns/err.h"
#include "ns/store.h"

static void put(MDB_env *e, const char *key, size_t n, bool del)
{
    MDB_txn *t = NULL;
    MDB_dbi d;
    char *buf = calloc(1, n + 1);
    assert_non_null(buf);
    MDB_val k = {strlen(key), (void *)key}, v = {n, buf};
    assert_int_equal(mdb_txn_begin(e, NULL, 0, &t), 0);
    assert_int_equal(mdb_dbi_open(t, NULL, 0, &d), 0);
    assert_int_equal(del ? mdb_del(t, d, &k, NULL) : mdb_put(t, d, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(t), 0);
    free(buf);
}

static void test_free_tail_is_whole(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("sfile");
    char file[4200];
    snprintf(file, sizeof file, "%s/data.mdb", dir);
    MDB_env *e = NULL;
    assert_int_equal(mdb_env_create(&e), 0);
    assert_int_equal(mdb_env_set_mapsize(e, 16u << 20), 0);
    assert_int_equal(mdb_env_open(e, dir, 0, 0600), 0);
    put(e, "a", 10, false);
    put(e, "b", 10, false);
    put(e, "c", 10, false);
    put(e, "big", 65536, false); /* overflow pages at the end of the file */
    put(e, "big", 0, true);      /* now free */
    MDB_envinfo info;
    mdb_env_info(e, &info);
    size_t last = info.me_last_pgno;
    mdb_env_close(e);
    size_t tail = nstest_free_tail_start(dir);
    assert_true(tail < last); /* the construction left free pages at the end */

    /* cut at the first free page: what LMDB leaves when it never wrote them */
    assert_int_equal(truncate(file, (off_t)tail * 4096), 0);
    ns_store_file_t f;
    char err[512] = "";
    assert_int_equal(ns_store_file_check(dir, &f, err, sizeof err), NS_OK);
    assert_int_equal(f.last_pgno, last);
    /* and LMDB reads it: every key there, no page past the end touched */
    assert_int_equal(mdb_env_create(&e), 0);
    assert_int_equal(mdb_env_set_mapsize(e, 16u << 20), 0);
    assert_int_equal(mdb_env_open(e, dir, MDB_RDONLY, 0600), 0);
    MDB_txn *t = NULL;
    MDB_dbi d;
    assert_int_equal(mdb_txn_begin(e, NULL, MDB_RDONLY, &t), 0);
    assert_int_equal(mdb_dbi_open(t, NULL, 0, &d), 0);
    for (const char *k = "abc"; *k; k++) {
        MDB_val key = {1, (void *)k}, v;
        assert_int_equal(mdb_get(t, d, &key, &v), 0);
        assert_int_equal(v.mv_size, 10);
    }
    mdb_txn_abort(t);
    mdb_env_close(e);

    /* one page more, and a page in use is gone: cut short */
    assert_int_equal(truncate(file, (off_t)(tail - 1) * 4096), 0);
    assert_int_equal(ns_store_file_check(dir, &f, err, sizeof err), NS_ECORRUPT);
    assert_non_null(strstr(err, "the file was cut short"));
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_free_tail_is_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
