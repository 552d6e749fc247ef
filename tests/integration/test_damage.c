/* test_damage.c - damaged data pages, table by table. A store is
 * filled through the real namesrvd (every table holds records), stopped,
 * and for each table a copy of it gets that table's root page overwritten
 * (the meta pages stay intact, so LMDB opens it without complaint). Then:
 *   - `namesrvctl verify` reports "store damaged in table <it>" and exits 4
 *     (it used to die of SIGSEGV inside liblmdb, or say "consistent" for the
 *     tables it did not read, such as the audit history);
 *   - namesrvd refuses to serve it (verifyOnStart): exit 4, the table and
 *     `namesrvctl recover` named in its log (it used to start, serve, and die
 *     of SIGSEGV on the first registration or KV listing).
 * A page below a root (test_damage_found_while_serving) is found by the
 * full walk that runs while namesrvd already serves: it stops with exit 4.
 * (nstest_damage_table finds the root page the way LMDB does.)
 * Every other namesrvctl command that opens the store says the same, exit 4
 * (the quick part of verify's check runs first, in a child: they used to
 * die of SIGSEGV or SIGBUS). A data.mdb cut short
 * (test_truncated_store_every_tool) is refused by every offline tool with
 * exit 4 and verify's words, never a SIGBUS, and by
 * namesrvd with exit 4; a directory where data.mdb should be is a usage
 * problem, exit 5 everywhere. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_store.h"
#include "nstest_admin.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/model.h"

static void copy_file(const char *from, const char *to)
{
    uint8_t *d = NULL;
    size_t n = 0;
    assert_int_equal(nstest_read_file(from, &d, &n), 0);
    int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, d, n), (ssize_t)n);
    close(fd);
    free(d);
}

/* A store with records in every table, made by a real server. */
static char *make_store_n(int n_topics)
{
    nstest_server_t srv;
    char *dir = nstest_tmpdir("damage-src");
    assert_non_null(dir);
    assert_int_equal(nstest_server_start(&srv, dir, NULL), 0);
    ns_client_t *c = nstest_connect(&srv);
    ns_topic_config_t *t = calloc((size_t)n_topics, sizeof *t);
    char(*names)[16] = calloc((size_t)n_topics, sizeof *names);
    assert_true(t && names);
    for (int i = 0; i < n_topics; i++) {
        snprintf(names[i], sizeof names[i], "DamTopic%d", i % 100000);
        t[i] = (ns_topic_config_t){names[i], 4, 4, 6, 0};
    }
    nstest_register_topics(c, "Dam", "dam-b", "10.0.5.1:10911", "10.0.5.1:10912", t,
                           (size_t)n_topics);
    nstest_put_keys(c, "DamNs", "key", 0, 20, "v");
    free(t);
    free(names);
    nstest_server_stop(&srv, SIGKILL); /* the broker stays stored */
    ns_client_close(c);
    return dir;
}

static char *make_store(void)
{
    return make_store_n(40);
}

/* Every namesrvctl command that opens a store, with its arguments after
 * "--data-dir D" (NULL-terminated rows). */
static const char *const tool_cmds[][8] = {
    {"stat", NULL},
    {"stat", "--json", NULL},
    {"dump", NULL},
    {"audit", NULL},
    {"audit", "--admin", NULL},
    {"export-kvconfig", NULL},
    {"user", "list", NULL},
    {"user", "add", "ak-trunc", "--role", "client", "--secret", "secret-123", NULL},
    {"prune-groups", NULL},
    {"prune-groups", "--dry-run", NULL},
    {"import-kvconfig", "@KV", NULL},
    {"restore", "--replace", "-i", "@DUMP", NULL},
    {"backup", "-o", "@OUT", NULL},
    {"verify", NULL},
};

/* Runs every row of tool_cmds on data; each must exit want with needle in
 * its output. @KV, @DUMP and @OUT stand for files under dir. */
static void every_tool(const char *dir, const char *data, int want, const char *needle,
                       const char *what)
{
    char kv[4400], dump[4400], outdir[4400];
    snprintf(kv, sizeof kv, "%s/kv.json", dir);
    snprintf(dump, sizeof dump, "%s/dump.json", dir);
    snprintf(outdir, sizeof outdir, "%s/bk-out", dir);
    for (size_t i = 0; i < sizeof tool_cmds / sizeof tool_cmds[0]; i++) {
        const char *a[10] = {NULL};
        int n = 0;
        for (int j = 0; tool_cmds[i][j]; j++) {
            const char *arg = tool_cmds[i][j];
            a[n++] = strcmp(arg, "@KV") == 0     ? kv
                     : strcmp(arg, "@DUMP") == 0 ? dump
                     : strcmp(arg, "@OUT") == 0  ? outdir
                                                 : arg;
        }
        char *out = NULL;
        int rc = nstest_ctl(60000, &out, a[0], "--data-dir", data, a[1], a[2], a[3], a[4], a[5],
                            a[6], a[7], NULL);
        printf("# %s: namesrvctl %s %s: exit %d\n", what, a[0], a[1] ? a[1] : "", rc);
        if (rc != want || (needle && strstr(out, needle) == NULL))
            fail_msg("%s: namesrvctl %s %s exited %d (want %d, -1 = killed by a signal), "
                     "output:\n%s",
                     what, a[0], a[1] ? a[1] : "", rc, want, out);
        free(out);
    }
}

