/* test_io_loops.c - namesrvd with ioThreads=4: connections are dealt out to
 * four event loops in turn, so eight connections cover every loop twice.
 * Route lookups are answered by the connection's own loop, everything else
 * is forwarded to the main loop; these tests check that the two paths give
 * the same answers, that a setting changed on one loop is seen on all of
 * them, that a broker's connection closing on an I/O loop unregisters it,
 * that a flood of forwarded frames pauses reading instead of queueing
 * without bound, and that the server still stops cleanly (exit 0, which under ASan also
 * means no leak). The rest of the integration suite runs against three
 * loops too (its _io3 variants). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_auth.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/model.h"

#define N_CONNS 8
#define TIMEOUT_MS 5000

/* a small backlog, so that the flood test pauses for sure */
static const char *const k_args[] = {"--ioThreads=4", "--logLevel=debug", "--ioBacklogBytes=65536",
                                     NULL};

typedef struct {
    char *dir;
    nstest_server_t srv;
    ns_client_t *c[N_CONNS];
    int http; /* the auth test's HTTP port */
} fx_t;

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof *fx);
    if (fx == NULL || nstest_server_open(&fx->srv, &fx->dir, "ioloops", k_args) != 0) {
        free(fx);
        return -1;
    }
    for (int i = 0; i < N_CONNS; i++) /* one after another: loop i % 4 */
        fx->c[i] = nstest_connect(&fx->srv);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    for (int i = 0; i < N_CONNS; i++)
        if (fx->c[i])
            ns_client_close(fx->c[i]);
    nstest_server_close(&fx->srv, fx->dir);
    free(fx);
    return 0;
}

/* REGISTER_BROKER of broker `name` with topics T0..T<n-1> (n >= 2: a first
 * registration of one topic is refused as an increment, as Java does). */
static void register_broker(ns_client_t *c, const char *name, const char *addr, int n)
{
    ns_regbody_t b;
    memset(&b, 0, sizeof b);
    b.data_version.counter = 1;
    b.data_version.timestamp = 1700000000000LL;
    b.topics = calloc((size_t)n, sizeof *b.topics);
    assert_non_null(b.topics);
    char names[16][16];
    for (int i = 0; i < n && i < 16; i++) {
        snprintf(names[i], sizeof names[i], "T%d", i);
        b.topics[i].topic_name = names[i];
        b.topics[i].read_queue_nums = b.topics[i].write_queue_nums = 4;
        b.topics[i].perm = 6;
    }
    b.n_topics = (size_t)n;
    b.has_filter_server_list = true;
    ns_buf_t body = NS_BUF_INIT;
    assert_int_equal(ns_regbody_encode_json(&body, &b), NS_OK);
    char crc[16];
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(body.data, body.len));
    const char *kv[] = {
        "bodyCrc32",  crc,          "brokerAddr",   addr,          "brokerId",
        "0",          "brokerName", name,           "clusterName", "IoCluster",
        "compressed", "false",      "haServerAddr", addr,          "heartbeatTimeoutMillis",
        "120000",     NULL};
    ns_cmd_msg_t rsp =
        nstest_call_msg(c, NS_REQ_REGISTER_BROKER, kv, body.data, body.len, TIMEOUT_MS);
    if (rsp.cmd.code != NS_RSP_SUCCESS)
        fail_msg("register %s: code %d (%s)", name, rsp.cmd.code,
                 rsp.cmd.remark ? rsp.cmd.remark : "");
    ns_cmd_msg_free(&rsp);
    ns_buf_free(&body);
    free(b.topics);
}

/* The route body of topic on c (caller frees), or NULL with *code set. */
static char *route(ns_client_t *c, const char *topic, int *code)
{
    const char *kv[] = {"topic", topic, NULL};
    ns_cmd_msg_t rsp = nstest_call_msg(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, NULL, 0, TIMEOUT_MS);
    *code = rsp.cmd.code;
    char *out = NULL;
    if (rsp.cmd.code == NS_RSP_SUCCESS) {
        out = strndup((const char *)rsp.cmd.body, rsp.cmd.body_len);
        assert_non_null(out);
    }
    ns_cmd_msg_free(&rsp);
    return out;
}

