/* test_recover_crash.c - `namesrvctl recover` only recovers, and a recover
 * killed at any point is completed or undone by the next run, through the
 * real binary:
 *
 *   - a store that verifies good is refused (exit 1) and left as it is;
 *     --force with no good backup keeps it; --force with one swaps the
 *     backup in and keeps the old store aside (D.replaced-N);
 *   - every backup of the backup directory counts, whatever its name, and
 *     the newest by sequence wins (not the name, not the clock);
 *   - killed (SIGKILL, the nsfault shim's NSFAULT_KILL_AT) before each of
 *     its file system calls in turn: D is a directory with a store after
 *     every kill, the next run exits 0, and then D verifies, holds the
 *     backup's KV config, the damaged store is kept aside, and no journal
 *     or half-built store is left behind.
 *   - namesrvctl backup killed at every step, or on a disk whose fsyncs
 *     fail, never leaves a partial store under its output name.
 * The stores are written by namesrvctl itself (import-kvconfig, user add,
 * backup): the same files namesrvd writes. */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"

static char *join(const char *a, const char *b)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", a, b) > 0);
    return p;
}

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool exists(const char *p)
{
    struct stat sb;
    return lstat(p, &sb) == 0;
}

/* Imports a kvConfig.json holding namespace NS with keys k0..k(n-1) (and
 * the key `extra` when not NULL) into the store in data. */
static void put_kv(const char *dir, const char *data, int n, const char *extra)
{
    char *file = join(dir, "kv.json");
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_buf_append_str(&b, "{\"configTable\":{\"NS\":{"), 0);
    for (int i = 0; i < n; i++)
        assert_int_equal(ns_buf_printf(&b, "%s\"k%d\":\"value-%d\"", i ? "," : "", i, i), 0);
    if (extra)
        assert_int_equal(ns_buf_printf(&b, ",\"%s\":\"later\"", extra), 0);
    assert_int_equal(ns_buf_append_str(&b, "}}}\n"), 0);
    assert_int_equal(ns_buf_append_u8(&b, 0), 0);
    nstest_write_text(file, (const char *)b.data);
    nstest_ctl_expect(0, "imported", "import-kvconfig", "--data-dir", data, file, NULL);
    ns_buf_free(&b);
    free(file);
}

/* The KV config of the store in data as export-kvconfig prints it; caller
 * frees. */
static char *kv_text(const char *data)
{
    char *out = NULL;
    int rc = nstest_ctl(60000, &out, "export-kvconfig", "--data-dir", data, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    return out;
}

static void truncate_store(const char *data, off_t size)
{
    char *file = join(data, "data.mdb");
    assert_int_equal(truncate(file, size), 0);
    free(file);
}

static void sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    assert_int_equal(system(cmd), 0);
}

static void test_refuses_a_good_store(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("rec-good"), *data = join(dir, "data"), *bdir = join(dir, "bk");
    char *out = NULL;
    put_kv(dir, data, 10, NULL);
    nstest_ctl_expect(0, NULL, "user", "add", "admin1", "--data-dir", data, "--role", "admin",
                      "--secret", "secret-123", NULL);
    char *before = kv_text(data);

    /* good, no backups: refused, and nothing moved (the old binary moved
     * it aside and left an empty store with only the KV config) */
    int rc = nstest_ctl(60000, &out, "recover", "--data-dir", data, "--backup-dir", bdir, NULL);
    printf("# recover of a good store: exit %d: %s", rc, out);
    NSTEST_EXPECT_RC(rc, 1, out);
    NSTEST_EXPECT_IN(out, "checks good");
    free(out);
    char *aside = join(dir, "data.damaged-1");
    assert_false(exists(aside));
    nstest_ctl_expect(0, "admin1", "user", "list", "--data-dir", data, NULL);

    /* --force with no good backup: still kept */
    rc = nstest_ctl(60000, &out, "recover", "--data-dir", data, "--backup-dir", bdir, "--force",
                    NULL);
    NSTEST_EXPECT_RC(rc, 5, out);
    NSTEST_EXPECT_IN(out, "kept as it is");
    free(out);
    nstest_ctl_expect(0, "admin1", "user", "list", "--data-dir", data, NULL);

    /* --force with a backup: the backup comes in, the store goes aside */
    assert_int_equal(mkdir(bdir, 0700), 0);
    char *b1 = join(bdir, "b1");
    nstest_ctl_expect(0, "sequence 1", "backup", "--data-dir", data, "-o", b1, NULL);
    put_kv(dir, data, 10, "after-backup");
    nstest_ctl_expect(0, "recovered", "recover", "--data-dir", data, "--backup-dir", bdir,
                      "--force", NULL);
    char *replaced = join(dir, "data.replaced-1");
    assert_true(is_dir(replaced));
    char *now = kv_text(data), *kept = kv_text(replaced);
    assert_string_equal(now, before);
    assert_non_null(strstr(kept, "after-backup"));
    nstest_ctl_expect(0, "consistent", "verify", "--data-dir", data, NULL);

    free(now);
    free(kept);
    free(replaced);
    free(b1);
    free(aside);
    free(before);
    nstest_rmtree(dir);
    free(bdir);
    free(data);
    free(dir);
}

