/* test_kvimport.c - kvConfigPath: a Java NameServer's kvConfig.json is
 * imported into an empty store at namesrvd's first start, logged and
 * recorded in the admin trail, and never again: not after an admin deleted
 * what it brought, not into a store that already holds KV config. A file
 * namesrvd cannot read as a kvConfig.json stops the start with the file and
 * the first problem named, nothing written. Before, the file was skipped
 * with a generic "no effect" warning and its entries were silently lost. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/client.h"
#include "ns/codes.h"

typedef struct {
    nstest_fx_t fx;
    char kvfile[4300], arg[4400];
} kv_fx_t;

/* GET_KV_CONFIG's value, or NULL for QUERY_NOT_FOUND (caller frees). */
static char *kv_get(const nstest_server_t *s, const char *ns, const char *key)
{
    ns_client_t *c = nstest_connect(s);
    const char *kv[] = {"namespace", ns, "key", key, NULL};
    ns_cmd_msg_t m = nstest_call_msg(c, NS_REQ_GET_KV_CONFIG, kv, NULL, 0, 5000);
    char *v = NULL;
    if (m.cmd.code == NS_RSP_SUCCESS)
        v = strdup(ns_cmd_ext_get(&m.cmd, "value"));
    else
        assert_int_equal(m.cmd.code, NS_RSP_QUERY_NOT_FOUND);
    ns_cmd_msg_free(&m);
    ns_client_close(c);
    return v;
}

static void expect_kv(const nstest_server_t *s, const char *ns, const char *key, const char *want)
{
    char *v = kv_get(s, ns, key);
    if (want == NULL && v != NULL)
        fail_msg("%s/%s: expected absent, found '%s'", ns, key, v);
    if (want != NULL && (v == NULL || strcmp(v, want) != 0))
        fail_msg("%s/%s: expected '%s', found %s", ns, key, want, v ? v : "(absent)");
    free(v);
}

static void start(kv_fx_t *k)
{
    const char *args[] = {k->arg, NULL};
    assert_int_equal(nstest_server_start(&k->fx.srv, k->fx.dir, args), 0);
}

static void restart(kv_fx_t *k)
{
    assert_int_equal(nstest_server_stop(&k->fx.srv, SIGTERM), 0);
    start(k);
}

static const char k_java_file[] =
    "{\n\t\"configTable\":{\n\t\t\"ORDER_TOPIC_CONFIG\":{\n\t\t\t\"TopicOrder\":\"broker-a:8;"
    "broker-b:8\"\n\t\t},\n\t\t\"NS2\":{\n\t\t\t\"k\":\"v\",\n\t\t\t\"gone\":null\n\t\t}\n\t}\n}";

static void test_imported_once(void **state)
{
    kv_fx_t *k = *state;
    nstest_write_text(k->kvfile, k_java_file);
    start(k);
    expect_kv(&k->fx.srv, "ORDER_TOPIC_CONFIG", "TopicOrder", "broker-a:8;broker-b:8");
    expect_kv(&k->fx.srv, "NS2", "k", "v");
    expect_kv(&k->fx.srv, "NS2", "gone", NULL);
    assert_int_equal(nstest_log_count(&k->fx.srv, "imported into the empty store: 2 namespaces, "
                                                  "2 keys (1 null values skipped)"),
                     1);
    /* an admin deletes an imported key: a restart does not bring it back */
    ns_client_t *c = nstest_connect(&k->fx.srv);
    const char *del[] = {"namespace", "NS2", "key", "k", NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_DELETE_KV_CONFIG, del, NULL, 0, 5000),
                     NS_RSP_SUCCESS);
    ns_client_close(c);
    restart(k);
    expect_kv(&k->fx.srv, "NS2", "k", NULL);
    expect_kv(&k->fx.srv, "ORDER_TOPIC_CONFIG", "TopicOrder", "broker-a:8;broker-b:8");
    assert_true(nstest_log_count(&k->fx.srv, "not imported: it was imported once already") >= 1);
    assert_int_equal(nstest_server_stop(&k->fx.srv, SIGTERM), 0);
    /* the admin trail names the import, its file and what it took */
    char *out = NULL;
    assert_int_equal(
        nstest_ctl(10000, &out, "audit", "--admin", "--data-dir", k->fx.srv.data, "--json", NULL),
        0);
    NSTEST_EXPECT_IN(out, "\"request\":\"import-kvconfig\"");
    NSTEST_EXPECT_IN(out, "\"peer\":\"namesrvd@local\"");
    NSTEST_EXPECT_IN(out, "\"keys\":2");
    NSTEST_EXPECT_IN(out, k->kvfile);
    free(out);
    start(k); /* for the teardown */
}

/* A store that holds KV config already (written before the file existed)
 * keeps it and takes nothing from the file. */
static void test_store_with_kv_not_overwritten(void **state)
{
    kv_fx_t *k = *state;
    start(k);
    ns_client_t *c = nstest_connect(&k->fx.srv);
    const char *put[] = {"namespace", "NS2", "key", "k", "value", "mine", NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_PUT_KV_CONFIG, put, NULL, 0, 5000), NS_RSP_SUCCESS);
    ns_client_close(c);
    nstest_write_text(k->kvfile, k_java_file);
    restart(k);
    expect_kv(&k->fx.srv, "NS2", "k", "mine");
    expect_kv(&k->fx.srv, "ORDER_TOPIC_CONFIG", "TopicOrder", NULL);
    assert_int_equal(nstest_log_count(&k->fx.srv, "not imported: the store holds KV config"), 1);
}

/* A file namesrvd cannot take: the start fails, naming the file and the
 * first problem by its JSON path; nothing was written (a start with the
 * file fixed imports it). */
static void test_bad_file_stops_the_start(void **state)
{
    kv_fx_t *k = *state;
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"{\"configTable\":{\"NS\":{\"a\":\"x\",\"k\":5}}}",
         "$.configTable.NS.k: expected a string, found a number"},
        {"{\"configTable\":", "not valid JSON (line 1, column 16)"},
        {"{\"table\":{}}", "$.configTable: missing"},
    };
    char dd[4400], port[4400];
    snprintf(dd, sizeof dd, "--dataDir=%s/data", k->fx.dir);
    snprintf(port, sizeof port, "--listenPort=0");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nstest_write_text(k->kvfile, bad[i].text);
        const char *args[] = {dd, port, k->arg, NULL};
        char *err = NULL;
        int rc = nstest_run(NS_NAMESRVD_PATH, args, &err, 20000);
        print_message("# %s -> exit %d\n", bad[i].text, rc);
        if (rc != 5 || strstr(err, bad[i].want) == NULL || strstr(err, k->kvfile) == NULL ||
            strstr(err, "nothing was imported") == NULL)
            fail_msg("namesrvd exited %d (want 5 and '%s'):\n%s", rc, bad[i].want, err);
        free(err);
    }
    nstest_write_text(k->kvfile, k_java_file);
    start(k);
    expect_kv(&k->fx.srv, "NS2", "k", "v");
}

static int setup(void **state)
{
    if (nstest_fx_setup_sized(state, sizeof(kv_fx_t), "kvimport") != 0)
        return -1;
    kv_fx_t *k = *state;
    snprintf(k->kvfile, sizeof k->kvfile, "%s/kvConfig.json", k->fx.dir);
    snprintf(k->arg, sizeof k->arg, "--kvConfigPath=%s", k->kvfile);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_imported_once, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_store_with_kv_not_overwritten, setup,
                                        nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_bad_file_stops_the_start, setup, nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
