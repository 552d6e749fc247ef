/* test_reply_gather.c - route replies written straight from the read
 * snapshot (src/daemon/net/conn_write.c) through the real namesrvd: many
 * pipelined lookups on one connection, mixed with replies that are copied
 * (an unknown topic's remark, an old client's derived form), come back
 * complete, in order and byte for byte as single lookups do; also when the
 * peer reads nothing until it sent everything, so that the socket takes only
 * part of a gathered write and the rest is copied and sent later. A lookup
 * sent after a registration was answered finds its route, also with
 * lookups pipelined on several connections (the loops keep one snapshot per
 * iteration, ioloop.h). The lookups of each read are warmed together
 * through the routes index before they run (conn.c, ns_route_warm); both
 * also with the route memo on (routeMemoSlots, off by default). */
#define _GNU_SOURCE /* memmem */
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
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/model.h"

#define TOPICS 8

/* The REGISTER_BROKER request of broker `name` with TOPICS topics named
 * prefix-0.. (routes of a few hundred bytes): fills req (borrowing ext, kv
 * storage and body, which the caller frees). */
typedef struct {
    ns_cmd_t req;
    ns_ext_field_t ext[16];
    ns_buf_t body;
    char crc[16], addr[32], name[32];
    const char *kv[13];
} reg_t;

static void reg_fill(reg_t *r, const char *name, const char *prefix, int addr_n, const char *zone)
{
    ns_regbody_t b;
    memset(&b, 0, sizeof b);
    b.data_version.counter = 1;
    b.data_version.timestamp = 1700000000000LL;
    ns_topic_config_t topics[TOPICS];
    char names[TOPICS][48];
    memset(topics, 0, sizeof topics);
    for (int i = 0; i < TOPICS; i++) {
        snprintf(names[i], sizeof names[i], "%s-%d", prefix, i);
        topics[i].topic_name = names[i];
        topics[i].read_queue_nums = topics[i].write_queue_nums = 4 + i;
        topics[i].perm = 6;
    }
    b.topics = topics;
    b.n_topics = TOPICS;
    b.has_filter_server_list = true;
    r->body = (ns_buf_t)NS_BUF_INIT;
    assert_int_equal(ns_regbody_encode_json(&r->body, &b), NS_OK);
    snprintf(r->crc, sizeof r->crc, "%u", ns_body_crc32(r->body.data, r->body.len));
    snprintf(r->addr, sizeof r->addr, "10.0.9.%d:10911", addr_n);
    snprintf(r->name, sizeof r->name, "%s", name);
    const char *kv[] = {"bodyCrc32",
                        r->crc,
                        "brokerAddr",
                        r->addr,
                        "brokerId",
                        "0",
                        "brokerName",
                        r->name,
                        "clusterName",
                        "Gather",
                        zone ? "__ZONE_NAME" : NULL,
                        zone,
                        NULL};
    memcpy(r->kv, kv, sizeof kv);
    nstest_cmd(&r->req, r->ext, NS_REQ_REGISTER_BROKER, r->kv);
    r->req.body = r->body.data;
    r->req.body_len = r->body.len;
}

/* Registers broker gather-b with topics gather-topic-*; it stays registered
 * while the returned connection is open. */
static ns_client_t *register_broker(const nstest_fx_t *fx)
{
    reg_t r;
    reg_fill(&r, "gather-b", "gather-topic", 1, NULL);
    ns_client_t *c = nstest_connect(&fx->srv);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &r.req, 60000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    ns_cmd_msg_free(&rsp);
    ns_buf_free(&r.body);
    return c;
}

/* Request i of the pipeline: a known topic (gathered), every 7th an unknown
 * one (a remark, copied), every 5th at an old version (the derived legacy
 * form, copied). */
