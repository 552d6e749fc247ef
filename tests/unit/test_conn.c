/* test_conn.c - one connection of src/daemon/net/conn.c on a real libuv loop
 * and a real loopback socket: frames are decoded once and handed to the
 * loop's on_request hook in order, replies are batched and written, and a
 * byte filter installed on the seam (here a XOR "cipher") sees exactly the
 * bytes that enter and leave - the shape TLS and the PROXY protocol take. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "src/daemon/net/conn.h"
#include "src/daemon/net/ioloop.h"

#define KEY 0x5A

typedef struct {
    char *dir;
    uv_loop_t uv;
    ns_config_t cfg;
    ns_loop_t loop;
    int client;   /* our end of the socket */
    int requests; /* seen by on_request */
    int32_t opaques[8];
    size_t filtered_in, filtered_out; /* bytes the filter saw */
} fx_t;

static fx_t *fx;

static bool on_request(ns_loop_t *loop, ns_conn_t *c, const ns_cmd_t *cmd, size_t frame_len)
{
    if (fx->requests < 8)
        fx->opaques[fx->requests] = cmd->opaque;
    fx->requests++;
    ns_cmd_t rsp = {0};
    rsp.code = NS_RSP_SUCCESS;
    rsp.opaque = cmd->opaque;
    rsp.flag = NS_FLAG_RESPONSE;
    rsp.remark = ns_cmd_ext_get(cmd, "echo");
    rsp.remark_len = rsp.remark ? strlen(rsp.remark) : 0;
    assert_int_equal(ns_conn_send(c, &rsp), NS_OK);
    return true;
}

static int xor_feed(void *ctx, const uint8_t *in, size_t n, ns_buf_t *plain, const char **why)
{
    fx->filtered_in += n;
    for (size_t i = 0; i < n; i++)
        if (ns_buf_append_u8(plain, in[i] ^ KEY) != NS_OK)
            return NS_ENOMEM;
    return NS_OK;
}

static int xor_write(void *ctx, ns_conn_t *c, ns_buf_t *plain)
{
    fx->filtered_out += plain->len;
    for (size_t i = 0; i < plain->len; i++)
        plain->data[i] ^= KEY;
    return NS_OK;
}

static void xor_bytes(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] ^= KEY;
}

static int setup(void **state)
{
    fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    fx->dir = nstest_tmpdir("conn");
    assert_int_equal(uv_loop_init(&fx->uv), 0);
    assert_int_equal(ns_config_init(&fx->cfg), NS_OK);
    ns_store_opts_t o = {fx->dir, 1u << 20, 8u << 20, NS_SYNC_NOSYNC, false, true, 0, 0};
    char err[256];
    assert_int_equal(ns_store_open(&o, &fx->loop.store, err, sizeof err), NS_OK);
    fx->loop.uv = &fx->uv;
    fx->loop.cfg = &fx->cfg;
    fx->loop.on_request = on_request;
    ns_loop_set_current(&fx->loop);

    /* a loopback pair: the server's end is adopted by the loop */
    int lst = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    socklen_t alen = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lst, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lst, 1), 0);
    assert_int_equal(getsockname(lst, (struct sockaddr *)&a, &alen), 0);
    fx->client = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(fx->client, (struct sockaddr *)&a, sizeof a), 0);
    int fd = accept(lst, NULL, NULL);
    assert_true(fd >= 0);
    close(lst);
    assert_true(ns_conn_adopt(&fx->loop, fd));
    assert_non_null(fx->loop.conns);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    ns_conn_close_all(&fx->loop);
    uv_run(&fx->uv, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&fx->uv), 0);
    close(fx->client);
    ns_txn_abort(fx->loop.rtxn);
    ns_store_close(fx->loop.store);
    ns_buf_free(&fx->loop.rshared);
    ns_buf_free(&fx->loop.tshared); /* a filter's plain bytes (conn.c) */
    ns_loop_msgs_free(&fx->loop);   /* the frames decoded (conn.c) */
    ns_config_free(&fx->cfg);
    nstest_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

/* Appends one encoded request (opaque, extFields echo=text) to out. */
static void request(ns_buf_t *out, int32_t opaque, const char *text)
{
    ns_ext_field_t ext = ns_ext_field("echo", text);
    ns_cmd_t cmd;
    ns_cmd_request_init(&cmd, NS_REQ_GET_ROUTEINFO_BY_TOPIC, &ext, 1);
    cmd.opaque = opaque;
    assert_int_equal(ns_remoting_encode(out, &cmd), NS_OK);
}

