/* test_production_ops.c - the operator's offline tools through the real
 * binaries: readers refuse a directory with no store and default to
 * $NAMESRV_DATA_DIR; backup copies the settings file; export-kvconfig writes
 * Java's kvConfig.json; prune-groups removes a broker group a restored dump
 * kept without any address (and records itself in the admin trail);
 * restored brokers show their grace state in `namesrvctl clusters`. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

#define ctl(...) nstest_ctl(60000, __VA_ARGS__)

/* ---- offline tools ---- */

static void test_offline_tools(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("prod-offline");
    nstest_server_t srv;
    char empty[4200], path[4300], bdir[4200], kvjson[4200], dump[4200], other[4200];
    struct stat st;
    char *out = NULL;
    /* a reader refuses a directory without a store and creates nothing */
    snprintf(empty, sizeof empty, "%s/empty", dir);
    mkdir(empty, 0755);
    int rc = ctl(&out, "stat", "--data-dir", empty, NULL);
    NSTEST_EXPECT_RC(rc, 5, out);
    NSTEST_EXPECT_IN(out, "holds no store");
    free(out);
    nstest_ctl_expect(5, NULL, "audit", "--admin", "--data-dir", empty, NULL);
    snprintf(path, sizeof path, "%s/data.mdb", empty);
    assert_int_not_equal(stat(path, &st), 0);

    assert_int_equal(nstest_server_start(&srv, dir, NULL), 0);
    ns_client_t *c = nstest_connect(&srv);
    nstest_register_two_topics(c, "broker-a", "10.0.0.1:10911");
    nstest_register_two_topics(c, "broker-b", "10.0.0.2:10911");
    const char *put[] = {"namespace", "ORDER_TOPIC_CONFIG", "key", "T1",
                         "value",     "broker-a:4",         NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_PUT_KV_CONFIG, put, NULL, 0, 10000),
                     NS_RSP_SUCCESS);
    /* the settings file the server rewrites (its configStorePath) */
    assert_int_equal(nstest_config_update(c, "orderMessageEnable=true\n"), 0);
    /* stopped with the brokers' connection open: a closed connection would
     * unregister them */
    nstest_server_stop(&srv, SIGTERM);
    ns_client_close(c);

    /* backup copies the settings file beside the store */
    snprintf(bdir, sizeof bdir, "%s/backup", dir);
    snprintf(path, sizeof path, "%s/namesrv.properties", dir);
    nstest_ctl_expect(0, "copied to", "backup", "--data-dir", srv.data, "-o", bdir, "--config",
                      path, NULL);
    snprintf(path, sizeof path, "%s/namesrv.properties", bdir);
    assert_true(nstest_count_in_file(path, "orderMessageEnable=true") == 1);

    /* readers default to $NAMESRV_DATA_DIR (else /var/lib/namesrv) */
    setenv("NAMESRV_DATA_DIR", srv.data, 1);
    rc = ctl(&out, "stat", "--json", NULL);
    unsetenv("NAMESRV_DATA_DIR");
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "\"adminAuditRecords\":2");
    free(out);

    /* export-kvconfig: Java's kvConfig.json */
    snprintf(kvjson, sizeof kvjson, "%s/kvConfig.json", dir);
    nstest_ctl_expect(0, NULL, "export-kvconfig", "--data-dir", srv.data, "-o", kvjson, NULL);
    char *text = nstest_read_text(kvjson);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    cJSON *v = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(j, "configTable"), "ORDER_TOPIC_CONFIG"), "T1");
    assert_true(cJSON_IsString(v));
    assert_string_equal(v->valuestring, "broker-a:4");
    cJSON_Delete(j);
    free(text);

    /* a restored store with a group that has no address: prune-groups */
    snprintf(dump, sizeof dump, "%s/dump.json", dir);
    nstest_ctl_expect(0, NULL, "dump", "--data-dir", srv.data, "-o", dump, "--no-timestamp", NULL);
    text = nstest_read_text(dump);
    j = cJSON_Parse(text);
    free(text);
    cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(j, "brokers"))
    {
        if (strcmp(cJSON_GetObjectItem(b, "brokerName")->valuestring, "broker-b") == 0)
            cJSON_ReplaceItemInObject(b, "addrs", cJSON_CreateObject());
    }
    cJSON *regs = cJSON_GetObjectItem(j, "registrations");
    for (int i = cJSON_GetArraySize(regs) - 1; i >= 0; i--)
        if (strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(regs, i), "brokerName")->valuestring,
                   "broker-b") == 0)
            cJSON_DeleteItemFromArray(regs, i);
    text = cJSON_Print(j);
    nstest_write_text(dump, text);
    free(text);
    cJSON_Delete(j);
    snprintf(other, sizeof other, "%s/restored", dir);
    nstest_ctl_expect(0, NULL, "restore", "--data-dir", other, "-i", dump, NULL);
    nstest_ctl_expect(0, "would remove broker-b (cluster C1)", "prune-groups", "--data-dir", other,
                      "--dry-run", NULL);
    nstest_ctl_expect(0, "removed 1 empty broker group(s) and 2 queue data(s)", "prune-groups",
                      "--data-dir", other, NULL);
    nstest_ctl_expect(0, NULL, "verify", "--data-dir", other, NULL);
    nstest_ctl_expect(0, "0 empty broker group(s)", "prune-groups", "--data-dir", other, NULL);
    /* the offline writes are in the admin trail too */
    cJSON *trail = nstest_admin_trail(other);
    assert_non_null(nstest_trail_find(trail, "restore", "ok"));
    assert_non_null(nstest_trail_find(trail, "prune-groups", "ok"));
    cJSON_Delete(trail);
    /* broker-a's routes are intact, broker-b is gone */
    const char *args[] = {NULL};
    nstest_server_t srv2;
    char dir2[4300];
    snprintf(dir2, sizeof dir2, "%s/srv2", dir);
    mkdir(dir2, 0755);
    char a_data[4400];
    snprintf(a_data, sizeof a_data, "--dataDir=%s", other);
    /* a grace window shorter than the brokers' own timeout: the server keeps
     * them for the longer of the two, and `clusters` says so */
    const char *args2[] = {a_data, "--brokerGraceWindowMillis=1000", NULL};
    (void)args;
    assert_int_equal(nstest_server_start(&srv2, dir2, args2), 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", srv2.port);
    rc = ctl(&out, "route", "T1", "-n", addr, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "broker-a");
    assert_null(strstr(out, "broker-b"));
    free(out);
    /* restored brokers live on the grace window until they heartbeat, to the
     * deadline the server applies: max(grace window, their heartbeat timeout) */
    rc = ctl(&out, "clusters", "-n", addr, "--json", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    j = cJSON_Parse(out);
    free(out);
    const cJSON *live = cJSON_GetObjectItem(j, "brokerLiveTable");
    assert_non_null(live);
    const cJSON *e = live->child;
    assert_non_null(e);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(e, "onGrace")));
    long long deadline = (long long)cJSON_GetObjectItem(e, "deadline")->valuedouble;
    long long grace = (long long)cJSON_GetObjectItem(e, "graceUntil")->valuedouble;
    assert_true(deadline > grace + 10000); /* the broker's timeout is the longer */
    cJSON_Delete(j);
    /* the text shows that deadline (converted to wall time again on this
     * request: within a few ms), not graceUntil */
    rc = ctl(&out, "clusters", "-n", addr, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    const char *at = strstr(out, "grace until ");
    assert_non_null(at);
    struct tm tm = {0};
    int ms = 0;
    const char *rest = strptime(at + strlen("grace until "), "%Y-%m-%dT%H:%M:%S", &tm);
    assert_non_null(rest);
    assert_int_equal(sscanf(rest, ".%3dZ", &ms), 1);
    long long shown = (long long)timegm(&tm) * 1000 + ms;
    if (shown < deadline - 1000 || shown > deadline + 1000)
        fail_msg("clusters shows %lld, the server's deadline is %lld (graceUntil %lld):\n%s", shown,
                 deadline, grace, out);
    free(out);
    nstest_server_stop(&srv2, SIGTERM);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offline_tools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
