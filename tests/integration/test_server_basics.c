/* test_server_basics.c - the real namesrvd over TCP: both header types,
 * pipelining, split frames, oversized frames, unknown codes, SIGTERM. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

typedef nstest_fx_t fx_t;

static int setup(void **state)
{
    return nstest_fx_setup(state, "basics", NULL);
}

/* One loop: with more, a main-loop request forwarded by a connection that
 * closed meanwhile is not run (iothreads.c), so what frames ahead of a bad
 * one leave behind is one loop's property. */
static int setup_one_loop(void **state)
{
    static const char *const args[] = {"--ioThreads=1", NULL};
    return nstest_fx_setup(state, "basics1", args);
}

static int teardown(void **state)
{
    return nstest_fx_teardown(state);
}

static void put_kv(ns_client_t *c, const char *ns, const char *k, const char *v, uint8_t type)
{
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    const char *kv[] = {"namespace", ns, "key", k, "value", v, NULL};
    nstest_cmd(&cmd, ext, NS_REQ_PUT_KV_CONFIG, kv);
    cmd.serialize_type = type;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &cmd, 5000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    assert_int_equal(rsp.cmd.flag & NS_FLAG_RESPONSE, NS_FLAG_RESPONSE);
    assert_int_equal(rsp.cmd.serialize_type, type);
    ns_cmd_msg_free(&rsp);
}

static char *get_kv(ns_client_t *c, const char *ns, const char *k, uint8_t type, int *code)
{
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    const char *kv[] = {"namespace", ns, "key", k, NULL};
    nstest_cmd(&cmd, ext, NS_REQ_GET_KV_CONFIG, kv);
    cmd.serialize_type = type;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &cmd, 5000, &rsp), NS_OK);
    *code = rsp.cmd.code;
    const char *v = ns_cmd_ext_get(&rsp.cmd, "value");
    char *out = v ? strdup(v) : NULL;
    ns_cmd_msg_free(&rsp);
    return out;
}

static void test_both_serialize_types(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    put_kv(c, "NS", "json", "v-json", NS_SERIALIZE_JSON);
    put_kv(c, "NS", "bin", "v-bin", NS_SERIALIZE_ROCKETMQ);
    int code;
    char *v = get_kv(c, "NS", "bin", NS_SERIALIZE_JSON, &code);
    assert_int_equal(code, NS_RSP_SUCCESS);
    assert_string_equal(v, "v-bin");
    free(v);
    v = get_kv(c, "NS", "json", NS_SERIALIZE_ROCKETMQ, &code);
    assert_string_equal(v, "v-json");
    free(v);
    v = get_kv(c, "NS", "missing", NS_SERIALIZE_ROCKETMQ, &code);
    assert_null(v);
    assert_int_equal(code, NS_RSP_QUERY_NOT_FOUND);
    ns_client_close(c);
}

/* 100 requests in one write, every answer carries its own opaque. */
static void test_pipelining(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    put_kv(c, "P", "k", "v", NS_SERIALIZE_JSON);
    ns_buf_t all = NS_BUF_INIT;
    for (int i = 0; i < 100; i++) {
        ns_cmd_t cmd;
        ns_ext_field_t ext[16];
        const char *kv[] = {"namespace", "P", "key", "k", NULL};
        nstest_cmd(&cmd, ext, NS_REQ_GET_KV_CONFIG, kv);
        cmd.opaque = 1000 + i;
        cmd.serialize_type = i % 2 ? NS_SERIALIZE_ROCKETMQ : NS_SERIALIZE_JSON;
        assert_int_equal(ns_remoting_encode(&all, &cmd), NS_OK);
    }
    assert_int_equal(ns_client_send_raw(c, all.data, all.len), NS_OK);
    bool seen[100] = {false};
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(ns_client_recv(c, 5000, &rsp), NS_OK);
        int idx = rsp.cmd.opaque - 1000;
        assert_true(idx >= 0 && idx < 100);
        assert_false(seen[idx]);
        seen[idx] = true;
        assert_string_equal(ns_cmd_ext_get(&rsp.cmd, "value"), "v");
    }
    ns_cmd_msg_free(&rsp);
    ns_buf_free(&all);
    ns_client_close(c);
}

/* One frame sent a byte at a time. */
static void test_split_frame(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    put_kv(c, "S", "k", "split", NS_SERIALIZE_JSON);
    ns_buf_t f = NS_BUF_INIT;
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    const char *kv[] = {"namespace", "S", "key", "k", NULL};
    nstest_cmd(&cmd, ext, NS_REQ_GET_KV_CONFIG, kv);
    cmd.opaque = 77;
    assert_int_equal(ns_remoting_encode(&f, &cmd), NS_OK);
    for (size_t i = 0; i < f.len; i++) {
        assert_int_equal(ns_client_send_raw(c, f.data + i, 1), NS_OK);
        usleep(200);
    }
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_recv(c, 5000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.opaque, 77);
    assert_string_equal(ns_cmd_ext_get(&rsp.cmd, "value"), "split");
    ns_cmd_msg_free(&rsp);
    ns_buf_free(&f);
    ns_client_close(c);
}

