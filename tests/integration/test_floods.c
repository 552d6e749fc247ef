/* test_floods.c - memory floods through the real namesrvd. Each
 * flood used to grow the server without bound; with the server-wide budgets
 * (src/daemon/net/budget.h, default settings unless a test says otherwise) its
 * peak RSS (VmHWM) stays under FLOOD_RSS_BOUND, the connections that hold
 * the most are closed, a refusal is logged once per peer, and a fresh client
 * is still answered:
 *   - more connections than maxConnections;
 *   - 40 connections each holding 15 MiB of an unfinished 16 MiB frame
 *     (before: ~600 MiB);
 *   - 12 connections pipelining 30 requests for a ~1 MiB reply each and
 *     reading none (before: ~360 MiB, each under its own 64 MiB cap; now
 *     each stops being read once 1 MiB of its replies is unread).
 *   - 20 connections kept open after one request with an 8 MiB header each
 *     (before: ~500 MiB of decode buffers kept).
 * The writer-queue flood needs a slow disk and lives in test_faults.c. */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/model.h"

#define MiB (1024L * 1024L)
#if defined(__SANITIZE_ADDRESS__)
/* ASan keeps freed memory in quarantine and adds shadow pages: only the
 * gross growth of the unbounded server is caught there */
#define FLOOD_RSS_BOUND (1024L * MiB)
#define FLOOD_RSS_AFTER (1024L * MiB)
#define FLOOD_UNSENT_BOUND (1024L * MiB)
#else
#define FLOOD_RSS_BOUND (256L * MiB)
#define FLOOD_RSS_AFTER (64L * MiB) /* anonymous RSS once a flood is over */
#define FLOOD_UNSENT_BOUND (160L * MiB)
#endif

/* Sends n bytes; false once the server has closed the connection. */
static bool send_all(int fd, const void *p, size_t n)
{
    const char *q = p;
    while (n > 0) {
        ssize_t k = send(fd, q, n, MSG_NOSIGNAL);
        if (k <= 0)
            return false;
        q += k;
        n -= (size_t)k;
    }
    return true;
}

/* One request and its whole answer over a raw connection: true once the
 * server has accepted the connection and answered on it. */
static bool ping(int fd)
{
    ns_cmd_t req;
    ns_buf_t frame = NS_BUF_INIT;
    ns_cmd_request_init(&req, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, 0);
    bool ok = ns_remoting_encode(&frame, &req) == NS_OK && send_all(fd, frame.data, frame.len);
    ns_buf_free(&frame);
    uint8_t head[4];
    ok = ok && recv(fd, head, 4, MSG_WAITALL) == 4;
    for (uint32_t left = ok ? ns_be32_read(head) : 0; ok && left > 0;) {
        char b[4096];
        ssize_t k = recv(fd, b, left < sizeof b ? left : sizeof b, 0);
        ok = k > 0;
        left -= ok ? (uint32_t)k : 0;
    }
    return ok;
}

/* A fresh client gets an answer. */
static void assert_served(const nstest_fx_t *fx)
{
    ns_client_t *c = nstest_connect(&fx->srv);
    assert_int_equal(
        nstest_call_code(c, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, NULL, 0, 60000),
        NS_RSP_SUCCESS);
    ns_client_close(c);
}

static void report_rss(const nstest_fx_t *fx, const char *what)
{
    long hwm = nstest_proc_status_kib(fx->srv.pid, "VmHWM:");
    long anon = nstest_proc_status_kib(fx->srv.pid, "RssAnon:");
    printf("# %s: namesrvd peak RSS (VmHWM) %ld MiB, anonymous RSS now %ld MiB\n", what, hwm / 1024,
           anon / 1024);
    assert_true(hwm > 0);
    assert_true(hwm * 1024L < FLOOD_RSS_BOUND);
}

/* ---- maxConnections ---- */

static const char *const k_few_conns[] = {"--maxConnections=16", NULL};

static int setup_few_conns(void **state)
{
    return nstest_fx_setup(state, "flood-conns", k_few_conns);
}

/* Fills the server's cap of `cap` connections (each served), checks that
 * `extra` more are closed at once (read sees EOF) and that the refusal is
 * logged once as `logged` and never as `not_logged`, then that a slot freed
 * is taken again. */
static void fill_cap(const nstest_fx_t *fx, int cap, int extra, const char *logged,
                     const char *not_logged)
{
    int fds[16];
    assert_true(cap <= 16);
    for (int i = 0; i < cap; i++) {
        fds[i] = nstest_raw_connect(fx->srv.port, 0, 3);
        assert_true(ping(fds[i])); /* accepted and counted */
    }
    for (int k = 0; k < extra; k++) {
        int fd = nstest_raw_connect(fx->srv.port, 0, 3);
        char b;
        ssize_t n = recv(fd, &b, 1, 0);
        assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
        close(fd);
    }
    /* logged once for this peer within the interval, however many */
    assert_int_equal(nstest_log_count(&fx->srv, logged), 1);
    if (not_logged)
        assert_int_equal(nstest_log_count(&fx->srv, not_logged), 0);
    close(fds[0]);
    bool served = false;
    for (int64_t end = nstest_mono_ms() + 10000; !served && nstest_mono_ms() < end;) {
        int fd = nstest_raw_connect(fx->srv.port, 0, 3);
        served = ping(fd); /* refused until the server has seen the close */
        close(fd);
        if (!served)
            nstest_sleep_ms(20);
    }
    assert_true(served);
    for (int i = 1; i < cap; i++)
        close(fds[i]);
}

