/* test_seed.c - seedFromPeers with real namesrvd: server A holds brokers
 * (registered through the client helpers) and KV entries; an empty server
 * B with seedFromPeers=true and peers=A answers A's routes and KV before
 * any broker registered with it, reports ready only after the seed, keeps
 * the seeded brokers on grace and evicts one that never registers; B with
 * data of its own (a broker, or only a KV entry) is never seeded over; a
 * peer that answers garbage, never answers, sends pages that do not add up
 * to its digest or whose cursor does not move leaves B started empty
 * within a bounded time, and B says so in its log; a peer whose brokers
 * were only restored (restarted, not registered since) is not in sync and
 * is not seeded from; under authMode=all only a signing B is seeded; a
 * store namesrvctl recover made of salvaged KV config (no good backup) has
 * its topology seeded once, the salvaged entries merged back by version. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "nstest_auth.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/remoting.h"
#include "ns/seed.h"

#define TOPICS 300

typedef struct {
    char *dir[2];
    nstest_server_t srv[2];
    int http[2];
    ns_client_t *a; /* to A */
} fx_t;

static void start_a(fx_t *f)
{
    char port[32];
    snprintf(port, sizeof port, "--listenPort=%d", f->srv[0].port);
    const char *args[] = {f->srv[0].port ? port : NULL, NULL};
    assert_int_equal(nstest_server_start_http(&f->srv[0], f->dir[0], args, &f->http[0]), 0);
    f->a = nstest_connect(&f->srv[0]);
}

/* Fills A: broker-a with TOPICS topics, broker-b with two, and 3 KV keys. */
static void fill_a(fx_t *f)
{
    ns_topic_config_t *t = calloc(TOPICS, sizeof *t);
    char name[TOPICS][32];
    assert_non_null(t);
    for (int i = 0; i < TOPICS; i++) {
        snprintf(name[i], sizeof name[i], "SeedTopic%04d", i);
        t[i] = (ns_topic_config_t){name[i], 4, 4, 6, 0};
    }
    nstest_register_topics(f->a, "C1", "broker-a", "127.0.0.1:10911", "127.0.0.1:10912", t, TOPICS);
    nstest_register_two_topics(f->a, "broker-b", "127.0.0.1:10921");
    nstest_put_keys(f->a, "NS", "key", 0, 3, "seeded-value");
    free(t);
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir[0] = nstest_tmpdir("seedA");
    f->dir[1] = nstest_tmpdir("seedB");
    start_a(f);
    fill_a(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    ns_client_close(f->a);
    for (int i = 0; getenv("NSTEST_SEED_LOGS") && i < 2; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/namesrvd.log", f->dir[i]);
        char *text = nstest_read_text(path);
        printf("---- %s ----\n%s\n", path, text ? text : "(none)");
        free(text);
    }
    for (int i = 0; i < 2; i++)
        nstest_server_close(&f->srv[i], f->dir[i]);
    free(f);
    return 0;
}

/* Starts B with seedFromPeers=true and peers=peers (plus extra, may be
 * NULL); returns how long the start took, ms. */
static int64_t start_b2(fx_t *f, const char *peers, const char *extra, const char *extra2)
{
    char plist[200];
    snprintf(plist, sizeof plist, "--peers=%s", peers);
    const char *args[] = {"--seedFromPeers=true",
                          "--peerTimeoutMillis=1000",
                          "--seedTimeoutMillis=4000",
                          plist,
                          extra,
                          extra2,
                          NULL};
    int64_t t0 = nstest_mono_ms();
    assert_int_equal(nstest_server_start_http(&f->srv[1], f->dir[1], args, &f->http[1]), 0);
    return nstest_mono_ms() - t0;
}

static int64_t start_b(fx_t *f, const char *peers, const char *extra)
{
    return start_b2(f, peers, extra, NULL);
}

static void a_addr(fx_t *f, char *out, size_t n)
{
    snprintf(out, n, "127.0.0.1:%d", f->srv[0].port);
}

static bool kv_get(const nstest_server_t *srv, const char *key, char *out, size_t n)
{
    const char *kv[] = {"namespace", "NS", "key", key, NULL};
    ns_client_t *c = nstest_connect(srv);
    ns_cmd_msg_t rsp = nstest_call_msg(c, NS_REQ_GET_KV_CONFIG, kv, NULL, 0, 5000);
    const char *v = rsp.cmd.code == NS_RSP_SUCCESS ? ns_cmd_ext_get(&rsp.cmd, "value") : NULL;
    snprintf(out, n, "%s", v ? v : "");
    ns_cmd_msg_free(&rsp);
    ns_client_close(c);
    return v != NULL;
}

/* The byte offset of needle in B's log, -1 when absent. */
static long log_offset(fx_t *f, const char *needle)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/namesrvd.log", f->dir[1]);
    char *text = nstest_read_text(path);
    const char *at = text ? strstr(text, needle) : NULL;
    long off = at ? (long)(at - text) : -1;
    free(text);
    return off;
}

