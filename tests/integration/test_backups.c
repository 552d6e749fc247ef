/* test_backups.c - periodic backups that cannot lie, through the real
 * namesrvd and namesrvctl:
 *   - ordered and pruned by their sequence, never by name or wall time:
 *     backups left by a clock a day ahead (named in the future) are the
 *     oldest ones once the server writes new ones, and are the ones pruned;
 *     recover brings back the newest (the old binary kept the future-named
 *     ones, deleted every new backup right after writing it, and recover
 *     restored a stale store);
 *   - each one holds BACKUP-INFO (sequence, txnid) and the settings file,
 *     which recover puts beside the recovered store; no ".tmp" is left;
 *   - namesrv_backups_total{result} and
 *     namesrv_backup_last_success_timestamp_seconds say what happened (they
 *     stayed 0 and absent), and namesrv_backup_interval_seconds is there
 *     for the "never backed up" alert;
 *   - a backupDir the server cannot create is said at start, and counted
 *     as failed backups;
 *   - a start with users in the store and authMode=off warns that they are
 *     not enforced (a restore brings users back, not the settings). */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "ns/client.h"
#include "ns/codes.h"

static int count_entries(const char *dir, const char *prefix, const char *suffix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name), sl = suffix ? strlen(suffix) : 0;
        if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        if (suffix && !(len >= sl && strcmp(e->d_name + len - sl, suffix) == 0))
            continue;
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

static void put_kv(const nstest_server_t *srv, const char *key)
{
    ns_client_t *c = nstest_connect(srv);
    const char *p[] = {"namespace", "BkNs", "key", key, "value", "v", NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_PUT_KV_CONFIG, p, NULL, 0, 10000), NS_RSP_SUCCESS);
    ns_client_close(c);
}

static void test_pruned_by_sequence_not_clock(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("bk-seq");
    char bdir[4200], name[4300], *out = NULL;
    snprintf(bdir, sizeof bdir, "%s/data.backups", dir);
    nstest_server_t srv;
    const char *off[] = {"--backupIntervalSeconds=0", NULL};
    assert_int_equal(nstest_server_start(&srv, dir, off), 0);
    put_kv(&srv, "early");
    /* three backups written while the clock was a day ahead: their names
     * sort after every backup written once it is set right */
    assert_int_equal(mkdir(bdir, 0700), 0);
    for (int i = 1; i <= 3; i++) {
        snprintf(name, sizeof name, "%s/backup-20991231T00000%d.000Z", bdir, i);
        nstest_ctl_expect(0, NULL, "backup", "--data-dir", srv.data, "-o", name, NULL);
    }
    nstest_server_stop(&srv, SIGTERM);

    int http = 0;
    /* the settings file (configStorePath) goes into every backup */
    char settings[4300];
    snprintf(settings, sizeof settings, "%s/namesrv.properties", dir);
    nstest_write_text(settings, "authMode=writes\n");
    const char *args[] = {"--backupIntervalSeconds=1", "--backupKeep=2", NULL};
    assert_int_equal(nstest_server_start_http(&srv, dir, args, &http), 0);
    put_kv(&srv, "later"); /* only in the backups written from now on */
    /* two new ones written: the three future-named ones are pruned */
    for (int i = 0; i < 150 && count_entries(bdir, "backup-2099", NULL) > 0; i++)
        nstest_sleep_ms(100);
    nstest_metric_wait_ge(http, "namesrv_backups_total{result=\"ok\"}", 2, 15000);
    char *scrape = nstest_scrape(http, NULL);
    double ok = nstest_series(scrape, "namesrv_backups_total{result=\"ok\"}", -1);
    double failed = nstest_series(scrape, "namesrv_backups_total{result=\"failed\"}", -1);
    double last = nstest_series(scrape, "namesrv_backup_last_success_timestamp_seconds", -1);
    double interval = nstest_series(scrape, "namesrv_backup_interval_seconds", -1);
    printf("# backups: ok %.0f, failed %.0f, last success %.0f, interval %.0f; %d future-named "
           "left, %d kept\n",
           ok, failed, last, interval, count_entries(bdir, "backup-2099", NULL),
           count_entries(bdir, "", NULL));
    free(scrape);
    assert_true(ok >= 2);
    assert_true(failed == 0);
    assert_true(last > 1.6e9);
    assert_true(interval == 1);
    nstest_server_stop(&srv, SIGTERM);
    assert_int_equal(count_entries(bdir, "backup-2099", NULL), 0);
    assert_int_equal(count_entries(bdir, "", ".tmp"), 0);
    assert_int_equal(count_entries(bdir, "", NULL), 2); /* backupKeep */

    /* recover takes the newest: the key written after the future ones */
    char file[4300];
    snprintf(file, sizeof file, "%s/data.mdb", srv.data);
    assert_int_equal(truncate(file, 8192), 0);
    int rc = nstest_ctl(60000, &out, "recover", "--data-dir", srv.data, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "settings file of the backup copied");
    free(out);
    char restored[4400];
    snprintf(restored, sizeof restored, "%s/namesrv.properties", srv.data);
    assert_int_equal(nstest_count_in_file(restored, "authMode=writes"), 1);
    rc = nstest_ctl(60000, &out, "export-kvconfig", "--data-dir", srv.data, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "later");
    free(out);
    nstest_rmtree(dir);
    free(dir);
}

static void test_unwritable_backup_dir(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("bk-bad"), blocker[4200], arg[4400];
    /* a file where the backup directory's parent should be: no mkdir can
     * make it, not even root's */
    snprintf(blocker, sizeof blocker, "%s/not-a-dir", dir);
    nstest_write_text(blocker, "x\n");
    snprintf(arg, sizeof arg, "--backupDir=%s/backups", blocker);
    const char *args[] = {"--backupIntervalSeconds=1", arg, NULL};
    nstest_server_t srv;
    int http = 0;
    assert_int_equal(nstest_server_start_http(&srv, dir, args, &http), 0);
    /* said at start, before the first interval */
    assert_true(nstest_log_count(&srv, "backupDir") > 0);
    assert_true(nstest_metric_wait_ge(http, "namesrv_backups_total{result=\"failed\"}", 1, 15000));
    char *scrape = nstest_scrape(http, NULL);
    assert_true(nstest_series(scrape, "namesrv_backup_last_success_timestamp_seconds", -1) == -1);
    free(scrape);
    nstest_server_stop(&srv, SIGKILL);
    nstest_rmtree(dir);
    free(dir);
}

static void test_users_with_auth_off_warn(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("bk-auth"), data[4200];
    snprintf(data, sizeof data, "%s/data", dir);
    nstest_ctl_expect(0, NULL, "user", "add", "ops-admin", "--data-dir", data, "--role", "admin",
                      "--secret", "secret-123", NULL);
    nstest_server_t srv;
    assert_int_equal(nstest_server_start(&srv, dir, NULL), 0); /* authMode off by default */
    assert_true(nstest_log_wait(&srv, "authMode=off", 5000));
    assert_true(nstest_log_count(&srv, "WARN") > 0);
    nstest_server_stop(&srv, SIGKILL);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pruned_by_sequence_not_clock),
        cmocka_unit_test(test_unwritable_backup_dir),
        cmocka_unit_test(test_users_with_auth_off_warn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
