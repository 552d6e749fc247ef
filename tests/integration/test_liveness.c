/* test_liveness.c - broker liveness through the real namesrvd (docs/protocol.md
 * §3.5-§3.8, §6.5-§6.7): restart recovery with a grace window, eviction of
 * silent brokers, unregistration when a registration connection closes, and
 * "heartbeats and unchanged re-registrations never write to disk".
 *
 * The server runs with short intervals (scan every 100 ms, grace window
 * 1500 ms) and brokers register with heartbeatTimeoutMillis=1000, so every
 * timing bound below is those numbers plus a slack for slow (sanitizer)
 * builds. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "nstest_tls.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

#define SCAN_MS 100
#define GRACE_MS 1500
#define TIMEOUT_MS 1000
#define HEARTBEAT_EVERY_MS 300
#define POLL_MS 50
#define SLACK_MS 700 /* writer commit + scheduling, generous for ASan */

static const char *const server_args[] = {"--scanNotActiveBrokerInterval=100",
                                          "--brokerGraceWindowMillis=1500", NULL};

typedef nstest_fx_t fx_t;

typedef struct {
    const char *cluster;
    const char *name;
    const char *addr;
    int64_t id;
    int64_t timeout_ms; /* 0 = header absent (server default, 120 s) */
} broker_t;

static int setup(void **state)
{
    return nstest_fx_setup(state, "liveness", server_args);
}

static int teardown(void **state)
{
    return nstest_fx_teardown(state);
}

/* ---- requests ---- */

/* REGISTER_BROKER with a JSON body holding `topics` (4/4 queues, perm 6) and
 * DataVersion {counter, 0, 1700000000000 + counter}; returns the response
 * code. A non-zero crc_delta corrupts bodyCrc32. */
static int register_broker_crc(ns_client_t *c, const broker_t *b, int64_t counter,
                               const char *const *topics, size_t n, uint32_t crc_delta)
{
    ns_topic_config_t *tc = calloc(n ? n : 1, sizeof *tc);
    assert_non_null(tc);
    for (size_t i = 0; i < n; i++) {
        tc[i].topic_name = (char *)topics[i];
        tc[i].read_queue_nums = 4;
        tc[i].write_queue_nums = 4;
        tc[i].perm = 6;
    }
    ns_regbody_t body = {0};
    body.data_version.counter = counter;
    body.data_version.timestamp = 1700000000000LL + counter;
    body.topics = tc;
    body.n_topics = n;
    body.has_filter_server_list = true;
    ns_buf_t enc = NS_BUF_INIT;
    assert_int_equal(ns_regbody_encode_json(&enc, &body), NS_OK);
    char crc[16], id[24], timeout[24], ha[64];
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(enc.data, enc.len) + crc_delta);
    snprintf(id, sizeof id, "%lld", (long long)b->id);
    snprintf(timeout, sizeof timeout, "%lld", (long long)b->timeout_ms);
    snprintf(ha, sizeof ha, "%s-ha", b->addr);
    /* clang-format off */
    const char *kv[] = {
        "brokerName", b->name,
        "brokerAddr", b->addr,
        "clusterName", b->cluster,
        "haServerAddr", ha,
        "brokerId", id,
        "enableActingMaster", "false",
        "compressed", "false",
        "bodyCrc32", crc,
        b->timeout_ms > 0 ? "heartbeatTimeoutMillis" : NULL, timeout,
        NULL};
    /* clang-format on */
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    nstest_cmd(&cmd, ext, NS_REQ_REGISTER_BROKER, kv);
    cmd.body = enc.data;
    cmd.body_len = enc.len;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &cmd, 10000, &rsp), NS_OK);
    int code = rsp.cmd.code;
    ns_cmd_msg_free(&rsp);
    ns_buf_free(&enc);
    free(tc);
    return code;
}

static void register_ok(ns_client_t *c, const broker_t *b, int64_t counter,
                        const char *const *topics, size_t n)
{
    assert_int_equal(register_broker_crc(c, b, counter, topics, n, 0), NS_RSP_SUCCESS);
}

static void simple_call(ns_client_t *c, int code, const broker_t *b, const char *body)
{
    /* clang-format off */
    const char *kv[] = {
        "brokerName", b->name,
        "brokerAddr", b->addr,
        "clusterName", b->cluster,
        "brokerId", b->id == 0 ? "0" : "1",
        NULL};
    /* clang-format on */
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    nstest_cmd(&cmd, ext, code, kv);
    if (body) {
        cmd.body = (const uint8_t *)body;
        cmd.body_len = strlen(body);
    }
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &cmd, 5000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    ns_cmd_msg_free(&rsp);
}

static void heartbeat(ns_client_t *c, const broker_t *b)
{
    simple_call(c, NS_REQ_BROKER_HEARTBEAT, b, NULL);
}

/* GET_ROUTEINFO_BY_TOPIC; returns the code, and (if has_broker) whether the
 * route's queueDatas name the broker. */
static int route(ns_client_t *c, const char *topic, const char *broker, bool *has_broker)
{
    const char *kv[] = {"topic", topic, NULL};
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    nstest_cmd(&cmd, ext, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv);
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &cmd, 5000, &rsp), NS_OK);
    int code = rsp.cmd.code;
    if (has_broker) {
        *has_broker = false;
        if (code == NS_RSP_SUCCESS) {
            cJSON *j = cJSON_ParseWithLength((const char *)rsp.cmd.body, rsp.cmd.body_len);
            assert_non_null(j);
            const cJSON *q, *qds = cJSON_GetObjectItemCaseSensitive(j, "queueDatas");
            cJSON_ArrayForEach(q, qds)
            {
                const cJSON *bn = cJSON_GetObjectItemCaseSensitive(q, "brokerName");
                if (cJSON_IsString(bn) && strcmp(bn->valuestring, broker) == 0)
                    *has_broker = true;
            }
            cJSON_Delete(j);
        }
    }
    ns_cmd_msg_free(&rsp);
    return code;
}