static void test_empty_server_is_seeded(void **state)
{
    fx_t *f = *state;
    char peers[64], v[64], *body = NULL;
    a_addr(f, peers, sizeof peers);
    int64_t ms = start_b(f, peers, NULL);
    printf("seed: B started (seeded, %d topics) in %lld ms\n", TOPICS + 2, (long long)ms);
    /* nothing registered with B: every route and KV entry is A's */
    assert_int_equal(nstest_route_code(&f->srv[1], "SeedTopic0000"), NS_RSP_SUCCESS);
    assert_int_equal(nstest_route_code(&f->srv[1], "SeedTopic0299"), NS_RSP_SUCCESS);
    assert_int_equal(nstest_route_code(&f->srv[1], "T1"), NS_RSP_SUCCESS);
    assert_int_equal(nstest_route_code(&f->srv[1], "NoSuchTopic"), NS_RSP_TOPIC_NOT_EXIST);
    assert_true(kv_get(&f->srv[1], "key2", v, sizeof v));
    assert_string_equal(v, "seeded-value");
    /* the same digest on both sides */
    char *da = NULL, *db = NULL;
    assert_int_equal(nstest_http_get(f->http[0], "/fleet/digest", &da), 200);
    assert_int_equal(nstest_http_get(f->http[1], "/fleet/digest", &db), 200);
    assert_string_equal(da, db);
    free(da);
    free(db);
    /* ready, and only after the seed: the log says seeded before it says
     * anything of the HTTP listener, which /readyz is served by */
    int ready = 0; /* 503 until verifyOnStart's walk of the seeded store ends */
    for (int i = 0; i < 100 && ready != 200; i++, nstest_sleep_ms(50)) {
        ready = nstest_http_get(f->http[1], "/readyz", &body);
        free(body);
        body = NULL;
    }
    assert_int_equal(ready, 200);
    long seeded = log_offset(f, "seedFromPeers: seeded from");
    long restored = log_offset(f, "restored 2 broker address(es)");
    assert_true(seeded >= 0);
    assert_true(restored > seeded); /* through the path of a restart, on grace */
    assert_true(log_offset(f, "http: /metrics, /healthz, /readyz") > seeded);
    assert_int_equal((int)nstest_metric(f->http[1], "namesrv_seed_state"), 1);
    /* B itself is now in sync for a third server only once its brokers
     * register with it: it was seeded, they have not */
    assert_true(nstest_metric(f->http[1], "namesrv_seed_items") >= TOPICS + 2 + 3);
}