static void update_config(ns_client_t *c, const char *props)
{
    ns_cmd_msg_t rsp =
        nstest_call_msg(c, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, props, strlen(props), TIMEOUT_MS);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    ns_cmd_msg_free(&rsp);
}

/* Every connection (every loop) answers the same route bytes. */
static void test_same_route_on_every_loop(void **state)
{
    fx_t *fx = *state;
    register_broker(fx->c[0], "io-broker-a", "10.0.9.1:10911", 3);
    int code;
    char *want = route(fx->c[3], "T1", &code); /* the main loop's connection */
    assert_int_equal(code, NS_RSP_SUCCESS);
    assert_non_null(strstr(want, "\"brokerName\":\"io-broker-a\""));
    for (int i = 0; i < N_CONNS; i++) {
        char *got = route(fx->c[i], "T1", &code);
        assert_int_equal(code, NS_RSP_SUCCESS);
        assert_string_equal(got, want);
        free(got);
        assert_null(route(fx->c[i], "NoSuchTopic", &code));
        assert_int_equal(code, NS_RSP_TOPIC_NOT_EXIST);
    }
    free(want);
}

/* One write of 60 frames mixing lookups (answered on the I/O loop), KV
 * reads (forwarded) and an unknown code: each answered once, correctly. */
static void test_pipelined_mix_on_an_io_loop(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c[1];
    register_broker(c, "io-broker-b", "10.0.9.2:10911", 2);
    const char *put[] = {"namespace", "IO", "key", "k", "value", "v", NULL};
    ns_cmd_msg_t rsp = nstest_call_msg(c, NS_REQ_PUT_KV_CONFIG, put, NULL, 0, TIMEOUT_MS);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    ns_buf_t all = NS_BUF_INIT;
    for (int i = 0; i < 60; i++) {
        ns_cmd_t cmd;
        ns_ext_field_t ext[16];
        const char *lookup[] = {"topic", "T0", NULL};
        const char *get[] = {"namespace", "IO", "key", "k", NULL};
        int code = i % 3 == 0   ? NS_REQ_GET_ROUTEINFO_BY_TOPIC
                   : i % 3 == 1 ? NS_REQ_GET_KV_CONFIG
                                : 99999;
        nstest_cmd(&cmd, ext, code, i % 3 == 0 ? lookup : i % 3 == 1 ? get : NULL);
        cmd.opaque = 5000 + i;
        assert_int_equal(ns_remoting_encode(&all, &cmd), NS_OK);
    }
    assert_int_equal(ns_client_send_raw(c, all.data, all.len), NS_OK);
    bool seen[60] = {false};
    for (int n = 0; n < 60; n++) {
        assert_int_equal(ns_client_recv(c, TIMEOUT_MS, &rsp), NS_OK);
        int i = rsp.cmd.opaque - 5000;
        assert_true(i >= 0 && i < 60);
        assert_false(seen[i]);
        seen[i] = true;
        if (i % 3 == 0) {
            assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
            assert_non_null(rsp.cmd.body);
        } else if (i % 3 == 1) {
            assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
            assert_string_equal(ns_cmd_ext_get(&rsp.cmd, "value"), "v");
        } else {
            assert_int_equal(rsp.cmd.code, NS_RSP_REQUEST_CODE_NOT_SUPPORTED);
        }
    }
    ns_cmd_msg_free(&rsp);
    ns_buf_free(&all);
}