/* Whether GET_BROKER_CLUSTER_INFO lists the broker group in brokerAddrTable
 * and under its cluster in clusterAddrTable (asserts both agree). Returns
 * the client's error when the request got no answer. */
static int cluster_query(ns_client_t *c, const broker_t *b, bool *has)
{
    ns_cmd_msg_t rsp;
    int rc = nstest_try_call(c, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, 5000, &rsp);
    if (rc != NS_OK) {
        ns_cmd_msg_free(&rsp);
        return rc;
    }
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    ns_buf_t norm = NS_BUF_INIT;
    assert_int_equal(ns_fastjson_normalize(rsp.cmd.body, rsp.cmd.body_len, &norm), NS_OK);
    cJSON *j = cJSON_Parse((const char *)norm.data);
    assert_non_null(j);
    const cJSON *bat = cJSON_GetObjectItemCaseSensitive(j, "brokerAddrTable");
    const cJSON *cat = cJSON_GetObjectItemCaseSensitive(j, "clusterAddrTable");
    bool in_brokers = cJSON_GetObjectItemCaseSensitive(bat, b->name) != NULL;
    bool in_cluster = false;
    const cJSON *n, *names = cJSON_GetObjectItemCaseSensitive(cat, b->cluster);
    cJSON_ArrayForEach(n, names)
    {
        if (cJSON_IsString(n) && strcmp(n->valuestring, b->name) == 0)
            in_cluster = true;
    }
    cJSON_Delete(j);
    ns_buf_free(&norm);
    ns_cmd_msg_free(&rsp);
    assert_int_equal(in_brokers, in_cluster);
    *has = in_brokers;
    return NS_OK;
}

static bool cluster_has(ns_client_t *c, const broker_t *b)
{
    bool has = false;
    assert_int_equal(cluster_query(c, b, &has), NS_OK);
    return has;
}

/* The local port of c's socket (the server logs the peer as 127.0.0.1:port). */
static int local_port(ns_client_t *c)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(ns_client_fd(c), (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

/* Waits (5 s at most) until the server's log says the connection from port
 * closed after registrations were made over it (core/broker_life.c). */
static void wait_close_logged(fx_t *fx, int port)
{
    char needle[64];
    snprintf(needle, sizeof needle, "conn 127.0.0.1:%d closed after", port);
    if (!nstest_log_wait(&fx->srv, needle, 5000))
        fail_msg("the server did not log the close of the connection from port %d", port);
}

/* A PUT_KV_CONFIG round trip: every write queued before it has committed. */
static void writer_barrier(ns_client_t *c)
{
    const char *kv[] = {"namespace", "LV_BARRIER", "key", "k", "value", "v", NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_PUT_KV_CONFIG, kv, NULL, 0, 5000), NS_RSP_SUCCESS);
}

/* The server stopped answering: wait for it to exit (a sanitizer report
 * takes a while to write), print the end of its log and fail. */
static void fail_server_died(fx_t *fx, const char *when)
{
    int status = 0;
    pid_t r = 0;
    for (int i = 0; i < 100 && (r = waitpid(fx->srv.pid, &status, WNOHANG)) == 0; i++)
        nstest_sleep_ms(100);
    if (r != fx->srv.pid)
        fail_msg("namesrvd stopped answering %s but did not exit", when);
    fx->srv.pid = -1;
    char path[4200];
    snprintf(path, sizeof path, "%s/namesrvd.log", fx->dir);
    uint8_t *log = NULL;
    size_t len = 0;
    if (nstest_read_file(path, &log, &len) == 0) {
        size_t from = len > 6000 ? len - 6000 : 0;
        fprintf(stderr, "---- end of %s ----\n", path);
        fwrite(log + from, 1, len - from, stderr);
        fprintf(stderr, "----\n");
        free(log);
    }
    fail_msg("namesrvd died %s (wait status 0x%x)", when, (unsigned)status);
}

/* Polls the cluster info every POLL_MS until b is gone or limit_ms (from t0)
 * passes, heartbeating hb over hbc every HEARTBEAT_EVERY_MS meanwhile (hb may
 * be NULL). Returns the ms from t0 at which b was seen gone, or -1. */
static int64_t poll_gone(ns_client_t *c, const broker_t *b, int64_t t0, int64_t limit_ms,
                         ns_client_t *hbc, const broker_t *hb)
{
    int64_t last_hb = 0;
    for (;;) {
        int64_t now = nstest_mono_ms();
        if (hb && now - last_hb >= HEARTBEAT_EVERY_MS) {
            heartbeat(hbc, hb);
            last_hb = now;
        }
        if (!cluster_has(c, b))
            return nstest_mono_ms() - t0;
        if (now - t0 > limit_ms)
            return -1;
        nstest_sleep_ms(POLL_MS);
    }
}

/* Keeps hb heartbeating for ms and asserts it stays in the cluster info and
 * its topic keeps routing. */
static void hold_alive(ns_client_t *c, ns_client_t *hbc, const broker_t *hb, const char *topic,
                       int64_t ms)
{
    int64_t t0 = nstest_mono_ms(), last_hb = 0;
    while (nstest_mono_ms() - t0 < ms) {
        if (nstest_mono_ms() - last_hb >= HEARTBEAT_EVERY_MS) {
            heartbeat(hbc, hb);
            last_hb = nstest_mono_ms();
        }
        assert_true(cluster_has(c, hb));
        bool has = false;
        assert_int_equal(route(c, topic, hb->name, &has), NS_RSP_SUCCESS);
        assert_true(has);
        nstest_sleep_ms(POLL_MS);
    }
}

static void kill_and_restart(fx_t *fx, int64_t *spawn_ms)
{
    nstest_server_stop(&fx->srv, SIGKILL);
    *spawn_ms = nstest_mono_ms();
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, server_args), 0);
}