static void test_server_with_data_is_not_seeded(void **state)
{
    fx_t *f = *state;
    char peers[64];
    /* B has data of its own: one broker, one topic */
    assert_int_equal(nstest_server_start_http(&f->srv[1], f->dir[1], NULL, &f->http[1]), 0);
    ns_client_t *b = nstest_connect(&f->srv[1]);
    nstest_register_two_topics(b, "broker-own", "127.0.0.1:10931");
    nstest_server_stop(&f->srv[1], SIGKILL); /* kept registered */
    ns_client_close(b);
    a_addr(f, peers, sizeof peers);
    start_b(f, peers, NULL);
    assert_true(nstest_log_wait(&f->srv[1], "seedFromPeers: the store has data", 5000));
    assert_int_equal(nstest_route_code(&f->srv[1], "T1"), NS_RSP_SUCCESS);
    assert_int_equal(nstest_route_code(&f->srv[1], "SeedTopic0000"), NS_RSP_TOPIC_NOT_EXIST);
    assert_int_equal((int)nstest_metric(f->http[1], "namesrv_seed_state"), 3);
    /* a store with one KV entry and nothing else is data too */
    nstest_server_stop(&f->srv[1], SIGKILL);
    nstest_rmtree(f->dir[1]);
    free(f->dir[1]);
    f->dir[1] = nstest_tmpdir("seedB");
    assert_int_equal(nstest_server_start_http(&f->srv[1], f->dir[1], NULL, &f->http[1]), 0);
    b = nstest_connect(&f->srv[1]);
    nstest_put_keys(b, "OWN", "own", 0, 1, "mine");
    ns_client_close(b);
    nstest_server_stop(&f->srv[1], SIGKILL);
    start_b(f, peers, NULL);
    assert_true(nstest_log_wait(&f->srv[1], "the store has data (table kv", 5000));
    assert_int_equal(nstest_route_code(&f->srv[1], "SeedTopic0000"), NS_RSP_TOPIC_NOT_EXIST);
}

/* A restarted A has its brokers only restored: not in sync. */
/* namesrvctl recover found no good backup: the new store holds only the KV
 * config it salvaged from the damaged one (version (0, 0)). B then seeds
 * A's topology once: a salvaged key A holds too takes A's newer value, a
 * key only B had stays, and the next start (B has data, the mark is gone)
 * does not seed again. Before, that store counted as data and B started
 * with no route until each broker registered. */
static void test_recovered_store_is_seeded(void **state)
{
    fx_t *f = *state;
    char data[4200], file[4300], peers[64], v[64], *out = NULL;
    snprintf(data, sizeof data, "%s/data", f->dir[1]);
    snprintf(file, sizeof file, "%s/data.mdb", data);
    assert_int_equal(nstest_server_start_http(&f->srv[1], f->dir[1], NULL, &f->http[1]), 0);
    ns_client_t *b = nstest_connect(&f->srv[1]);
    nstest_register_two_topics(b, "broker-own", "127.0.0.1:10931");
    nstest_put_keys(b, "NS", "key", 0, 1, "salvaged-old"); /* NS/key0, also on A */
    nstest_put_keys(b, "NS", "own", 0, 1, "kept");         /* NS/own0, B's only */
    nstest_server_stop(&f->srv[1], SIGKILL); /* its broker kept registered: routes to damage */
    ns_client_close(b);
    assert_int_equal(nstest_damage_table(file, "routes"), 0);
    int rc = nstest_ctl(60000, &out, "recover", "--data-dir", data, NULL);
    print_message("# recover (no backup): exit %d: %s", rc, out);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "2 key(s)");
    free(out);
    a_addr(f, peers, sizeof peers);
    start_b(f, peers, NULL);
    assert_true(nstest_log_wait(&f->srv[1], "salvaged entries merged back", 5000));
    assert_true(nstest_log_wait(&f->srv[1], "seedFromPeers: seeded from", 5000));
    assert_int_equal(nstest_route_code(&f->srv[1], "SeedTopic0000"), NS_RSP_SUCCESS);
    assert_true(kv_get(&f->srv[1], "key0", v, sizeof v));
    assert_string_equal(v, "seeded-value");
    assert_true(kv_get(&f->srv[1], "own0", v, sizeof v));
    assert_string_equal(v, "kept");
    assert_int_equal((int)nstest_metric(f->http[1], "namesrv_seed_state"), 1);
    nstest_server_stop(&f->srv[1], SIGKILL);
    start_b(f, peers, NULL);
    assert_true(nstest_log_wait(&f->srv[1], "seedFromPeers: the store has data", 5000));
    assert_true(kv_get(&f->srv[1], "own0", v, sizeof v));
}

