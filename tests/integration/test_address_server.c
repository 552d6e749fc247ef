/* test_address_server.c - the address server on a real namesrvd's HTTP
 * listener (ops/addrsrv.h): GET /rocketmq/nsaddr, the path RocketMQ's
 * brokers and clients poll, answers this server alone, then a peer added
 * with UPDATE_NAMESRV_CONFIG peers=... as soon as it is set, leaves out a
 * peer the checks find down (and one that goes down later), and logs the
 * URL asked once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "ns/client.h"
#include "ns/codes.h"

typedef struct {
    char *dir[2];
    nstest_server_t srv[2];
    int http;
    ns_client_t *c; /* to server 0 */
    char addr[2][32];
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    const char *args[] = {"--peerCheckIntervalMillis=200", "--peerTimeoutMillis=500", NULL};
    f->dir[0] = nstest_tmpdir("addrsrv");
    f->dir[1] = nstest_tmpdir("addrsrv");
    assert_int_equal(nstest_server_start_http(&f->srv[0], f->dir[0], args, &f->http), 0);
    assert_int_equal(nstest_server_start(&f->srv[1], f->dir[1], args), 0);
    for (int i = 0; i < 2; i++)
        snprintf(f->addr[i], sizeof f->addr[i], "127.0.0.1:%d", f->srv[i].port);
    f->c = nstest_connect(&f->srv[0]);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    ns_client_close(f->c);
    for (int i = 0; i < 2; i++)
        nstest_server_close(&f->srv[i], f->dir[i]);
    free(f);
    return 0;
}

/* The address server's body (status 200 asserted); caller frees. */
static char *poll_list(fx_t *f, const char *path)
{
    char *body = NULL;
    assert_int_equal(nstest_http_get(f->http, path, &body), 200);
    return body;
}

/* Polls until the body equals want, 5 s at most. */
static void wait_list(fx_t *f, const char *want)
{
    char *body = NULL;
    int64_t end = nstest_mono_ms() + 5000;
    for (;;) {
        free(body);
        body = poll_list(f, "/rocketmq/nsaddr");
        if (strcmp(body, want) == 0 || nstest_mono_ms() > end)
            break;
        nstest_sleep_ms(50);
    }
    assert_string_equal(body, want);
    free(body);
}

static int closed_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static void test_alone_then_peers(void **state)
{
    fx_t *f = *state;
    char want[160], props[200], dead[32], needle[160];
    /* no peers: this server, at the address its bindAddress and port make */
    char *body = poll_list(f, "/rocketmq/nsaddr");
    assert_string_equal(body, f->addr[0]);
    free(body);
    /* a unit's path (a client with unitName) and another subgroup: the same fleet */
    body = poll_list(f, "/rocketmq/nsaddr-unit1?nofix=1");
    assert_string_equal(body, f->addr[0]);
    free(body);
    body = poll_list(f, "/rocketmq/othergroup");
    assert_string_equal(body, f->addr[0]);
    free(body);
    /* the log names the URL as the poller asked it, once */
    snprintf(needle, sizeof needle, "address server: GET http://127.0.0.1:%d/rocketmq/nsaddr from",
             f->http);
    assert_true(nstest_log_wait(&f->srv[0], needle, 2000));
    snprintf(needle, sizeof needle,
             "address server: GET http://127.0.0.1:%d/rocketmq/nsaddr-unit1?nofix=1 from", f->http);
    assert_true(nstest_log_wait(&f->srv[0], needle, 2000));
    body = poll_list(f, "/rocketmq/nsaddr");
    free(body);
    snprintf(needle, sizeof needle, "address server: GET http://127.0.0.1:%d/rocketmq/nsaddr from",
             f->http);
    assert_int_equal(nstest_log_count(&f->srv[0], needle), 1);

    /* peers set while running, with this server, a live one and a dead one:
     * the list's order, this server once, the dead one left out once checked */
    snprintf(dead, sizeof dead, "127.0.0.1:%d", closed_port());
    snprintf(props, sizeof props, "peers=%s;%s;%s", f->addr[0], f->addr[1], dead);
    assert_int_equal(nstest_config_update(f->c, props), NS_RSP_SUCCESS);
    snprintf(want, sizeof want, "%s;%s", f->addr[0], f->addr[1]);
    wait_list(f, want);

    /* the live peer goes down: left out after the next check */
    nstest_server_stop(&f->srv[1], SIGKILL);
    wait_list(f, f->addr[0]);
    /* and comes back on the same port */
    char a_port[32];
    snprintf(a_port, sizeof a_port, "--listenPort=%d", f->srv[1].port);
    const char *again[] = {"--peerCheckIntervalMillis=200", a_port, NULL};
    assert_int_equal(nstest_server_start(&f->srv[1], f->dir[1], again), 0);
    wait_list(f, want);

    /* peers without this server: it comes first */
    snprintf(props, sizeof props, "peers=%s", f->addr[1]);
    assert_int_equal(nstest_config_update(f->c, props), NS_RSP_SUCCESS);
    wait_list(f, want);
    assert_true(nstest_metric(f->http, "namesrv_address_server_requests_total") >= 5);
}

static void test_not_the_path(void **state)
{
    fx_t *f = *state;
    char *body = NULL;
    assert_int_equal(nstest_http_get(f->http, "/rocketmq/", &body), 404);
    free(body);
    assert_int_equal(nstest_http_get(f->http, "/rocketmq/nsaddr/x", &body), 404);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_alone_then_peers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_the_path, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