/* ---- (a) restart answers routes at once ---- */

static const broker_t BA = {"LvCluster", "lv-a", "127.0.0.1:20911", 0, TIMEOUT_MS};
static const broker_t BB = {"LvCluster", "lv-b", "127.0.0.1:20912", 0, TIMEOUT_MS};

static void test_route_answered_right_after_restart(void **state)
{
    fx_t *fx = *state;
    enum { N = 2000 };
    char **names = calloc(N, sizeof *names);
    assert_non_null(names);
    for (size_t i = 0; i < N; i++)
        assert_true(asprintf(&names[i], "LV_A_%04zu", i) > 0);
    ns_client_t *c = nstest_connect(&fx->srv);
    register_ok(c, &BA, 1, (const char *const *)names, N);
    ns_client_close(c);

    int64_t spawn, ready, answered;
    kill_and_restart(fx, &spawn);
    ready = nstest_mono_ms();
    c = nstest_connect(&fx->srv);
    bool has = false;
    /* the very first request after the restart, before any re-registration */
    int code = route(c, "LV_A_1234", BA.name, &has);
    answered = nstest_mono_ms();
    assert_int_equal(code, NS_RSP_SUCCESS);
    assert_true(has);
    assert_true(cluster_has(c, &BA));
    print_message("restart-to-first-route: %lld ms (spawn to port ready %lld ms, "
                  "then %lld ms to the answer; %d topics stored)\n",
                  (long long)(answered - spawn), (long long)(ready - spawn),
                  (long long)(answered - ready), N);
    ns_client_close(c);
    for (size_t i = 0; i < N; i++)
        free(names[i]);
    free(names);
}

/* ---- (b) after a restart: a broker that comes back stays, one that does
 * not is dropped once the grace window is over ---- */

static void test_restart_grace_window(void **state)
{
    fx_t *fx = *state;
    const char *ta[] = {"LV_TA", "LV_TA2"}, *tb[] = {"LV_TB", "LV_TB2"};
    ns_client_t *c = nstest_connect(&fx->srv);
    register_ok(c, &BA, 5, ta, 2);
    register_ok(c, &BB, 7, tb, 2);
    ns_client_close(c);

    int64_t spawn;
    kill_and_restart(fx, &spawn);
    int64_t t0 = nstest_mono_ms(); /* the grace window started shortly before this */
    ns_client_t *q = nstest_connect(&fx->srv), *a = nstest_connect(&fx->srv);
    bool has = false;
    assert_int_equal(route(q, "LV_TB", BB.name, &has), NS_RSP_SUCCESS);
    assert_true(has);
    register_ok(a, &BA, 5, ta, 2); /* same DataVersion, new connection */

    /* past lv-b's own heartbeat timeout but inside the grace window */
    int64_t last_hb = nstest_mono_ms();
    while (nstest_mono_ms() - t0 < TIMEOUT_MS + 100) {
        if (nstest_mono_ms() - last_hb >= HEARTBEAT_EVERY_MS) {
            heartbeat(a, &BA);
            last_hb = nstest_mono_ms();
        }
        nstest_sleep_ms(POLL_MS);
    }
    assert_true(cluster_has(q, &BB));

    int64_t gone = poll_gone(q, &BB, t0, GRACE_MS + TIMEOUT_MS + SCAN_MS + SLACK_MS, a, &BA);
    print_message("silent lv-b gone %lld ms after the restart (grace %d ms)\n", (long long)gone,
                  GRACE_MS);
    assert_true(gone >= 0);
    assert_true(gone >= GRACE_MS - 200); /* never before the grace window ends */
    assert_int_equal(route(q, "LV_TB", NULL, NULL), NS_RSP_TOPIC_NOT_EXIST);
    assert_int_equal(route(q, "LV_TB2", NULL, NULL), NS_RSP_TOPIC_NOT_EXIST);
    /* lv-a keeps heartbeating well past grace + timeout */
    hold_alive(q, a, &BA, "LV_TA", GRACE_MS + TIMEOUT_MS + 500 - (nstest_mono_ms() - t0));
    assert_true(cluster_has(q, &BA));
    ns_client_close(a);
    ns_client_close(q);
}

/* ---- (c) connection close ---- */

static const broker_t BX = {"LvCluster", "lv-x", "127.0.0.1:21911", 0, 0};
static const broker_t BY = {"LvCluster", "lv-y", "127.0.0.1:21912", 0, 0};
static const broker_t BZ = {"LvCluster", "lv-z", "127.0.0.1:21913", 0, 0};
static const broker_t BW = {"LvCluster", "lv-w", "127.0.0.1:21914", 0, 0};