/* orderMessageEnable set through one loop changes the next lookup on all. */
static void test_setting_reaches_every_loop(void **state)
{
    fx_t *fx = *state;
    register_broker(fx->c[0], "io-broker-c", "10.0.9.3:10911", 2);
    const char *put[] = {"namespace", NS_ORDER_TOPIC_CONFIG_NS, "key", "T0",
                         "value",     "io-broker-c:4",          NULL};
    ns_cmd_msg_t rsp = nstest_call_msg(fx->c[0], NS_REQ_PUT_KV_CONFIG, put, NULL, 0, TIMEOUT_MS);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    ns_cmd_msg_free(&rsp);
    for (int round = 0; round < 3; round++) {
        bool on = round % 2 == 0;
        update_config(fx->c[round % N_CONNS],
                      on ? "orderMessageEnable=true\n" : "orderMessageEnable=false\n");
        for (int i = 0; i < N_CONNS; i++) {
            int code;
            char *got = route(fx->c[i], "T0", &code);
            assert_int_equal(code, NS_RSP_SUCCESS);
            if ((strstr(got, "\"orderTopicConf\":\"io-broker-c:4\"") != NULL) != on)
                fail_msg("round %d, connection %d: %s", round, i, got);
            free(got);
        }
    }
}

/* A broker whose connection lives on an I/O loop goes when it closes. */
static void test_close_on_io_loop_unregisters(void **state)
{
    fx_t *fx = *state;
    register_broker(fx->c[2], "io-broker-d", "10.0.9.4:10911", 2);
    int code;
    char *r = route(fx->c[5], "T1", &code);
    assert_int_equal(code, NS_RSP_SUCCESS);
    free(r);
    ns_client_close(fx->c[2]);
    fx->c[2] = NULL;
    int64_t deadline = nstest_mono_ms() + TIMEOUT_MS;
    while ((r = route(fx->c[5], "T1", &code)) != NULL && nstest_mono_ms() < deadline) {
        free(r);
        nstest_sleep_ms(20);
    }
    free(r);
    assert_int_equal(code, NS_RSP_TOPIC_NOT_EXIST);
}

/* Counts the lines of the server's log that contain needle. */
static int log_count(const fx_t *fx, const char *needle)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/namesrvd.log", fx->dir);
    uint8_t *log = NULL;
    size_t n = 0;
    assert_int_equal(nstest_read_file(path, &log, &n), 0);
    int count = 0;
    for (const char *p = (const char *)log; (p = strstr(p, needle)) != NULL; p++)
        count++;
    free(log);
    return count;
}

/* 24 MiB of forwarded frames in one write, 384 times what an I/O loop
 * lets wait for the main loop here (ioBacklogBytes): the connection stops
 * reading and goes on when the main loop has caught up, and every frame is
 * answered once. */
static void test_flood_pauses_and_resumes(void **state)
{
    fx_t *fx = *state;
    ns_client_t *c = fx->c[0];
    const char *put[] = {"namespace", "IO", "key", "k", "value", "v", NULL};
    ns_cmd_msg_t rsp = nstest_call_msg(c, NS_REQ_PUT_KV_CONFIG, put, NULL, 0, TIMEOUT_MS);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    enum { N = 6000, PAD = 4096 };
    char *pad = malloc(PAD + 1);
    assert_non_null(pad);
    memset(pad, 'x', PAD);
    pad[PAD] = '\0';
    ns_buf_t all = NS_BUF_INIT;
    for (int i = 0; i < N; i++) {
        ns_cmd_t cmd;
        ns_ext_field_t ext[16];
        const char *get[] = {"namespace", "IO", "key", "k", "pad", pad, NULL};
        nstest_cmd(&cmd, ext, NS_REQ_GET_KV_CONFIG, get);
        cmd.opaque = 100000 + i;
        assert_int_equal(ns_remoting_encode(&all, &cmd), NS_OK);
    }
    free(pad);
    assert_true(all.len > 24u << 20);
    assert_int_equal(ns_client_send_raw(c, all.data, all.len), NS_OK);
    ns_buf_free(&all);
    bool *seen = calloc(N, sizeof *seen);
    assert_non_null(seen);
    for (int n = 0; n < N; n++) {
        assert_int_equal(ns_client_recv(c, TIMEOUT_MS, &rsp), NS_OK);
        int i = rsp.cmd.opaque - 100000;
        assert_true(i >= 0 && i < N);
        assert_false(seen[i]);
        seen[i] = true;
        assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
        assert_string_equal(ns_cmd_ext_get(&rsp.cmd, "value"), "v");
    }
    free(seen);
    ns_cmd_msg_free(&rsp);
    int paused = log_count(fx, "reading paused"), again = log_count(fx, "reading again");
    print_message("flood: reading paused %d time(s), resumed %d time(s)\n", paused, again);
    assert_true(paused > 0);
    assert_int_equal(again, paused);
}

