/* test_metrics.c - the HTTP endpoint of the real namesrvd (httpListen):
 * every scrape passes `promtool check metrics`, counters move with the
 * requests the test sends, /brokers and /readyz follow the liveness table
 * and the restart grace window, and `namesrvctl top --once` reads it. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/httpget.h"
#include "nstest.h"
#include "nstest_auth.h"

#define GRACE_MS 4000

typedef struct {
    nstest_fx_t base;
    int http_port;
} fx_t;

/* Starts the server with its HTTP endpoint and the grace window. */
static int start(fx_t *fx, int64_t grace_ms)
{
    char grace[64];
    snprintf(grace, sizeof grace, "--brokerGraceWindowMillis=%lld", (long long)grace_ms);
    const char *args[] = {grace, "--scanNotActiveBrokerInterval=100", NULL};
    return nstest_server_start_http(&fx->base.srv, fx->base.dir, args, &fx->http_port);
}

static int setup(void **state)
{
    if (nstest_fx_setup_sized(state, sizeof(fx_t), "metrics") != 0)
        return -1;
    if (start(*state, GRACE_MS) != 0) {
        nstest_fx_teardown(state);
        return -1;
    }
    return 0;
}

/* GET path; returns the status, body in *out (caller frees). */
static int get(fx_t *fx, const char *path, char **out)
{
    return nstest_http_get(fx->http_port, path, out);
}

/* Scrapes /metrics and runs promtool over it; returns the text. */
static char *scrape(fx_t *fx)
{
    return nstest_scrape(fx->http_port, fx->base.dir);
}

static double metric(fx_t *fx, const char *series)
{
    char *text = scrape(fx);
    double v = nstest_series(text, series, 0);
    free(text);
    return v;
}

/* ---- requests ---- */

static int route_code(ns_client_t *c, const char *topic)
{
    const char *kv[] = {"topic", topic, NULL};
    return nstest_call_code(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, NULL, 0, 5000);
}

/* timeout_ms 0: no heartbeatTimeoutMillis (the server's 120 s) */
static void register_broker(ns_client_t *c, const char *name, const char *addr, int64_t counter,
                            int timeout_ms)
{
    /* two topics: a body of one is an increment, refused for a new broker */
    ns_topic_config_t tc[2] = {{0}};
    tc[0].topic_name = (char *)"MetricsTopicA";
    tc[1].topic_name = (char *)"MetricsTopicB";
    for (int i = 0; i < 2; i++) {
        tc[i].read_queue_nums = tc[i].write_queue_nums = 4;
        tc[i].perm = 6;
    }
    ns_regbody_t body = {0};
    body.data_version.counter = counter;
    body.data_version.timestamp = 1700000000000LL + counter;
    body.topics = tc;
    body.n_topics = 2;
    body.has_filter_server_list = true;
    ns_buf_t enc = NS_BUF_INIT;
    assert_int_equal(ns_regbody_encode_json(&enc, &body), NS_OK);
    char crc[16];
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(enc.data, enc.len));
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", timeout_ms);
    /* clang-format off */
    const char *kv[] = {
        "brokerName", name,
        "brokerAddr", addr,
        "clusterName", "MCluster",
        "brokerId", "0",
        "haServerAddr", "",
        "enableActingMaster", "false",
        "bodyCrc32", crc,
        timeout_ms > 0 ? "heartbeatTimeoutMillis" : NULL, timeout,
        NULL};
    /* clang-format on */
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    nstest_call(c, NS_REQ_REGISTER_BROKER, kv, enc.data, enc.len, 479, 10000, &rsp);
    if (rsp.cmd.code != NS_RSP_SUCCESS)
        fail_msg("REGISTER_BROKER %s: code %d (%.*s)", name, rsp.cmd.code, (int)rsp.cmd.remark_len,
                 rsp.cmd.remark ? rsp.cmd.remark : "");
    ns_cmd_msg_free(&rsp);
    ns_buf_free(&enc);
}

static void heartbeat(ns_client_t *c, const char *name, const char *addr)
{
    const char *kv[] = {"brokerName", name,       "brokerAddr", addr, "clusterName",
                        "MCluster",   "brokerId", "0",          NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_BROKER_HEARTBEAT, kv, NULL, 0, 5000),
                     NS_RSP_SUCCESS);
}

/* The state of the broker at addr in /brokers ("" when absent). */
static void broker_state(fx_t *fx, const char *addr, char *out, size_t n)
{
    char *body = NULL;
    assert_int_equal(get(fx, "/brokers", &body), 200);
    cJSON *doc = cJSON_Parse(body);
    assert_non_null(doc);
    out[0] = 0;
    cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(doc, "brokers"))
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(b, "address")), addr) == 0) {
            snprintf(out, n, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(b, "state")));
            assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(b, "topics")), 2);
            assert_true(cJSON_IsObject(cJSON_GetObjectItem(b, "dataVersion")));
        }
    }
    cJSON_Delete(doc);
    free(body);
}

