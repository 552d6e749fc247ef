/* test_recover.c - periodic hot backups and `namesrvctl recover`, through
 * the real binaries: namesrvd writes a verified compacted backup
 * every backupIntervalSeconds and keeps backupKeep of them; a store damaged
 * while stopped is refused at start (exit 4); `namesrvctl recover` moves it
 * aside and restores the newest good backup, after which namesrvd serves the
 * backed-up KV config and routes; with no backup left, recover makes a new
 * store holding the KV config salvaged from the damaged one. Each backup,
 * good or failed, is counted on /metrics, where the backup alerts look. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "nstest_tls.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/model.h"

static int count_backups(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "backup-", 7) == 0 &&
            !(len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0))
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* Registers a broker with two topics and puts a KV pair; the broker stays
 * registered while the returned connection is open. */
static ns_client_t *fill(const nstest_server_t *srv)
{
    ns_client_t *c = nstest_connect(srv);
    ns_topic_config_t t[2] = {{(char *)"RecTopicA", 4, 4, 6, 0}, {(char *)"RecTopicB", 4, 4, 6, 0}};
    nstest_register_topics(c, "Rec", "rec-b", "10.0.4.1:10911", "10.0.4.1:10912", t, 2);
    const char *p[] = {"namespace", "RecNs", "key", "kept", "value", "yes", NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_PUT_KV_CONFIG, p, NULL, 0, 10000), NS_RSP_SUCCESS);
    return c;
}

static int kv_code(const nstest_server_t *srv)
{
    ns_client_t *c = nstest_connect(srv);
    const char *g[] = {"namespace", "RecNs", "key", "kept", NULL};
    int code = nstest_call_code(c, NS_REQ_GET_KV_CONFIG, g, NULL, 0, 10000);
    ns_client_close(c);
    return code;
}

static void test_backups_and_recover(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("recover");
    char data[4200], bdir[4300], file[4300], *out = NULL;
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(bdir, sizeof bdir, "%s/data.backups", dir);
    snprintf(file, sizeof file, "%s/data.mdb", data);
    const char *args[] = {"--backupIntervalSeconds=1", "--backupKeep=2", NULL};
    nstest_server_t srv;
    assert_int_equal(nstest_server_start(&srv, dir, args), 0);
    ns_client_t *broker = fill(&srv);
    /* backups every second, two kept: after the second removal (which
     * follows the fourth backup) two are left */
    for (int i = 0; i < 100 && nstest_log_count(&srv, "backup: removed") < 2; i++)
        nstest_sleep_ms(100);
    assert_true(nstest_log_count(&srv, "written and verified") >= 4);
    assert_int_equal(count_backups(bdir), 2);
    int st = nstest_server_stop(&srv, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ns_client_close(broker);

    /* damage while stopped: refused at start */
    assert_int_equal(nstest_damage_table(file, "routes"), 0);
    assert_true(nstest_server_start(&srv, dir, args) != 0);

    /* recover: the newest good backup */
    int rc = nstest_ctl(60000, &out, "recover", "--data-dir", data, NULL);
    printf("# recover (backups): exit %d: %s", rc, out);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "from backup");
    free(out);
    assert_int_equal(nstest_server_start(&srv, dir, args), 0);
    assert_int_equal(kv_code(&srv), NS_RSP_SUCCESS);
    assert_int_equal(nstest_route_code(&srv, "RecTopicA"),
                     NS_RSP_SUCCESS); /* within the grace window */
    nstest_server_stop(&srv, SIGKILL);

    /* damaged again, no backups: a new store with the KV config */
    assert_int_equal(nstest_damage_table(file, "routes"), 0);
    nstest_rmtree(bdir);
    rc = nstest_ctl(60000, &out, "recover", "--data-dir", data, NULL);
    printf("# recover (no backup): exit %d: %s", rc, out);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "1 key(s)");
    free(out);
    const char *noback[] = {"--backupIntervalSeconds=0", NULL};
    assert_int_equal(nstest_server_start(&srv, dir, noback), 0);
    assert_int_equal(kv_code(&srv), NS_RSP_SUCCESS);
    assert_int_equal(nstest_route_code(&srv, "RecTopicA"), NS_RSP_TOPIC_NOT_EXIST);
    nstest_server_stop(&srv, SIGKILL);
    nstest_rmtree(dir);
    free(dir);
}

/* Good backups and failed ones (backupDir under a regular file: mkdir
 * fails) show in namesrv_backups_total and the last success's time. */
static void test_backups_counted_on_metrics(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("backup_metrics");
    char notdir[4200], a_dir[4300];
    snprintf(notdir, sizeof notdir, "%s/plain-file", dir);
    FILE *f = fopen(notdir, "w");
    assert_non_null(f);
    fclose(f);
    nstest_server_t srv;
    int http = 0;
    const char *good[] = {"--backupIntervalSeconds=1", NULL};
    assert_int_equal(nstest_server_start_http(&srv, dir, good, &http), 0);
    /* a backup a second; 20 s: a verified copy under load takes longer */
    assert_true(nstest_metric_wait_ge(http, "namesrv_backups_total{result=\"ok\"}", 1, 20000));
    assert_true(nstest_metric(http, "namesrv_backup_last_success_timestamp_seconds") > 1.7e9);
    assert_true(nstest_metric(http, "namesrv_backups_total{result=\"failed\"}") == 0);
    nstest_server_stop(&srv, SIGKILL);

    snprintf(a_dir, sizeof a_dir, "--backupDir=%s/sub", notdir);
    const char *bad[] = {"--backupIntervalSeconds=1", a_dir, NULL};
    assert_int_equal(nstest_server_start_http(&srv, dir, bad, &http), 0);
    assert_true(nstest_metric_wait_ge(http, "namesrv_backups_total{result=\"failed\"}", 1, 20000));
    assert_true(nstest_metric(http, "namesrv_backups_total{result=\"ok\"}") == 0);
    nstest_server_stop(&srv, SIGKILL);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backups_and_recover),
        cmocka_unit_test(test_backups_counted_on_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