/* maxConnections 16: the 17th..21st are closed at once. */
static void test_max_connections(void **state)
{
    fill_cap(*state, 16, 5, "maxConnections open already", NULL);
}

/* One address holds at most maxConnectionsPerAddress: the next one from it
 * is closed at once (logged as such, counted as budget_connections_per_
 * address), while the total still has room; a slot freed is taken again. */
static void test_max_connections_per_address(void **state)
{
    fill_cap(*state, 6, 3, "maxConnectionsPerAddress from this address",
             "maxConnections open already");
}

static int setup_per_address(void **state)
{
    static const char *const args[] = {"--maxConnectionsPerAddress=6", NULL};
    return nstest_fx_setup(state, "flood-peraddr", args);
}

/* ---- unfinished frames ---- */

static void test_unfinished_frames_flood(void **state)
{
    nstest_fx_t *fx = *state;
    enum { CONNS = 40 };
    size_t chunk = 1 * MiB, per_conn = 15 * MiB;
    uint8_t *zeros = calloc(1, chunk);
    assert_non_null(zeros);
    int fds[CONNS];
    bool open_[CONNS];
    uint8_t head[8];
    ns_be32_write(head, (uint32_t)(16 * MiB - 4)); /* a whole 16 MiB frame, announced */
    ns_be32_write(head + 4, 100);
    for (int i = 0; i < CONNS; i++) {
        fds[i] = nstest_raw_connect(fx->srv.port, 0, 3);
        open_[i] = send_all(fds[i], head, sizeof head);
    }
    /* round-robin, so that every connection holds part of its frame */
    for (size_t sent = 0; sent < per_conn; sent += chunk)
        for (int i = 0; i < CONNS; i++)
            if (open_[i])
                open_[i] = send_all(fds[i], zeros, chunk);
    /* the server said why it closed some (the closes themselves are seen above) */
    bool said = nstest_log_wait(&fx->srv, "maxUnfinishedFrameBytes", 10000);
    int closed = 0;
    for (int i = 0; i < CONNS; i++)
        closed += !open_[i];
    printf("# unfinished frames: %d of %d connections closed by the server\n", closed, CONNS);
    report_rss(fx, "40 x 15 MiB unfinished frames");
    assert_true(closed > 0);
    assert_true(said);
    assert_served(fx);
    for (int i = 0; i < CONNS; i++)
        close(fds[i]);
    free(zeros);
}

/* ---- unsent replies ---- */

/* Registers 5000 topics with 200-byte names: the topic list is ~1 MiB. The
 * broker stays registered while the returned connection is open. */
static ns_client_t *register_many(const nstest_fx_t *fx)
{
    enum { N = 5000 };
    char(*names)[208] = calloc(N, sizeof *names);
    const char **name = calloc(N, sizeof *name);
    assert_non_null(names);
    assert_non_null(name);
    for (int i = 0; i < N; i++) {
        memset(names[i], 'x', 200);
        snprintf(names[i] + 190, 18, "%09d", i);
        name[i] = names[i];
    }
    ns_buf_t body = NS_BUF_INIT;
    nstest_regbody_names(&body, name, N);
    char crc[16];
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(body.data, body.len));
    const char *kv[] = {"bodyCrc32",   crc,     "brokerAddr",   "10.0.8.1:10911",
                        "brokerId",    "0",     "brokerName",   "flood-b",
                        "clusterName", "Flood", "haServerAddr", "10.0.8.1:10912",
                        NULL};
    ns_client_t *c = nstest_connect(&fx->srv);
    assert_int_equal(nstest_call_code(c, NS_REQ_REGISTER_BROKER, kv, body.data, body.len, 60000),
                     NS_RSP_SUCCESS);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    nstest_call(c, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, NULL, 0, NS_VERSION_V5_3_3,
                60000, &rsp);
    printf("# topic list reply: %zu bytes\n", rsp.cmd.body_len);
    assert_true(rsp.cmd.body_len > 1000000);
    ns_cmd_msg_free(&rsp);
    ns_buf_free(&body);
    free(name);
    free(names);
    return c;
}