static void test_peer_with_unconfirmed_brokers_is_not_used(void **state)
{
    fx_t *f = *state;
    char peers[64];
    nstest_server_stop(&f->srv[0], SIGKILL); /* its brokers stay in its store */
    ns_client_close(f->a);
    start_a(f);
    a_addr(f, peers, sizeof peers);
    start_b(f, peers, NULL);
    assert_true(nstest_log_wait(&f->srv[1], "not in sync", 5000));
    assert_true(nstest_log_wait(&f->srv[1], "starting empty", 5000));
    assert_int_equal(nstest_route_code(&f->srv[1], "SeedTopic0000"), NS_RSP_TOPIC_NOT_EXIST);
    /* once its brokers registered again, A is in sync: B (emptied) seeds */
    fill_a(f);
    nstest_sleep_ms(6000); /* A's next liveness scan counts them (5 s period) */
    nstest_server_stop(&f->srv[1], SIGKILL);
    nstest_rmtree(f->dir[1]);
    free(f->dir[1]);
    f->dir[1] = nstest_tmpdir("seedB");
    start_b(f, peers, NULL);
    assert_int_equal(nstest_route_code(&f->srv[1], "SeedTopic0000"), NS_RSP_SUCCESS);
}

/* A seeded broker that never registers with B is evicted by B once its
 * grace (max(brokerGraceWindowMillis, its heartbeat timeout)) is over, as a
 * broker restored from B's own store would be; A's others stay. */
static void test_seeded_broker_evicted_unless_it_registers(void **state)
{
    fx_t *f = *state;
    char peers[64];
    ns_buf_t body = NS_BUF_INIT;
    const char *names[] = {"ShortLived1", "ShortLived2"};
    nstest_regbody_names(&body, names, 2);
    const char *kv[] = {"brokerAddr",
                        "127.0.0.1:10941",
                        "brokerId",
                        "0",
                        "brokerName",
                        "broker-c",
                        "clusterName",
                        "C1",
                        "haServerAddr",
                        "",
                        "heartbeatTimeoutMillis",
                        "3000",
                        NULL};
    assert_int_equal(nstest_call_code(f->a, NS_REQ_REGISTER_BROKER, kv, body.data, body.len, 10000),
                     NS_RSP_SUCCESS);
    ns_buf_free(&body);
    a_addr(f, peers, sizeof peers);
    start_b2(f, peers, "--brokerGraceWindowMillis=1000", "--scanNotActiveBrokerInterval=200");
    assert_int_equal(nstest_route_code(&f->srv[1], "ShortLived1"), NS_RSP_SUCCESS);
    int64_t t0 = nstest_mono_ms();
    assert_true(nstest_log_wait(&f->srv[1], "broker broker-c 127.0.0.1:10941 (C1) expired", 10000));
    int64_t ms = nstest_mono_ms() - t0;
    printf("seed: broker-c evicted by B %lld ms after the seed\n", (long long)ms);
    assert_true(ms >= 2000); /* its 3 s heartbeat timeout, not the 1 s window */
    /* the eviction is decided, then written by the writer: the route goes at its commit */
    int code = NS_RSP_SUCCESS;
    for (int i = 0; i < 50 && code == NS_RSP_SUCCESS; i++, nstest_sleep_ms(i ? 100 : 0))
        code = nstest_route_code(&f->srv[1], "ShortLived1");
    assert_int_equal(code, NS_RSP_TOPIC_NOT_EXIST);
    /* broker-a's 120 s timeout keeps it */
    assert_int_equal(nstest_route_code(&f->srv[1], "SeedTopic0000"), NS_RSP_SUCCESS);
}

/* A peer under authMode=all seeds a server that signs its requests
 * (peerAccessKey/peerSecretKey of a client user), not one that does not. */