static void request_i(ns_cmd_t *req, ns_ext_field_t *ext, char *topic, size_t n, int i)
{
    if (i % 7 == 3)
        snprintf(topic, n, "gather-missing-%d", i % 35); /* as in the period */
    else
        snprintf(topic, n, "gather-topic-%d", i % TOPICS);
    ext[0] = ns_ext_field("topic", topic);
    ns_cmd_request_init(req, NS_REQ_GET_ROUTEINFO_BY_TOPIC, ext, 1);
    req->opaque = 1000 + i;
    if (i % 5 == 1)
        req->version = NS_VERSION_V4_9_4 - 1;
}

/* The reply a single lookup of request i gets (a fresh connection each time
 * would be slow: one connection, one request at a time). */
static void single_reply(ns_client_t *c, int i, ns_buf_t *frame)
{
    ns_cmd_t req;
    ns_ext_field_t ext[1];
    char topic[48];
    request_i(&req, ext, topic, sizeof topic, i);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &req, 10000, &rsp), NS_OK);
    ns_cmd_t r = rsp.cmd;
    ns_buf_reset(frame);
    assert_int_equal(ns_remoting_encode(frame, &r), NS_OK); /* re-encoded: the same codec */
    ns_cmd_msg_free(&rsp);
}

static void read_exact(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = recv(fd, p, n, 0);
        if (k <= 0)
            fail_msg("connection ended with %zu bytes of a reply missing", n);
        p += k;
        n -= (size_t)k;
    }
}

/* Reads one whole reply frame from fd into frame. */
static void read_frame(int fd, ns_buf_t *frame)
{
    uint8_t len[4];
    read_exact(fd, len, 4);
    uint32_t n = ns_be32_read(len);
    assert_true(n >= 4 && n < 16u * 1024 * 1024);
    ns_buf_reset(frame);
    assert_int_equal(ns_buf_reserve(frame, 4 + n), NS_OK);
    memcpy(frame->data, len, 4);
    read_exact(fd, frame->data + 4, n);
    frame->len = 4 + n;
}

/* Sends n pipelined lookups on one raw connection (receive buffer rcvbuf,
 * 0 = default), reading nothing until all are sent, then checks every
 * reply against the single lookups' (decoded and re-encoded, so that the
 * comparison is of the same frame bytes). */
static void pipeline(const nstest_fx_t *fx, int n, int rcvbuf)
{
    ns_client_t *one = nstest_connect(&fx->srv);
    enum { PERIOD = 35 * TOPICS }; /* the replies repeat: i mod 7, mod 5, mod TOPICS */
    ns_buf_t *wants = calloc(PERIOD, sizeof *wants);
    assert_non_null(wants);
    for (int i = 0; i < PERIOD; i++)
        single_reply(one, i, &wants[i]);
    ns_client_close(one);

    ns_buf_t frames = NS_BUF_INIT;
    for (int i = 0; i < n; i++) {
        ns_cmd_t req;
        ns_ext_field_t ext[1];
        char topic[48];
        request_i(&req, ext, topic, sizeof topic, i);
        assert_int_equal(ns_remoting_encode(&frames, &req), NS_OK);
    }
    int fd = nstest_raw_connect(fx->srv.port, rcvbuf, 20);
    size_t off = 0;
    while (off < frames.len) {
        ssize_t k = send(fd, frames.data + off, frames.len - off, MSG_NOSIGNAL);
        assert_true(k > 0);
        off += (size_t)k;
    }
    ns_buf_t got = NS_BUF_INIT, re = NS_BUF_INIT;
    size_t gathered_bytes = 0;
    for (int i = 0; i < n; i++) {
        read_frame(fd, &got);
        ns_cmd_msg_t m;
        ns_cmd_msg_init(&m);
        assert_int_equal(ns_remoting_decode(got.data, got.len, &m), NS_OK);
        if (m.cmd.opaque != 1000 + i)
            fail_msg("reply %d: opaque %d, expected %d", i, m.cmd.opaque, 1000 + i);
        /* the expected reply of the same shape, with this request's opaque */
        ns_cmd_msg_t w;
        ns_cmd_msg_init(&w);
        const ns_buf_t *e = &wants[i % PERIOD];
        assert_int_equal(ns_remoting_decode(e->data, e->len, &w), NS_OK);
        ns_cmd_t wc = w.cmd;
        wc.opaque = 1000 + i;
        ns_buf_reset(&re);
        assert_int_equal(ns_remoting_encode(&re, &wc), NS_OK);
        if (got.len != re.len || memcmp(got.data, re.data, re.len) != 0)
            fail_msg("reply %d (%zu bytes) differs from a single lookup's (%zu bytes)", i, got.len,
                     re.len);
        if (i % 7 != 3 && i % 5 != 1)
            gathered_bytes += m.cmd.body_len;
        ns_cmd_msg_free(&w);
        ns_cmd_msg_free(&m);
    }
    printf("# %d pipelined lookups (receive buffer %d): all replies in order and byte-identical, "
           "%zu body bytes from the map\n",
           n, rcvbuf, gathered_bytes);
    close(fd);
    ns_buf_free(&got);
    ns_buf_free(&re);
    ns_buf_free(&frames);
    for (int i = 0; i < PERIOD; i++)
        ns_buf_free(&wants[i]);
    free(wants);
}