/* A hostile connection is closed; another keeps being served. */
static void expect_closed_while_other_works(fx_t *fx, const void *bytes, size_t n)
{
    ns_client_t *bad = nstest_connect(&fx->srv), *good = nstest_connect(&fx->srv);
    assert_int_equal(ns_client_send_raw(bad, bytes, n), NS_OK);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_recv(bad, 5000, &rsp), NS_ECONN);
    put_kv(good, "G", "k", "still-served", NS_SERIALIZE_JSON);
    ns_cmd_msg_free(&rsp);
    ns_client_close(bad);
    ns_client_close(good);
}

static void test_oversized_frame(void **state)
{
    uint8_t hdr[8] = {0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02}; /* 16 MiB + 1 */
    expect_closed_while_other_works(*state, hdr, sizeof hdr);
}

static void test_malformed_inputs(void **state)
{
    const uint8_t short_len[] = {0, 0, 0, 2, 0, 0}; /* shorter than a header */
    const uint8_t hdr_too_long[] = {0, 0, 0, 8, 0, 0, 0, 50, '{', '}', 0, 0};
    const uint8_t bad_json[] = {0, 0, 0, 9, 0, 0, 0, 5, '{', 'x', 'x', 'x', '}'};
    const uint8_t bad_type[] = {0, 0, 0, 6, 9, 0, 0, 2, '{', '}'};
    const uint8_t bad_bin[] = {0, 0, 0, 9, 1, 0, 0, 5, 0, 105, 0, 1, 0};
    const uint8_t neg_len[] = {0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 2, '{', '}'};
    expect_closed_while_other_works(*state, short_len, sizeof short_len);
    expect_closed_while_other_works(*state, hdr_too_long, sizeof hdr_too_long);
    expect_closed_while_other_works(*state, bad_json, sizeof bad_json);
    expect_closed_while_other_works(*state, bad_type, sizeof bad_type);
    expect_closed_while_other_works(*state, bad_bin, sizeof bad_bin);
    expect_closed_while_other_works(*state, neg_len, sizeof neg_len);
}

/* Frames sent in one write ahead of a bad one all run, in order, before
 * the bad one closes the connection, however many precede it (the server
 * decodes up to 16 frames of a read before running them, conn.c): each
 * stores a KV entry, found afterwards on another connection. (Their replies
 * may be dropped with the connection: replies not yet handed to the socket
 * are, ns_conn_close_here.) */
static void expect_run_then_closed(fx_t *fx, int ahead, const void *bad, size_t bad_len)
{
    static int round;
    char ns[32];
    snprintf(ns, sizeof ns, "B%d", ++round);
    ns_client_t *c = nstest_connect(&fx->srv);
    ns_buf_t all = NS_BUF_INIT;
    for (int i = 0; i < ahead; i++) {
        ns_cmd_t cmd;
        ns_ext_field_t ext[16];
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        const char *kv[] = {"namespace", ns, "key", key, "value", key, NULL};
        nstest_cmd(&cmd, ext, NS_REQ_PUT_KV_CONFIG, kv);
        cmd.opaque = 500 + i;
        assert_int_equal(ns_remoting_encode(&all, &cmd), NS_OK);
    }
    assert_int_equal(ns_buf_append(&all, bad, bad_len), NS_OK);
    assert_int_equal(ns_client_send_raw(c, all.data, all.len), NS_OK);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    int rc, replies = 0;
    while ((rc = ns_client_recv(c, 5000, &rsp)) == NS_OK) {
        assert_int_equal(rsp.cmd.opaque, 500 + replies); /* in order, if at all */
        replies++;
    }
    assert_int_equal(rc, NS_ECONN);
    ns_cmd_msg_free(&rsp);
    ns_buf_free(&all);
    ns_client_close(c);
    ns_client_t *check = nstest_connect(&fx->srv);
    for (int i = 0; i < ahead; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        int code = 0;
        char *v = get_kv(check, ns, key, NS_SERIALIZE_JSON, &code);
        for (int tries = 0; v == NULL && tries < 100; tries++) { /* queued on the writer */
            usleep(20000);
            v = get_kv(check, ns, key, NS_SERIALIZE_JSON, &code);
        }
        if (v == NULL)
            fail_msg("%d frames ahead of a bad one: frame %d did not run", ahead, i);
        assert_string_equal(v, key);
        free(v);
    }
    ns_client_close(check);
}

