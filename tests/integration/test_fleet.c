/* test_fleet.c - the fleet with real namesrvd peers: two servers holding
 * the same registrations agree (fleet diff exit 0, namesrv_peer_in_sync
 * 1); a broker registered with one of them only is named by fleet diff
 * and becomes divergent on their peer checks once peerDivergenceMillis
 * has passed over two checks, not before, and the alarm clears when the
 * broker registers with the other; a difference that is gone before then
 * never raises it; a brokerName in another cluster on each server is an
 * identity conflict (kind "conflict"); a peer that cannot be reached is
 * namesrv_peer_up 0 and fleet diff's exit 5. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "nstest_auth.h"
#include "nstest_tls.h"
#include "ns/client.h"
#include "ns/codes.h"

/* Checks every 200 ms; divergent after 1.5 s (instead of 10 s and 30 s:
 * the rule is the same, the test shorter). */
#define CHECK_MS 200
#define DIVERGE_MS 1500

typedef struct {
    char *dir[2];
    nstest_server_t srv[2];
    int http[2];
    ns_client_t *c[2]; /* the brokers' connections: open for the whole test */
    char addr[2][32];
    char list[80];
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    const char *args[] = {"--peerCheckIntervalMillis=200", "--peerDivergenceMillis=1500", NULL};
    for (int i = 0; i < 2; i++) {
        f->dir[i] = nstest_tmpdir("fleet");
        assert_int_equal(nstest_server_start_http(&f->srv[i], f->dir[i], args, &f->http[i]), 0);
        snprintf(f->addr[i], sizeof f->addr[i], "127.0.0.1:%d", f->srv[i].port);
        f->c[i] = nstest_connect(&f->srv[i]);
    }
    snprintf(f->list, sizeof f->list, "%s;%s", f->addr[0], f->addr[1]);
    /* each is given the whole list, itself included (as namesrvAddr is) */
    char props[128];
    snprintf(props, sizeof props, "peers=%s", f->list);
    for (int i = 0; i < 2; i++)
        assert_int_equal(nstest_config_update(f->c[i], props), NS_RSP_SUCCESS);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    for (int i = 0; i < 2; i++) {
        ns_client_close(f->c[i]);
        nstest_server_close(&f->srv[i], f->dir[i]);
    }
    free(f);
    return 0;
}

/* The value of series in server i's /metrics, -1 when it is absent. */
static double series_of(fx_t *f, int i, const char *series)
{
    char *text = NULL;
    double v = -1;
    if (nstest_http_get(f->http[i], "/metrics", &text) == 200)
        v = nstest_series(text, series, -1);
    free(text);
    return v;
}

/* namesrv_peer_<what>{peer="<server j>"} as server i exports it. */
static double peer_metric(fx_t *f, int i, const char *what, int j)
{
    char series[128];
    snprintf(series, sizeof series, "namesrv_peer_%s{peer=\"%s\"}", what, f->addr[j]);
    return series_of(f, i, series);
}

static bool wait_peer_metric(fx_t *f, int i, const char *what, int j, double want, int ms)
{
    int64_t end = nstest_mono_ms() + ms;
    do {
        if (peer_metric(f, i, what, j) == want)
            return true;
        nstest_sleep_ms(20);
    } while (nstest_mono_ms() < end);
    return false;
}

static void test_same_registrations_agree(void **state)
{
    fx_t *f = *state;
    for (int i = 0; i < 2; i++) {
        nstest_register_two_topics(f->c[i], "broker-a", "10.0.0.1:10911");
        nstest_register_two_topics(f->c[i], "broker-b", "10.0.0.2:10911");
    }
    nstest_ctl_expect(0, "all agree", "fleet", "diff", "--ns", f->list, NULL);
    /* each server skips itself and finds the other in sync */
    for (int i = 0; i < 2; i++) {
        assert_true(wait_peer_metric(f, i, "in_sync", 1 - i, 1, 5000));
        assert_true(peer_metric(f, i, "up", 1 - i) == 1);
        assert_true(peer_metric(f, i, "divergent", 1 - i) == 0);
        assert_true(peer_metric(f, i, "up", i) < 0); /* not exported for itself */
        assert_true(nstest_log_wait(&f->srv[i], "is this server; skipped", 5000));
    }
    /* the JSON form says the same, with both roots */
    char *out = NULL;
    int rc = nstest_ctl(30000, &out, "fleet", "diff", "--json", "--ns", f->list, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "\"agree\":true");
    free(out);
}