static void test_pipelined_lookups(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *broker = register_broker(fx);
    pipeline(fx, 400, 0);
    ns_client_close(broker);
}

/* More of them, 16 warmed at a time; with the memo on, most answered by
 * it (the warming still runs): the same replies. */
static void test_pipelined_lookups_more(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *broker = register_broker(fx);
    pipeline(fx, 2000, 0);
    ns_client_close(broker);
}

/* 20,000 lookups (~8 MB of replies) to a peer with a 4 KiB receive buffer
 * that reads only after sending them all: gathered writes are cut short and
 * their rest goes out later, copied. */
static void test_short_writes(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *broker = register_broker(fx);
    pipeline(fx, 20000, 4096);
    /* still serving */
    ns_client_t *c = nstest_connect(&fx->srv);
    assert_int_equal(
        nstest_call_code(c, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, NULL, 0, 10000),
        NS_RSP_SUCCESS);
    ns_client_close(c);
    ns_client_close(broker);
}

/* A route is found by every lookup sent after its registration was
 * answered, on another connection too (the read snapshot is never older than
 * the read: ioloop.h). Lookups keep coming while the registration commits. */
static void test_read_after_commit(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *a = nstest_connect(&fx->srv), *b = nstest_connect(&fx->srv);
    for (int round = 0; round < 20; round++) {
        char name[32], prefix[32];
        snprintf(name, sizeof name, "commit-b%d", round);
        snprintf(prefix, sizeof prefix, "commit-topic-%d", round);
        reg_t r;
        reg_fill(&r, name, prefix, 10 + round, NULL);
        r.req.opaque = 7000 + round;
        assert_int_equal(ns_client_send(a, &r.req), NS_OK);
        char topic[48];
        snprintf(topic, sizeof topic, "%s-%d", prefix, round % TOPICS);
        const char *kv[] = {"topic", topic, NULL};
        bool answered = false;
        int lookups = 0;
        for (;;) {
            bool answered_before = answered;
            int code = nstest_call_code(b, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv, NULL, 0, 10000);
            lookups++;
            if (answered_before) {
                if (code != NS_RSP_SUCCESS)
                    fail_msg("round %d: lookup after the registration's reply answered %d", round,
                             code);
                break;
            }
            ns_cmd_msg_t rsp;
            ns_cmd_msg_init(&rsp);
            int rc = ns_client_recv(a, 1, &rsp);
            if (rc == NS_OK) {
                assert_int_equal(rsp.cmd.opaque, 7000 + round);
                assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
                answered = true;
            } else {
                assert_int_equal(rc, NS_ETIMEDOUT);
            }
            ns_cmd_msg_free(&rsp);
            assert_true(lookups < 100000);
        }
        ns_buf_free(&r.body);
    }
    ns_client_close(a);
    ns_client_close(b);
}

