/* test_kv_sync.c - KV anti-entropy with three real namesrvd (kvSync=true,
 * peers set to each other, checks every 200 ms): a put on one reaches the
 * other two; two puts of one key on two servers at once end with one value
 * everywhere; a delete made while a server is down is not undone when it
 * comes back, and it loses the entry; with kvSync off nothing moves; and a
 * model run: random seeded interleavings of puts, deletes, restarts (kill
 * -9) and partitions (a server's peers emptied, the others' without it)
 * that must all end equal to the last write of each key, so that no delete
 * is ever resurrected. NSTEST_KV_SEED=<n> replays a run; the seed is
 * printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "ns/client.h"
#include "ns/clock.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/fleet.h"
#include "ns/kvver.h"
#include "ns/remoting.h"

#define N 3
#define CHECK_MS "200"
#define CONVERGE_MS 15000

typedef struct {
    char *dir[N];
    nstest_server_t srv[N];
    int http[N];
    ns_client_t *c[N];
    bool up[N];
    bool isolated[N];
    char addr[N][32];
} fx_t;

static void start_one(fx_t *f, int i, const char *peers, bool kv_sync)
{
    char port[32], plist[200];
    snprintf(port, sizeof port, "--listenPort=%d", f->srv[i].port);
    snprintf(plist, sizeof plist, "--peers=%s", peers);
    const char *args[] = {"--peerCheckIntervalMillis=" CHECK_MS,
                          "--peerTimeoutMillis=1000",
                          kv_sync ? "--kvSync=true" : "--kvSync=false",
                          plist,
                          f->srv[i].port ? port : NULL,
                          NULL};
    assert_int_equal(nstest_server_start_http(&f->srv[i], f->dir[i], args, &f->http[i]), 0);
    snprintf(f->addr[i], sizeof f->addr[i], "127.0.0.1:%d", f->srv[i].port);
    f->c[i] = nstest_connect(&f->srv[i]);
    f->up[i] = true;
}

/* The peers server i should have now: every other that is not isolated,
 * none when i is. */
static void peers_of(fx_t *f, int i, char *out, size_t n)
{
    out[0] = 0;
    for (int j = 0; j < N && !f->isolated[i]; j++) {
        if (j == i || f->isolated[j])
            continue;
        size_t l = strlen(out);
        snprintf(out + l, n - l, "%s%s", l ? ";" : "", f->addr[j]);
    }
}

static void apply_peers(fx_t *f)
{
    for (int i = 0; i < N; i++) {
        char list[200], props[220];
        if (!f->up[i])
            continue;
        peers_of(f, i, list, sizeof list);
        snprintf(props, sizeof props, "peers=%s", list);
        assert_int_equal(nstest_config_update(f->c[i], props), NS_RSP_SUCCESS);
    }
}

static int setup_with(void **state, bool kv_sync)
{
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    for (int i = 0; i < N; i++) {
        f->dir[i] = nstest_tmpdir("kvsync");
        start_one(f, i, "", kv_sync);
    }
    apply_peers(f);
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_with(state, true);
}

static int setup_off(void **state)
{
    return setup_with(state, false);
}

static int teardown(void **state)
{
    fx_t *f = *state;
    for (int i = 0; i < N; i++) {
        ns_client_close(f->c[i]);
        nstest_server_close(&f->srv[i], f->dir[i]);
    }
    free(f);
    return 0;
}

static void stop_one(fx_t *f, int i)
{
    ns_client_close(f->c[i]);
    f->c[i] = NULL;
    nstest_server_stop(&f->srv[i], SIGKILL);
    f->up[i] = false;
}

static void restart_one(fx_t *f, int i)
{
    char list[200];
    peers_of(f, i, list, sizeof list);
    start_one(f, i, list, true);
}

static int kv_put(fx_t *f, int i, const char *key, const char *val)
{
    const char *kv[] = {"namespace", "NS", "key", key, "value", val, NULL};
    return nstest_call_code(f->c[i], NS_REQ_PUT_KV_CONFIG, kv, NULL, 0, 5000);
}

static int kv_del(fx_t *f, int i, const char *key)
{
    const char *kv[] = {"namespace", "NS", "key", key, NULL};
    return nstest_call_code(f->c[i], NS_REQ_DELETE_KV_CONFIG, kv, NULL, 0, 5000);
}

