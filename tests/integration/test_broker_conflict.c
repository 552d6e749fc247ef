/* test_broker_conflict.c - broker identity conflicts on a real namesrvd:
 * with brokerConflict=warn (the default) a brokerName registered under a
 * second cluster is registered as Java would, and logged with both sides,
 * counted on /metrics and written to the admin trail; with
 * brokerConflict=reject (set while running) an address registering under
 * a second brokerName is refused with SYSTEM_ERROR, routes nothing, and
 * its refusal is in the trail too. A plain re-registration is no conflict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "ns/client.h"
#include "ns/codes.h"

typedef struct {
    char *dir;
    nstest_server_t srv;
    int http;
    ns_client_t *c;
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = nstest_tmpdir("conflict");
    assert_int_equal(nstest_server_start_http(&f->srv, f->dir, NULL, &f->http), 0);
    f->c = nstest_connect(&f->srv);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    ns_client_close(f->c);
    nstest_server_close(&f->srv, f->dir);
    free(f);
    return 0;
}

static ns_topic_config_t topics[] = {{"T1", 4, 4, 6, 0}, {"T2", 8, 8, 6, 0}};

/* REGISTER_BROKER (id 0); returns the reply's code. */
static int reg(fx_t *f, const char *cluster, const char *name, const char *addr)
{
    ns_buf_t body = NS_BUF_INIT;
    nstest_regbody_json(&body, topics, 2);
    const char *kv[] = {"brokerAddr",  addr,    "brokerId",     "0",  "brokerName", name,
                        "clusterName", cluster, "haServerAddr", addr, NULL};
    int code = nstest_call_code(f->c, NS_REQ_REGISTER_BROKER, kv, body.data, body.len, 10000);
    ns_buf_free(&body);
    return code;
}

static double conflicts(fx_t *f, const char *kind)
{
    char series[128];
    snprintf(series, sizeof series, "namesrv_broker_identity_conflicts_total{kind=\"%s\"}", kind);
    return nstest_metric(f->http, series);
}

/* The detail of the trail's first REGISTER_BROKER record with result, as
 * JSON text (caller frees), or NULL. */
static char *trail_detail(fx_t *f, const char *result)
{
    char data[4096];
    snprintf(data, sizeof data, "%s/data", f->dir);
    cJSON *trail = nstest_admin_trail(data);
    cJSON *rec = nstest_trail_find(trail, "REGISTER_BROKER", result);
    const cJSON *d = rec ? cJSON_GetObjectItemCaseSensitive(rec, "detail") : NULL;
    char *out = d ? cJSON_PrintUnformatted(d) : NULL;
    cJSON_Delete(trail);
    return out;
}

static void test_warn_registers_and_reports(void **state)
{
    fx_t *f = *state;
    assert_int_equal(reg(f, "C1", "broker-a", "10.0.0.1:10911"), NS_RSP_SUCCESS);
    assert_int_equal(reg(f, "C1", "broker-a", "10.0.0.1:10911"), NS_RSP_SUCCESS);
    assert_true(conflicts(f, "name_in_other_cluster") == 0);
    /* the same brokerName under a second cluster, from another address */
    assert_int_equal(reg(f, "C2", "broker-a", "10.0.0.2:10911"), NS_RSP_SUCCESS);
    assert_true(conflicts(f, "name_in_other_cluster") == 1);
    assert_true(nstest_log_wait(&f->srv, "broker identity conflict name_in_other_cluster", 5000));
    assert_true(nstest_log_wait(&f->srv, "\"heldByCluster\":\"C1\"", 1000));
    char *d = trail_detail(f, "ok");
    assert_non_null(d);
    assert_non_null(strstr(d, "\"conflict\":\"name_in_other_cluster\""));
    assert_non_null(strstr(d, "\"clusterName\":\"C2\""));
    assert_non_null(strstr(d, "\"heldByCluster\":\"C1\""));
    free(d);
    /* warn keeps Java's behaviour: the last address registered holds id 0 */
    char addr[32], *out = NULL;
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f->srv.port);
    int rc = nstest_ctl(30000, &out, "route", "--ns", addr, "T1", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "10.0.0.2:10911");
    free(out);
}

static void test_reject_refuses(void **state)
{
    fx_t *f = *state;
    assert_int_equal(reg(f, "C1", "broker-a", "10.0.0.1:10911"), NS_RSP_SUCCESS);
    assert_int_equal(nstest_config_update(f->c, "brokerConflict=reject"), NS_RSP_SUCCESS);
    /* the address of broker-a, now under another brokerName */
    ns_cmd_msg_t rsp;
    ns_buf_t body = NS_BUF_INIT;
    nstest_regbody_json(&body, topics, 2);
    const char *kv[] = {"brokerAddr",   "10.0.0.1:10911", "brokerId",    "0",
                        "brokerName",   "broker-z",       "clusterName", "C1",
                        "haServerAddr", "10.0.0.1:10911", NULL};
    rsp = nstest_call_msg(f->c, NS_REQ_REGISTER_BROKER, kv, body.data, body.len, 10000);
    ns_buf_free(&body);
    assert_int_equal(rsp.cmd.code, NS_RSP_SYSTEM_ERROR);
    char remark[200];
    nstest_remark(&rsp, remark, sizeof remark);
    assert_non_null(strstr(remark, "broker identity conflict"));
    ns_cmd_msg_free(&rsp);
    assert_true(conflicts(f, "addr_under_other_name") == 1);
    assert_true(nstest_log_wait(&f->srv, "refused (brokerConflict=reject)", 5000));
    char *d = trail_detail(f, "refused");
    assert_non_null(d);
    assert_non_null(strstr(d, "\"heldByBrokerName\":\"broker-a\""));
    free(d);
    /* nothing of broker-z was stored: the cluster lists broker-a only */
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f->srv.port);
    char *out = NULL;
    int rc = nstest_ctl(30000, &out, "clusters", "--ns", addr, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "broker-a");
    if (strstr(out, "broker-z") != NULL)
        fail_msg("broker-z was registered:\n%s", out);
    free(out);
    /* back to warn: the same registration goes through, reported */
    assert_int_equal(nstest_config_update(f->c, "brokerConflict=warn"), NS_RSP_SUCCESS);
    assert_int_equal(reg(f, "C1", "broker-z", "10.0.0.1:10911"), NS_RSP_SUCCESS);
    assert_true(conflicts(f, "addr_under_other_name") == 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_warn_registers_and_reports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reject_refuses, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
