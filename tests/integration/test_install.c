/* test_install.c - `cmake --install` into a temporary prefix puts what an
 * operator needs where it belongs, and the INSTALLED binaries run: namesrvd
 * starts from the installed default settings file and serves, namesrvctl
 * talks to it; the systemd unit names the installed paths. */
#define _GNU_SOURCE
#include <fcntl.h>
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

#include <cmocka.h>

#include "nstest.h"

static void expect_file(const char *prefix, const char *rel, mode_t exec_bits)
{
    char path[4300];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", prefix, rel);
    if (stat(path, &st) != 0)
        fail_msg("not installed: %s", path);
    if (exec_bits && (st.st_mode & exec_bits) == 0)
        fail_msg("not executable: %s", path);
}

/* Runs sh -c cmd, its stdout+stderr into *out; returns the exit code. */
static int run(const char *cmd, char **out, const char *dir)
{
    char file[4300], full[9000 + sizeof file + 16]; /* cmd (< 9000), " > '", file, "' 2>&1" */
    snprintf(file, sizeof file, "%s/run.out", dir);
    snprintf(full, sizeof full, "%s > '%s' 2>&1", cmd, file);
    int st = system(full);
    *out = nstest_read_text(file);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_install_and_run(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("install");
    char prefix[4200], cmd[9000], conf[4300], data[4300], portfile[4300], log[4300];
    char *out = NULL;
    snprintf(prefix, sizeof prefix, "%s/prefix", dir);
    snprintf(cmd, sizeof cmd, "'%s' --install '%s' --prefix '%s'", NS_CMAKE_COMMAND, NS_BUILD_DIR,
             prefix);
    int rc = run(cmd, &out, dir);
    if (rc != 0)
        fail_msg("cmake --install failed (%d):\n%s", rc, out ? out : "");
    free(out);

    expect_file(prefix, "bin/namesrvd", 0111);
    expect_file(prefix, "bin/namesrvctl", 0111);
    expect_file(prefix, "share/man/man8/namesrvd.8.gz", 0);
    expect_file(prefix, "share/man/man8/namesrvctl.8.gz", 0);
    expect_file(prefix, "lib/systemd/system/namesrvd.service", 0);
    expect_file(prefix, "etc/namesrv/namesrv.properties", 0);
    expect_file(prefix, "share/namesrv/namesrv.properties", 0);
    expect_file(prefix, "share/doc/namesrv/namesrvctl.md", 0);

    /* the manual's settings reference is the config table: every key that
     * namesrvd -p prints has its paragraph in the installed namesrvd.8 */
    snprintf(cmd, sizeof cmd, "gzip -dc '%s/share/man/man8/namesrvd.8.gz'", prefix);
    char *man = NULL, *keys = NULL;
    assert_int_equal(run(cmd, &man, dir), 0);
    snprintf(cmd, sizeof cmd, "'%s/bin/namesrvd' -p", prefix);
    assert_int_equal(run(cmd, &keys, dir), 0);
    size_t n_keys = 0;
    for (char *line = keys, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        char *eq = strchr(line, '=');
        if (eq == NULL || (nl && eq > nl))
            continue;
        char want_key[256];
        snprintf(want_key, sizeof want_key, "\n.B %.*s=", (int)(eq - line), line);
        if (strstr(man, want_key) == NULL)
            fail_msg("namesrvd.8 has no paragraph for '%.*s'", (int)(eq - line), line);
        n_keys++;
    }
    assert_true(n_keys > 50);
    NSTEST_EXPECT_IN(man, "\n.B tls.test.mode.enable\n"); /* and the Java keys */
    free(man);
    free(keys);
    /* and namesrvctl.8 names every command namesrvctl's help lists */
    snprintf(cmd, sizeof cmd, "gzip -dc '%s/share/man/man8/namesrvctl.8.gz'", prefix);
    assert_int_equal(run(cmd, &man, dir), 0);
    snprintf(cmd, sizeof cmd, "'%s/bin/namesrvctl' help", prefix);
    assert_int_equal(run(cmd, &keys, dir), 0);
    size_t n_cmds = 0;
    for (char *line = keys, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        /* a command's line: two blanks and its name, its description below
         * indented by six */
        if (strncmp(line, "  ", 2) != 0 || line[2] < 'a' || line[2] > 'z' || nl == NULL ||
            strncmp(nl + 1, "      ", 6) != 0)
            continue;
        size_t len = strcspn(line + 2, " \n");
        char want_cmd[128];
        snprintf(want_cmd, sizeof want_cmd, "\n.B %.*s\n", (int)len, line + 2);
        if (strstr(man, want_cmd) == NULL)
            fail_msg("namesrvctl.8 has no paragraph for '%.*s'", (int)len, line + 2);
        n_cmds++;
    }
    assert_true(n_cmds >= 20);
    free(man);
    free(keys);

    /* the unit runs the installed binary on the installed settings */
    char unit_path[4300];
    snprintf(unit_path, sizeof unit_path, "%s/lib/systemd/system/namesrvd.service", prefix);
    char *unit = nstest_read_text(unit_path);
    char want[9000];
    snprintf(want, sizeof want, "ExecStart=%s/bin/namesrvd -c %s/etc/namesrv/namesrv.properties\n",
             prefix, prefix);
    NSTEST_EXPECT_IN(unit, want);
    NSTEST_EXPECT_IN(unit, "Type=notify\n");
    NSTEST_EXPECT_IN(unit, "WatchdogSec=");
    NSTEST_EXPECT_IN(unit, "KillSignal=SIGTERM\n");
    NSTEST_EXPECT_IN(unit, "User=namesrv\n");
    /* the service may write its default backupDir (<dataDir>.backups of the
     * installed dataDir /var/lib/namesrv): /var/lib itself is root's, and
     * under ProtectSystem=strict only the unit's own directories are
     * writable */
    char props_path[4300];
    snprintf(props_path, sizeof props_path, "%s/etc/namesrv/namesrv.properties", prefix);
    char *props = nstest_read_text(props_path);
    NSTEST_EXPECT_IN(props, "\ndataDir=/var/lib/namesrv\n");
    free(props);
    NSTEST_EXPECT_IN(unit, "StateDirectory=namesrv namesrv.backups\n");
    free(unit);

    /* the installed binaries */
    snprintf(cmd, sizeof cmd, "'%s/bin/namesrvd' --version", prefix);
    rc = run(cmd, &out, dir);
    assert_int_equal(rc, 0);
    NSTEST_EXPECT_IN(out, "store schema version 11");
    free(out);
    snprintf(cmd, sizeof cmd, "'%s/bin/namesrvctl' --version", prefix);
    rc = run(cmd, &out, dir);
    assert_int_equal(rc, 0);
    free(out);

    /* started from the installed settings (the package's paths overridden) */
    snprintf(conf, sizeof conf, "%s/etc/namesrv/namesrv.properties", prefix);
    snprintf(data, sizeof data, "--dataDir=%s/data", dir);
    snprintf(portfile, sizeof portfile, "%s/port", dir);
    snprintf(log, sizeof log, "%s/namesrvd.log", dir);
    char a_port[4400], a_bin[4300];
    snprintf(a_port, sizeof a_port, "--portFile=%s", portfile);
    snprintf(a_bin, sizeof a_bin, "%s/bin/namesrvd", prefix);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(a_bin, a_bin, "-c", conf, data, "--listenPort=0", "--bindAddress=127.0.0.1", a_port,
              (char *)NULL);
        _exit(127);
    }
    int port = 0;
    for (int i = 0; i < 1000 && port == 0; i++) {
        FILE *f = fopen(portfile, "r");
        if (f) {
            if (fscanf(f, "%d", &port) != 1)
                port = 0;
            fclose(f);
        }
        if (port == 0)
            nstest_sleep_ms(10);
    }
    if (port == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("the installed namesrvd did not start:\n%s", nstest_read_text(log));
    }
    snprintf(cmd, sizeof cmd, "'%s/bin/namesrvctl' kv put NS k v -n 127.0.0.1:%d", prefix, port);
    rc = run(cmd, &out, dir);
    if (rc != 0)
        fail_msg("installed namesrvctl failed (%d):\n%s", rc, out ? out : "");
    free(out);
    /* GET_NAMESRV_CONFIG reports the settings file in use, as Java does with -c */
    snprintf(cmd, sizeof cmd, "'%s/bin/namesrvctl' config get -n 127.0.0.1:%d", prefix, port);
    rc = run(cmd, &out, dir);
    assert_int_equal(rc, 0);
    snprintf(want, sizeof want, "configStorePath=%s\n", conf);
    NSTEST_EXPECT_IN(out, want);
    free(out);
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    out = nstest_read_text(log);
    NSTEST_EXPECT_IN(out, "The Name Server boot success.");
    NSTEST_EXPECT_IN(out, "KV config put");
    free(out);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install_and_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