static void test_signed_seed(void **state)
{
    (void)state;
    fx_t *f = calloc(1, sizeof *f);
    char data[4200], peers[64];
    assert_non_null(f);
    f->dir[0] = nstest_tmpdir("seedA-auth");
    f->dir[1] = nstest_tmpdir("seedB-auth");
    snprintf(data, sizeof data, "%s/data", f->dir[0]);
    nstest_users_add(data, false);
    const char *a_args[] = {"--authMode=all", "--authPenaltyMaxMillis=0", NULL};
    assert_int_equal(nstest_server_start_http(&f->srv[0], f->dir[0], a_args, &f->http[0]), 0);
    f->a = nstest_connect(&f->srv[0]);
    assert_int_equal(ns_client_set_credentials(f->a, "brk1", "brokersecret"), NS_OK);
    nstest_register_two_topics(f->a, "broker-a", "127.0.0.1:10911"); /* granted C1/broker-a */
    a_addr(f, peers, sizeof peers);
    start_b(f, peers, NULL);
    assert_true(nstest_log_wait(&f->srv[1], "NO_PERMISSION", 5000));
    assert_true(nstest_log_wait(&f->srv[1], "starting empty", 5000));
    nstest_server_stop(&f->srv[1], SIGKILL);
    nstest_rmtree(f->dir[1]);
    free(f->dir[1]);
    f->dir[1] = nstest_tmpdir("seedB-auth");
    start_b2(f, peers, "--peerAccessKey=cli1", "--peerSecretKey=clientsecret");
    assert_true(nstest_log_wait(&f->srv[1], "seedFromPeers: seeded from", 5000));
    assert_int_equal(nstest_route_code(&f->srv[1], "T1"), NS_RSP_SUCCESS);
    void *st = f;
    teardown(&st);
}

/* ---- hostile peers ---- */

typedef enum { PEER_GARBAGE, PEER_SILENT, PEER_SHORT, PEER_STUCK } peer_mode_t;

typedef struct {
    int fd, port, real_port;
    peer_mode_t mode;
    atomic_bool stop;
    atomic_int asked;
    pthread_t th;
} fake_t;

static void fake_answer(fake_t *l, int c, const ns_cmd_t *req, ns_client_t *real)
{
    ns_buf_t body = NS_BUF_INIT, out = NS_BUF_INIT, fwd = NS_BUF_INIT;
    char why[200];
    ns_cmd_t rsp;
    ns_cmd_request_init(&rsp, NS_RSP_SUCCESS, NULL, 0);
    rsp.opaque = req->opaque;
    rsp.flag = 1;
    atomic_fetch_add(&l->asked, 1);
    if (req->code != NS_REQ_NS_SEED_PAGE) {
        rsp.code = NS_RSP_REQUEST_CODE_NOT_SUPPORTED;
    } else if (l->mode == PEER_SILENT) {
        goto out; /* never answers */
    } else if (l->mode == PEER_GARBAGE) {
        ns_buf_append_str(&body, "{\"digest\":\"00\",\"items\":[[1,2,");
    } else if (l->mode == PEER_STUCK) { /* the first page, one item, again and again */
        ns_buf_append_str(&fwd, "{\"section\":\"members\",\"maxBytes\":1}");
        if (ns_seed_call(real, &fwd, 3000, &body, why, sizeof why) != NS_OK)
            rsp.code = NS_RSP_SYSTEM_ERROR;
    } else { /* PEER_SHORT: the real pages, each without its last item */
        ns_buf_append(&fwd, req->body, req->body_len);
        if (ns_seed_call(real, &fwd, 3000, &body, why, sizeof why) != NS_OK) {
            rsp.code = NS_RSP_SYSTEM_ERROR;
        } else if (strstr((const char *)req->body, "\"queues\"") && body.len > 4 &&
                   memcmp(body.data + body.len - 3, "]]}", 3) == 0) {
            /* the last page of topics: drop its last item */
            char *items = strstr((char *)body.data, "\"items\":[");
            char *last = strrchr((char *)body.data, '[');
            if (items && last > items + 9 && last[-1] == ',') {
                last[-1] = ']';
                last[0] = '}';
                body.len = (size_t)(last + 1 - (char *)body.data);
            }
        }
    }
    rsp.body = body.data;
    rsp.body_len = body.len;
    if (ns_remoting_encode(&out, &rsp) == NS_OK)
        (void)!write(c, out.data, out.len);
out:
    ns_buf_free(&body);
    ns_buf_free(&out);
    ns_buf_free(&fwd);
}

