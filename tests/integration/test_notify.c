/* test_notify.c - NOTIFY_MIN_BROKER_ID_CHANGE (905) through the real
 * namesrvd. A small TCP server in the test stands in for a broker: its
 * ephemeral loopback address is registered as that broker's brokerAddr, and
 * what namesrvd sends to it is read and decoded here.
 *
 * What Java 5.3.3 does (RouteInfoManager) and these tests check, with
 * notifyMinBrokerIdChanged=true:
 *  - a registration whose brokerId is below the group's smallest id (0 for
 *    an empty group) sends minBrokerId, minBrokerAddr, haBrokerAddr (the
 *    registering broker's haServerAddr) to every other member, or to the
 *    only member when it is alone;
 *  - an unregistration (request, closed connection or expiry) of the
 *    group's smallest id in an enableActingMaster group that keeps members
 *    sends minBrokerId, minBrokerAddr, offlineBrokerAddr to every member
 *    left;
 *  - nothing otherwise, and nothing at all with the setting off.
 * Each frame is one-way, JSON header, on a connection namesrvd closes once
 * it is written; each recipient gets one log line.
 *
 * Where we differ from Java: the outbound connections are bounded, so a peer
 * that registers a group at addresses of its choosing and churns its
 * smallest id cannot make namesrvd a connection flood (test_flood_bounded). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

#define CALL_MS 20000
#define WAIT_MS 10000  /* for a notification that must come */
#define SILENCE_MS 300 /* for one that must not (plus a positive control) */

static const char *const k_on[] = {"--notifyMinBrokerIdChanged=true", NULL};

typedef struct {
    nstest_fx_t fx;
    ns_client_t *admin;
} fx_t;

static int setup_args(void **state, const char *const *args)
{
    fx_t *f = calloc(1, sizeof *f);
    void *inner = NULL;
    if (f == NULL || nstest_fx_setup(&inner, "notify", args) != 0) {
        free(f);
        return -1;
    }
    f->fx = *(nstest_fx_t *)inner;
    free(inner);
    f->admin = nstest_connect(&f->fx.srv);
    *state = f;
    return 0;
}

static int setup_on(void **state)
{
    return setup_args(state, k_on);
}

static int setup_off(void **state)
{
    return setup_args(state, NULL);
}

static int teardown(void **state)
{
    fx_t *f = *state;
    if (f->admin)
        ns_client_close(f->admin);
    nstest_server_close(&f->fx.srv, f->fx.dir);
    free(f);
    return 0;
}

/* ---- a broker stand-in: a listening socket on 127.0.0.1 ---- */

typedef struct {
    int fd;
    char addr[32];
} listener_t;