static void test_run_before_bad_frame(void **state)
{
    const uint8_t bad_json[] = {0, 0, 0, 9, 0, 0, 0, 5, '{', 'x', 'x', 'x', '}'};
    const uint8_t oversized[] = {0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02};
    const uint8_t short_len[] = {0, 0, 0, 2, 0, 0};
    const int aheads[] = {1, 15, 16, 17, 40};
    fx_t *fx = *state;
    for (size_t i = 0; i < sizeof aheads / sizeof aheads[0]; i++) {
        expect_run_then_closed(fx, aheads[i], bad_json, sizeof bad_json);
        expect_run_then_closed(fx, aheads[i], oversized, sizeof oversized);
        expect_run_then_closed(fx, aheads[i], short_len, sizeof short_len);
    }
    assert_true(nstest_log_count(&fx->srv, "undecodable frame header") >= 5);
    assert_true(nstest_log_count(&fx->srv, "exceeds maxFrameBytes") >= 5);
}

static void test_unknown_code(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    nstest_cmd(&cmd, ext, 9999, NULL);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &cmd, 5000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.code, NS_RSP_REQUEST_CODE_NOT_SUPPORTED);
    assert_non_null(rsp.cmd.remark);
    assert_string_equal(rsp.cmd.remark, " request type 9999 not supported");
    /* one-way requests get no answer, not even an error */
    cmd.flag = NS_FLAG_ONEWAY;
    cmd.opaque = 4242;
    assert_int_equal(ns_client_send(c, &cmd), NS_OK);
    assert_int_equal(ns_client_recv(c, 300, &rsp), NS_ETIMEDOUT);
    ns_cmd_msg_free(&rsp);
    ns_client_close(c);
}

static void test_sigterm_exits_zero(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    put_kv(c, "T", "k", "v", NS_SERIALIZE_JSON);
    int status = nstest_server_stop(&fx->srv, SIGTERM);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    ns_client_close(c);
    /* and the write is there after the restart */
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, NULL), 0);
    c = nstest_connect(&fx->srv);
    int code;
    char *v = get_kv(c, "T", "k", NS_SERIALIZE_JSON, &code);
    assert_string_equal(v, "v");
    free(v);
    ns_client_close(c);
}

/* serverChannelMaxIdleTimeSeconds closes a silent connection. */
static void test_idle_connection_closed(void **state)
{
    char *dir = nstest_tmpdir("idle");
    nstest_server_t srv;
    const char *args[] = {"--serverChannelMaxIdleTimeSeconds=1", NULL};
    assert_int_equal(nstest_server_start(&srv, dir, args), 0);
    ns_client_t *c = nstest_connect(&srv);
    put_kv(c, "I", "k", "v", NS_SERIALIZE_JSON);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_recv(c, 5000, &rsp), NS_ECONN); /* closed by the server */
    ns_cmd_msg_free(&rsp);
    ns_client_close(c);
    nstest_server_stop(&srv, SIGKILL);
    nstest_rmtree(dir);
    free(dir);
}

/* Start-up configuration errors name the key; -p prints the settings;
 * -c reads a properties file and flags override it. */
static void test_config_errors_and_print(void **state)
{
    char *dir = nstest_tmpdir("cfg"), *out = NULL, path[4096];
    const char *unknown[] = {"--noSuchKey=1", NULL};
    assert_int_equal(nstest_run(NS_NAMESRVD_PATH, unknown, &out, 5000), 1);
    assert_non_null(strstr(out, "noSuchKey"));
    free(out);
    const char *bad[] = {"--listenPort=abc", NULL};
    assert_int_equal(nstest_run(NS_NAMESRVD_PATH, bad, &out, 5000), 1);
    assert_non_null(strstr(out, "listenPort"));
    free(out);
    snprintf(path, sizeof path, "%s/ns.properties", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("# a comment\nlistenPort = 10999\norderMessageEnable=true\n", f);
    fclose(f);
    const char *print[] = {"-c", path, "--listenPort=11000", "-p", NULL};
    assert_int_equal(nstest_run(NS_NAMESRVD_PATH, print, &out, 5000), 0);
    assert_non_null(strstr(out, "listenPort=11000\n"));
    assert_non_null(strstr(out, "orderMessageEnable=true\n"));
    free(out);
    f = fopen(path, "w");
    fputs("bogusKey=1\n", f);
    fclose(f);
    const char *badfile[] = {"-c", path, "-p", NULL};
    assert_int_equal(nstest_run(NS_NAMESRVD_PATH, badfile, &out, 5000), 1);
    assert_non_null(strstr(out, "bogusKey"));
    free(out);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_both_serialize_types, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelining, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_before_bad_frame, setup_one_loop, teardown),
        cmocka_unit_test_setup_teardown(test_split_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversized_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_inputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_exits_zero, setup, teardown),
        cmocka_unit_test(test_idle_connection_closed),
        cmocka_unit_test(test_config_errors_and_print),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
