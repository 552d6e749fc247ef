/* test_map_growth.c - the LMDB map grows when it must, through the real
 * binaries:
 *   - a schema-1 store of ~59 MB (written as the first binary wrote it,
 *     with a 64 MiB map) opens in namesrvd with the default mapSizeBytes:
 *     the migrations fill the map, which grows, and they run again (the
 *     old binary exited 5: "migration 2 ... MDB_MAP_FULL");
 *   - import-kvconfig of a 75 MB kvConfig.json into a new store grows the
 *     map (it failed with "map size limit reached");
 *   - the store ends below 100 % of its map, as `namesrvctl stat` reads it
 *     (a grown map is recorded in the file and kept across a restart);
 *   - namesrvd registering 100,000 topics (3 brokers) grows the map before it fills
 *     (log, namesrv_writer_map_grows_total) and stops with 20 % of it free
 *     (it ended at 100 % as stat saw it: the reopened map was the
 *     configured 64 MiB raised to the pages in use). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>
#include <cmocka.h>
#include <lmdb.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "ns/client.h"
#include "ns/err.h"
#include "ns/store.h"

#define MIB (1024u * 1024u)

/* stat --json of the store in data: map size and bytes used. */
static void map_usage(const char *data, double *map, double *used, double *schema)
{
    char *out = NULL;
    int rc = nstest_ctl(60000, &out, "stat", "--data-dir", data, "--json", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    *map = cJSON_GetObjectItem(j, "mapSizeBytes")->valuedouble;
    *used = cJSON_GetObjectItem(j, "usedBytes")->valuedouble;
    if (schema)
        *schema = cJSON_GetObjectItem(j, "schemaVersion")->valuedouble;
    cJSON_Delete(j);
    free(out);
}

/* A schema-1 store in data: the v1 tables (ns_store_open stopped at
 * version 1), then queue rows written with LMDB itself under a 64 MiB map
 * until the file holds about target bytes, as an old binary left it. */
static size_t build_v1_store(const char *data, size_t target)
{
    ns_store_opts_t o = {data, 64 * MIB, 64 * MIB, NS_SYNC_NOSYNC, false, true, 1, 0};
    ns_store_t *st = NULL;
    char err[512] = "";
    assert_int_equal(ns_store_open(&o, &st, err, sizeof err), NS_OK);
    assert_int_equal(ns_store_schema_version(st), 1);
    ns_store_close(st);

    MDB_env *env = NULL;
    MDB_txn *txn = NULL;
    MDB_dbi q;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 32), 0);
    assert_int_equal(mdb_env_set_mapsize(env, 64 * MIB), 0);
    assert_int_equal(mdb_env_open(env, data, MDB_NOSYNC, 0600), 0);
    size_t rows = 0, used = 0;
    while (used < target) {
        assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
        assert_int_equal(mdb_dbi_open(txn, "queues", 0, &q), 0);
        for (int i = 0; i < 20000; i++, rows++) {
            /* queues key: topic \0 brokerName; value: perm, r, w, sysflag */
            char key[64];
            int n = snprintf(key, sizeof key, "MigTopic%09zu", rows);
            key[n] = 0;
            int m = snprintf(key + n + 1, sizeof key - (size_t)n - 1, "broker-%zu", rows % 7);
            uint8_t v[16] = {6, 0, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0};
            MDB_val k = {(size_t)n + 1 + (size_t)m, key}, val = {sizeof v, v};
            assert_int_equal(mdb_put(txn, q, &k, &val, MDB_APPEND), 0);
        }
        assert_int_equal(mdb_txn_commit(txn), 0);
        MDB_envinfo info;
        MDB_stat s;
        mdb_env_info(env, &info);
        mdb_env_stat(env, &s);
        used = (info.me_last_pgno + 1) * s.ms_psize;
    }
    mdb_env_close(env);
    return rows;
}