static void test_newest_by_sequence_whatever_the_name(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("rec-seq"), *data = join(dir, "data");
    char *bdir = join(dir, "data.backups");
    assert_int_equal(mkdir(bdir, 0700), 0);
    put_kv(dir, data, 5, NULL);
    /* the older backup gets the name that sorts last, the newer one a
     * name recover used to skip (not "backup-*") */
    char *old_b = join(bdir, "zzz-first"), *new_b = join(bdir, "manual copy");
    nstest_ctl_expect(0, "sequence 1", "backup", "--data-dir", data, "-o", old_b, NULL);
    put_kv(dir, data, 5, "second");
    nstest_ctl_expect(0, "sequence 2", "backup", "--data-dir", data, "-o", new_b, NULL);
    /* a half-written one (never renamed) is never taken, however new */
    char *tmp_b = join(bdir, "newest.tmp");
    sh("cp -a '%s' '%s' && printf 'namesrv-backup 1\\nsequence 9\\n' > '%s/BACKUP-INFO'", new_b,
       tmp_b, tmp_b);
    truncate_store(data, 8192);
    char *out = NULL;
    int rc = nstest_ctl(60000, &out, "recover", "--data-dir", data, NULL);
    printf("# recover: exit %d: %s", rc, out);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "manual copy (sequence 2");
    free(out);
    char *kv = kv_text(data);
    assert_non_null(strstr(kv, "second"));
    free(kv);
    free(tmp_b);
    free(old_b);
    free(new_b);
    nstest_rmtree(dir);
    free(bdir);
    free(data);
    free(dir);
}