static void test_connection_close(void **state)
{
    fx_t *fx = *state;
    /* two topics each: a first registration with exactly one topic is refused
     * as an increment before the full registration (§6.2 step 7) */
    const char *tx[] = {"LV_CX", "LV_CX2"}, *ty[] = {"LV_CY", "LV_CY2"};
    const char *tz[] = {"LV_CZ", "LV_CZ2"}, *tw[] = {"LV_CW", "LV_CW2"};
    ns_client_t *q = nstest_connect(&fx->srv);

    /* a broker whose registration connection closes is unregistered */
    ns_client_t *cx = nstest_connect(&fx->srv);
    register_ok(cx, &BX, 1, tx, 2);
    assert_true(cluster_has(q, &BX));
    int64_t t0 = nstest_mono_ms();
    ns_client_close(cx);
    int64_t gone = poll_gone(q, &BX, t0, 5000, NULL, NULL);
    print_message("lv-x unregistered %lld ms after its connection closed\n", (long long)gone);
    assert_true(gone >= 0);
    assert_int_equal(route(q, "LV_CX", NULL, NULL), NS_RSP_TOPIC_NOT_EXIST);

    /* client connections closing unregister nothing: one that only read,
     * one that heartbeated and queried lv-y's data version, one whose
     * registration of lv-y was refused (bad CRC) */
    ns_client_t *cy = nstest_connect(&fx->srv);
    register_ok(cy, &BY, 1, ty, 2);
    ns_client_t *reader = nstest_connect(&fx->srv), *hb = nstest_connect(&fx->srv),
                *bad = nstest_connect(&fx->srv);
    bool has = false;
    assert_int_equal(route(reader, "LV_CY", BY.name, &has), NS_RSP_SUCCESS);
    assert_true(cluster_has(reader, &BY));
    heartbeat(hb, &BY);
    simple_call(hb, NS_REQ_QUERY_DATA_VERSION, &BY,
                "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000001}");
    assert_int_equal(register_broker_crc(bad, &BY, 2, ty, 2, 1), NS_RSP_SYSTEM_ERROR);
    ns_client_close(reader);
    ns_client_close(hb);
    ns_client_close(bad);

    /* lv-z re-registers unchanged, lv-w with a new DataVersion, each on a
     * new connection: closing the old one leaves them registered */
    ns_client_t *z1 = nstest_connect(&fx->srv), *z2 = nstest_connect(&fx->srv);
    ns_client_t *w1 = nstest_connect(&fx->srv), *w2 = nstest_connect(&fx->srv);
    register_ok(z1, &BZ, 1, tz, 2);
    register_ok(z2, &BZ, 1, tz, 2);
    register_ok(w1, &BW, 1, tw, 2);
    register_ok(w2, &BW, 2, tw, 2);
    int z1_port = local_port(z1), w1_port = local_port(w1);
    ns_client_close(z1);
    ns_client_close(w1);
    /* events, not a sleep: the server handled both closes (and queued
     * whatever unregistration they caused), then a write round trip
     * through the writer, which applies in order, committed it */
    wait_close_logged(fx, z1_port);
    wait_close_logged(fx, w1_port);
    writer_barrier(q);
    assert_true(cluster_has(q, &BY));
    assert_true(cluster_has(q, &BZ));
    assert_true(cluster_has(q, &BW));
    assert_int_equal(route(q, "LV_CY", BY.name, &has), NS_RSP_SUCCESS);
    assert_true(has);
    assert_int_equal(route(q, "LV_CZ", BZ.name, &has), NS_RSP_SUCCESS);
    assert_true(has);
    assert_int_equal(route(q, "LV_CW", BW.name, &has), NS_RSP_SUCCESS);
    assert_true(has);

    /* ... and closing the connection they registered over last does */
    t0 = nstest_mono_ms();
    ns_client_close(z2);
    ns_client_close(w2);
    assert_true(poll_gone(q, &BZ, t0, 5000, NULL, NULL) >= 0);
    assert_true(poll_gone(q, &BW, t0, 5000, NULL, NULL) >= 0);
    assert_true(cluster_has(q, &BY));
    ns_client_close(cy);
    assert_true(poll_gone(q, &BY, nstest_mono_ms(), 5000, NULL, NULL) >= 0);
    ns_client_close(q);
}

/* ---- (c') refused registrations ---- */

/* A registration the writer refuses (here: a first registration of another
 * group with exactly one topic, §6.2 step 7) that arrives over a new
 * connection for an address that is already registered must leave the
 * broker bound to the connection of its last *successful* registration
 * (Java updates the live table only on success). */
static const broker_t BF = {"LvCluster", "lv-f", "127.0.0.1:24911", 0, 0};
static const broker_t BF2 = {"LvCluster", "lv-f2", "127.0.0.1:24911", 0, 0}; /* same addr */

/* Restarts the fixture's server with its HTTP endpoint; returns the port. */
static int restart_with_http(fx_t *fx)
{
    int http = 0;
    nstest_server_stop(&fx->srv, SIGKILL);
    assert_int_equal(nstest_server_start_http(&fx->srv, fx->dir, server_args, &http), 0);
    return http;
}

/* Sends the refused registration for b's address over a new connection,
 * then closes that connection and waits until the server has closed its
 * end (its close hook, which would unregister what the connection holds,
 * runs in the same loop callback that counts the close). q then makes a
 * write round trip: the writer runs in order, so whatever that close queued
 * is committed by the write's answer. */
static void refuse_over_new_connection(fx_t *fx, int http, ns_client_t *q, const broker_t *b)
{
    const char *one[] = {"LV_F_ONE"};
    broker_t other = BF2;
    other.timeout_ms = b->timeout_ms;
    double closed = nstest_metric(http, "namesrv_connections_closed_total");
    assert_true(closed >= 0);
    ns_client_t *nc = nstest_connect(&fx->srv);
    assert_int_equal(register_broker_crc(nc, &other, 2, one, 1, 0), NS_RSP_SYSTEM_ERROR);
    ns_client_close(nc);
    if (!nstest_metric_wait_ge(http, "namesrv_connections_closed_total", closed + 1, 10000))
        fail_msg("the server did not count the close of the refused registration's connection");
    writer_barrier(q);
}

static void test_refused_registration_keeps_connection(void **state)
{
    fx_t *fx = *state;
    const char *tf[] = {"LV_F", "LV_F2"};
    int http = restart_with_http(fx);
    ns_client_t *q = nstest_connect(&fx->srv), *a = nstest_connect(&fx->srv);
    register_ok(a, &BF, 1, tf, 2);
    refuse_over_new_connection(fx, http, q, &BF);
    assert_true(cluster_has(q, &BF));
    /* the registration connection is still a: closing it unregisters lv-f */
    int64_t t0 = nstest_mono_ms();
    ns_client_close(a);
    int64_t gone = poll_gone(q, &BF, t0, 5000, NULL, NULL);
    if (gone < 0)
        fail_msg("lv-f still registered 5 s after its registration connection closed: the "
                 "refused registration over another connection took it over");
    ns_client_close(q);
}

