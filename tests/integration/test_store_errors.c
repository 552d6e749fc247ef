/* test_store_errors.c - the store's failure modes through the real namesrvd:
 * a locked data directory (exit 2), a newer schema (exit 3), a corrupt
 * data.mdb (exit 4, untouched), a full map (SYSTEM_ERROR for writes while
 * reads go on), map growth below the limit, and reads answered while the
 * writer applies a very large registration. */
#define _GNU_SOURCE
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/store.h"

typedef struct {
    char *dir;
    nstest_server_t srv;
    /* (e): here so that a failing test frees them too */
    ns_regbody_t body;
    ns_buf_t enc;
    ns_client_t *w, *r;
} fx_t;

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof *fx);
    if (fx == NULL)
        return -1;
    fx->srv.pid = -1;
    fx->dir = nstest_tmpdir("storeerr");
    if (fx->dir == NULL) {
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    if (fx->srv.pid > 0)
        nstest_server_stop(&fx->srv, SIGKILL);
    ns_client_close(fx->w);
    ns_client_close(fx->r);
    ns_regbody_free(&fx->body);
    ns_buf_free(&fx->enc);
    nstest_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Runs namesrvd to completion on fx->dir/data; returns its exit code and
 * its output in *out (caller frees). */
static int run_namesrvd(fx_t *fx, char **out)
{
    char a_data[4200], a_store[4200];
    snprintf(a_data, sizeof a_data, "--dataDir=%s/data", fx->dir);
    snprintf(a_store, sizeof a_store, "--configStorePath=%s/second.properties", fx->dir);
    const char *args[] = {"--bindAddress=127.0.0.1", "--listenPort=0", a_data, a_store, NULL};
    return nstest_run(NS_NAMESRVD_PATH, args, out, 20000);
}

/* PUT_KV_CONFIG; returns the response code, remark copied into *remark
 * (caller frees; NULL when none or not asked). */
static int put_kv(ns_client_t *c, const char *ns, const char *k, const char *v, char **remark)
{
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    const char *kv[] = {"namespace", ns, "key", k, "value", v, NULL};
    nstest_cmd(&cmd, ext, NS_REQ_PUT_KV_CONFIG, kv);
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &cmd, 30000, &rsp), NS_OK);
    int code = rsp.cmd.code;
    if (remark)
        *remark = rsp.cmd.remark ? strndup(rsp.cmd.remark, rsp.cmd.remark_len) : NULL;
    ns_cmd_msg_free(&rsp);
    return code;
}

/* GET_KV_CONFIG; returns a copy of the value (NULL when absent), *code. */
static char *get_kv(ns_client_t *c, const char *ns, const char *k, int *code)
{
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    const char *kv[] = {"namespace", ns, "key", k, NULL};
    nstest_cmd(&cmd, ext, NS_REQ_GET_KV_CONFIG, kv);
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &cmd, 30000, &rsp), NS_OK);
    *code = rsp.cmd.code;
    const char *v = ns_cmd_ext_get(&rsp.cmd, "value");
    char *out = v ? strdup(v) : NULL;
    ns_cmd_msg_free(&rsp);
    return out;
}

static bool file_equal(const char *path, const uint8_t *want, size_t n)
{
    uint8_t *p = NULL;
    size_t len = 0;
    if (nstest_read_file(path, &p, &len) != 0)
        return false;
    bool eq = len == n && memcmp(p, want, n) == 0;
    free(p);
    return eq;
}

/* Asserts that the server stops cleanly on SIGTERM (exit 0: under ASan, no
 * leak and no error); otherwise shows its log. */
static void stop_clean(fx_t *fx)
{
    double t0 = now_ms();
    int status = nstest_server_stop(&fx->srv, SIGTERM);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return;
    print_error("namesrvd stopped after %.0f ms with status 0x%x\n", now_ms() - t0, status);
    char path[4200];
    uint8_t *log = NULL;
    size_t n = 0;
    snprintf(path, sizeof path, "%s/namesrvd.log", fx->dir);
    if (nstest_read_file(path, &log, &n) == 0) {
        size_t from = n > 6000 ? n - 6000 : 0;
        print_error("namesrvd.log (last %zu bytes):\n%.*s\n", n - from, (int)(n - from),
                    (const char *)log + from);
        free(log);
    }
    fail_msg("namesrvd did not exit cleanly on SIGTERM (status 0x%x)", status);
}