/* The value of NS/key on server i into out ("" and false when absent). */
static bool kv_get(fx_t *f, int i, const char *key, char *out, size_t n)
{
    const char *kv[] = {"namespace", "NS", "key", key, NULL};
    ns_cmd_msg_t rsp = nstest_call_msg(f->c[i], NS_REQ_GET_KV_CONFIG, kv, NULL, 0, 5000);
    bool found = rsp.cmd.code == NS_RSP_SUCCESS;
    const char *v = found ? ns_cmd_ext_get(&rsp.cmd, "value") : NULL;
    if (found && rsp.cmd.code != NS_RSP_QUERY_NOT_FOUND && v == NULL)
        fail_msg("GET_KV_CONFIG answered SUCCESS without a value");
    if (!found && rsp.cmd.code != NS_RSP_QUERY_NOT_FOUND)
        fail_msg("GET_KV_CONFIG answered %d", rsp.cmd.code);
    snprintf(out, n, "%s", v ? v : "");
    ns_cmd_msg_free(&rsp);
    return found;
}

/* Waits until every server that is up holds want for key (NULL: absent);
 * returns the ms it took, -1 on timeout. */
static int64_t wait_all(fx_t *f, const char *key, const char *want, int ms)
{
    int64_t t0 = nstest_mono_ms(), end = t0 + ms;
    do {
        bool ok = true;
        for (int i = 0; i < N && ok; i++) {
            char v[256];
            if (!f->up[i])
                continue;
            bool has = kv_get(f, i, key, v, sizeof v);
            ok = want ? has && strcmp(v, want) == 0 : !has;
        }
        if (ok)
            return nstest_mono_ms() - t0;
        nstest_sleep_ms(10);
    } while (nstest_mono_ms() < end);
    return -1;
}

static void test_put_reaches_the_others(void **state)
{
    fx_t *f = *state;
    int64_t worst = 0;
    for (int r = 0; r < 5; r++) {
        char key[16], val[16];
        snprintf(key, sizeof key, "k%d", r);
        snprintf(val, sizeof val, "v%d", r);
        assert_int_equal(kv_put(f, r % N, key, val), NS_RSP_SUCCESS);
        int64_t ms = wait_all(f, key, val, CONVERGE_MS);
        assert_true(ms >= 0);
        worst = ms > worst ? ms : worst;
        printf("kv_sync: a put on server %d reached all three in %lld ms (checks every %s ms)\n",
               r % N, (long long)ms, CHECK_MS);
    }
    printf("kv_sync: worst of 5: %lld ms\n", (long long)worst);
    /* an update and a delete travel the same way */
    assert_int_equal(kv_put(f, 1, "k0", "changed"), NS_RSP_SUCCESS);
    assert_true(wait_all(f, "k0", "changed", CONVERGE_MS) >= 0);
    assert_int_equal(kv_del(f, 2, "k0"), NS_RSP_SUCCESS);
    assert_true(wait_all(f, "k0", NULL, CONVERGE_MS) >= 0);
    /* the pulls are counted */
    assert_true(nstest_metric(f->http[1], "namesrv_kv_sync_pulled_total") >= 4);
    assert_true(nstest_metric(f->http[1], "namesrv_kv_sync_refused_total") == 0);
    assert_true(nstest_metric(f->http[2], "namesrv_kv_tombstones") >= 0);
}

static void test_concurrent_puts_end_equal(void **state)
{
    fx_t *f = *state;
    /* rounds 0-4 back to back (often in the same millisecond: the server
     * ids decide, the same way everywhere); 5-9 with b 2 ms later */
    for (int r = 0; r < 10; r++) {
        char a[16], b[16], v[3][256];
        snprintf(a, sizeof a, "a%d", r);
        snprintf(b, sizeof b, "b%d", r);
        assert_int_equal(kv_put(f, 0, "same", a), NS_RSP_SUCCESS);
        if (r >= 5)
            nstest_sleep_ms(2);
        assert_int_equal(kv_put(f, 1, "same", b), NS_RSP_SUCCESS);
        int64_t end = nstest_mono_ms() + CONVERGE_MS;
        bool equal = false;
        while (!equal && nstest_mono_ms() < end) {
            bool all = true;
            for (int i = 0; i < N; i++)
                all = kv_get(f, i, "same", v[i], sizeof v[i]) && all;
            equal = all && strcmp(v[0], v[1]) == 0 && strcmp(v[1], v[2]) == 0;
            if (!equal)
                nstest_sleep_ms(20);
        }
        assert_true(equal);
        if (r >= 5) /* the later write: b (written after a, on the same clock) */
            assert_string_equal(v[0], b);
        else
            assert_true(strcmp(v[0], a) == 0 || strcmp(v[0], b) == 0);
    }
}