/* Names in dir starting with prefix. */
static int count_prefixed(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

/* Kills recover before each of its file system calls in turn; with
 * no_exchange, on a file system without RENAME_EXCHANGE (the shim refuses
 * it), where the swap is two renames and D is missing between them: the
 * next run must still complete it. */
static void killed_at_every_step(bool no_exchange)
{
    char *dir = nstest_tmpdir("rec-kill"), *data = join(dir, "data");
    char *bdir = join(dir, "data.backups"), *pristine = join(dir, "pristine.tar");
    char *journal = join(dir, "data.recover"), *staging = join(dir, "data.recover-new");
    char *aside = join(dir, "data.damaged-1");
    assert_int_equal(mkdir(bdir, 0700), 0);
    put_kv(dir, data, 200, NULL);
    char *b = join(bdir, "nightly");
    nstest_ctl_expect(0, NULL, "backup", "--data-dir", data, "-o", b, NULL);
    char *want = kv_text(data);
    put_kv(dir, data, 200, "lost-with-the-damage");
    truncate_store(data, 8192);
    sh("cd '%s' && tar cf pristine.tar data data.backups", dir);

    int kills = 0, undone = 0, completed = 0, gaps = 0;
    for (int n = 1; n < 200; n++) {
        char at[16], *out = NULL;
        sh("cd '%s' && rm -rf data data.* && tar xf pristine.tar", dir);
        snprintf(at, sizeof at, "%d", n);
        const char *env[] = {"NSFAULT_KILL_AT", at, "NSFAULT_NO_RENAME_EXCHANGE",
                             no_exchange ? "1" : "0", NULL};
        nstest_fault_env_set(env);
        int rc = nstest_ctl(60000, &out, "recover", "--data-dir", data, NULL);
        nstest_fault_env_clear(env);
        if (rc == 0) { /* ran to the end: every step was killed once */
            free(out);
            break;
        }
        if (rc != -1)
            fail_msg("recover with a kill at call %d exited %d:\n%s", n, rc, out);
        kills++;
        /* the old binary left no data directory at 8 of its 16 points */
        bool missing = !is_dir(data);
        if (missing && !no_exchange)
            fail_msg("no data directory after a kill at call %d:\n%s", n, out);
        gaps += missing;
        if (exists(journal)) { /* namesrvd refuses until recover completes */
            char *err = NULL, dd[4300];
            snprintf(dd, sizeof dd, "--dataDir=%s", data);
            const char *args[] = {dd, "--listenPort=0", NULL};
            int src = nstest_run(NS_NAMESRVD_PATH, args, &err, 10000);
            if (src != 5 || strstr(err, "was interrupted") == NULL)
                fail_msg("namesrvd on an interrupted recover exited %d:\n%s", src, err);
            free(err);
            if (missing && exists(data))
                fail_msg("namesrvd made a data directory while a recover was interrupted");
        }
        const char *call = strstr(out, "nsfault: killed at");
        printf("# kill %d: %.*s", n, call ? (int)strcspn(call, "\n") + 1 : 0, call ? call : "");
        free(out);
        rc = nstest_ctl(60000, &out, "recover", "--data-dir", data, NULL);
        /* killed at its last sync, the previous run had done everything:
         * the store is the recovered one and checks good */
        bool was_done = rc == 1 && strstr(out, "checks good") != NULL;
        if (rc != 0 && !was_done)
            fail_msg("re-run after a kill at call %d exited %d:\n%s", n, rc, out);
        undone += strstr(out, "undoing it") != NULL;
        completed += strstr(out, "completing it") != NULL;
        free(out);
        nstest_ctl_expect(0, "consistent", "verify", "--data-dir", data, NULL);
        char *kv = kv_text(data);
        if (strcmp(kv, want) != 0)
            fail_msg("after a kill at call %d the KV config is not the backup's:\n%s", n, kv);
        free(kv);
        assert_false(exists(journal));
        assert_false(exists(staging));
        assert_true(is_dir(aside)); /* the damaged store, kept */
        assert_int_equal(count_prefixed(dir, "data.damaged-"), 1);
    }
    printf("# recover%s killed at %d points: %d undone, %d completed by the next run, %d "
           "without a data directory\n",
           no_exchange ? " (no RENAME_EXCHANGE)" : "", kills, undone, completed, gaps);
    assert_true(kills >= 10);
    assert_true(undone > 0 && completed > 0);
    /* and a run that was not killed at all ends the same way */
    char *kv = kv_text(data);
    assert_string_equal(kv, want);
    free(kv);
    assert_true(is_dir(aside));
    assert_false(exists(journal));
    free(b);
    free(want);
    free(aside);
    free(staging);
    free(journal);
    nstest_rmtree(dir);
    free(pristine);
    free(bdir);
    free(data);
    free(dir);
}

static void test_killed_at_every_step(void **state)
{
    (void)state;
    killed_at_every_step(false);
}

static void test_killed_at_every_step_no_exchange(void **state)
{
    (void)state;
    killed_at_every_step(true);
}

/* namesrvctl backup -o OUT killed before each of its file system calls,
 * and with every fsync failing (as a full disk fails them): OUT is never a
 * partial store. Either it does not exist, or the backup finished and OUT
 * verifies and holds the KV config (the old binary wrote straight into OUT:
 * a partial data.mdb and a lock.mdb that looked like a data directory). */
static void test_backup_killed_at_every_step(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("bk-kill"), *data = join(dir, "data"), *out_dir = join(dir, "out");
    char *fail_file = join(dir, "fsync-fails");
    put_kv(dir, data, 300, NULL);
    char *want = kv_text(data);
    int kills = 0, n = 1;
    for (; n < 200; n++) {
        char at[16], *out = NULL;
        nstest_rmtree(out_dir);
        sh("rm -rf '%s.tmp'", out_dir);
        snprintf(at, sizeof at, "%d", n);
        const char *env[] = {"NSFAULT_KILL_AT", at, NULL};
        nstest_fault_env_set(env);
        int rc = nstest_ctl(60000, &out, "backup", "--data-dir", data, "-o", out_dir, NULL);
        nstest_fault_env_clear(env);
        free(out);
        if (rc == 0)
            break;
        assert_int_equal(rc, -1); /* killed */
        kills++;
        if (exists(out_dir)) { /* only once it was complete: it verifies */
            nstest_ctl_expect(0, "consistent", "verify", "--data-dir", out_dir, NULL);
            char *kv = kv_text(out_dir);
            assert_string_equal(kv, want);
            free(kv);
        }
    }
    printf("# namesrvctl backup killed at %d file system calls: never a partial OUT\n", kills);

    /* killed in the middle of the copy itself (its writes are no file
     * system calls the shim counts): a store of 40 MB, SIGKILL after
     * 100 ms, 200 ms, ... */
    char *big = join(dir, "big"), *kvf = join(dir, "big.json");
    FILE *f = fopen(kvf, "w");
    assert_non_null(f);
    fprintf(f, "{\"configTable\":{\"big\":{");
    for (int i = 0; i < 4000; i++) {
        fprintf(f, "%s\"k%d\":\"", i ? "," : "", i);
        for (int j = 0; j < 10000; j++)
            fputc('a' + (i + j) % 26, f);
        fputc('"', f);
    }
    fprintf(f, "}}}\n");
    fclose(f);
    nstest_ctl_expect(0, "imported", "import-kvconfig", "--data-dir", big, kvf, NULL);
    int mid = 0;
    for (int ms = 100; ms <= 1500; ms += 100) {
        char *o = NULL;
        nstest_rmtree(out_dir);
        sh("rm -rf '%s.tmp'", out_dir);
        int rc = nstest_ctl(ms, &o, "backup", "--data-dir", big, "-o", out_dir, NULL);
        free(o);
        mid += rc == -1;
        if (rc == -1 && exists(out_dir))
            nstest_ctl_expect(0, "consistent", "verify", "--data-dir", out_dir, NULL);
    }
    printf("# namesrvctl backup of 40 MB killed %d times during the copy: never a partial OUT\n",
           mid);
    assert_true(kills >= 5 && mid > 0);
    free(kvf);
    free(big);
    /* a disk that fails every fsync: the backup fails and leaves nothing */
    nstest_rmtree(out_dir);
    nstest_write_text(fail_file, "x\n");
    const char *fenv[] = {"NSFAULT_FSYNC_FAIL_FILE", fail_file, NULL};
    nstest_fault_env_set(fenv);
    char *out = NULL;
    int rc = nstest_ctl(60000, &out, "backup", "--data-dir", data, "-o", out_dir, NULL);
    nstest_fault_env_clear(fenv);
    printf("# backup with failing fsyncs: exit %d\n", rc);
    NSTEST_EXPECT_RC(rc, 5, out);
    free(out);
    assert_false(exists(out_dir));
    char *tmp = NULL;
    assert_true(asprintf(&tmp, "%s.tmp", out_dir) > 0);
    assert_false(exists(tmp));
    free(tmp);
    free(want);
    free(fail_file);
    free(out_dir);
    nstest_rmtree(dir);
    free(data);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backup_killed_at_every_step),
        cmocka_unit_test(test_refuses_a_good_store),
        cmocka_unit_test(test_newest_by_sequence_whatever_the_name),
        cmocka_unit_test(test_killed_at_every_step),
        cmocka_unit_test(test_killed_at_every_step_no_exchange),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