static void test_schema1_store_migrates_with_default_map(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("map-v1"), data[4200];
    snprintf(data, sizeof data, "%s/data", dir);
    size_t rows = build_v1_store(data, 59 * MIB);
    char file[4300];
    snprintf(file, sizeof file, "%s/data.mdb", data);
    struct stat sb;
    assert_int_equal(stat(file, &sb), 0);
    printf("# schema-1 store: %zu queue rows, data.mdb %lld bytes\n", rows, (long long)sb.st_size);

    /* the default mapSizeBytes (64 MiB): migration 2 doubles the queue data */
    nstest_server_t srv;
    const char *args[] = {"--logLevel=info", NULL};
    if (nstest_server_start(&srv, dir, args) != 0) {
        char logp[4300];
        snprintf(logp, sizeof logp, "%s/namesrvd.log", dir);
        char *log = nstest_read_text(logp);
        fail_msg("namesrvd did not start on a 59 MB schema-1 store:\n%s", log ? log : "");
    }
    assert_true(nstest_log_count(&srv, "for the migrations") > 0);
    int st = nstest_server_stop(&srv, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    double map = 0, used = 0, schema = 0;
    map_usage(data, &map, &used, &schema);
    printf("# after the migrations: map %.0f bytes, %.0f used (%.1f %%), schema %.0f\n", map, used,
           100 * used / map, schema);
    assert_true(schema == ns_store_latest_schema());
    assert_true(used < map * 0.81); /* NS_STORE_GROW_AT_PERCENT, and never 100 % */
    nstest_ctl_expect(0, "consistent", "verify", "--data-dir", data, NULL);
    nstest_rmtree(dir);
    free(dir);
}

static void test_import_kvconfig_grows_map(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("map-kv"), data[4200], kv[4200];
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(kv, sizeof kv, "%s/kvConfig.json", dir);
    /* 7,500 values of 10 kB: 75 MB, more than the 64 MiB default map */
    FILE *f = fopen(kv, "w");
    assert_non_null(f);
    char *val = malloc(10001);
    assert_non_null(val);
    memset(val, 'x', 10000);
    val[10000] = 0;
    fprintf(f, "{\"configTable\":{\"big\":{");
    for (int i = 0; i < 7500; i++)
        fprintf(f, "%s\"k%d\":\"%s\"", i ? "," : "", i, val);
    fprintf(f, "}}}\n");
    fclose(f);
    free(val);
    char *out = NULL;
    int rc = nstest_ctl(120000, &out, "import-kvconfig", "--data-dir", data, kv, NULL);
    printf("# import-kvconfig of 75 MB: exit %d: %s", rc, out);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    double map = 0, used = 0;
    map_usage(data, &map, &used, NULL);
    printf("# after import-kvconfig: map %.0f bytes, %.0f used (%.1f %%)\n", map, used,
           100 * used / map);
    assert_true(used < map * 0.81);
    nstest_rmtree(dir);
    free(dir);
}

static void test_server_grows_before_full(void **state)
{
    (void)state;
    enum { N = 100000 };
    char *dir = nstest_tmpdir("map-100k");
    nstest_server_t srv;
    int http = 0;
    /* one registration of 17 MB (JSON, uncompressed) */
    const char *args[] = {"--logLevel=info", "--maxFrameBytes=67108864", NULL};
    assert_int_equal(nstest_server_start_http(&srv, dir, args, &http), 0);
    ns_client_t *c = nstest_connect(&srv);
    ns_topic_config_t *t = calloc(N, sizeof *t);
    char(*names)[24] = calloc(N, sizeof *names);
    assert_true(t && names);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "MapTopic%06d", i);
        t[i] = (ns_topic_config_t){names[i], 8, 8, 6, 0};
    }
    /* three brokers with every topic: about 120 MB, past the first
     * doubling of the 64 MiB map (128 MiB) but close to its end */
    int64_t t0 = nstest_mono_ms();
    for (int b = 0; b < 3; b++) {
        char name[32], addr[32], ha[32];
        snprintf(name, sizeof name, "map-b%d", b);
        snprintf(addr, sizeof addr, "10.0.7.%d:10911", b + 1);
        snprintf(ha, sizeof ha, "10.0.7.%d:10912", b + 1);
        nstest_register_topics(c, "Map", name, addr, ha, t, N);
    }
    printf("# 3 brokers x 100000 topics registered in %lld ms\n",
           (long long)(nstest_mono_ms() - t0));
    free(t);
    free(names);
    /* the store's figures on /metrics come from a snapshot the main loop
     * takes once a second: two periods and a half, and it has the last
     * commit (the replies came after it) */
    nstest_sleep_ms(2500);
    char *scrape = nstest_scrape(http, NULL);
    double map = nstest_series(scrape, "namesrv_store_map_size_bytes", -1);
    double used = nstest_series(scrape, "namesrv_store_used_bytes", -1);
    double grown = nstest_series(scrape, "namesrv_writer_map_grows_total", -1);
    free(scrape);
    int said = nstest_log_count(&srv, "growing the map before it fills");
    printf("# /metrics: map %.0f, used %.0f (%.1f %%), grown %.0f time(s), %d log line(s)\n", map,
           used, 100 * used / map, grown, said);
    nstest_server_stop(&srv, SIGTERM);
    ns_client_close(c);
    char data[4200];
    snprintf(data, sizeof data, "%s/data", dir);
    double smap = 0, sused = 0;
    map_usage(data, &smap, &sused, NULL);
    printf("# namesrvctl stat after the stop: map %.0f, used %.0f (%.1f %%)\n", smap, sused,
           100 * sused / smap);
    /* restarted with the default mapSizeBytes, before any write */
    assert_int_equal(nstest_server_start_http(&srv, dir, args, &http), 0);
    assert_true(nstest_metric_wait_ge(http, "namesrv_store_used_bytes", 96.0 * MIB, 15000));
    scrape = nstest_scrape(http, NULL);
    double rmap = nstest_series(scrape, "namesrv_store_map_size_bytes", -1);
    double rused = nstest_series(scrape, "namesrv_store_used_bytes", -1);
    free(scrape);
    printf("# after a restart: map %.0f, used %.0f (%.1f %%)\n", rmap, rused, 100 * rused / rmap);
    assert_true(grown >= 1);
    assert_true(said > 0);
    assert_true(used <= map * 0.8);
    assert_true(sused <= smap * 0.8);
    assert_true(rused <= rmap * 0.8);
    nstest_server_stop(&srv, SIGKILL);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema1_store_migrates_with_default_map),
        cmocka_unit_test(test_import_kvconfig_grows_map),
        cmocka_unit_test(test_server_grows_before_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