/* The inputs every_tool's writers read, made from the whole store under
 * src/data: src/kv.json and src/dump.json. */
static void make_inputs(const char *src)
{
    char from[4300], kv[4300], dump[4300];
    snprintf(from, sizeof from, "%s/data", src);
    snprintf(kv, sizeof kv, "%s/kv.json", src);
    nstest_write_text(kv, "{\"configTable\":{\"T\":{\"k\":\"v\"}}}\n");
    snprintf(dump, sizeof dump, "%s/dump.json", src);
    nstest_ctl_expect(0, NULL, "dump", "--data-dir", from, "-o", dump, NULL);
}

static void damage_one(const char *src, const char *table)
{
    char from[4200], dir[4200], data[4300], file[4400];
    snprintf(from, sizeof from, "%s/data/data.mdb", src);
    char *tmp = nstest_tmpdir("damage");
    snprintf(dir, sizeof dir, "%s", tmp);
    snprintf(data, sizeof data, "%s/data", dir);
    assert_int_equal(mkdir(data, 0755), 0);
    snprintf(file, sizeof file, "%s/data.mdb", data);
    copy_file(from, file);

    if (nstest_damage_table(file, table) != 0)
        fail_msg("table %s has no root page in the test store", table);

    char *out = NULL;
    int rc = nstest_ctl(60000, &out, "verify", "--data-dir", data, NULL);
    char want[128];
    snprintf(want, sizeof want, "store damaged in table %s", table);
    printf("# %-14s namesrvctl verify: exit %d: %s", table, rc, out ? out : "\n");
    NSTEST_EXPECT_RC(rc, 4, out);
    NSTEST_EXPECT_IN(out, want);
    free(out);
    /* every other command too, in verify's words, instead of a crash */
    every_tool(src, data, 4, want, table);

    /* the server refuses it, naming the table and the way out */
    nstest_server_t srv;
    const char *args[] = {NULL};
    int started = nstest_server_start(&srv, dir, args);
    if (started == 0) {
        nstest_server_stop(&srv, SIGKILL);
        fail_msg("namesrvd served a store damaged in table %s", table);
    }
    char logp[4300];
    snprintf(logp, sizeof logp, "%s/namesrvd.log", dir);
    uint8_t *log = NULL;
    size_t ln = 0;
    assert_int_equal(nstest_read_file(logp, &log, &ln), 0);
    char want2[128];
    snprintf(want2, sizeof want2, "damaged in table %s", table);
    if (strstr((char *)log, want2) == NULL || strstr((char *)log, "namesrvctl recover") == NULL)
        fail_msg("namesrvd log does not name the damage:\n%s", (char *)log);
    free(log);
    nstest_rmtree(tmp);
    free(tmp);
}

/* A copy of src's store in a new directory (returned, the caller frees). */
static char *copy_store(const char *src, char *file, size_t n)
{
    char from[4200], data[4300];
    snprintf(from, sizeof from, "%s/data/data.mdb", src);
    char *dir = nstest_tmpdir("damage-deep");
    snprintf(data, sizeof data, "%s/data", dir);
    assert_int_equal(mkdir(data, 0755), 0);
    snprintf(file, n, "%s/data.mdb", data);
    copy_file(from, file);
    return dir;
}

static char *read_log(const char *dir)
{
    char logp[4300];
    snprintf(logp, sizeof logp, "%s/namesrvd.log", dir);
    uint8_t *log = NULL;
    size_t ln = 0;
    assert_int_equal(nstest_read_file(logp, &log, &ln), 0);
    return (char *)log;
}

/* Damage below a table's root: the quick check at start passes (it reads
 * roots and edges), namesrvd listens at once, and the full walk running
 * beside it finds the damage: namesrvd stops with exit 4 naming the table
 * and `namesrvctl recover`. With verifyOnStartBlocking it never listens. */