/* (a) a second namesrvd on a locked data directory */
static void test_second_instance_exits_2(void **state)
{
    fx_t *fx = *state;
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, NULL), 0);
    assert_int_equal(ns_store_lock_holder(fx->srv.data), fx->srv.pid);
    char *out = NULL, pid[32];
    int code = run_namesrvd(fx, &out);
    printf("# second instance: exit %d: %s", code, out);
    assert_int_equal(code, 2);
    snprintf(pid, sizeof pid, "pid %d", fx->srv.pid);
    assert_non_null(strstr(out, pid));
    assert_non_null(strstr(out, "locked"));
    free(out);
    /* the first one is unharmed */
    ns_client_t *c = nstest_connect(&fx->srv);
    assert_int_equal(put_kv(c, "N", "k", "v", NULL), NS_RSP_SUCCESS);
    ns_client_close(c);
    /* once it is gone the directory is free again */
    stop_clean(fx);
    assert_int_equal(ns_store_lock_holder(fx->srv.data), 0);
    /* ... also after a kill -9 (flock dies with the process) */
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, NULL), 0);
    nstest_server_stop(&fx->srv, SIGKILL);
    assert_int_equal(ns_store_lock_holder(fx->srv.data), 0);
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, NULL), 0);
    c = nstest_connect(&fx->srv);
    int rc;
    char *v = get_kv(c, "N", "k", &rc);
    assert_int_equal(rc, NS_RSP_SUCCESS);
    assert_string_equal(v, "v");
    free(v);
    ns_client_close(c);
}

/* (b) a store written by a newer binary */
static void test_newer_schema_exits_3(void **state)
{
    fx_t *fx = *state;
    char data[4200], err[512], want[64];
    snprintf(data, sizeof data, "%s/data", fx->dir);
    ns_store_opts_t o = {data, 0, 0, NS_SYNC_FULL, false, true, 0, 0};
    ns_store_t *s = NULL;
    ns_txn_t *t = NULL;
    assert_int_equal(ns_store_open(&o, &s, err, sizeof err), NS_OK);
    assert_int_equal(ns_txn_begin(s, true, &t), NS_OK);
    assert_int_equal(ns_kv_put(t, "N", "k", "v"), NS_OK);
    assert_int_equal(ns_meta_put_u64(t, "schema_version", ns_store_latest_schema() + 1), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    ns_store_close(s);

    char *out = NULL;
    int code = run_namesrvd(fx, &out);
    printf("# newer schema: exit %d: %s", code, out);
    assert_int_equal(code, 3);
    snprintf(want, sizeof want, "schema version %u is newer", ns_store_latest_schema() + 1);
    assert_non_null(strstr(out, want));
    free(out);
}

/* (c) a data.mdb that is not LMDB */
static void test_corrupt_exits_4(void **state)
{
    fx_t *fx = *state;
    char data[4200], path[4300];
    snprintf(data, sizeof data, "%s/data", fx->dir);
    snprintf(path, sizeof path, "%s/data.mdb", data);
    assert_int_equal(mkdir(data, 0755), 0);
    size_t n = 3 * 4096 + 100;
    uint8_t *junk = malloc(n);
    assert_non_null(junk);
    srand(4242);
    for (size_t i = 0; i < n; i++)
        junk[i] = (uint8_t)(rand() >> 5);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(junk, 1, n, f), n);
    fclose(f);

    char *out = NULL;
    int code = run_namesrvd(fx, &out);
    printf("# corrupt data.mdb: exit %d: %s", code, out);
    assert_int_equal(code, 4);
    assert_non_null(strstr(out, data));
    assert_true(file_equal(path, junk, n));
    free(out);
    /* and again: still refused, still untouched */
    code = run_namesrvd(fx, &out);
    assert_int_equal(code, 4);
    assert_true(file_equal(path, junk, n));
    free(out);
    free(junk);
}

static char *big_value(size_t n, int seq)
{
    char *v = malloc(n + 1);
    assert_non_null(v);
    memset(v, 'a' + seq % 26, n);
    int h = snprintf(v, n, "seq=%d;", seq);
    v[h] = '-';
    v[n] = 0;
    return v;
}

