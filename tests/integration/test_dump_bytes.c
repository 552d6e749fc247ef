/* test_dump_bytes.c - names are bytes, dumps are UTF-8 JSON, through the
 * real binaries:
 *   - a store whose KV namespace, key and value hold bytes that are not
 *     UTF-8 (0x80-0xFF, a cut sequence; a registration body must be UTF-8,
 *     request headers need not) dumps to a document that is
 *     valid UTF-8 (iconv reads it), those bytes written as \uDC80..\uDCFF;
 *     restore reads it back byte for byte (dump -> restore -> dump gives the
 *     same bytes, and the server serves the KV pair by its raw name); the
 *     old binary wrote the bytes raw;
 *   - restore refuses a document whose names hold NUL (\u0000), as the
 *     server refuses them, instead of storing "a\u0000b" as "a";
 *   - a settings file that starts with a UTF-8 byte order mark is read
 *     (it was "unknown key" with the mark invisible in the message). */
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_store.h"
#include "ns/err.h"
#include "nstest_admin.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/model.h"

#define TOPIC "Caf\xC3\xA9Topic" /* UTF-8: a registration body must be */
#define KV_NS "Raw\xE9\x80\xFFNs"
#define KV_KEY "k\xFE\xE2\x82"
#define KV_VAL "caf\xE9 \xF0\x9F\x98\x80 ok"

/* Whether iconv reads the file as UTF-8 (glibc's converter checks every
 * sequence). */
static bool is_utf8_file(const char *path)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "iconv -f UTF-8 -t UTF-8 '%s' > /dev/null 2>&1", path);
    int rc = system(cmd);
    return WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

static void test_dump_utf8_restore_byte_exact(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("bytes");
    char data2[4200], dump1[4200], dump2[4200], dir2[4200];
    snprintf(dump1, sizeof dump1, "%s/dump1.json", dir);
    snprintf(dump2, sizeof dump2, "%s/dump2.json", dir);
    snprintf(dir2, sizeof dir2, "%s/second", dir);
    snprintf(data2, sizeof data2, "%s/second/data", dir);
    nstest_server_t srv;
    assert_int_equal(nstest_server_start(&srv, dir, NULL), 0);
    ns_client_t *c = nstest_connect(&srv);
    ns_topic_config_t t[2] = {{(char *)TOPIC, 4, 4, 6, 0}, {(char *)"Plain", 4, 4, 6, 0}};
    nstest_register_topics(c, "Bytes", "bytes-b", "10.0.6.1:10911", "10.0.6.1:10912", t, 2);
    assert_int_equal(nstest_route_code(&srv, TOPIC), NS_RSP_SUCCESS);
    nstest_server_stop(&srv, SIGTERM);
    ns_client_close(c);
    /* names that are not UTF-8: the server refuses them at the door now, but
     * a store written by an older version may hold them, so they are put
     * into the stopped server's store directly */
    ns_store_t *st = NULL;
    ns_txn_t *txn = NULL;
    assert_int_equal(nstest_store_open(srv.data, 0, 0, &st), NS_OK);
    assert_int_equal(ns_txn_begin(st, true, &txn), NS_OK);
    assert_int_equal(ns_kv_ns_create(txn, KV_NS), NS_OK);
    assert_int_equal(ns_kv_put(txn, KV_NS, KV_KEY, KV_VAL), NS_OK);
    assert_int_equal(ns_txn_commit(txn), NS_OK);
    ns_store_close(st);

    nstest_ctl_expect(0, NULL, "dump", "--data-dir", srv.data, "--no-timestamp", "-o", dump1, NULL);
    /* valid UTF-8 for any reader (the old dump failed here) */
    assert_true(is_utf8_file(dump1));
    assert_true(nstest_count_in_file(dump1, "Raw\\u00E9") == 0); /* bytes, not characters */
    assert_true(nstest_count_in_file(dump1, "Raw\\uDCE9\\uDC80\\uDCFFNs") > 0);
    assert_true(nstest_count_in_file(dump1, "Caf\xC3\xA9Topic") > 0);
    assert_true(nstest_count_in_file(dump1, "\xF0\x9F\x98\x80") > 0); /* UTF-8 stays as it is */

    assert_int_equal(mkdir(dir2, 0700), 0);
    nstest_ctl_expect(0, "restored", "restore", "--data-dir", data2, "-i", dump1, NULL);
    nstest_ctl_expect(0, NULL, "dump", "--data-dir", data2, "--no-timestamp", "-o", dump2, NULL);
    char *a = nstest_read_text(dump1), *b = nstest_read_text(dump2);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
    free(a);
    free(b);
    /* the restored store holds the raw bytes (the server can no longer be
     * asked for them: a name that is not UTF-8 is refused at the door) */
    assert_int_equal(nstest_store_open(data2, 0, 0, &st), NS_OK);
    assert_int_equal(ns_txn_begin(st, false, &txn), NS_OK);
    ns_slice_t got;
    assert_int_equal(ns_kv_get(txn, KV_NS, KV_KEY, &got), NS_OK);
    assert_int_equal(got.len, strlen(KV_VAL));
    assert_memory_equal(got.ptr, KV_VAL, got.len);
    ns_txn_abort(txn);
    ns_store_close(st);
    /* and serves the topic */
    assert_int_equal(nstest_server_start(&srv, dir2, NULL), 0);
    assert_int_equal(nstest_route_code(&srv, TOPIC), NS_RSP_SUCCESS);
    nstest_server_stop(&srv, SIGKILL);
    nstest_rmtree(dir);
    free(dir);
}

static void test_restore_refuses_nul(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("bytes-nul"), data[4200], doc[4200];
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(doc, sizeof doc, "%s/dump.json", dir);
    nstest_write_text(doc, "{\"format\":\"namesrv-dump\",\"formatVersion\":1,\"clusters\":{},"
                           "\"brokers\":[],\"registrations\":[],\"topics\":{},\"mappings\":[],"
                           "\"kv\":{\"N\":{\"a\\u0000b\":\"v\"}}}\n");
    char *out = NULL;
    int rc = nstest_ctl(60000, &out, "restore", "--data-dir", data, "-i", doc, NULL);
    printf("# restore of a name with NUL: exit %d: %s", rc, out);
    NSTEST_EXPECT_RC(rc, 4, out);
    NSTEST_EXPECT_IN(out, "NUL");
    free(out);
    nstest_rmtree(dir);
    free(dir);
}

static void test_settings_file_with_bom(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("bytes-bom"), conf[4200], data[4200], port[4200];
    snprintf(conf, sizeof conf, "%s/namesrv.properties", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(port, sizeof port, "%s/port", dir);
    char text[13000];
    snprintf(text, sizeof text, "\xEF\xBB\xBFlistenPort=0\ndataDir=%s\n", data);
    nstest_write_text(conf, text);
    const char *args[] = {"-c", conf, "-p", NULL};
    char *err = NULL;
    int rc = nstest_run(NS_NAMESRVD_PATH, args, &err, 10000);
    printf("# namesrvd -c (file with a BOM) -p: exit %d\n", rc);
    if (rc != 0 || strstr(err, data) == NULL)
        fail_msg("namesrvd -p with a BOM in its settings file exited %d:\n%s", rc, err);
    free(err);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dump_utf8_restore_byte_exact),
        cmocka_unit_test(test_restore_refuses_nul),
        cmocka_unit_test(test_settings_file_with_bom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