/* SIGTERM with connections open on every loop: exit status 0. */
static void test_sigterm_with_open_loops(void **state)
{
    fx_t *fx = *state;
    register_broker(fx->c[0], "io-broker-e", "10.0.9.5:10911", 2);
    int code;
    for (int i = 0; i < N_CONNS; i++)
        free(route(fx->c[i], "T0", &code));
    int status = nstest_server_stop(&fx->srv, SIGTERM);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("namesrvd did not exit cleanly on SIGTERM (status 0x%x)", status);
}

/* authMode=all with four loops: the I/O loops check signed lookups
 * themselves and serve them (nothing forwarded), and send every request
 * that does not pass there to the main loop, which refuses it as before.
 * Before, every request under authMode went to the main loop, so auth cost
 * all scaling. */
static int setup_auth(void **state)
{
    fx_t *fx = calloc(1, sizeof *fx);
    char data[4200];
    if (fx == NULL)
        return -1;
    fx->dir = nstest_tmpdir("ioauth");
    snprintf(data, sizeof data, "%s/data", fx->dir);
    nstest_users_add(data, false);
    const char *args[] = {"--ioThreads=4", "--authMode=all", "--authPenaltyMaxMillis=0", NULL};
    if (nstest_server_start_http(&fx->srv, fx->dir, args, &fx->http) != 0)
        return -1;
    for (int i = 0; i < N_CONNS; i++) /* one after another: loop i % 4 */
        fx->c[i] = nstest_connect(&fx->srv);
    *state = fx;
    return 0;
}

static int lookup_code(ns_client_t *c, char *remark, size_t rlen)
{
    const char *kv[] = {"topic", "io-auth-none", NULL};
    return nstest_call_on(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, NULL, remark, rlen);
}

static void test_auth_checked_on_every_loop(void **state)
{
    fx_t *fx = *state;
    char remark[512];
    double fwd0 = nstest_metric(fx->http, "namesrv_io_forwarded_total");
    double checked0 = nstest_metric(fx->http, "namesrv_auth_checks_total");
    for (int i = 0; i < N_CONNS; i++) {
        assert_int_equal(ns_client_set_credentials(fx->c[i], "cli1", "clientsecret"), NS_OK);
        for (int k = 0; k < 10; k++)
            assert_int_equal(lookup_code(fx->c[i], remark, sizeof remark), NS_RSP_TOPIC_NOT_EXIST);
    }
    double fwd1 = nstest_metric(fx->http, "namesrv_io_forwarded_total");
    print_message("# 80 signed lookups over 4 loops: %.0f forwarded to the main loop\n",
                  fwd1 - fwd0);
    assert_true(fwd1 == fwd0);
    assert_true(nstest_metric(fx->http, "namesrv_auth_checks_total") - checked0 == 80);
    /* unsigned, and signed with a wrong secret: refused, by the main loop */
    for (int i = 0; i < N_CONNS; i++) {
        assert_int_equal(ns_client_set_credentials(fx->c[i], i % 2 ? "cli1" : NULL,
                                                   i % 2 ? "wrongsecret" : NULL),
                         NS_OK);
        assert_int_equal(lookup_code(fx->c[i], remark, sizeof remark), NS_RSP_NO_PERMISSION);
        if (strstr(remark, i % 2 ? "signature check failed" : "needs a signed request") == NULL)
            fail_msg("connection %d: remark '%s'", i, remark);
    }
    double fwd2 = nstest_metric(fx->http, "namesrv_io_forwarded_total");
    print_message("# 8 refused lookups: %.0f forwarded\n", fwd2 - fwd1);
    assert_true(fwd2 - fwd1 == 6); /* two of the eight connections are the main loop's */
    assert_true(nstest_metric(fx->http, "namesrv_auth_refusals_total{reason=\"unsigned\"}") == 4);
}