/* The same with pipelined lookups on several connections (spread over the
 * loops with ioThreads), so that a loop reads several of them per
 * iteration and keeps its snapshot between them: every lookup sent after the
 * registration's reply finds the route. (The narrow case, a later read of an
 * iteration returning bytes sent after its snapshot was taken, is forced
 * deterministically in unit_read_snapshot; this fails when a kept snapshot
 * outlives its iteration.) */
enum { PIPE_CONNS = 6, PIPE_DEPTH = 4, PIPE_ROUNDS = 15, PIPE_AFTER = 3 * PIPE_DEPTH };

typedef struct {
    ns_client_t *c;
    bool after[PIPE_DEPTH]; /* in flight, oldest first: sent after the reply */
    int n, sent, checked;
} pipe_conn_t;

static void pipe_send(pipe_conn_t *p, const char *topic, bool after)
{
    ns_cmd_t req;
    ns_ext_field_t ext[1] = {ns_ext_field("topic", topic)};
    ns_cmd_request_init(&req, NS_REQ_GET_ROUTEINFO_BY_TOPIC, ext, 1);
    req.opaque = ++p->sent;
    assert_int_equal(ns_client_send(p->c, &req), NS_OK);
    p->after[p->n++] = after;
}

static void test_read_after_commit_pipelined(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *a = nstest_connect(&fx->srv);
    pipe_conn_t pc[PIPE_CONNS];
    memset(pc, 0, sizeof pc);
    for (int i = 0; i < PIPE_CONNS; i++)
        pc[i].c = nstest_connect(&fx->srv);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    for (int round = 0; round < PIPE_ROUNDS; round++) {
        char name[32], prefix[32], topic[48];
        snprintf(name, sizeof name, "pipe-b%d", round);
        snprintf(prefix, sizeof prefix, "pipe-topic-%d", round);
        snprintf(topic, sizeof topic, "%s-0", prefix);
        reg_t r;
        reg_fill(&r, name, prefix, 100 + round, NULL);
        r.req.opaque = 9000 + round;
        bool answered = false;
        for (int i = 0; i < PIPE_CONNS; i++) {
            pc[i].checked = 0;
            while (pc[i].n < PIPE_DEPTH)
                pipe_send(&pc[i], topic, false);
        }
        assert_int_equal(ns_client_send(a, &r.req), NS_OK);
        int64_t t0 = nstest_mono_ms();
        for (;;) {
            bool done = answered;
            for (int i = 0; i < PIPE_CONNS; i++) {
                pipe_conn_t *p = &pc[i];
                int rc = NS_OK; /* read only after the loop ran (p->n > 0) */
                while (p->n > 0 && (rc = ns_client_recv(p->c, 0, &rsp)) == NS_OK) {
                    bool after = p->after[0];
                    memmove(p->after, p->after + 1, (size_t)(p->n - 1) * sizeof p->after[0]);
                    p->n--;
                    if (after && rsp.cmd.code != NS_RSP_SUCCESS)
                        fail_msg("round %d, connection %d: a lookup sent after the "
                                 "registration's reply answered %d",
                                 round, i, rsp.cmd.code);
                    p->checked += after;
                    if (!answered || p->checked + p->n < PIPE_AFTER)
                        pipe_send(p, topic, answered);
                }
                assert_true(p->n == 0 || rc == NS_ETIMEDOUT);
                done = done && p->checked >= PIPE_AFTER;
            }
            if (done)
                break;
            if (!answered) {
                int rc = ns_client_recv(a, 0, &rsp);
                if (rc == NS_OK) {
                    assert_int_equal(rsp.cmd.opaque, 9000 + round);
                    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
                    answered = true;
                } else {
                    assert_int_equal(rc, NS_ETIMEDOUT);
                }
            }
            assert_true(nstest_mono_ms() - t0 < 60000);
        }
        ns_buf_free(&r.body);
    }
    ns_cmd_msg_free(&rsp);
    for (int i = 0; i < PIPE_CONNS; i++)
        ns_client_close(pc[i].c);
    ns_client_close(a);
}