static void test_broker_on_one_only(void **state)
{
    fx_t *f = *state;
    nstest_register_two_topics(f->c[0], "broker-a", "10.0.0.1:10911");
    nstest_register_two_topics(f->c[1], "broker-a", "10.0.0.1:10911");
    assert_true(wait_peer_metric(f, 0, "in_sync", 1, 1, 5000));
    int64_t t0 = nstest_mono_ms();
    nstest_register_two_topics(f->c[0], "broker-x", "10.0.0.9:10911");
    /* fleet diff names it, on the server that has it */
    char *out = NULL;
    int rc = nstest_ctl(30000, &out, "fleet", "diff", "--ns", f->list, NULL);
    NSTEST_EXPECT_RC(rc, 1, out);
    NSTEST_EXPECT_IN(out, "C1/broker-x");
    NSTEST_EXPECT_IN(out, "addr 10.0.0.9:10911");
    NSTEST_EXPECT_IN(out, "queue broker-x");
    NSTEST_EXPECT_IN(out, "(absent)");
    free(out);
    /* seen, but not divergent before peerDivergenceMillis */
    assert_true(wait_peer_metric(f, 0, "in_sync", 1, 0, 5000));
    double early = peer_metric(f, 0, "divergent", 1);
    if (nstest_mono_ms() - t0 < DIVERGE_MS - 100)
        assert_true(early == 0);
    char series[128];
    snprintf(series, sizeof series, "namesrv_peer_differences{peer=\"%s\",kind=\"broker\"}",
             f->addr[1]);
    assert_true(series_of(f, 0, series) == 1);
    snprintf(series, sizeof series, "namesrv_peer_differences{peer=\"%s\",kind=\"topic\"}",
             f->addr[1]);
    assert_true(series_of(f, 0, series) == 2); /* T1 and T2 gained broker-x */
    /* divergent on both sides once the time has passed */
    for (int i = 0; i < 2; i++)
        assert_true(wait_peer_metric(f, i, "divergent", 1 - i, 1, 10000));
    assert_true(nstest_mono_ms() - t0 >= DIVERGE_MS);
    assert_true(nstest_log_wait(&f->srv[0], "is divergent", 2000));
    assert_true(nstest_log_wait(&f->srv[0], "broker C1/broker-x", 2000));
    assert_int_equal(nstest_log_count(&f->srv[0], "is divergent"), 1); /* once per episode */
    /* the broker reaches the other server: the alarm clears */
    nstest_register_two_topics(f->c[1], "broker-x", "10.0.0.9:10911");
    for (int i = 0; i < 2; i++) {
        assert_true(wait_peer_metric(f, i, "in_sync", 1 - i, 1, 5000));
        assert_true(peer_metric(f, i, "divergent", 1 - i) == 0);
    }
    assert_true(nstest_log_wait(&f->srv[0], "agrees again", 2000));
    nstest_ctl_expect(0, "all agree", "fleet", "diff", "--ns", f->list, NULL);
}

/* The same brokerName in another cluster on each server: fleet diff and
 * the peer checks call it an identity conflict, not only a difference;
 * once one server holds both sides it is a difference again. */
static void test_identity_conflict_between_servers(void **state)
{
    fx_t *f = *state;
    ns_topic_config_t tc[] = {{"T1", 4, 4, 6, 0}, {"T2", 4, 4, 6, 0}}; /* (one: an increment) */
    nstest_register_topics(f->c[0], "C1", "broker-a", "10.0.0.1:10911", "", tc, 2);
    nstest_register_topics(f->c[1], "C2", "broker-a", "10.0.0.1:10911", "", tc, 2);
    char *out = NULL;
    int rc = nstest_ctl(30000, &out, "fleet", "diff", "--ns", f->list, "--json", NULL);
    NSTEST_EXPECT_RC(rc, 1, out);
    NSTEST_EXPECT_IN(out, "\"conflicts\":1");
    NSTEST_EXPECT_IN(out, "{\"kind\":\"conflict\",\"item\":\"brokerName broker-a\","
                          "\"leaf\":\"clusterName\"");
    free(out);
    out = NULL;
    rc = nstest_ctl(30000, &out, "fleet", "diff", "--ns", f->list, NULL);
    NSTEST_EXPECT_RC(rc, 1, out);
    NSTEST_EXPECT_IN(out, "1 identity conflict(s)");
    free(out);
    char series[128];
    snprintf(series, sizeof series, "namesrv_peer_differences{peer=\"%s\",kind=\"conflict\"}",
             f->addr[1]);
    int64_t end = nstest_mono_ms() + 5000;
    while (series_of(f, 0, series) != 1 && nstest_mono_ms() < end)
        nstest_sleep_ms(20);
    assert_true(series_of(f, 0, series) == 1);
    nstest_register_topics(f->c[1], "C1", "broker-a", "10.0.0.1:10911", "", tc, 2);
    end = nstest_mono_ms() + 5000;
    while (series_of(f, 0, series) != 0 && nstest_mono_ms() < end)
        nstest_sleep_ms(20);
    assert_true(series_of(f, 0, series) == 0);
    nstest_ctl_expect(1, "0 identity conflict(s)", "fleet", "diff", "--ns", f->list, NULL);
}