/* Runs the loop (flushing like the server's check handle) until `want`
 * requests were seen. */
static void serve_until(int want)
{
    int64_t until = nstest_mono_ms() + 5000;
    while (fx->requests < want) {
        assert_true(nstest_mono_ms() < until);
        uv_run(&fx->uv, UV_RUN_NOWAIT);
        ns_conn_flush_all(&fx->loop);
    }
}

/* Reads n bytes from the client socket (5 s at most). */
static void read_n(uint8_t *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd pfd = {fx->client, POLLIN, 0};
        assert_int_equal(poll(&pfd, 1, 5000), 1);
        ssize_t r = read(fx->client, p + got, n - got);
        assert_true(r > 0);
        got += (size_t)r;
    }
}

/* Reads one response frame (un-XORed when xor) and checks opaque/remark. */
static void expect_reply(bool xor, int32_t opaque, const char *remark)
{
    uint8_t len4[4];
    read_n(len4, 4);
    if (xor)
        xor_bytes(len4, 4);
    size_t n = ns_be32_read(len4);
    uint8_t *frame = malloc(n + 4);
    assert_non_null(frame);
    memcpy(frame, len4, 4);
    read_n(frame + 4, n);
    if (xor)
        xor_bytes(frame + 4, n);
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    assert_int_equal(ns_remoting_decode(frame, n + 4, &m), NS_OK);
    assert_true(m.cmd.flag & NS_FLAG_RESPONSE);
    assert_int_equal(m.cmd.opaque, opaque);
    assert_non_null(m.cmd.remark);
    assert_string_equal(m.cmd.remark, remark);
    ns_cmd_msg_free(&m);
    free(frame);
}

static void test_pipelined_frames_in_order(void **state)
{
    ns_buf_t out = NS_BUF_INIT;
    request(&out, 1, "one");
    request(&out, 2, "two");
    size_t half = out.len / 2 + 3; /* the second frame arrives in two pieces */
    assert_int_equal(write(fx->client, out.data, half), (ssize_t)half);
    serve_until(1);
    assert_int_equal(write(fx->client, out.data + half, out.len - half), (ssize_t)(out.len - half));
    serve_until(2);
    assert_int_equal(fx->opaques[0], 1);
    assert_int_equal(fx->opaques[1], 2);
    expect_reply(false, 1, "one");
    expect_reply(false, 2, "two");
    ns_buf_free(&out);
}

static void test_filter_sees_every_byte(void **state)
{
    ns_conn_filter_t f = {.feed = xor_feed, .write = xor_write};
    ns_conn_set_filter(fx->loop.conns, &f);
    ns_buf_t out = NS_BUF_INIT;
    request(&out, 7, "seven");
    request(&out, 8, "eight");
    size_t total = out.len;
    xor_bytes(out.data, out.len);                        /* what goes on the wire is "encrypted" */
    assert_int_equal(write(fx->client, out.data, 5), 5); /* less than a length word */
    uv_run(&fx->uv, UV_RUN_NOWAIT);
    assert_int_equal(write(fx->client, out.data + 5, out.len - 5), (ssize_t)(out.len - 5));
    serve_until(2);
    expect_reply(true, 7, "seven");
    expect_reply(true, 8, "eight");
    assert_int_equal(fx->filtered_in, total);
    assert_true(fx->filtered_out > 0);
    ns_buf_free(&out);
}

static void test_bad_frame_closes(void **state)
{
    uint8_t junk[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}; /* a 4 GiB frame */
    assert_int_equal(write(fx->client, junk, sizeof junk), (ssize_t)sizeof junk);
    int64_t until = nstest_mono_ms() + 5000;
    while (fx->loop.conns) { /* the close callback takes it off the list */
        assert_true(nstest_mono_ms() < until);
        uv_run(&fx->uv, UV_RUN_NOWAIT);
    }
    uint8_t b;
    struct pollfd pfd = {fx->client, POLLIN, 0};
    assert_int_equal(poll(&pfd, 1, 5000), 1);
    assert_int_equal(read(fx->client, &b, 1), 0); /* EOF */
    assert_int_equal(fx->requests, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pipelined_frames_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filter_sees_every_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_frame_closes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