/* listen=false: bound but not listening, so a connect is refused. */
static void listener_open(listener_t *l, bool listen_too)
{
    struct sockaddr_in sa = {0};
    socklen_t len = sizeof sa;
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(l->fd >= 0);
    assert_int_equal(bind(l->fd, (struct sockaddr *)&sa, sizeof sa), 0);
    if (listen_too)
        assert_int_equal(listen(l->fd, 16), 0);
    assert_int_equal(getsockname(l->fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(l->addr, sizeof l->addr, "127.0.0.1:%d", ntohs(sa.sin_port));
}

static void listener_close(listener_t *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

static bool readable(int fd, int timeout_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, timeout_ms) == 1;
}

/* Reads exactly n bytes within the deadline; false on EOF or timeout. */
static bool read_n(int fd, uint8_t *p, size_t n, int64_t deadline)
{
    size_t got = 0;
    while (got < n) {
        int left = (int)(deadline - nstest_mono_ms());
        if (left <= 0 || !readable(fd, left))
            return false;
        ssize_t r = read(fd, p + got, n - got);
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

/* Accepts the next connection and decodes the one frame on it into m; then
 * the server must close the connection with nothing more sent. */
static void receive_one(listener_t *l, ns_cmd_msg_t *m)
{
    int64_t deadline = nstest_mono_ms() + WAIT_MS;
    if (!readable(l->fd, WAIT_MS))
        fail_msg("no notification reached %s within %d ms", l->addr, WAIT_MS);
    int c = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(c >= 0);
    uint8_t *frame = malloc(4);
    assert_non_null(frame);
    assert_true(read_n(c, frame, 4, deadline));
    uint32_t len = ((uint32_t)frame[0] << 24) | ((uint32_t)frame[1] << 16) |
                   ((uint32_t)frame[2] << 8) | frame[3];
    assert_true(len >= 4 && len < 65536);
    frame = realloc(frame, 4 + (size_t)len);
    assert_non_null(frame);
    assert_true(read_n(c, frame + 4, len, deadline));
    assert_int_equal(ns_remoting_decode(frame, 4 + (size_t)len, m), NS_OK);
    free(frame);
    uint8_t extra;
    assert_true(readable(c, WAIT_MS));
    assert_int_equal(read(c, &extra, 1), 0); /* closed once written */
    close(c);
}

static void expect_ext(const ns_cmd_t *cmd, const char *key, const char *want)
{
    const char *got = ns_cmd_ext_get(cmd, key);
    if (want == NULL && got != NULL)
        fail_msg("905 carries %s=%s, Java sends no %s here", key, got, key);
    if (want && (got == NULL || strcmp(got, want) != 0))
        fail_msg("905 %s: got %s, expected %s", key, got ? got : "(none)", want);
}

/* The next notification reaching l is a 905 with exactly these fields. */
static void expect_905(listener_t *l, const char *min_id, const char *min_addr, const char *offline,
                       const char *ha)
{
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    receive_one(l, &m);
    assert_int_equal(m.cmd.code, NS_REQ_NOTIFY_MIN_BROKER_ID_CHANGE);
    assert_int_equal(m.cmd.flag, NS_FLAG_ONEWAY);
    assert_int_equal(m.cmd.serialize_type, NS_SERIALIZE_JSON);
    assert_int_equal(m.cmd.language, NS_LANG_JAVA);
    assert_int_equal(m.cmd.version, NS_VERSION_V5_3_3);
    assert_int_equal(m.cmd.body_len, 0);
    assert_int_equal(m.cmd.n_ext, 2 + (offline != NULL) + (ha != NULL));
    expect_ext(&m.cmd, "minBrokerId", min_id);
    expect_ext(&m.cmd, "minBrokerAddr", min_addr);
    expect_ext(&m.cmd, "offlineBrokerAddr", offline);
    expect_ext(&m.cmd, "haBrokerAddr", ha);
    expect_ext(&m.cmd, "brokerName", NULL); /* Java leaves it unset */
    ns_cmd_msg_free(&m);
}

static void expect_silence(listener_t *l)
{
    if (readable(l->fd, SILENCE_MS))
        fail_msg("%s got a notification where Java sends none", l->addr);
}

/* Waits until the server's log holds needle. */
static void expect_log(const fx_t *f, const char *needle)
{
    if (!nstest_log_wait(&f->fx.srv, needle, WAIT_MS))
        fail_msg("namesrvd.log has no line with '%s'", needle);
}

/* ---- brokers ---- */

typedef struct {
    const char *cluster, *name, *addr, *ha;
    const char *id;
    bool acting; /* enableActingMaster */
    ns_client_t *conn;
} broker_t;

static const char k_body[] =
    "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":1,"
    "\"stateVersion\":0,\"timestamp\":1700000000000},\"topicConfigTable\":{"
    "\"TopicN1\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"TopicN1\",\"topicSysFlag\":0,"
    "\"writeQueueNums\":4},"
    "\"TopicN2\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"TopicN2\",\"topicSysFlag\":0,"
    "\"writeQueueNums\":4}}}}";

/* REGISTER_BROKER over the broker's own connection (opened on first use). */
static void register_broker(const fx_t *f, broker_t *b)
{
    if (b->conn == NULL)
        b->conn = nstest_connect(&f->fx.srv);
    const char *kv[] = {"brokerAddr",
                        b->addr,
                        "brokerId",
                        b->id,
                        "brokerName",
                        b->name,
                        "clusterName",
                        b->cluster,
                        "haServerAddr",
                        b->ha,
                        "enableActingMaster",
                        b->acting ? "true" : "false",
                        "compressed",
                        "false",
                        NULL};
    int64_t t0 = nstest_mono_ms();
    assert_int_equal(
        nstest_call_code(b->conn, NS_REQ_REGISTER_BROKER, kv, k_body, sizeof k_body - 1, CALL_MS),
        NS_RSP_SUCCESS);
    /* the notification is never waited for */
    assert_true(nstest_mono_ms() - t0 < 5000);
}

static void unregister_broker(const fx_t *f, const broker_t *b)
{
    const char *kv[] = {"brokerAddr", b->addr,       "brokerId", b->id, "brokerName",
                        b->name,      "clusterName", b->cluster, NULL};
    assert_int_equal(nstest_call_code(f->admin, NS_REQ_UNREGISTER_BROKER, kv, NULL, 0, CALL_MS),
                     NS_RSP_SUCCESS);
}

static void close_broker(broker_t *b)
{
    if (b->conn)
        ns_client_close(b->conn);
    b->conn = NULL;
}

#define M_ADDR "127.0.0.1:1" /* a master nothing is told about here */
#define M_HA "127.0.0.1:2"

/* ====================================================================== */

/* A registration below the smallest id tells the other members. */
static void test_registration_lowers_min(void **state)
{
    fx_t *f = *state;
    listener_t s1, s2;
    listener_open(&s1, true);
    listener_open(&s2, true);
    broker_t slave1 = {"NC", "bn", s1.addr, "127.0.0.1:3", "1", false, NULL};
    broker_t slave2 = {"NC", "bn", s2.addr, "127.0.0.1:4", "2", false, NULL};
    broker_t master = {"NC", "bn", M_ADDR, M_HA, "0", false, NULL};
    register_broker(f, &slave2); /* empty group: smallest id counts as 0, 2 < 0 is false */
    register_broker(f, &slave1); /* 1 < 2: slave2 is told that 1 is the smallest */
    expect_905(&s2, "1", s1.addr, NULL, "127.0.0.1:3");
    expect_silence(&s1);         /* the new smallest one is not told */
    register_broker(f, &master); /* 0 < 1: both slaves are told, the master is not */
    expect_905(&s1, "0", M_ADDR, NULL, M_HA);
    expect_905(&s2, "0", M_ADDR, NULL, M_HA);
    register_broker(f, &slave1); /* re-registrations change nothing */
    register_broker(f, &master);
    expect_silence(&s1);
    expect_silence(&s2);
    char line[256];
    snprintf(line, sizeof line,
             "NOTIFY_MIN_BROKER_ID_CHANGE to %s sent: group bn minBrokerId=0 "
             "minBrokerAddr=" M_ADDR " offlineBrokerAddr=null haBrokerAddr=" M_HA,
             s1.addr);
    expect_log(f, line);
    close_broker(&slave1);
    close_broker(&slave2);
    close_broker(&master);
    listener_close(&s1);
    listener_close(&s2);
}

/* A broker alone in its group that re-registers under a lower id (a slave
 * promoted at the same address) is told itself, as Java does. */
static void test_registration_alone(void **state)
{
    fx_t *f = *state;
    listener_t l;
    listener_open(&l, true);
    broker_t as_slave = {"NC", "solo", l.addr, "127.0.0.1:5", "1", false, NULL};
    register_broker(f, &as_slave);
    expect_silence(&l);
    broker_t as_master = {"NC", "solo", l.addr, "127.0.0.1:5", "0", false, as_slave.conn};
    register_broker(f, &as_master);
    expect_905(&l, "0", l.addr, NULL, "127.0.0.1:5");
    close_broker(&as_master);
    listener_close(&l);
}

/* Unregistering the smallest id of an acting-master group tells the rest,
 * by request and by the close of its registration connection. */
static void test_unregister_acting_master(void **state)
{
    fx_t *f = *state;
    listener_t s1, s2;
    listener_open(&s1, true);
    listener_open(&s2, true);
    broker_t master = {"NC", "am", M_ADDR, M_HA, "0", true, NULL};
    broker_t slave1 = {"NC", "am", s1.addr, "127.0.0.1:6", "1", true, NULL};
    broker_t slave2 = {"NC", "am", s2.addr, "127.0.0.1:7", "2", true, NULL};
    register_broker(f, &master);
    register_broker(f, &slave1);
    register_broker(f, &slave2);
    expect_silence(&s1);
    /* 1. UNREGISTER_BROKER of the master */
    unregister_broker(f, &master);
    expect_905(&s1, "1", s1.addr, M_ADDR, NULL);
    expect_905(&s2, "1", s1.addr, M_ADDR, NULL);
    /* unregistering a member that is not the smallest tells nobody */
    unregister_broker(f, &slave2);
    expect_silence(&s1);
    /* 2. the master comes back (0 < 1: slave1 is told), then its
     * registration connection closes */
    close_broker(&master);
    register_broker(f, &master);
    expect_905(&s1, "0", M_ADDR, NULL, M_HA);
    close_broker(&master);
    expect_905(&s1, "1", s1.addr, M_ADDR, NULL);
    expect_log(f, "offlineBrokerAddr=" M_ADDR " haBrokerAddr=null");
    /* 3. the last member going leaves nobody to tell */
    unregister_broker(f, &slave1);
    expect_silence(&s1);
    close_broker(&slave1);
    close_broker(&slave2);
    listener_close(&s1);
    listener_close(&s2);
}

/* Without enableActingMaster an unregistration tells nobody (Java checks
 * the group's flag); a registration still does. */
static void test_unregister_plain_group(void **state)
{
    fx_t *f = *state;
    listener_t s1;
    listener_open(&s1, true);
    broker_t master = {"NC", "plain", M_ADDR, M_HA, "0", false, NULL};
    broker_t slave1 = {"NC", "plain", s1.addr, "127.0.0.1:8", "1", false, NULL};
    register_broker(f, &master);
    register_broker(f, &slave1);
    unregister_broker(f, &master);
    register_broker(f, &master); /* control: this one is sent */
    expect_905(&s1, "0", M_ADDR, NULL, M_HA);
    close_broker(&master);
    close_broker(&slave1);
    listener_close(&s1);
}

/* A recipient that refuses the connection costs one log line; the others
 * and the server carry on. Twenty of them exceed the concurrent attempts. */
static void test_unreachable_recipients(void **state)
{
    fx_t *f = *state;
    enum { N = 20 };
    listener_t dead[N], live;
    broker_t slaves[N];
    char ids[N][8];
    listener_open(&live, true);
    for (int i = 0; i < N; i++) {
        listener_open(&dead[i], false);
        snprintf(ids[i], sizeof ids[i], "%d", i + 2);
        slaves[i] = (broker_t){"NC", "far", dead[i].addr, "127.0.0.1:9", ids[i], false, NULL};
    }
    for (int i = N - 1; i >= 0; i--)
        register_broker(f, &slaves[i]); /* each lowers the smallest id: tells the ones above */
    broker_t s1 = {"NC", "far", live.addr, "127.0.0.1:10", "1", false, NULL};
    broker_t master = {"NC", "far", M_ADDR, M_HA, "0", false, NULL};
    register_broker(f, &s1);
    register_broker(f, &master); /* 20 refused, 1 delivered */
    expect_905(&live, "0", M_ADDR, NULL, M_HA);
    char line[256];
    snprintf(line, sizeof line, "NOTIFY_MIN_BROKER_ID_CHANGE to %s not sent (connect failed",
             dead[0].addr);
    expect_log(f, line);
    assert_int_equal(
        nstest_call_code(f->admin, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, 0, CALL_MS),
        NS_RSP_SUCCESS);
    for (int i = 0; i < N; i++) {
        close_broker(&slaves[i]);
        listener_close(&dead[i]);
    }
    close_broker(&s1);
    close_broker(&master);
    listener_close(&live);
}

/* A listener whose accept queue is full: the kernel drops further SYNs, so
 * a connect to it hangs (on loopback) until the connector gives up. */
typedef struct {
    listener_t l;
    int fillers[3];
} jammed_t;

static void jammed_open(jammed_t *j)
{
    listener_open(&j->l, false);
    assert_int_equal(listen(j->l.fd, 0), 0);
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(j->l.fd, (struct sockaddr *)&sa, &len), 0);
    for (int i = 0; i < 3; i++) {
        j->fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        assert_true(j->fillers[i] >= 0);
        (void)connect(j->fillers[i], (struct sockaddr *)&sa, sizeof sa); /* EINPROGRESS */
    }
    /* the backlog is full once a filler is established (writable); later
     * SYNs, the server's among them, then go unanswered */
    struct pollfd p[3];
    for (int i = 0; i < 3; i++)
        p[i] = (struct pollfd){j->fillers[i], POLLOUT, 0};
    assert_true(poll(p, 3, 5000) > 0);
}

static void jammed_close(jammed_t *j)
{
    for (int i = 0; i < 3; i++)
        close(j->fillers[i]);
    listener_close(&j->l);
}

/* A recipient that never completes the connect times out after 3 s with a
 * log line; one still connecting at shutdown is abandoned, and namesrvd
 * exits cleanly (the sanitizer build checks that nothing leaks). */
static void test_connect_timeout_and_shutdown(void **state)
{
    fx_t *f = *state;
    jammed_t j;
    jammed_open(&j);
    broker_t slave = {"NC", "slow", j.l.addr, "127.0.0.1:12", "1", false, NULL};
    broker_t master = {"NC", "slow", M_ADDR, M_HA, "0", false, NULL};
    register_broker(f, &slave);
    int64_t t0 = nstest_mono_ms();
    register_broker(f, &master);
    char line[256];
    snprintf(line, sizeof line,
             "NOTIFY_MIN_BROKER_ID_CHANGE to %s not sent (connect timed out): group slow",
             j.l.addr);
    expect_log(f, line);
    int64_t waited = nstest_mono_ms() - t0;
    if (waited < 2900)
        fail_msg("gave up after %lld ms, the connect timeout is 3000 ms", (long long)waited);
    /* the server answered all along */
    assert_int_equal(
        nstest_call_code(f->admin, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, 0, CALL_MS),
        NS_RSP_SUCCESS);
    /* another one in flight, then SIGTERM: the notifier has it (queued or
     * connecting) once the registration is answered, since the server hands
     * it over in the callback that sends the answer */
    unregister_broker(f, &master);
    close_broker(&master);
    register_broker(f, &master);
    int status = nstest_server_stop(&f->fx.srv, SIGTERM);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    snprintf(line, sizeof line, "NOTIFY_MIN_BROKER_ID_CHANGE to %s not sent (shutting down)",
             j.l.addr);
    expect_log(f, line);
    close_broker(&slave);
    close_broker(&master);
    jammed_close(&j);
}

/* notifyMinBrokerIdChanged=false (the default): nothing is sent; switched
 * on at run time, the next change is. */
static void test_setting_off(void **state)
{
    fx_t *f = *state;
    listener_t s1;
    listener_open(&s1, true);
    broker_t master = {"NC", "off", M_ADDR, M_HA, "0", true, NULL};
    broker_t slave1 = {"NC", "off", s1.addr, "127.0.0.1:11", "1", true, NULL};
    register_broker(f, &slave1);
    register_broker(f, &master);   /* would tell slave1 */
    unregister_broker(f, &master); /* would tell slave1 */
    register_broker(f, &master);   /* would tell slave1 */
    expect_silence(&s1);
    static const char props[] = "notifyMinBrokerIdChanged=true";
    assert_int_equal(nstest_call_code(f->admin, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, props,
                                      sizeof props - 1, CALL_MS),
                     NS_RSP_SUCCESS);
    unregister_broker(f, &master);
    /* the first thing slave1 ever receives is this unregistration's 905 */
    expect_905(&s1, "1", s1.addr, M_ADDR, NULL);
    close_broker(&master);
    close_broker(&slave1);
    listener_close(&s1);
}

/* Accepts (and closes at once) every connection reaching the listeners
 * for ms; returns how many there were. */
static int count_accepts(listener_t *l, int n, int ms)
{
    struct pollfd p[64];
    int got = 0;
    assert_true(n <= 64);
    int64_t end = nstest_mono_ms() + ms;
    for (int64_t left; (left = end - nstest_mono_ms()) > 0;) {
        for (int i = 0; i < n; i++)
            p[i] = (struct pollfd){l[i].fd, POLLIN, 0};
        if (poll(p, (nfds_t)n, (int)left) <= 0)
            continue;
        for (int i = 0; i < n; i++) {
            int c;
            while ((p[i].revents & POLLIN) &&
                   (c = accept4(l[i].fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
                close(c);
                got++;
            }
        }
    }
    return got;
}

/* The attack with authMode off: an anonymous peer switches the setting on,
 * registers a group at 50 addresses and churns its smallest id for 3 s.
 * Java opens a connection per member per change (about 1,000 here); we at
 * most NOTIFY_RATE_PER_S a second. */
#define N_FLOOD 50
#define NOTIFY_RATE_PER_S 10 /* notify.h: NS_NOTIFY_STARTS_PER_S */
#define NOTIFY_BURST 10      /* notify.h: NS_NOTIFY_STARTS_BURST */
static void test_flood_bounded(void **state)
{
    fx_t *f = *state;
    static const char props[] = "notifyMinBrokerIdChanged=true";
    assert_int_equal(nstest_call_code(f->admin, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, props,
                                      sizeof props - 1, CALL_MS),
                     NS_RSP_SUCCESS);
    listener_t *l = calloc(N_FLOOD, sizeof *l);
    broker_t *slaves = calloc(N_FLOOD, sizeof *slaves);
    char(*ids)[8] = calloc(N_FLOOD, sizeof *ids);
    assert_true(l && slaves && ids);
    ns_client_t *conn = nstest_connect(&f->fx.srv); /* the attacker's one connection */
    for (int i = 0; i < N_FLOOD; i++) {
        listener_open(&l[i], false);
        assert_int_equal(listen(l[i].fd, 128), 0);
        assert_int_equal(fcntl(l[i].fd, F_SETFL, O_NONBLOCK), 0); /* count_accepts drains */
        snprintf(ids[i], sizeof ids[i], "%d", i + 1);
        /* ascending ids: no registration lowers the smallest one */
        slaves[i] = (broker_t){"NC", "flood", l[i].addr, "127.0.0.1:13", ids[i], true, conn};
        register_broker(f, &slaves[i]);
    }
    broker_t master = {"NC", "flood", M_ADDR, M_HA, "0", true, conn};
    int64_t t0 = nstest_mono_ms();
    int cycles = 0, got = 0;
    while (nstest_mono_ms() - t0 < 3000) {
        register_broker(f, &master);   /* 0 < 1: every slave is told */
        unregister_broker(f, &master); /* the smallest goes: every slave is told */
        cycles++;
        got += count_accepts(l, N_FLOOD, 0);
    }
    int64_t attack_ms = nstest_mono_ms() - t0;
    got += count_accepts(l, N_FLOOD, 1000);
    int64_t window_ms = nstest_mono_ms() - t0;
    int bound = NOTIFY_BURST + (int)(NOTIFY_RATE_PER_S * (window_ms + 999) / 1000);
    print_message("%d cycles in %lld ms (%d changes of %d members each): %d connections "
                  "reached the members in %lld ms (bound %d)\n",
                  cycles, (long long)attack_ms, 2 * cycles, N_FLOOD, got, (long long)window_ms,
                  bound);
    if (got > bound)
        fail_msg("%d outbound connections in %lld ms, at most %d expected", got,
                 (long long)window_ms, bound);
    assert_true(got > 0); /* the notifications are bounded, not off */
    /* and the server answered all along */
    assert_int_equal(
        nstest_call_code(f->admin, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, 0, CALL_MS),
        NS_RSP_SUCCESS);
    ns_client_close(conn);
    for (int i = 0; i < N_FLOOD; i++)
        listener_close(&l[i]);
    free(l);
    free(slaves);
    free(ids);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_registration_lowers_min, setup_on, teardown),
        cmocka_unit_test_setup_teardown(test_registration_alone, setup_on, teardown),
        cmocka_unit_test_setup_teardown(test_unregister_acting_master, setup_on, teardown),
        cmocka_unit_test_setup_teardown(test_unregister_plain_group, setup_on, teardown),
        cmocka_unit_test_setup_teardown(test_unreachable_recipients, setup_on, teardown),
        cmocka_unit_test_setup_teardown(test_connect_timeout_and_shutdown, setup_on, teardown),
        cmocka_unit_test_setup_teardown(test_setting_off, setup_off, teardown),
        cmocka_unit_test_setup_teardown(test_flood_bounded, setup_off, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