/* A registration that reaches the second server a moment after the first
 * is a difference for a check or two, never an alarm. */
static void test_transient_difference_no_alarm(void **state)
{
    fx_t *f = *state;
    for (int round = 0; round < 3; round++) {
        char name[32];
        snprintf(name, sizeof name, "broker-t%d", round);
        nstest_register_two_topics(f->c[0], name, "10.0.1.1:10911");
        nstest_sleep_ms(CHECK_MS * 2); /* a check or two sees it on one only */
        nstest_register_two_topics(f->c[1], name, "10.0.1.1:10911");
    }
    int64_t end = nstest_mono_ms() + DIVERGE_MS + 4 * CHECK_MS;
    while (nstest_mono_ms() < end) {
        for (int i = 0; i < 2; i++)
            assert_true(peer_metric(f, i, "divergent", 1 - i) == 0);
        nstest_sleep_ms(50);
    }
    for (int i = 0; i < 2; i++) {
        assert_true(wait_peer_metric(f, i, "in_sync", 1 - i, 1, 5000));
        assert_int_equal(nstest_log_count(&f->srv[i], "is divergent"), 0);
    }
}

/* A loopback port that was free a moment ago (bound, then closed). */
static int closed_port(void)
{
    struct sockaddr_in sa = {0};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static void test_unreachable_peer(void **state)
{
    fx_t *f = *state;
    /* a port nothing listens on: the peer is down, and fleet diff says so */
    char dead[32], props[160], list[128];
    snprintf(dead, sizeof dead, "127.0.0.1:%d", closed_port());
    snprintf(props, sizeof props, "peers=%s;%s", f->list, dead);
    assert_int_equal(nstest_config_update(f->c[0], props), NS_RSP_SUCCESS);
    char series[96];
    snprintf(series, sizeof series, "namesrv_peer_up{peer=\"%s\"}", dead);
    int64_t end = nstest_mono_ms() + 5000;
    while (series_of(f, 0, series) != 0 && nstest_mono_ms() < end)
        nstest_sleep_ms(20);
    assert_true(series_of(f, 0, series) == 0);
    assert_true(peer_metric(f, 0, "up", 1) == 1); /* the other peer still is */
    assert_true(nstest_log_wait(&f->srv[0], "cannot be compared", 2000));
    snprintf(list, sizeof list, "%s;%s", f->list, dead);
    nstest_ctl_expect(5, "unreachable", "fleet", "diff", "--ns", list, NULL);
    /* the FLEET_DIGEST request itself: a malformed body is refused */
    const char bad[] = "{\"paths\":[[1]]}";
    assert_int_equal(
        nstest_call_code(f->c[0], NS_REQ_NS_FLEET_DIGEST, NULL, bad, sizeof bad - 1, 5000),
        NS_RSP_INVALID_PARAMETER);
    /* and /fleet/digest answers the root */
    char *body = NULL;
    assert_int_equal(nstest_http_get(f->http[0], "/fleet/digest", &body), 200);
    assert_non_null(strstr(body, "\"path\":[]"));
    free(body);
}

/* Three servers: B, with b_args, which only some peers may reach; A with
 * a_extra, and C with neither, both checking B every 200 ms. */
typedef struct {
    char *dir[3];
    nstest_server_t srv[3];
    int http[3];
    char addr_b[32], up[96], in_sync[96];
} trio_t;

static void trio_start(trio_t *t, const char *const *b_args, const char *a_extra1,
                       const char *a_extra2)
{
    char peers[64];
    assert_int_equal(nstest_server_start_http(&t->srv[1], t->dir[1], b_args, &t->http[1]), 0);
    snprintf(t->addr_b, sizeof t->addr_b, "127.0.0.1:%d", t->srv[1].port);
    snprintf(peers, sizeof peers, "--peers=%s", t->addr_b);
    const char *a_args[] = {peers, "--peerCheckIntervalMillis=200", a_extra1, a_extra2, NULL};
    const char *c_args[] = {peers, "--peerCheckIntervalMillis=200", NULL};
    assert_int_equal(nstest_server_start_http(&t->srv[0], t->dir[0], a_args, &t->http[0]), 0);
    assert_int_equal(nstest_server_start_http(&t->srv[2], t->dir[2], c_args, &t->http[2]), 0);
    snprintf(t->up, sizeof t->up, "namesrv_peer_up{peer=\"%s\"}", t->addr_b);
    snprintf(t->in_sync, sizeof t->in_sync, "namesrv_peer_in_sync{peer=\"%s\"}", t->addr_b);
}

/* A compares with B and finds it in sync; C cannot, for why. */
static void trio_expect(trio_t *t, const char *why)
{
    assert_true(nstest_metric_wait_ge(t->http[0], t->in_sync, 1, 5000));
    assert_true(nstest_metric(t->http[0], t->up) == 1);
    assert_true(nstest_log_wait(&t->srv[2], why, 5000));
    assert_true(nstest_metric(t->http[2], t->up) == 0);
}

static void trio_close(trio_t *t)
{
    for (int i = 0; i < 3; i++)
        nstest_server_close(&t->srv[i], t->dir[i]);
}

/* A peer under authMode=all answers a server that signs its checks
 * (peerAccessKey/peerSecretKey of a client user) and refuses one that
 * does not; fleet diff likewise, with and without keys. */
static void test_signed_peers(void **state)
{
    (void)state;
    trio_t t;
    char data[4200], both[64];
    for (int i = 0; i < 3; i++)
        t.dir[i] = nstest_tmpdir("fleet-auth");
    snprintf(data, sizeof data, "%s/data", t.dir[1]);
    nstest_users_add(data, false);
    const char *b_args[] = {"--authMode=all", "--authPenaltyMaxMillis=0", NULL};
    trio_start(&t, b_args, "--peerAccessKey=cli1", "--peerSecretKey=clientsecret");
    trio_expect(&t, "cannot be compared: answered NO_PERMISSION");
    snprintf(both, sizeof both, "127.0.0.1:%d;%s", t.srv[0].port, t.addr_b);
    nstest_ctl_expect(5, "NO_PERMISSION", "fleet", "diff", "--ns", both, NULL);
    nstest_ctl_expect(0, "all agree", "fleet", "diff", "--ns", both, "--access-key", "cli1",
                      "--secret-key", "clientsecret", NULL);
    trio_close(&t);
}

/* A peer that takes TLS only (tls.server.mode=enforcing) answers the
 * server with peerTls and its CA (tls.client.trustCertPath), not the one
 * without TLS. */
static void test_tls_peers(void **state)
{
    (void)state;
    trio_t t;
    char cert[4200], key[4200], ca[4200];
    for (int i = 0; i < 3; i++)
        t.dir[i] = nstest_tmpdir("fleet-tls");
    assert_int_equal(nstest_make_certs(t.dir[1]), 0);
    snprintf(cert, sizeof cert, "--tls.server.certPath=%s/srv.pem", t.dir[1]);
    snprintf(key, sizeof key, "--tls.server.keyPath=%s/srv.key", t.dir[1]);
    snprintf(ca, sizeof ca, "--tls.client.trustCertPath=%s/ca.pem", t.dir[1]);
    const char *b_args[] = {"--tls.server.mode=enforcing", cert, key, NULL};
    trio_start(&t, b_args, "--peerTls=true", ca);
    trio_expect(&t, "cannot be compared");
    trio_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_registrations_agree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broker_on_one_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transient_difference_no_alarm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_identity_conflict_between_servers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreachable_peer, setup, teardown),
        cmocka_unit_test(test_signed_peers),
        cmocka_unit_test(test_tls_peers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