static void *fake_main(void *arg)
{
    fake_t *l = arg;
    ns_client_t *real = NULL;
    if (ns_client_connect("127.0.0.1", l->real_port, 3000, &real) != NS_OK)
        return NULL;
    while (!atomic_load(&l->stop)) {
        struct pollfd p = {l->fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        int c = accept(l->fd, NULL, NULL);
        ns_buf_t in = NS_BUF_INIT;
        while (c >= 0 && !atomic_load(&l->stop)) {
            uint8_t tmp[65536];
            struct pollfd q = {c, POLLIN, 0};
            if (poll(&q, 1, 100) <= 0)
                continue;
            ssize_t n = read(c, tmp, sizeof tmp);
            if (n <= 0)
                break;
            ns_buf_append(&in, tmp, (size_t)n);
            size_t flen = 0;
            while (ns_frame_peek(in.data, in.len, 1u << 24, &flen) == NS_OK) {
                ns_cmd_msg_t m;
                ns_cmd_msg_init(&m);
                if (ns_remoting_decode(in.data, flen, &m) == NS_OK)
                    fake_answer(l, c, &m.cmd, real);
                ns_cmd_msg_free(&m);
                memmove(in.data, in.data + flen, in.len - flen);
                in.len -= flen;
            }
        }
        ns_buf_free(&in);
        if (c >= 0)
            close(c);
    }
    ns_client_close(real);
    return NULL;
}

static void fake_start(fake_t *l, int real_port, peer_mode_t mode)
{
    struct sockaddr_in a = {0};
    socklen_t al = sizeof a;
    memset(l, 0, sizeof *l);
    l->real_port = real_port;
    l->mode = mode;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    l->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(l->fd >= 0);
    assert_int_equal(bind(l->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(l->fd, 4), 0);
    assert_int_equal(getsockname(l->fd, (struct sockaddr *)&a, &al), 0);
    l->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&l->th, NULL, fake_main, l), 0);
}

static void fake_stop(fake_t *l)
{
    atomic_store(&l->stop, true);
    pthread_join(l->th, NULL);
    close(l->fd);
}

static void hostile(fx_t *f, peer_mode_t mode, const char *name, const char *logged)
{
    fake_t l;
    char peers[64];
    fake_start(&l, f->srv[0].port, mode);
    snprintf(peers, sizeof peers, "127.0.0.1:%d", l.port);
    int64_t ms = start_b(f, peers, NULL);
    printf("seed: peer '%s': asked %d times, B started empty in %lld ms\n", name,
           atomic_load(&l.asked), (long long)ms);
    assert_true(atomic_load(&l.asked) >= 1);
    assert_true(ms < 15000); /* seedTimeoutMillis 4000, and the start itself */
    assert_true(nstest_log_wait(&f->srv[1], logged, 5000));
    assert_true(nstest_log_wait(&f->srv[1], "starting empty", 5000));
    assert_int_equal(nstest_route_code(&f->srv[1], "SeedTopic0000"), NS_RSP_TOPIC_NOT_EXIST);
    assert_int_equal((int)nstest_metric(f->http[1], "namesrv_seed_state"), 2);
    nstest_server_stop(&f->srv[1], SIGKILL);
    fake_stop(&l);
    nstest_rmtree(f->dir[1]);
    free(f->dir[1]);
    f->dir[1] = nstest_tmpdir("seedB");
}

static void test_hostile_peers_leave_b_empty(void **state)
{
    fx_t *f = *state;
    hostile(f, PEER_GARBAGE, "garbage", "that are not a members page");
    hostile(f, PEER_SILENT, "silent", "not seeded from");
    hostile(f, PEER_SHORT, "short pages", "does not add up to its digest");
    hostile(f, PEER_STUCK, "stuck cursor", "pages do not move forward");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_empty_server_is_seeded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_with_data_is_not_seeded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovered_store_is_seeded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_with_unconfirmed_brokers_is_not_used, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_hostile_peers_leave_b_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seeded_broker_evicted_unless_it_registers, setup,
                                        teardown),
        cmocka_unit_test(test_signed_seed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