/* Same, but the broker then expires: the scan must not touch the refused
 * registration's connection, which is gone (a use-after-free under ASan). */
static void test_refused_registration_then_expiry(void **state)
{
    fx_t *fx = *state;
    const char *tf[] = {"LV_F", "LV_F2"};
    broker_t bf = BF;
    bf.timeout_ms = TIMEOUT_MS;
    int http = restart_with_http(fx);
    ns_client_t *q = nstest_connect(&fx->srv), *a = nstest_connect(&fx->srv);
    register_ok(a, &bf, 1, tf, 2);
    refuse_over_new_connection(fx, http, q, &bf);
    int64_t t0 = nstest_mono_ms();
    bool has = true;
    while (has && nstest_mono_ms() - t0 <= TIMEOUT_MS + SCAN_MS + SLACK_MS) {
        nstest_sleep_ms(POLL_MS);
        if (cluster_query(q, &bf, &has) != NS_OK)
            fail_server_died(fx, "while lv-f expired");
    }
    assert_false(has);
    /* the scan that expired it closed its connection (the one a refused
     * registration must not have taken over) before the unregistration that
     * just committed; a use-after-free there would have ended the server */
    assert_true(nstest_log_wait(&fx->srv, "lv-f 127.0.0.1:24911 (LvCluster) expired", 1000));
    ns_client_close(q);
    q = nstest_connect(&fx->srv);
    if (cluster_query(q, &bf, &has) != NS_OK)
        fail_server_died(fx, "after lv-f expired");
    assert_false(has);
    ns_client_close(a);
    ns_client_close(q);
}

/* ---- (d) eviction of a silent broker ---- */

static const broker_t BS = {"LvCluster", "lv-silent", "127.0.0.1:22911", 0, TIMEOUT_MS};
static const broker_t BH = {"LvCluster", "lv-beating", "127.0.0.1:22912", 0, TIMEOUT_MS};

static void test_silent_broker_evicted(void **state)
{
    fx_t *fx = *state;
    const char *ts[] = {"LV_DS", "LV_DS2"}, *th[] = {"LV_DH", "LV_DH2"};
    /* both keep their connections open: only the timeout can remove them */
    ns_client_t *q = nstest_connect(&fx->srv), *s = nstest_connect(&fx->srv),
                *h = nstest_connect(&fx->srv);
    register_ok(h, &BH, 1, th, 2);
    int64_t t_sent = nstest_mono_ms();
    register_ok(s, &BS, 1, ts, 2);
    int64_t t0 = nstest_mono_ms();
    int64_t gone = poll_gone(q, &BS, t0, TIMEOUT_MS + SCAN_MS + SLACK_MS, h, &BH);
    print_message("silent broker evicted %lld ms after its registration (timeout %d ms, "
                  "scan %d ms)\n",
                  (long long)gone, TIMEOUT_MS, SCAN_MS);
    assert_true(gone >= 0);
    assert_true(gone + (t0 - t_sent) >= TIMEOUT_MS); /* not before its timeout */
    assert_int_equal(route(q, "LV_DS", NULL, NULL), NS_RSP_TOPIC_NOT_EXIST);
    /* the eviction closed the silent broker's connection */
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_recv(s, 2000, &rsp), NS_ECONN);
    ns_cmd_msg_free(&rsp);
    /* the heartbeating one survives ~3 s, three times its timeout */
    hold_alive(q, h, &BH, "LV_DH", 3000);
    ns_client_close(s);
    ns_client_close(h);
    ns_client_close(q);
}

/* ---- (d') a broker that only asks for its data version is alive ---- */

/* QUERY_DATA_VERSION for b with the DataVersion register_broker_crc sent for
 * counter (what a 5.3.3 broker with forceRegister=false sends instead of
 * registering); returns whether the server answered changed=false. */
static bool query_unchanged(ns_client_t *c, const broker_t *b, int64_t counter)
{
    char dv[128];
    snprintf(dv, sizeof dv, "{\"counter\":%lld,\"stateVersion\":0,\"timestamp\":%lld}",
             (long long)counter, 1700000000000LL + (long long)counter);
    const char *kv[] = {"brokerName", b->name,    "brokerAddr", b->addr, "clusterName",
                        b->cluster,   "brokerId", "0",          NULL};
    ns_cmd_msg_t m = nstest_call_msg(c, NS_REQ_QUERY_DATA_VERSION, kv, dv, strlen(dv), 5000);
    assert_int_equal(m.cmd.code, NS_RSP_SUCCESS);
    const char *changed = ns_cmd_ext_get(&m.cmd, "changed");
    bool same = changed != NULL && strcmp(changed, "false") == 0;
    ns_cmd_msg_free(&m);
    return same;
}

static const broker_t BQ = {"LvCluster", "lv-asks", "127.0.0.1:23911", 0, TIMEOUT_MS};
static const broker_t BN = {"LvCluster", "lv-mute", "127.0.0.1:23912", 0, TIMEOUT_MS};

/* After a restart, a broker whose data version did not change only asks
 * (QUERY_DATA_VERSION, told "not changed", so it never registers): it stays
 * routed past the grace window and its own heartbeat timeout, while a stored
 * broker that says nothing is dropped once the grace window is over. */