static void test_delete_while_down_is_not_undone(void **state)
{
    fx_t *f = *state;
    assert_int_equal(kv_put(f, 0, "gone", "here"), NS_RSP_SUCCESS);
    assert_true(wait_all(f, "gone", "here", CONVERGE_MS) >= 0);
    stop_one(f, 2); /* it keeps "gone" = "here" in its store */
    assert_int_equal(kv_del(f, 0, "gone"), NS_RSP_SUCCESS);
    assert_true(wait_all(f, "gone", NULL, CONVERGE_MS) >= 0);
    restart_one(f, 2);
    int64_t ms = wait_all(f, "gone", NULL, CONVERGE_MS);
    assert_true(ms >= 0);
    printf("kv_sync: the returning server took the delete in %lld ms\n", (long long)ms);
    /* and over many checks after, nobody brings it back */
    for (int r = 0; r < 10; r++) {
        char v[64];
        for (int i = 0; i < N; i++)
            assert_false(kv_get(f, i, "gone", v, sizeof v));
        nstest_sleep_ms(100);
    }
    assert_true(nstest_log_count(&f->srv[2], "kvsync: took") >= 1);
}

static void test_off_nothing_moves(void **state)
{
    fx_t *f = *state;
    char v[64];
    assert_int_equal(kv_put(f, 0, "local", "only"), NS_RSP_SUCCESS);
    nstest_sleep_ms(1000); /* five checks */
    assert_false(kv_get(f, 1, "local", v, sizeof v));
    assert_false(kv_get(f, 2, "local", v, sizeof v));
    /* switched on at run time: it moves */
    for (int i = 0; i < N; i++)
        assert_int_equal(nstest_config_update(f->c[i], "kvSync=true"), NS_RSP_SUCCESS);
    assert_true(wait_all(f, "local", "only", CONVERGE_MS) >= 0);
}

/* ---- hostile peers ----
 * A fake peer that tells the truth about its digest (it relays a real
 * server's, where the key "lie" exists) and lies in its NS_KV_SYNC_GET
 * answers, each mode its own way. The server pulling from it must refuse
 * every lie, keep serving, and never hold "lie". */

typedef enum { LIE_GARBAGE, LIE_FUTURE, LIE_OTHER_KEY, LIE_SLOW, LIE_TOMBSTONE_ZERO } lie_t;

typedef struct {
    int fd, port, real_port;
    lie_t mode;
    atomic_bool stop;
    atomic_int kv_asked;
    pthread_t th;
} liar_t;