/* /readyz: its status, and graceWindow.running in *grace. */
static int readyz(fx_t *fx, bool *grace)
{
    char *body = NULL;
    int status = get(fx, "/readyz", &body);
    cJSON *doc = cJSON_Parse(body);
    assert_non_null(doc);
    *grace = cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "graceWindow"), "running"));
    cJSON_Delete(doc);
    free(body);
    return status;
}

/* /readyz once the start-up store verification (its own thread) is done:
 * 503 with storeVerified "running" until then. */
static int readyz_settled(fx_t *fx, bool *grace)
{
    int status = 0;
    for (int i = 0; i < 200 && (status = readyz(fx, grace)) == 503; i++)
        nstest_sleep_ms(50);
    return status;
}

/* Waits (5 s at most) until the snapshot (refreshed every second) has
 * `series` at want. */
static void wait_metric(fx_t *fx, const char *series, double want)
{
    double v = -1;
    for (int i = 0; i < 100 && (v = metric(fx, series)) != want; i++)
        nstest_sleep_ms(50);
    if (v != want)
        fail_msg("%s is %g, expected %g", series, v, want);
}

#define ROUTE_MISS                                                                                 \
    "namesrv_requests_total{request=\"GET_ROUTEINFO_BY_TOPIC\",code=\"TOPIC_NOT_EXIST\"}"

static void test_counters_move_with_requests(void **state)
{
    fx_t *fx = *state;
    double miss0 = metric(fx, ROUTE_MISS);
    double acc0 = metric(fx, "namesrv_connections_accepted_total");
    double in0 = metric(fx, "namesrv_received_bytes_total");
    double reads0 = metric(fx, "namesrv_request_duration_seconds_count{kind=\"read\"}");
    ns_client_t *c = nstest_connect(&fx->base.srv);
    for (int i = 0; i < 25; i++)
        assert_int_equal(route_code(c, "NoSuchTopic"), NS_RSP_TOPIC_NOT_EXIST);
    assert_int_equal(metric(fx, ROUTE_MISS) - miss0, 25);
    assert_true(metric(fx, "namesrv_request_duration_seconds_count{kind=\"read\"}") - reads0 >= 25);
    assert_int_equal(metric(fx, "namesrv_connections_accepted_total") - acc0, 1);
    assert_true(metric(fx, "namesrv_connections_open") >= 1);
    assert_true(metric(fx, "namesrv_received_bytes_total") - in0 > 25 * 20);

    /* a write: counted after its commit, with the write latency and a batch */
    double writes0 = metric(fx, "namesrv_request_duration_seconds_count{kind=\"write\"}");
    double commits0 = metric(fx, "namesrv_writer_batches_total");
    const char *kv[] = {"namespace", "mns", "key", "k", "value", "v", NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_PUT_KV_CONFIG, kv, NULL, 0, 5000), NS_RSP_SUCCESS);
    assert_int_equal(
        metric(fx, "namesrv_requests_total{request=\"PUT_KV_CONFIG\",code=\"SUCCESS\"}"), 1);
    assert_int_equal(metric(fx, "namesrv_request_duration_seconds_count{kind=\"write\"}") - writes0,
                     1);
    assert_true(metric(fx, "namesrv_writer_batches_total") - commits0 >= 1);

    /* the pages those commits freed: given back, after the next commit or
     * once the writer has been idle a second (store/free_pages.c) */
    double dropped0 = metric(fx, "namesrv_writer_free_pages_dropped_total");
    for (int i = 0; i < 3; i++) {
        char val[16];
        snprintf(val, sizeof val, "v%d", i);
        const char *kvi[] = {"namespace", "mns", "key", "k", "value", val, NULL};
        assert_int_equal(nstest_call_code(c, NS_REQ_PUT_KV_CONFIG, kvi, NULL, 0, 5000),
                         NS_RSP_SUCCESS);
    }
    double dropped = dropped0;
    for (int i = 0; i < 60 && dropped == dropped0; i++) {
        nstest_sleep_ms(50);
        dropped = metric(fx, "namesrv_writer_free_pages_dropped_total");
    }
    assert_true(dropped > dropped0);
    wait_metric(fx, "namesrv_kv_keys", 1);

    /* a registration that changes the data version, then one that does not */
    register_broker(c, "mb-a", "127.0.0.1:30911", 1, 0);
    register_broker(c, "mb-a", "127.0.0.1:30911", 1, 0);
    assert_int_equal(metric(fx, "namesrv_broker_registrations_total{data_version=\"changed\"}"), 1);
    assert_int_equal(metric(fx, "namesrv_broker_registrations_total{data_version=\"unchanged\"}"),
                     1);
    heartbeat(c, "mb-a", "127.0.0.1:30911");
    assert_int_equal(metric(fx, "namesrv_broker_heartbeats_total"), 1);
    wait_metric(fx, "namesrv_brokers{state=\"live\"}", 1);
    wait_metric(fx, "namesrv_topics", 2);
    wait_metric(fx, "namesrv_clusters", 1);
    char st[32];
    broker_state(fx, "127.0.0.1:30911", st, sizeof st);
    assert_string_equal(st, "live");
    ns_client_close(c);

    char *text = NULL;
    assert_int_equal(get(fx, "/healthz", &text), 200);
    free(text);
    assert_int_equal(get(fx, "/nothing", &text), 404);
    free(text);
}