static void test_query_only_broker_stays(void **state)
{
    fx_t *fx = *state;
    const char *tq[] = {"LV_Q", "LV_Q2"}, *tn[] = {"LV_N", "LV_N2"};
    ns_client_t *c = nstest_connect(&fx->srv);
    register_ok(c, &BQ, 3, tq, 2);
    register_ok(c, &BN, 4, tn, 2);
    int64_t spawn;
    kill_and_restart(fx, &spawn); /* before the close, which would unregister both */
    ns_client_close(c);
    int64_t t0 = nstest_mono_ms(); /* the grace window started shortly before this */
    ns_client_t *q = nstest_connect(&fx->srv), *a = nstest_connect(&fx->srv);
    int64_t hold = GRACE_MS + TIMEOUT_MS + 1000, mute_gone = -1, last_ask = 0;
    while (nstest_mono_ms() - t0 < hold) {
        if (nstest_mono_ms() - last_ask >= HEARTBEAT_EVERY_MS) {
            assert_true(query_unchanged(a, &BQ, 3));
            last_ask = nstest_mono_ms();
        }
        assert_true(cluster_has(q, &BQ));
        bool has = false;
        assert_int_equal(route(q, "LV_Q", BQ.name, &has), NS_RSP_SUCCESS);
        assert_true(has);
        if (mute_gone < 0 && !cluster_has(q, &BN))
            mute_gone = nstest_mono_ms() - t0;
        nstest_sleep_ms(POLL_MS);
    }
    print_message("lv-asks routed for %lld ms after the restart on queries alone; lv-mute gone "
                  "after %lld ms (grace %d ms, timeout %d ms)\n",
                  (long long)hold, (long long)mute_gone, GRACE_MS, TIMEOUT_MS);
    assert_true(mute_gone >= GRACE_MS - 200); /* never before the grace window ends */
    assert_true(mute_gone <= GRACE_MS + SCAN_MS + SLACK_MS);
    assert_int_equal(route(q, "LV_N", NULL, NULL), NS_RSP_TOPIC_NOT_EXIST);
    /* and once it stops asking, its own timeout drops it */
    int64_t t1 = nstest_mono_ms();
    int64_t gone = poll_gone(q, &BQ, t1, TIMEOUT_MS + SCAN_MS + SLACK_MS, NULL, NULL);
    assert_true(gone >= 0);
    ns_client_close(a);
    ns_client_close(q);
}

/* ---- (d'') a pause of the whole server is not the death of its brokers ----
 *
 * The server is stopped (SIGSTOP, as a VM pause or a swap storm would) while
 * its brokers go on heartbeating: their heartbeats wait in the sockets.
 * Right after SIGCONT the overdue scan must not evict them: they were alive
 * all along. A broker that went silent when the pause began (hung, its
 * connection open) is still evicted, once the grace window after the pause
 * is over.
 *
 * In CI: a 10 s pause, scan every second, brokers heartbeating every second
 * with a 4 s timeout, a 5 s grace window. tools/pause_test.sh runs only this
 * test with NSTEST_PAUSE_MS (the pause) and NSTEST_PAUSE_DEFAULTS=1 (the
 * server's defaults: scan 5 s, grace 120 s, the 120 s heartbeat timeout,
 * idle connections closed after 120 s; brokers heartbeating every 5 s). */

typedef struct {
    int64_t pause_ms, scan_ms, grace_ms, timeout_ms, every_ms;
    const char *const *args;
} pause_plan_t;

enum { PAUSE_LIVE = 5 };

static const char *const pause_args[] = {"--scanNotActiveBrokerInterval=1000",
                                         "--brokerGraceWindowMillis=5000", NULL};

static pause_plan_t pause_plan(void)
{
    pause_plan_t p = {10000, 1000, 5000, 4000, 1000, pause_args};
    const char *ms = getenv("NSTEST_PAUSE_MS"), *defaults = getenv("NSTEST_PAUSE_DEFAULTS");
    if (ms && *ms)
        p.pause_ms = atoll(ms);
    if (defaults && strcmp(defaults, "1") == 0)
        p = (pause_plan_t){p.pause_ms, 5000, 120000, 120000, 5000, NULL};
    return p;
}

static int setup_dir(void **state)
{
    return nstest_fx_setup_dir(state, "pause");
}

/* BROKER_HEARTBEAT sent without waiting for its answer: the server is
 * stopped, the kernel keeps it in the socket as it would a real broker's
 * one-way heartbeat. */
static void heartbeat_send(ns_client_t *c, const broker_t *b)
{
    const char *kv[] = {"brokerName", b->name,    "brokerAddr", b->addr, "clusterName",
                        b->cluster,   "brokerId", "0",          NULL};
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    nstest_cmd(&cmd, ext, NS_REQ_BROKER_HEARTBEAT, kv);
    assert_int_equal(ns_client_send(c, &cmd), NS_OK);
}

/* Prints the lines of the server's log that say how liveness saw the pause. */
static void print_pause_log(const fx_t *fx)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/namesrvd.log", fx->dir);
    FILE *f = fopen(path, "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "stalled") || strstr(line, "expired") || strstr(line, "unregistered") ||
            strstr(line, "idle timeout"))
            print_message("  namesrvd: %s", line);
    if (f)
        fclose(f);
}