static void liar_answer(liar_t *l, int c, const ns_cmd_t *req, ns_client_t *real)
{
    ns_buf_t body = NS_BUF_INIT, out = NS_BUF_INIT, fleet_req = NS_BUF_INIT;
    char why[200];
    ns_cmd_t rsp;
    ns_cmd_request_init(&rsp, NS_RSP_SUCCESS, NULL, 0);
    rsp.opaque = req->opaque;
    rsp.flag = 1;
    if (req->code == NS_REQ_NS_FLEET_DIGEST) {
        if (req->body_len)
            ns_buf_append(&fleet_req, req->body, req->body_len);
        if (ns_fleet_call(real, &fleet_req, 3000, &body, why, sizeof why) != NS_OK)
            rsp.code = NS_RSP_SYSTEM_ERROR;
    } else if (req->code == NS_REQ_NS_KV_SYNC_GET) {
        char ver[34];
        ns_kvver_t v = {(uint64_t)(ns_clock_wall_ms() + 2 * 3600 * 1000) << NS_KVVER_LOGICAL_BITS,
                        1, false};
        atomic_fetch_add(&l->kv_asked, 1);
        ns_kvver_format(&v, ver);
        switch (l->mode) {
        case LIE_GARBAGE:
            ns_buf_append_str(&body, "{\"entries\":[{\"namespace\":\"NS\",\"key\":");
            break;
        case LIE_FUTURE:
            ns_buf_printf(&body,
                          "{\"entries\":[{\"namespace\":\"NS\",\"key\":\"lie\",\"state\":"
                          "\"value\",\"version\":\"%s\",\"value\":\"future\"}]}",
                          ver);
            break;
        case LIE_OTHER_KEY:
            ns_buf_append_str(&body, "{\"entries\":[{\"namespace\":\"NS\",\"key\":\"other\","
                                     "\"state\":\"value\",\"version\":"
                                     "\"0000000000010000.0000000000000001\",\"value\":\"x\"}]}");
            break;
        case LIE_SLOW:
            nstest_sleep_ms(2500); /* beyond peerTimeoutMillis (1000) */
            ns_buf_append_str(&body, "{\"entries\":[{\"namespace\":\"NS\",\"key\":\"lie\","
                                     "\"state\":\"value\",\"version\":"
                                     "\"0000000000010000.0000000000000001\",\"value\":\"slow\"}]}");
            break;
        case LIE_TOMBSTONE_ZERO:
            ns_buf_append_str(&body, "{\"entries\":[{\"namespace\":\"NS\",\"key\":\"lie\","
                                     "\"state\":\"deleted\",\"version\":"
                                     "\"0000000000000000.0000000000000001\"}]}");
            break;
        }
    } else {
        rsp.code = NS_RSP_REQUEST_CODE_NOT_SUPPORTED;
    }
    rsp.body = body.data;
    rsp.body_len = body.len;
    if (ns_remoting_encode(&out, &rsp) == NS_OK)
        (void)!write(c, out.data, out.len);
    ns_buf_free(&body);
    ns_buf_free(&out);
    ns_buf_free(&fleet_req);
}

static void *liar_main(void *arg)
{
    liar_t *l = arg;
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
                    liar_answer(l, c, &m.cmd, real);
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

static void liar_start(liar_t *l, int real_port, lie_t mode)
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
    assert_int_equal(pthread_create(&l->th, NULL, liar_main, l), 0);
}

static void liar_stop(liar_t *l)
{
    atomic_store(&l->stop, true);
    pthread_join(l->th, NULL);
    close(l->fd);
}

static void test_hostile_peers_are_refused(void **state)
{
    fx_t *f = *state;
    static const lie_t modes[] = {LIE_GARBAGE, LIE_FUTURE, LIE_OTHER_KEY, LIE_TOMBSTONE_ZERO,
                                  LIE_SLOW};
    static const char *const names[] = {"garbage", "future", "other key", "tombstone at 0", "slow"};
    /* server 1 alone holds "lie"; server 0 lists only the liar, server 2
     * nobody */
    assert_int_equal(nstest_config_update(f->c[1], "peers="), NS_RSP_SUCCESS);
    assert_int_equal(nstest_config_update(f->c[2], "peers="), NS_RSP_SUCCESS);
    assert_int_equal(nstest_config_update(f->c[0], "peers="), NS_RSP_SUCCESS);
    assert_int_equal(kv_put(f, 1, "lie", "truth"), NS_RSP_SUCCESS);
    char v[64];
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        liar_t l;
        char props[64];
        double refused0 = nstest_metric(f->http[0], "namesrv_kv_sync_refused_total");
        double failed0 = nstest_metric(f->http[0], "namesrv_kv_sync_failures_total");
        liar_start(&l, f->srv[1].port, modes[m]);
        snprintf(props, sizeof props, "peers=127.0.0.1:%d", l.port);
        assert_int_equal(nstest_config_update(f->c[0], props), NS_RSP_SUCCESS);
        int64_t end = nstest_mono_ms() + 5000, worst = 0;
        while (atomic_load(&l.kv_asked) < 2 && nstest_mono_ms() < end) {
            /* lookups go on, and fast, whatever the peer does */
            int64_t t0 = nstest_mono_ms();
            assert_false(kv_get(f, 0, "lie", v, sizeof v));
            worst = nstest_mono_ms() - t0 > worst ? nstest_mono_ms() - t0 : worst;
            nstest_sleep_ms(20);
        }
        assert_int_equal(nstest_config_update(f->c[0], "peers="), NS_RSP_SUCCESS);
        liar_stop(&l);
        printf("kv_sync: liar '%s': asked %d times, slowest lookup meanwhile %lld ms\n", names[m],
               atomic_load(&l.kv_asked), (long long)worst);
        assert_true(atomic_load(&l.kv_asked) >= 2);
        assert_true(worst < 500);
        assert_false(kv_get(f, 0, "lie", v, sizeof v));
        if (modes[m] == LIE_SLOW)
            assert_true(nstest_metric(f->http[0], "namesrv_kv_sync_failures_total") > failed0);
        else
            assert_true(nstest_metric(f->http[0], "namesrv_kv_sync_refused_total") > refused0);
    }
    assert_true(nstest_metric(f->http[0], "namesrv_kv_sync_pulled_total") == 0);
    /* server 2 never listed server 1: it holds nothing of it */
    assert_false(kv_get(f, 2, "lie", v, sizeof v));
    /* and the truth, from a real peer, is taken */
    char props[64];
    snprintf(props, sizeof props, "peers=%s", f->addr[1]);
    assert_int_equal(nstest_config_update(f->c[0], props), NS_RSP_SUCCESS);
    f->up[2] = false; /* not part of this wait */
    assert_true(wait_all(f, "lie", "truth", CONVERGE_MS) >= 0);
    f->up[2] = true;
}