/* The server-wide budgets (net/budget.h) are exported, limits and use: an
 * exporter that lost them would still pass promtool. */
static void test_budgets_exported(void **state)
{
    fx_t *fx = *state;
    char *text = scrape(fx);
    double limit = nstest_series(text, "namesrv_budget_limit{budget=\"connections\"}", -1);
    double refused =
        nstest_series(text, "namesrv_refusals_total{reason=\"budget_connections\"}", -1);
    double open = nstest_series(text, "namesrv_budget_used{budget=\"connections\"}", -1);
    free(text);
    assert_int_equal(limit, 4096); /* maxConnections' default */
    assert_int_equal(refused, 0);
    assert_true(open >= 0);
    ns_client_t *c = nstest_connect(&fx->base.srv);
    assert_int_equal(route_code(c, "NoSuchTopic"), NS_RSP_TOPIC_NOT_EXIST);
    assert_true(metric(fx, "namesrv_budget_used{budget=\"connections\"}") >= open + 1);
    ns_client_close(c);
}

static void test_readyz_follows_grace_window(void **state)
{
    fx_t *fx = *state;
    bool grace = true;
    assert_int_equal(readyz_settled(fx, &grace), 200);
    assert_false(grace); /* a fresh store has nobody to wait for */
    ns_client_t *c = nstest_connect(&fx->base.srv);
    register_broker(c, "mb-back", "127.0.0.1:31911", 1, 10000);
    register_broker(c, "mb-silent", "127.0.0.1:31912", 1, 1000);

    /* restart (a closed registration connection would unregister them):
     * both brokers are restored and wait in the grace window */
    assert_int_equal(WEXITSTATUS(nstest_server_stop(&fx->base.srv, SIGTERM)), 0);
    ns_client_close(c);
    assert_int_equal(start(fx, GRACE_MS), 0);
    assert_int_equal(readyz_settled(fx, &grace), 200);
    assert_true(grace);
    wait_metric(fx, "namesrv_grace_window_active", 1);
    assert_int_equal(metric(fx, "namesrv_brokers{state=\"grace\"}"), 2);
    char st[32];
    broker_state(fx, "127.0.0.1:31911", st, sizeof st);
    assert_string_equal(st, "grace");

    /* one comes back; the other is evicted when the window ends */
    c = nstest_connect(&fx->base.srv);
    heartbeat(c, "mb-back", "127.0.0.1:31911");
    wait_metric(fx, "namesrv_brokers{state=\"grace\"}", 1);
    broker_state(fx, "127.0.0.1:31911", st, sizeof st);
    assert_string_equal(st, "live");
    assert_int_equal(readyz(fx, &grace), 200);
    assert_true(grace);
    int64_t t0 = nstest_mono_ms();
    while (nstest_mono_ms() - t0 < GRACE_MS + 5000 &&
           metric(fx, "namesrv_broker_evictions_total{reason=\"heartbeat_timeout\"}") < 1) {
        heartbeat(c, "mb-back", "127.0.0.1:31911");
        nstest_sleep_ms(200);
    }
    assert_int_equal(metric(fx, "namesrv_broker_evictions_total{reason=\"heartbeat_timeout\"}"), 1);
    wait_metric(fx, "namesrv_grace_window_active", 0);
    assert_int_equal(readyz(fx, &grace), 200);
    assert_false(grace);
    /* past its deadline it is "expiring" until the eviction has committed
     * and the next snapshot (every second) no longer has it */
    for (int i = 0; i < 60; i++) {
        broker_state(fx, "127.0.0.1:31912", st, sizeof st);
        if (st[0] == 0)
            break;
        assert_string_equal(st, "expiring");
        nstest_sleep_ms(50);
    }
    assert_string_equal(st, "");
    ns_client_close(c);
}