static void test_unsent_replies_flood(void **state)
{
    nstest_fx_t *fx = *state;
    enum { CONNS = 12, REQS = 30 };
    ns_client_t *broker = register_many(fx);
    ns_cmd_t req;
    ns_cmd_request_init(&req, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, 0);
    ns_buf_t frames = NS_BUF_INIT;
    for (int i = 0; i < REQS; i++) {
        req.opaque = i + 1;
        assert_int_equal(ns_remoting_encode(&frames, &req), NS_OK);
    }
    int fds[CONNS];
    for (int i = 0; i < CONNS; i++) {
        fds[i] = nstest_raw_connect(fx->srv.port, 4096, 3); /* reads nothing, takes little */
        (void)send_all(fds[i], frames.data, frames.len);
    }
    /* each connection gets the replies its peer takes and then stops being
     * read (1 MiB unread: conn_int.h), far below maxUnsentReplyBytes;
     * before, the server built all 360 replies and closed the connections
     * holding the most once the sum passed the budget */
    /* a bound, not a target: with ioThreads=3 on a loaded 2-core host the
     * line came after more than 20 s */
    bool said = nstest_log_wait(&fx->srv, "reading stopped until the peer takes", 90000);
    nstest_sleep_ms(1000);
    report_rss(fx, "12 connections x 30 unread 1 MiB replies");
    /* tighter than the common bound: the budget (64 MiB) plus what a server
     * with this topic list holds anyway (before: 180-313 MiB, the replies
     * of connections already closed kept until the poll phase ended) */
    long hwm = nstest_proc_status_kib(fx->srv.pid, "VmHWM:");
    if (hwm * 1024L >= FLOOD_UNSENT_BOUND)
        fail_msg("peak RSS %ld MiB with maxUnsentReplyBytes 64 MiB", hwm / 1024);
    assert_true(said);
    assert_served(fx);
    for (int i = 0; i < CONNS; i++)
        close(fds[i]);
    /* once the flood is over the memory goes back: the replies of closed
     * connections are not kept, nor the capacity of drained buffers */
    long anon = -1;
    for (int i = 0; i < 100; i++) {
        assert_served(fx); /* the loop has gone round: closes are done */
        anon = nstest_proc_status_kib(fx->srv.pid, "RssAnon:");
        if (anon * 1024L < FLOOD_RSS_AFTER)
            break;
        nstest_sleep_ms(100);
    }
    printf("# after the flood: anonymous RSS %ld MiB\n", anon / 1024);
    assert_true(anon * 1024L < FLOOD_RSS_AFTER);
    ns_client_close(broker);
    ns_buf_free(&frames);
}

/* ---- huge headers, one after another ---- */

/* 20 connections, one after another, each sends one request whose JSON
 * header is 8 MiB of extFields (500,000 entries), gets its answer and stays
 * open: each used to keep its 8 MiB decode arena and 16 MiB entry array
 * (before: ~500 MiB). */
static void test_huge_headers_kept_open(void **state)
{
    nstest_fx_t *fx = *state;
    enum { CONNS = 20 };
    ns_buf_t hdr = NS_BUF_INIT, frame = NS_BUF_INIT;
    assert_int_equal(ns_buf_append_str(&hdr, "{\"code\":219,\"extFields\":{\"namespace\":\"N\""),
                     NS_OK);
    for (int i = 0; hdr.len < 8 * MiB; i++)
        assert_int_equal(ns_buf_printf(&hdr, ",\"k%07d\":\"v\"", i), NS_OK);
    assert_int_equal(ns_buf_append_str(&hdr, "},\"flag\":0,\"opaque\":1,\"version\":453}"), NS_OK);
    assert_int_equal(ns_buf_append_be32(&frame, (uint32_t)(4 + hdr.len)), NS_OK);
    assert_int_equal(ns_buf_append_be32(&frame, (uint32_t)hdr.len), NS_OK);
    assert_int_equal(ns_buf_append(&frame, hdr.data, hdr.len), NS_OK);
    ns_client_t *c[CONNS];
    for (int i = 0; i < CONNS; i++) {
        c[i] = nstest_connect(&fx->srv);
        assert_int_equal(ns_client_send_raw(c[i], frame.data, frame.len), NS_OK);
        ns_cmd_msg_t rsp;
        ns_cmd_msg_init(&rsp);
        assert_int_equal(ns_client_recv(c[i], 60000, &rsp), NS_OK);
        ns_cmd_msg_free(&rsp);
    }
    report_rss(fx, "20 connections kept open after one 8 MiB header each");
    assert_served(fx);
    for (int i = 0; i < CONNS; i++)
        ns_client_close(c[i]);
    ns_buf_free(&hdr);
    ns_buf_free(&frame);
}

static int setup_default(void **state)
{
    return nstest_fx_setup(state, "flood", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_max_connections, setup_few_conns, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_max_connections_per_address, setup_per_address,
                                        nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_unfinished_frames_flood, setup_default,
                                        nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_unsent_replies_flood, setup_default,
                                        nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_huge_headers_kept_open, setup_default,
                                        nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