/* (d) a full map: writes fail with SYSTEM_ERROR, reads go on */
static void test_map_full(void **state)
{
    fx_t *fx = *state;
    const char *args[] = {"--mapSizeBytes=1048576", "--mapMaxBytes=2097152", NULL};
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, args), 0);
    ns_client_t *c = nstest_connect(&fx->srv);
    const size_t vlen = 100 * 1024;
    int ok = 0, code = NS_RSP_SUCCESS;
    char *remark = NULL, key[32];
    for (int i = 0; i < 100 && code == NS_RSP_SUCCESS; i++) {
        char *v = big_value(vlen, i);
        snprintf(key, sizeof key, "big%03d", i);
        free(remark);
        remark = NULL;
        code = put_kv(c, "FULL", key, v, &remark);
        if (code == NS_RSP_SUCCESS)
            ok++;
        free(v);
    }
    printf("# map full after %d x 100 KiB values: code %d remark '%s'\n", ok, code,
           remark ? remark : "(null)");
    assert_int_equal(code, NS_RSP_SYSTEM_ERROR);
    assert_true(ok >= 5 && ok <= 20);
    assert_non_null(remark);
    assert_non_null(strstr(remark, "mapMaxBytes"));
    free(remark);

    /* the refused key is absent; earlier ones read back intact */
    int rc;
    char *v = get_kv(c, "FULL", key, &rc);
    assert_null(v);
    assert_int_equal(rc, NS_RSP_QUERY_NOT_FOUND);
    ns_client_t *other = nstest_connect(&fx->srv);
    for (int i = 0; i < ok; i++) {
        char *want = big_value(vlen, i);
        snprintf(key, sizeof key, "big%03d", i);
        v = get_kv(i % 2 ? c : other, "FULL", key, &rc);
        assert_int_equal(rc, NS_RSP_SUCCESS);
        assert_non_null(v);
        assert_string_equal(v, want);
        free(v);
        free(want);
    }
    /* still full: the next big write is refused too, and the server lives */
    v = big_value(vlen, 999);
    assert_int_equal(put_kv(other, "FULL", "again", v, NULL), NS_RSP_SYSTEM_ERROR);
    free(v);
    v = get_kv(other, "FULL", "big000", &rc);
    assert_int_equal(rc, NS_RSP_SUCCESS);
    free(v);
    assert_int_equal(waitpid(fx->srv.pid, NULL, WNOHANG), 0);
    ns_client_close(other);
    ns_client_close(c);

    /* a restart with the same limit serves the same data */
    stop_clean(fx);
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, args), 0);
    c = nstest_connect(&fx->srv);
    char *want = big_value(vlen, ok - 1);
    snprintf(key, sizeof key, "big%03d", ok - 1);
    v = get_kv(c, "FULL", key, &rc);
    assert_int_equal(rc, NS_RSP_SUCCESS);
    assert_string_equal(v, want);
    free(v);
    free(want);
    ns_client_close(c);
}

/* (d') growth below the limit is invisible to clients */
static void test_map_growth(void **state)
{
    fx_t *fx = *state;
    const char *args[] = {"--mapSizeBytes=1048576", "--mapMaxBytes=67108864", NULL};
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, args), 0);
    ns_client_t *c = nstest_connect(&fx->srv);
    const size_t vlen = 100 * 1024;
    const int n = 82; /* ~8 MiB */
    char key[32];
    double t0 = now_ms();
    for (int i = 0; i < n; i++) {
        char *v = big_value(vlen, i), *remark = NULL;
        snprintf(key, sizeof key, "grow%03d", i);
        int code = put_kv(c, "GROW", key, v, &remark);
        if (code != NS_RSP_SUCCESS)
            fail_msg("put %d failed: %d %s", i, code, remark ? remark : "");
        free(remark);
        free(v);
    }
    printf("# %d x 100 KiB values through a growing map in %.0f ms\n", n, now_ms() - t0);
    stop_clean(fx);
    ns_client_close(c);
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, args), 0);
    c = nstest_connect(&fx->srv);
    for (int i = 0; i < n; i++) {
        char *want = big_value(vlen, i);
        int rc;
        snprintf(key, sizeof key, "grow%03d", i);
        char *v = get_kv(c, "GROW", key, &rc);
        assert_int_equal(rc, NS_RSP_SUCCESS);
        assert_string_equal(v, want);
        free(v);
        free(want);
    }
    ns_client_close(c);
}