static void test_top_once(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->base.srv);
    for (int i = 0; i < 10; i++)
        assert_int_equal(route_code(c, "NoSuchTopic"), NS_RSP_TOPIC_NOT_EXIST);
    ns_client_close(c);
    char addr[64], *out = NULL;
    snprintf(addr, sizeof addr, "127.0.0.1:%d", fx->http_port);
    int rc = nstest_ctl(20000, &out, "top", "--http", addr, "--once", "--interval", "200", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "requests/s");
    NSTEST_EXPECT_IN(out, "brokers  live 0  grace 0  expiring 0");
    NSTEST_EXPECT_IN(out, "latency");
    free(out);
    rc = nstest_ctl(20000, &out, "top", "--http", "127.0.0.1:1", "--once", NULL);
    NSTEST_EXPECT_RC(rc, 5, out);
    free(out);
}

/* The process collector's series every Prometheus user expects, with
 * values that make sense for this server. */
static void test_process_metrics(void **state)
{
    fx_t *fx = *state;
    char *text = scrape(fx); /* promtool checks the exposition */
    assert_true(nstest_series(text, "process_resident_memory_bytes", 0) > 1 << 20);
    assert_true(nstest_series(text, "process_virtual_memory_bytes", 0) >=
                nstest_series(text, "process_resident_memory_bytes", 0));
    double fds = nstest_series(text, "process_open_fds", 0);
    assert_true(fds >= 4 && fds < 1000); /* listener, store files, the scrape's socket */
    assert_true(nstest_series(text, "process_max_fds", 0) >= fds);
    assert_true(nstest_series(text, "process_cpu_seconds_total", -1) >= 0);
    double start = nstest_series(text, "process_start_time_seconds", 0);
    assert_true(start > (double)time(NULL) - 600 && start <= (double)time(NULL) + 1);
    free(text);
}

/* True when the process maps a file whose name holds name (/proc/PID/maps). */
static bool maps_library(int pid, const char *name)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    char *maps = nstest_read_text(path);
    assert_non_null(maps);
    bool found = strstr(maps, name) != NULL;
    free(maps);
    return found;
}

/* libmicrohttpd, and the GnuTLS it links, is opened only by a server with
 * httpListen (src/daemon/ops/mhd.h); one without never maps either. */
static void test_http_library_only_with_endpoint(void **state)
{
    fx_t *fx = *state;
    assert_true(maps_library(fx->base.srv.pid, "libmicrohttpd"));
    nstest_server_t plain;
    char *dir = NULL;
    assert_int_equal(nstest_server_open(&plain, &dir, "nohttp", NULL), 0);
    assert_false(maps_library(plain.pid, "libmicrohttpd"));
    assert_false(maps_library(plain.pid, "libgnutls"));
    nstest_server_close(&plain, dir);
}

/* namesrvctl health asks /healthz, which needs neither a signature nor TLS:
 * it answers where a remoting request (the old health check, `config get`)
 * is refused, as under authMode=all. */
static void test_health(void **state)
{
    fx_t *fx = *state;
    char addr[64], *out = NULL;
    snprintf(addr, sizeof addr, "127.0.0.1:%d", fx->http_port);
    int rc = nstest_ctl(20000, &out, "health", "--http", addr, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "200 ok");
    free(out);
    rc = nstest_ctl(20000, &out, "health", "--http", "127.0.0.1:1", "--timeout", "2000", NULL);
    NSTEST_EXPECT_RC(rc, 5, out);
    NSTEST_EXPECT_IN(out, "httpListen");
    free(out);
    rc = nstest_ctl(20000, &out, "top", "--http", "127.0.0.1:1", "--once", NULL);
    NSTEST_EXPECT_RC(rc, 5, out);
    NSTEST_EXPECT_IN(out, "httpListen");
    free(out);

    char *dir = nstest_tmpdir("health-auth"), data[4200];
    nstest_server_t srv;
    int port = 0;
    snprintf(data, sizeof data, "%s/data", dir);
    /* authMode on needs an enabled admin in the store (no lockout) */
    nstest_user_add(data, "admin1", "adminsecret", "admin", NULL, NULL);
    const char *args[] = {"--authMode=all", NULL};
    assert_int_equal(nstest_server_start_http(&srv, dir, args, &port), 0);
    char ns[64];
    snprintf(ns, sizeof ns, "127.0.0.1:%d", srv.port);
    rc = nstest_ctl(20000, &out, "config", "get", "-n", ns, NULL);
    assert_int_not_equal(rc, 0); /* unsigned: refused */
    free(out);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    rc = nstest_ctl(20000, &out, "health", "--http", addr, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    nstest_server_close(&srv, dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counters_move_with_requests, setup,
                                        nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_budgets_exported, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_readyz_follows_grace_window, setup,
                                        nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_top_once, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_health, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_process_metrics, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_http_library_only_with_endpoint, setup,
                                        nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