static void test_pause_is_not_death(void **state)
{
    fx_t *fx = *state;
    pause_plan_t p = pause_plan();
    /* the timeout a broker registers; 0 = the server's default */
    int64_t reg_timeout = p.args ? p.timeout_ms : 0;
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, p.args), 0);
    broker_t live[PAUSE_LIVE], dead = {"LvCluster", "lv-p-dead", "127.0.0.1:25920", 0, reg_timeout};
    char names[PAUSE_LIVE][16], addrs[PAUSE_LIVE][32], topics[PAUSE_LIVE][2][16];
    ns_client_t *lc[PAUSE_LIVE], *dc = nstest_connect(&fx->srv), *q = nstest_connect(&fx->srv);
    const char *td[] = {"LV_PD", "LV_PD2"};
    register_ok(dc, &dead, 1, td, 2);
    for (int i = 0; i < PAUSE_LIVE; i++) {
        snprintf(names[i], sizeof names[i], "lv-p%d", i);
        snprintf(addrs[i], sizeof addrs[i], "127.0.0.1:%d", 25910 + i);
        snprintf(topics[i][0], sizeof topics[i][0], "LV_P%d", i);
        snprintf(topics[i][1], sizeof topics[i][1], "LV_P%d_2", i);
        live[i] = (broker_t){"LvCluster", names[i], addrs[i], 0, reg_timeout};
        lc[i] = nstest_connect(&fx->srv);
        const char *t[] = {topics[i][0], topics[i][1]};
        register_ok(lc[i], &live[i], 1, t, 2);
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < PAUSE_LIVE; i++)
            heartbeat(lc[i], &live[i]);
        heartbeat(dc, &dead);
        nstest_sleep_ms((int)p.every_ms);
    }
    for (int i = 0; i < PAUSE_LIVE; i++)
        heartbeat(lc[i], &live[i]);
    heartbeat(dc, &dead); /* its last sign of life */

    int pending = 0;
    int64_t t_stop = nstest_mono_ms();
    assert_int_equal(kill(fx->srv.pid, SIGSTOP), 0);
    print_message("SIGSTOP namesrvd for %lld ms; %d brokers heartbeat every %lld ms (timeout "
                  "%lld ms, scan %lld ms, grace %lld ms), lv-p-dead stays silent\n",
                  (long long)p.pause_ms, PAUSE_LIVE, (long long)p.every_ms, (long long)p.timeout_ms,
                  (long long)p.scan_ms, (long long)p.grace_ms);
    while (nstest_mono_ms() - t_stop < p.pause_ms) {
        nstest_sleep_ms((int)p.every_ms);
        for (int i = 0; i < PAUSE_LIVE; i++)
            heartbeat_send(lc[i], &live[i]);
        pending++;
    }
    assert_int_equal(kill(fx->srv.pid, SIGCONT), 0);
    int64_t t_cont = nstest_mono_ms();
    print_message("SIGCONT after %lld ms; %d heartbeats per broker waited in its sockets\n",
                  (long long)(t_cont - t_stop), pending);

    /* a new connection for the questions: one left idle through the pause
     * is the subject of the idle-timeout check at the end */
    ns_client_t *idle = q;
    q = nstest_connect(&fx->srv);
    int routed = 0;
    for (int i = 0; i < PAUSE_LIVE; i++)
        routed += cluster_has(q, &live[i]);
    print_message("right after SIGCONT: %d of %d live brokers in the cluster info\n", routed,
                  PAUSE_LIVE);
    int closed = 0;
    for (int i = 0; i < PAUSE_LIVE; i++)
        for (int k = 0; k < pending; k++) {
            ns_cmd_msg_t rsp;
            ns_cmd_msg_init(&rsp);
            int rc = ns_client_recv(lc[i], 10000, &rsp);
            if (rc != NS_OK) { /* an eviction closes the broker's connection */
                print_message("%s: connection closed by namesrvd after %d of %d answers\n",
                              live[i].name, k, pending);
                closed++;
                ns_cmd_msg_free(&rsp);
                break;
            }
            assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
            ns_cmd_msg_free(&rsp);
        }
    /* the connection idle since before the pause was not idle that long
     * (checked now: over the hold below it may really be idle for the
     * whole idleTimeout and be closed, as it should) */
    assert_int_equal(nstest_log_count(&fx->srv, "idle timeout"), 0);
    assert_int_equal(nstest_cluster_info(idle), NS_OK);
    ns_client_close(idle);
    /* the live brokers never leave, through the grace window and past their
     * own timeout; the silent one goes once the grace window is over */
    int64_t hold = (p.grace_ms > p.timeout_ms ? p.grace_ms : p.timeout_ms) + 2 * p.scan_ms;
    int64_t dead_gone = -1, last_hb = 0, lost_at = -1;
    while (closed == 0 && nstest_mono_ms() - t_cont < hold) {
        for (int i = 0; i < PAUSE_LIVE && lost_at < 0; i++)
            if (!cluster_has(q, &live[i]))
                lost_at = nstest_mono_ms() - t_cont;
        if (lost_at >= 0)
            break;
        if (dead_gone < 0 && !cluster_has(q, &dead))
            dead_gone = nstest_mono_ms() - t_cont;
        if (nstest_mono_ms() - last_hb >= p.every_ms) {
            for (int i = 0; i < PAUSE_LIVE; i++)
                heartbeat(lc[i], &live[i]);
            last_hb = nstest_mono_ms();
        }
        nstest_sleep_ms(POLL_MS);
    }
    writer_barrier(q); /* unregistrations queued by then have committed */
    routed = 0;
    for (int i = 0; i < PAUSE_LIVE; i++)
        routed += cluster_has(q, &live[i]);
    print_message("%lld ms after SIGCONT: %d of %d live brokers in the cluster info (first lost "
                  "at %lld ms, -1: never); lv-p-dead gone at %lld ms (grace %lld ms)\n",
                  (long long)(nstest_mono_ms() - t_cont), routed, PAUSE_LIVE, (long long)lost_at,
                  (long long)dead_gone, (long long)p.grace_ms);
    print_pause_log(fx);
    assert_int_equal(closed, 0);
    assert_int_equal(lost_at, -1);

    for (int i = 0; i < PAUSE_LIVE; i++) {
        char needle[96];
        snprintf(needle, sizeof needle, "%s %s (LvCluster) expired", live[i].name, live[i].addr);
        assert_int_equal(nstest_log_count(&fx->srv, needle), 0);
        bool has = false;
        assert_int_equal(route(q, topics[i][0], live[i].name, &has), NS_RSP_SUCCESS);
        assert_true(has);
    }
    assert_true(nstest_log_count(&fx->srv, "event loop stalled") >= 1);
    assert_true(dead_gone >= p.grace_ms - 100); /* not before the grace window ends */
    assert_true(dead_gone <= p.grace_ms + p.scan_ms + SLACK_MS);
    assert_true(nstest_log_wait(&fx->srv, "lv-p-dead 127.0.0.1:25920 (LvCluster) expired", 1000));
    for (int i = 0; i < PAUSE_LIVE; i++)
        ns_client_close(lc[i]);
    ns_client_close(dc);
    ns_client_close(q);
}