static void test_damage_found_while_serving(void **state)
{
    (void)state;
    char *src = make_store_n(600);
    char file[4400];
    char *dir = copy_store(src, file, sizeof file);
    if (nstest_damage_inner_page(file, "routes") != 0)
        fail_msg("the routes table of the test store has no branch root of 3 children");

    nstest_server_t srv;
    const char *args[] = {"--logLevel=info", NULL};
    if (nstest_server_start(&srv, dir, args) != 0)
        fail_msg("namesrvd did not listen before the full check:\n%s", read_log(dir));
    int status = -1;
    for (int i = 0; i < 3000 && status == -1; i++) { /* 30 s */
        if (waitpid(srv.pid, &status, WNOHANG) != srv.pid) {
            status = -1;
            nstest_sleep_ms(10);
        }
    }
    if (status == -1) {
        nstest_server_stop(&srv, SIGKILL);
        fail_msg("namesrvd still serves a store damaged in table routes");
    }
    char *log = read_log(dir);
    printf("# background check: exit status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 4)
        fail_msg("namesrvd ended with status 0x%x, not exit 4:\n%s", status, log);
    if (strstr(log, "quick check passed") == NULL ||
        strstr(log, "damaged in table routes") == NULL || strstr(log, "namesrvctl recover") == NULL)
        fail_msg("namesrvd log does not say what happened:\n%s", log);
    free(log);
    nstest_rmtree(dir);
    free(dir);

    /* the old way: nothing listens until the whole store is read */
    dir = copy_store(src, file, sizeof file);
    assert_int_equal(nstest_damage_inner_page(file, "routes"), 0);
    const char *blocking[] = {"--verifyOnStartBlocking=true", NULL};
    if (nstest_server_start(&srv, dir, blocking) == 0) {
        nstest_server_stop(&srv, SIGKILL);
        fail_msg("namesrvd listened with verifyOnStartBlocking on a damaged store");
    }
    log = read_log(dir);
    if (strstr(log, "damaged in table routes") == NULL)
        fail_msg("namesrvd log does not name the damage:\n%s", log);
    free(log);
    nstest_rmtree(dir);
    free(dir);
    nstest_rmtree(src);
    free(src);
}

static void test_damaged_tables(void **state)
{
    (void)state;
    char *src = make_store();
    /* the store is fine before: both accept it */
    char p[4200], *out = NULL;
    snprintf(p, sizeof p, "%s/data", src);
    int rc = nstest_ctl(60000, &out, "verify", "--data-dir", p, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    make_inputs(src);
    static const char *const tables[] = {"meta",   "kvns", "kv",     "clusters",
                                         "groups", "live", "queues", "broker_topics",
                                         "routes", "audit"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        damage_one(src, tables[i]);
    nstest_rmtree(src);
    free(src);
}

static void test_truncated_store_every_tool(void **state)
{
    (void)state;
    char *src = make_store_n(600);
    char from[4300], *out = NULL;
    snprintf(from, sizeof from, "%s/data", src);
    make_inputs(src); /* for the writers, taken while the store is whole */
    char file[4400];
    snprintf(file, sizeof file, "%s/data.mdb", from);
    struct stat sb;
    assert_int_equal(stat(file, &sb), 0);
    /* the last: one page in use short (pages past it may be free: whole) */
    off_t sizes[] = {8192, 12288, sb.st_size / 2, (off_t)(nstest_free_tail_start(from) - 1) * 4096};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        char dir[4300], data[4400], what[64];
        snprintf(dir, sizeof dir, "%s", src);
        char *tmp = nstest_tmpdir("trunc");
        snprintf(data, sizeof data, "%s/data", tmp);
        assert_int_equal(mkdir(data, 0700), 0);
        char to[4500];
        snprintf(to, sizeof to, "%s/data.mdb", data);
        copy_file(file, to);
        assert_int_equal(truncate(to, sizes[k]), 0);
        snprintf(what, sizeof what, "cut at %lld of %lld", (long long)sizes[k],
                 (long long)sb.st_size);
        every_tool(dir, data, 4, "the file was cut short", what);
        /* verify's words, the same for every tool */
        int rc = nstest_ctl(60000, &out, "stat", "--data-dir", data, NULL);
        NSTEST_EXPECT_IN(out, "store damaged in table meta");
        free(out);
        (void)rc;
        nstest_server_t srv;
        if (nstest_server_start(&srv, tmp, NULL) == 0) {
            nstest_server_stop(&srv, SIGKILL);
            fail_msg("namesrvd served a store %s", what);
        }
        char *log = read_log(tmp);
        if (strstr(log, "the file was cut short") == NULL)
            fail_msg("namesrvd log does not say the store was cut short:\n%s", log);
        free(log);
        nstest_rmtree(tmp);
        free(tmp);
    }

    /* a directory where data.mdb should be: a wrong path, exit 5 */
    char *tmp = nstest_tmpdir("trunc-dir");
    char data[4300], sub[4400];
    snprintf(data, sizeof data, "%s/data", tmp);
    snprintf(sub, sizeof sub, "%s/data.mdb", data);
    assert_int_equal(mkdir(data, 0700), 0);
    assert_int_equal(mkdir(sub, 0700), 0);
    every_tool(src, data, 5, "is a directory, not a store file", "data.mdb a directory");
    char dd[4400];
    snprintf(dd, sizeof dd, "--dataDir=%s", data);
    const char *args[] = {dd, "--listenPort=0", NULL};
    char *err = NULL;
    int rc = nstest_run(NS_NAMESRVD_PATH, args, &err, 10000);
    printf("# data.mdb a directory: namesrvd exit %d\n", rc);
    if (rc != 5 || strstr(err, "is a directory") == NULL)
        fail_msg("namesrvd exited %d (want 5):\n%s", rc, err);
    free(err);
    nstest_rmtree(tmp);
    free(tmp);
    nstest_rmtree(src);
    free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncated_store_every_tool),
        cmocka_unit_test(test_damaged_tables),
        cmocka_unit_test(test_damage_found_while_serving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