/* ---- the model ---- */

#define KEYS 4
#define STEPS 60

typedef struct {
    bool present;
    char val[32];
} model_t;

static void test_model_random_interleavings(void **state)
{
    fx_t *f = *state;
    const char *env = getenv("NSTEST_KV_SEED");
    const unsigned seed0 =
        env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
    unsigned seed = seed0;
    model_t m[KEYS] = {0};
    int64_t t0 = nstest_mono_ms();
    printf("kv_sync model: seed %u (NSTEST_KV_SEED=%u replays it)\n", seed0, seed0);
    for (int step = 0; step < STEPS; step++) {
        int op = rand_r(&seed) % 10, i = rand_r(&seed) % N, k = rand_r(&seed) % KEYS;
        char key[8];
        snprintf(key, sizeof key, "m%d", k);
        if (op < 7 && !f->up[i])
            op = 7; /* a write needs a server that is up: bring it back */
        if (op < 4) {
            snprintf(m[k].val, sizeof m[k].val, "s%d-%d", step, i);
            m[k].present = true;
            assert_int_equal(kv_put(f, i, key, m[k].val), NS_RSP_SUCCESS);
        } else if (op < 7) {
            m[k].present = false;
            assert_int_equal(kv_del(f, i, key), NS_RSP_SUCCESS);
        } else if (op < 9) {
            /* a restart: down now, or back if it was */
            if (f->up[i]) {
                int ups = 0;
                for (int j = 0; j < N; j++)
                    ups += f->up[j];
                if (ups > 1)
                    stop_one(f, i);
            } else {
                restart_one(f, i);
                apply_peers(f);
            }
        } else {
            /* a partition: i cut off from the others, or healed */
            f->isolated[i] = !f->isolated[i];
            apply_peers(f);
        }
        /* a later step is a later write on every clock: 2 ms apart */
        nstest_sleep_ms(2 + rand_r(&seed) % 60);
    }
    /* heal: everyone up and connected, then all must equal the model */
    for (int i = 0; i < N; i++) {
        f->isolated[i] = false;
        if (!f->up[i])
            restart_one(f, i);
    }
    apply_peers(f);
    for (int k = 0; k < KEYS; k++) {
        char key[8];
        snprintf(key, sizeof key, "m%d", k);
        int64_t ms = wait_all(f, key, m[k].present ? m[k].val : NULL, CONVERGE_MS);
        if (ms < 0) {
            char v[N][64];
            bool has[N];
            for (int i = 0; i < N; i++)
                has[i] = kv_get(f, i, key, v[i], sizeof v[i]);
            fail_msg("seed %u (NSTEST_KV_SEED): %s did not converge to %s: %s / %s / %s", seed0,
                     key, m[k].present ? m[k].val : "(deleted)", has[0] ? v[0] : "(absent)",
                     has[1] ? v[1] : "(absent)", has[2] ? v[2] : "(absent)");
        }
    }
    printf("kv_sync model: %d steps and convergence in %lld ms\n", STEPS,
           (long long)(nstest_mono_ms() - t0));
    assert_true(nstest_mono_ms() - t0 < 60000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_reaches_the_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_puts_end_equal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_while_down_is_not_undone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_off_nothing_moves, setup_off, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_peers_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_model_random_interleavings, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
