/* test_damage.c - damaged data pages, table by table (issue 14). A store is
 * filled through the real namesrvd (every table holds records), stopped,
 * and for each table a copy of it gets that table's root page overwritten
 * (the meta pages stay intact, so LMDB opens it without complaint). Then:
 *   - `namesrvctl verify` reports "store damaged in table <it>" and exits 4
 *     (it used to die of SIGSEGV inside liblmdb, or say "consistent" for the
 *     tables it did not read, such as the audit history);
 *   - namesrvd refuses to serve it (verifyOnStart): exit 4, the table and
 *     `namesrvctl recover` named in its log (it used to start, serve, and die
 *     of SIGSEGV on the first registration or KV listing).
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
static char *make_store(void)
{
    nstest_server_t srv;
    char *dir = nstest_tmpdir("damage-src");
    assert_non_null(dir);
    assert_int_equal(nstest_server_start(&srv, dir, NULL), 0);
    ns_client_t *c = nstest_connect(&srv);
    ns_topic_config_t t[40];
    char names[40][16];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "DamTopic%d", i);
        t[i] = (ns_topic_config_t){names[i], 4, 4, 6, 0};
    }
    nstest_register_topics(c, "Dam", "dam-b", "10.0.5.1:10911", "10.0.5.1:10912", t, 40);
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof key, "key%d", i);
        const char *p[] = {"namespace", "DamNs", "key", key, "value", "v", NULL};
        assert_int_equal(nstest_call_code(c, NS_REQ_PUT_KV_CONFIG, p, NULL, 0, 10000),
                         NS_RSP_SUCCESS);
    }
    nstest_server_stop(&srv, SIGKILL); /* the broker stays stored */
    ns_client_close(c);
    return dir;
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
