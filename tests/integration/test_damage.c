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
 * (nstest_damage_table finds the root page the way LMDB does.) */
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
    static const char *const tables[] = {"meta",   "kvns", "kv",     "clusters",
                                         "groups", "live", "queues", "broker_topics",
                                         "routes", "audit"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        damage_one(src, tables[i]);
    nstest_rmtree(src);
    free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_damaged_tables),
        cmocka_unit_test(test_damage_found_while_serving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
