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
 * The root page is found the way LMDB finds it: the newer meta page names
 * the main directory's root, whose leaf nodes hold each table's MDB_db
 * record (md_root at byte 40 of its 48). */
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
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/model.h"

#define PAGE 4096

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* Root page of the named table in the LMDB file f (n bytes), or 0. Layout
 * (lmdb 0.9, 64-bit): page header 16 bytes (pgno 8, pad 2, flags 2, lower 2,
 * upper 2); meta: magic 4, version 4, address 8, mapsize 8, dbs[2] of 48,
 * last_pg 8, txnid 8; leaf node: lo 2, hi 2, flags 2, ksize 2, key, data. */
static uint64_t table_root(const uint8_t *f, size_t n, const char *name)
{
    const uint8_t *m0 = f + 16, *m1 = f + PAGE + 16;
    const uint8_t *m = le64(m1 + 24 + 96 + 8) > le64(m0 + 24 + 96 + 8) ? m1 : m0;
    uint64_t main_root = le64(m + 24 + 48 + 40);
    if ((main_root + 1) * PAGE > n)
        return 0;
    const uint8_t *pg = f + main_root * PAGE;
    uint16_t flags = le16(pg + 10), lower = le16(pg + 12);
    assert_true(flags & 0x02); /* P_LEAF: a handful of tables fit one page */
    for (size_t i = 0; i < ((size_t)lower - 16) / 2; i++) {
        const uint8_t *node = pg + le16(pg + 16 + 2 * i);
        uint16_t ksize = le16(node + 6);
        if (ksize == strlen(name) && memcmp(node + 8, name, ksize) == 0)
            return le64(node + 8 + ksize + 40);
    }
    return 0;
}

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
    ns_regbody_t b;
    memset(&b, 0, sizeof b);
    b.data_version.counter = 1;
    b.data_version.timestamp = 1700000000000LL;
    ns_topic_config_t t[40];
    char names[40][16];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "DamTopic%d", i);
        t[i] = (ns_topic_config_t){names[i], 4, 4, 6, 0};
    }
    b.topics = t;
    b.n_topics = 40;
    b.has_filter_server_list = true;
    ns_buf_t body = NS_BUF_INIT;
    assert_int_equal(ns_regbody_encode_json(&body, &b), NS_OK);
    const char *kv[] = {"brokerAddr",   "10.0.5.1:10911", "brokerId",    "0",
                        "brokerName",   "dam-b",          "clusterName", "Dam",
                        "haServerAddr", "10.0.5.1:10912", NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_REGISTER_BROKER, kv, body.data, body.len, 10000),
                     NS_RSP_SUCCESS);
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof key, "key%d", i);
        const char *p[] = {"namespace", "DamNs", "key", key, "value", "v", NULL};
        assert_int_equal(nstest_call_code(c, NS_REQ_PUT_KV_CONFIG, p, NULL, 0, 10000),
                         NS_RSP_SUCCESS);
    }
    ns_buf_free(&body);
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

    uint8_t *f = NULL;
    size_t n = 0;
    assert_int_equal(nstest_read_file(file, &f, &n), 0);
    uint64_t root = table_root(f, n, table);
    free(f);
    if (root == 0 || root == UINT64_MAX)
        fail_msg("table %s has no root page in the test store", table);
    /* garbage that still claims to be a branch page of many children */
    uint8_t junk[PAGE];
    for (int i = 0; i < PAGE; i++)
        junk[i] = (uint8_t)(0xA5 ^ (i * 31));
    junk[10] = 0x01; /* P_BRANCH */
    junk[11] = 0;
    int fd = open(file, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, junk + 8, PAGE - 8, (off_t)(root * PAGE + 8)), PAGE - 8);
    close(fd);

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