/* Thread tid of pid: its requested time slice in ns (the "se.slice" line
 * of /proc/.../sched) in *slice and its nice level in *nice; -1 when the
 * kernel does not show them. */
static int thread_sched(int pid, const char *tid, long *slice, long *nice)
{
    char path[320], line[256];
    snprintf(path, sizeof path, "/proc/%d/task/%s/sched", pid, tid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    *slice = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "se.slice", 8) == 0 && strchr(line, ':'))
            *slice = strtol(strchr(line, ':') + 1, NULL, 10);
    fclose(f);
    snprintf(path, sizeof path, "/proc/%d/task/%s/stat", pid, tid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = 0;
    char *p = strrchr(line, ')'); /* then state and 15 more fields before nice */
    for (int i = 0; p && i < 17; i++)
        p = strchr(p + 1, ' ');
    if (p == NULL || *slice < 0)
        return -1;
    *nice = strtol(p + 1, NULL, 10);
    return 0;
}

/* Each of the four loop threads asks for a 100 us time slice (Linux >=
 * 6.12 honours it), and the threads they start do not inherit it: the
 * writer (nice 19) keeps the default one. */
/* Counts the server's threads by their slice and nice value: loops (100 us
 * slices), writers (nice 19, which must keep the default slice) and others.
 * -1 when /proc shows no se.slice. */
static int count_slices(int pid, int *loops, int *writers, int *others)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    assert_non_null(d);
    *loops = *writers = *others = 0;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        long slice = -1, nice = 0;
        if (e->d_name[0] == '.')
            continue;
        if (thread_sched(pid, e->d_name, &slice, &nice) != 0) {
            rc = -1;
        } else if (nice == 19) {
            (*writers)++;
            assert_int_not_equal(slice, 100000);
        } else if (slice == 100000) {
            (*loops)++;
        } else {
            (*others)++;
        }
    }
    closedir(d);
    return rc;
}

/* Each of the four loop threads asks for a 100 us time slice (Linux >=
 * 6.12 honours it), and the threads they start do not inherit it: the
 * writer (nice 19) keeps the default one. A loop asks as its thread starts,
 * which may come after the server listens: up to 5 s is allowed for that. */
static void test_loops_run_in_short_slices(void **state)
{
    fx_t *fx = *state;
    struct utsname u;
    int major = 0, minor = 0;
    if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2 ||
        major * 100 + minor < 612) {
        print_message("# kernel %s: no requested slices before 6.12\n", u.release);
        skip();
    }
    int loops = 0, writers = 0, others = 0;
    for (int tries = 0; tries < 250; tries++) {
        if (count_slices(fx->srv.pid, &loops, &writers, &others) != 0) {
            print_message("# /proc/PID/task/TID/sched shows no se.slice here\n");
            skip();
        }
        if (loops >= 4 && writers >= 1)
            break;
        nstest_sleep_ms(20);
    }
    print_message("# %d loop threads in 100 us slices, %d writer, %d others\n", loops, writers,
                  others);
    assert_int_equal(loops, 4);
    assert_int_equal(writers, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_route_on_every_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_mix_on_an_io_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_setting_reaches_every_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_on_io_loop_unregisters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flood_pauses_and_resumes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_with_open_loops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loops_run_in_short_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_checked_on_every_loop, setup_auth, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