/* (e) reads are answered while the writer applies a huge registration */
static void test_reads_during_big_write(void **state)
{
    fx_t *fx = *state;
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, NULL), 0);
    ns_client_t *w = fx->w = nstest_connect(&fx->srv), *r = fx->r = nstest_connect(&fx->srv);
    assert_int_equal(put_kv(r, "R", "k", "read-me", NULL), NS_RSP_SUCCESS);

    const size_t ntopics = 50000;
    ns_regbody_t *body = &fx->body;
    body->data_version.counter = 1;
    body->data_version.timestamp = 1700000000000;
    body->topics = calloc(ntopics, sizeof *body->topics);
    assert_non_null(body->topics);
    body->n_topics = ntopics;
    for (size_t i = 0; i < ntopics; i++) {
        char name[64];
        snprintf(name, sizeof name, "BigTopic-%06zu", i);
        body->topics[i].topic_name = strdup(name);
        body->topics[i].read_queue_nums = 8;
        body->topics[i].write_queue_nums = 8;
        body->topics[i].perm = 6;
    }
    ns_buf_t *enc = &fx->enc;
    assert_int_equal(ns_regbody_encode_compressed(enc, body, true), NS_OK);
    char crc[32];
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(enc->data, enc->len));
    const char *kv[] = {"brokerName",  "big-broker", "brokerAddr",         "127.0.0.1:10911",
                        "clusterName", "BigCluster", "haServerAddr",       "127.0.0.1:10912",
                        "brokerId",    "0",          "enableActingMaster", "false",
                        "compressed",  "true",       "bodyCrc32",          crc,
                        NULL};
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    nstest_cmd(&cmd, ext, NS_REQ_REGISTER_BROKER, kv);
    cmd.body = enc->data;
    cmd.body_len = enc->len;
    cmd.opaque = 777;

    double t0 = now_ms(), max_read = 0, reg_ms = 0;
    int reads_before = 0, reg_code = -1;
    assert_int_equal(ns_client_send(w, &cmd), NS_OK);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    bool registered = false;
    while (!registered) {
        double t = now_ms();
        int code;
        char *v = get_kv(r, "R", "k", &code);
        double lat = now_ms() - t;
        assert_int_equal(code, NS_RSP_SUCCESS);
        assert_string_equal(v, "read-me");
        free(v);
        if (lat > max_read)
            max_read = lat;
        struct pollfd p = {ns_client_fd(w), POLLIN, 0};
        if (poll(&p, 1, 0) > 0) {
            assert_int_equal(ns_client_recv(w, 120000, &rsp), NS_OK);
            assert_int_equal(rsp.cmd.opaque, 777);
            reg_code = rsp.cmd.code;
            reg_ms = now_ms() - t0;
            registered = true;
        } else {
            reads_before++;
        }
        assert_true(now_ms() - t0 < 120000);
    }
    printf("# 50000-topic registration (%zu compressed bytes) answered after %.0f ms; "
           "%d reads answered meanwhile, max read latency %.1f ms\n",
           enc->len, reg_ms, reads_before, max_read);
    assert_int_equal(reg_code, NS_RSP_SUCCESS);
    assert_true(reads_before > 0);

    /* the registration is visible */
    const char *rk[] = {"topic", "BigTopic-049999", NULL};
    nstest_cmd(&cmd, ext, NS_REQ_GET_ROUTEINFO_BY_TOPIC, rk);
    assert_int_equal(ns_client_call(r, &cmd, 30000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    assert_true(rsp.cmd.body_len > 0);

    /* closing the broker's connection unregisters it (§6.7): an equally
     * large write, 50000 topics removed; route reads go on meanwhile and
     * see the old route until the commit */
    ns_client_close(w);
    fx->w = NULL;
    t0 = now_ms();
    double max_route = 0, unreg_ms = 0;
    int route_reads = 0;
    for (;;) {
        double t = now_ms();
        assert_int_equal(ns_client_call(r, &cmd, 30000, &rsp), NS_OK);
        double lat = now_ms() - t;
        if (lat > max_route)
            max_route = lat;
        if (rsp.cmd.code == NS_RSP_TOPIC_NOT_EXIST) {
            unreg_ms = now_ms() - t0;
            break;
        }
        assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
        route_reads++;
        if (now_ms() - t0 > 4 * reg_ms + 10000)
            fail_msg("the 50000-topic unregistration is still running after %.0f ms "
                     "(the registration took %.0f ms)",
                     now_ms() - t0, reg_ms);
    }
    ns_cmd_msg_free(&rsp);
    printf("# 50000-topic unregistration (connection closed) done after %.0f ms; %d route reads "
           "answered meanwhile, max latency %.1f ms\n",
           unreg_ms, route_reads, max_route);
    /* removing a broker's topics costs no more than adding them: a
     * quadratic step would show here (and leaves SIGTERM waiting on it) */
    assert_true(unreg_ms <= 2 * reg_ms + 2000);

    ns_client_close(r);
    fx->r = NULL;
    /* a clean shutdown after it (under ASan: no leak, no error) */
    stop_clean(fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_second_instance_exits_2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_schema_exits_3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_exits_4, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_growth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reads_during_big_write, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