/* ---- (e) heartbeats and unchanged registrations cost no disk write ---- */

/* write_bytes from /proc/<pid>/io, or -1 if unavailable. */
static long long proc_write_bytes(int pid)
{
    char path[64], line[256];
    long long v = -1;
    snprintf(path, sizeof path, "/proc/%d/io", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "write_bytes: %lld", &v) == 1)
            break;
    fclose(f);
    return v;
}

static void data_stat(const fx_t *fx, struct stat *st)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/data.mdb", fx->srv.data);
    assert_int_equal(stat(path, st), 0);
}

static bool same_mtime(const struct stat *a, const struct stat *b)
{
    return a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Waits until the clock file times come from (the coarse wall clock) is
 * past t, so that a later write gets a later mtime. */
static void wait_clock_past(const struct timespec *t)
{
    int64_t end = nstest_mono_ms() + 5000;
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME_COARSE, &now);
        if (now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec > t->tv_nsec))
            return;
        if (nstest_mono_ms() > end)
            fail_msg("the coarse wall clock did not pass the store's mtime in 5 s");
        nstest_sleep_ms(1);
    }
}

static const broker_t BE = {"LvCluster", "lv-e", "127.0.0.1:23911", 0, 0};

/* A re-registration with the same bytes is answered from what the last one
 * found (no decode) only while nothing in the store changed: after a topic
 * is deleted the same bytes bring it back, as in Java. */
static void test_identical_registration_after_store_change(void **state)
{
    fx_t *fx = *state;
    const char *tf[] = {"LV_F1", "LV_F2"};
    ns_client_t *c = nstest_connect(&fx->srv);
    for (int i = 0; i < 3; i++) /* writer, then unchanged check, then same bytes */
        register_ok(c, &BE, 1, tf, 2);
    bool has = false;
    assert_int_equal(route(c, "LV_F1", BE.name, &has), NS_RSP_SUCCESS);
    const char *kv[] = {"topic", "LV_F1", NULL};
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    nstest_cmd(&cmd, ext, NS_REQ_DELETE_TOPIC_IN_NAMESRV, kv);
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &cmd, 5000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    ns_cmd_msg_free(&rsp);
    assert_int_equal(route(c, "LV_F1", BE.name, &has), NS_RSP_TOPIC_NOT_EXIST);
    register_ok(c, &BE, 1, tf, 2); /* the very same bytes */
    assert_int_equal(route(c, "LV_F1", BE.name, &has), NS_RSP_SUCCESS);
    assert_true(has);
    ns_client_close(c);
}

static void test_unchanged_registration_writes_nothing(void **state)
{
    fx_t *fx = *state;
    const char *te[] = {"LV_E1", "LV_E2", "LV_E3"};
    /* write_bytes counts the log file too: keep a "slow request" warning on a
     * loaded machine out of the measurement */
    static const char *const quiet_args[] = {"--scanNotActiveBrokerInterval=100",
                                             "--brokerGraceWindowMillis=1500", "--logLevel=error",
                                             NULL};
    nstest_server_stop(&fx->srv, SIGKILL);
    assert_int_equal(nstest_server_start(&fx->srv, fx->dir, quiet_args), 0);
    ns_client_t *c = nstest_connect(&fx->srv);
    register_ok(c, &BE, 1, te, 3);
    writer_barrier(c); /* whatever the first registration queued has committed */

    struct stat st0, st1, st2;
    data_stat(fx, &st0);
    long long w0 = proc_write_bytes(fx->srv.pid);
    for (int i = 0; i < 200; i++) {
        register_ok(c, &BE, 1, te, 3);
        heartbeat(c, &BE);
    }
    for (int i = 0; i < 50; i++)
        simple_call(c, NS_REQ_QUERY_DATA_VERSION, &BE,
                    "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000001}");
    long long w1 = proc_write_bytes(fx->srv.pid);
    data_stat(fx, &st1);
    print_message("200 unchanged registrations + 200 heartbeats + 50 data-version queries: "
                  "write_bytes %lld -> %lld\n",
                  w0, w1);
    assert_true(same_mtime(&st0, &st1));
    assert_int_equal(st0.st_size, st1.st_size);
    if (w0 >= 0)
        assert_int_equal(w1 - w0, 0);

    wait_clock_past(&st1.st_mtim); /* a later commit gets a later mtime */
    register_ok(c, &BE, 2, te, 3);
    long long w2 = proc_write_bytes(fx->srv.pid);
    data_stat(fx, &st2);
    print_message("one registration with a new DataVersion: write_bytes %lld -> %lld\n", w1, w2);
    assert_false(same_mtime(&st1, &st2));
    if (w0 >= 0)
        assert_true(w2 > w1);
    ns_client_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_route_answered_right_after_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_grace_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_registration_keeps_connection, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_refused_registration_then_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_silent_broker_evicted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_only_broker_stays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pause_is_not_death, setup_dir, teardown),
        cmocka_unit_test_setup_teardown(test_identical_registration_after_store_change, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unchanged_registration_writes_nothing, setup,
                                        teardown),
    };
    const struct CMUnitTest pause_only[] = {
        cmocka_unit_test_setup_teardown(test_pause_is_not_death, setup_dir, teardown),
    };
    /* tools/pause_test.sh: the pause test alone, as long as it asks */
    const char *pause = getenv("NSTEST_PAUSE_MS");
    if (pause && *pause)
        return cmocka_run_group_tests(pause_only, NULL, NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