/* The lookup's extFields (found in one pass, cmd_route.c): __ZONE_MODE and
 * __ZONE_NAME filter out the group mastered in another zone, in any order
 * and only when the mode is "true" (any case); acceptStandardJsonOnly gives
 * an old client the standard form. */
static void test_lookup_fields(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    reg_t r1, r2;
    reg_fill(&r1, "zone-b1", "zone-topic", 51, "z1");
    reg_fill(&r2, "zone-b2", "zone-topic", 52, "z2");
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    assert_int_equal(ns_client_call(c, &r1.req, 60000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    assert_int_equal(ns_client_call(c, &r2.req, 60000, &rsp), NS_OK);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    struct {
        const char *kv[9];
        bool b1, b2;
    } cases[] = {
        {{"topic", "zone-topic-0", NULL}, true, true},
        {{"topic", "zone-topic-0", "__ZONE_MODE", "true", "__ZONE_NAME", "z1", NULL}, true, false},
        {{"__ZONE_NAME", "z2", "__ZONE_MODE", "TRUE", "topic", "zone-topic-0", NULL}, false, true},
        {{"topic", "zone-topic-0", "__ZONE_MODE", "false", "__ZONE_NAME", "z1", NULL}, true, true},
        {{"topic", "zone-topic-0", "__ZONE_NAME", "z1", NULL}, true, true},
        {{"acceptStandardJsonOnly", "true", "topic", "zone-topic-0", NULL}, true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nstest_call(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, cases[i].kv, NULL, 0, NS_VERSION_V5_3_3,
                    10000, &rsp);
        assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
        const char *body = (const char *)rsp.cmd.body;
        size_t n = rsp.cmd.body_len;
        if ((memmem(body, n, "zone-b1", 7) != NULL) != cases[i].b1 ||
            (memmem(body, n, "zone-b2", 7) != NULL) != cases[i].b2)
            fail_msg("case %zu: route %.*s", i, (int)n, body);
    }
    const char *std_kv[] = {"topic", "zone-topic-0", "acceptStandardJsonOnly", "true", NULL};
    const char *old_kv[] = {"topic", "zone-topic-0", NULL};
    nstest_call(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, std_kv, NULL, 0, NS_VERSION_V4_9_4 - 1, 10000,
                &rsp);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    char *std_body = strndup((const char *)rsp.cmd.body, rsp.cmd.body_len);
    assert_non_null(std_body);
    nstest_call(c, NS_REQ_GET_ROUTEINFO_BY_TOPIC, old_kv, NULL, 0, NS_VERSION_V4_9_4 - 1, 10000,
                &rsp);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    assert_true(strlen(std_body) != rsp.cmd.body_len ||
                memcmp(std_body, rsp.cmd.body, rsp.cmd.body_len) != 0);
    free(std_body);
    ns_cmd_msg_free(&rsp);
    ns_buf_free(&r1.body);
    ns_buf_free(&r2.body);
    ns_client_close(c);
}

static int setup(void **state)
{
    return nstest_fx_setup(state, "gather", NULL);
}

static int setup_memo(void **state)
{
    static const char *const args[] = {"--routeMemoSlots=16384", NULL};
    return nstest_fx_setup(state, "gather-memo", args);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pipelined_lookups, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_lookups_more, setup_memo,
                                        nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_short_writes, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_read_after_commit, setup, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_read_after_commit_pipelined, setup,
                                        nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_read_after_commit_pipelined, setup_memo,
                                        nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_lookup_fields, setup, nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
