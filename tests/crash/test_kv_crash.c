/* test_kv_crash.c - kill -9 loop over KV writes: no acknowledged write is
 * ever lost, nothing is half-applied.
 *
 * Each iteration streams PUT_KV_CONFIG / DELETE_KV_CONFIG over 4 pipelined
 * connections (one poll loop; every key is owned by one connection, so its
 * ops reach the writer in send order), kills namesrvd with SIGKILL at a
 * random moment, restarts it on the same data directory (state accumulates
 * across iterations) and checks every key:
 *
 *   the stored state must be the effect of the last acknowledged op on the
 *   key or of an op sent after it - never of an older op, never a value
 *   that was not sent (values are derived from (key, seq) and compared
 *   byte for byte, so a torn value fails too).
 *
 * The state read after the restart becomes the baseline of the next round.
 *
 * Environment: NS_CRASH_ITERATIONS (default 20), NS_CRASH_SEED (default
 * time-based; printed, so a failure can be replayed with the same kill
 * times). tools/crashloop.sh runs this binary in a loop. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

#define NCONN 4
#define KEYS_PER_CONN 16
#define NKEYS (NCONN * KEYS_PER_CONN)
#define WINDOW 8 /* requests in flight per connection */
#define NSPACE "CRASH"

enum { OP_PUT = 1, OP_DEL = 2 };

typedef struct {
    uint8_t type;
    uint32_t seq; /* OP_PUT: the value is nstest_kv_value(key, seq) */
} op_t;

typedef struct {
    char name[16];
    /* state known to be durable (read back after the last restart) */
    bool base_present;
    uint32_t base_seq;
    /* ops sent since, in send order; last_acked indexes ops (-1: none) */
    op_t *ops;
    size_t n_ops, cap_ops;
    long last_acked;
} crash_key_t;

typedef struct {
    int32_t opaque;
    int key;
    size_t op; /* index into keys[key].ops */
} inflight_t;

typedef struct {
    ns_client_t *c;
    bool dead;
    inflight_t fl[WINDOW];
    int n_fl;
} conn_t;

typedef struct {
    uint64_t rng;      /* op stream */
    uint64_t kill_rng; /* kill times: a seed always replays the same ones */
    uint32_t next_seq;
    crash_key_t keys[NKEYS];
    conn_t conns[NCONN];
    /* totals */
    uint64_t sent, acked, acked_put, acked_del, failed_replies, violations;
    uint64_t present_after, absent_after, unacked_applied;
    double first_ack_ms; /* this iteration: first acknowledgement (monotonic), 0 = none */
} crash_t;

/* xorshift64* */
static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

static uint64_t rnd(crash_t *x)
{
    return xorshift(&x->rng);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void key_push(crash_key_t *k, uint8_t type, uint32_t seq)
{
    if (k->n_ops == k->cap_ops) {
        size_t cap = k->cap_ops ? k->cap_ops * 2 : 64;
        op_t *p = realloc(k->ops, cap * sizeof *p);
        assert_non_null(p);
        k->ops = p;
        k->cap_ops = cap;
    }
    k->ops[k->n_ops].type = type;
    k->ops[k->n_ops].seq = seq;
    k->n_ops++;
}

/* Sends one random op on connection ci. */
static void send_op(crash_t *x, int ci)
{
    conn_t *cn = &x->conns[ci];
    int ki = ci + NCONN * (int)(rnd(x) % KEYS_PER_CONN);
    crash_key_t *k = &x->keys[ki];
    uint8_t type = rnd(x) % 5 == 0 ? OP_DEL : OP_PUT;
    uint32_t seq = ++x->next_seq;
    char *val = type == OP_PUT ? nstest_kv_value(k->name, seq) : NULL;
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    const char *kv[] = {"namespace", NSPACE, "key", k->name, "value", val, NULL};
    if (type == OP_DEL)
        kv[4] = NULL;
    nstest_cmd(&cmd, ext, type == OP_PUT ? NS_REQ_PUT_KV_CONFIG : NS_REQ_DELETE_KV_CONFIG, kv);
    cmd.opaque = ns_client_next_opaque(cn->c);
    /* recorded before sending: a request that may have reached the server
     * counts as sent even if the send fails */
    key_push(k, type, seq);
    cn->fl[cn->n_fl].opaque = cmd.opaque;
    cn->fl[cn->n_fl].key = ki;
    cn->fl[cn->n_fl].op = k->n_ops - 1;
    cn->n_fl++;
    x->sent++;
    if (ns_client_send(cn->c, &cmd) != NS_OK)
        cn->dead = true;
    free(val);
}

/* Handles one response on connection ci. */
static void on_reply(crash_t *x, int ci, const ns_cmd_t *rsp)
{
    conn_t *cn = &x->conns[ci];
    int i = 0;
    while (i < cn->n_fl && cn->fl[i].opaque != rsp->opaque)
        i++;
    if (i == cn->n_fl)
        fail_msg("conn %d: reply with unknown opaque %d", ci, rsp->opaque);
    inflight_t f = cn->fl[i];
    memmove(&cn->fl[i], &cn->fl[i + 1], (size_t)(cn->n_fl - i - 1) * sizeof f);
    cn->n_fl--;
    if (rsp->code != NS_RSP_SUCCESS) {
        x->failed_replies++;
        return;
    }
    crash_key_t *k = &x->keys[f.key];
    if (x->first_ack_ms == 0)
        x->first_ack_ms = now_ms();
    x->acked++;
    if (k->ops[f.op].type == OP_PUT)
        x->acked_put++;
    else
        x->acked_del++;
    if ((long)f.op > k->last_acked)
        k->last_acked = (long)f.op;
}

/* Reads every complete response available on ci without blocking (or
 * waiting up to wait_ms for the first one). */
static void drain(crash_t *x, int ci, int wait_ms)
{
    conn_t *cn = &x->conns[ci];
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    for (;;) {
        int rc = ns_client_recv(cn->c, wait_ms, &rsp);
        if (rc == NS_ETIMEDOUT)
            break;
        if (rc != NS_OK) {
            cn->dead = true;
            break;
        }
        on_reply(x, ci, &rsp.cmd);
        wait_ms = 0;
    }
    ns_cmd_msg_free(&rsp);
}

/* Streams ops until kill_at_ms (monotonic), then kills the server and
 * collects the replies it sent before dying. Returns the server's wait
 * status. */
static int stream_and_kill(crash_t *x, nstest_server_t *srv, double kill_at_ms)
{
    for (int i = 0; i < NCONN; i++) {
        x->conns[i].c = nstest_connect(srv);
        x->conns[i].dead = false;
        x->conns[i].n_fl = 0;
    }
    while (now_ms() < kill_at_ms) {
        struct pollfd p[NCONN];
        for (int i = 0; i < NCONN; i++) {
            conn_t *cn = &x->conns[i];
            while (!cn->dead && cn->n_fl < WINDOW)
                send_op(x, i);
            p[i].fd = ns_client_fd(cn->c);
            p[i].events = cn->dead ? 0 : POLLIN;
            p[i].revents = 0;
        }
        int left = (int)(kill_at_ms - now_ms());
        if (left <= 0)
            break;
        if (poll(p, NCONN, left < 20 ? left : 20) < 0 && errno != EINTR)
            fail_msg("poll: %s", strerror(errno));
        for (int i = 0; i < NCONN; i++)
            if (p[i].revents && !x->conns[i].dead)
                drain(x, i, 0);
    }
    int status = nstest_server_stop(srv, SIGKILL);
    /* replies already on their way were sent after a commit: they count */
    for (int i = 0; i < NCONN; i++) {
        if (!x->conns[i].dead)
            drain(x, i, 200);
        ns_client_close(x->conns[i].c);
        x->conns[i].c = NULL;
    }
    return status;
}

static bool value_is(const char *got, const char *key, uint32_t seq)
{
    char *want = nstest_kv_value(key, seq);
    bool eq = strcmp(got, want) == 0;
    free(want);
    return eq;
}

/* Checks every key against its history; the observed state becomes the
 * new baseline. */
static void verify(crash_t *x, nstest_server_t *srv, int iter)
{
    ns_client_t *c = nstest_connect(srv);
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    for (int ki = 0; ki < NKEYS; ki++) {
        crash_key_t *k = &x->keys[ki];
        ns_cmd_t cmd;
        ns_ext_field_t ext[16];
        const char *kv[] = {"namespace", NSPACE, "key", k->name, NULL};
        nstest_cmd(&cmd, ext, NS_REQ_GET_KV_CONFIG, kv);
        assert_int_equal(ns_client_call(c, &cmd, 30000, &rsp), NS_OK);
        const char *got = ns_cmd_ext_get(&rsp.cmd, "value");
        bool present = rsp.cmd.code == NS_RSP_SUCCESS && got != NULL;
        if (!present && rsp.cmd.code != NS_RSP_QUERY_NOT_FOUND)
            fail_msg("iteration %d: GET %s answered %d", iter, k->name, rsp.cmd.code);
        /* which states are allowed: ops from last_acked on (and the
         * baseline when nothing was acknowledged) */
        bool ok = false;
        long match = -2;
        uint32_t got_seq = 0;
        if (k->last_acked < 0 && present == k->base_present &&
            (!present || value_is(got, k->name, k->base_seq))) {
            ok = true;
            match = -1;
            got_seq = k->base_seq;
        }
        for (long j = k->last_acked < 0 ? 0 : k->last_acked; !ok && j < (long)k->n_ops; j++) {
            const op_t *op = &k->ops[j];
            if (op->type == OP_DEL ? !present : present && value_is(got, k->name, op->seq)) {
                ok = true;
                match = j;
                got_seq = op->seq;
            }
        }
        if (!ok) {
            x->violations++;
            char shown[80] = "(absent)";
            if (present)
                snprintf(shown, sizeof shown, "%.60s", got);
            const op_t *la = k->last_acked >= 0 ? &k->ops[k->last_acked] : NULL;
            print_error("LOST/TORN WRITE: iteration %d key %s: found %s; last acknowledged op: "
                        "%s seq %u (%ld of %zu ops sent this round)\n",
                        iter, k->name, shown, la ? (la->type == OP_PUT ? "PUT" : "DELETE") : "none",
                        la ? la->seq : 0, k->last_acked, k->n_ops);
        } else if (match > k->last_acked) {
            x->unacked_applied++; /* committed, but the reply never arrived */
        }
        x->present_after += present;
        x->absent_after += !present;
        k->base_present = present;
        k->base_seq = present ? got_seq : 0;
        k->n_ops = 0;
        k->last_acked = -1;
    }
    /* and the namespace holds exactly the keys found present, nothing else */
    uint64_t present = 0;
    for (int ki = 0; ki < NKEYS; ki++)
        present += x->keys[ki].base_present;
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    const char *kv[] = {"namespace", NSPACE, NULL};
    nstest_cmd(&cmd, ext, NS_REQ_GET_KVLIST_BY_NAMESPACE, kv);
    assert_int_equal(ns_client_call(c, &cmd, 30000, &rsp), NS_OK);
    int listed = 0;
    if (rsp.cmd.code == NS_RSP_SUCCESS) {
        cJSON *doc = cJSON_ParseWithLength((const char *)rsp.cmd.body, rsp.cmd.body_len);
        cJSON *table = cJSON_GetObjectItemCaseSensitive(doc, "table");
        if (table == NULL)
            fail_msg("iteration %d: GET_KVLIST_BY_NAMESPACE body is not a KVTable", iter);
        for (cJSON *e = table->child; e; e = e->next) {
            listed++;
            bool known = false;
            for (int ki = 0; ki < NKEYS && !known; ki++)
                known = x->keys[ki].base_present && strcmp(e->string, x->keys[ki].name) == 0;
            if (!known) {
                x->violations++;
                print_error("iteration %d: unexpected key '%s' in the namespace\n", iter,
                            e->string);
            }
        }
        cJSON_Delete(doc);
    } else if (rsp.cmd.code != NS_RSP_QUERY_NOT_FOUND) {
        fail_msg("iteration %d: GET_KVLIST_BY_NAMESPACE answered %d", iter, rsp.cmd.code);
    }
    if ((uint64_t)listed != present) {
        x->violations++;
        print_error("iteration %d: the namespace lists %d keys, %llu found present\n", iter, listed,
                    (unsigned long long)present);
    }
    ns_cmd_msg_free(&rsp);
    ns_client_close(c);
}

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    if (v == NULL || *v == 0)
        return def;
    char *end = NULL;
    long n = strtol(v, &end, 0);
    return end && *end == 0 ? n : def;
}

typedef struct {
    nstest_fx_t base;
    crash_t *x;
    bool passed;
} fx_t;

static int setup(void **state)
{
    if (nstest_fx_setup_sized(state, sizeof(fx_t), "kvcrash") != 0)
        return -1;
    fx_t *fx = *state;
    if ((fx->x = calloc(1, sizeof *fx->x)) == NULL) {
        nstest_fx_teardown(state);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    if (fx->base.srv.pid > 0)
        nstest_server_stop(&fx->base.srv, SIGKILL);
    for (int i = 0; i < NKEYS; i++)
        free(fx->x->keys[i].ops);
    for (int i = 0; i < NCONN; i++)
        ns_client_close(fx->x->conns[i].c);
    if (fx->passed)
        nstest_rmtree(fx->base.dir);
    else
        print_error("kept %s (data directory and namesrvd.log) for inspection\n", fx->base.dir);
    free(fx->base.dir);
    free(fx->x);
    free(fx);
    return 0;
}

static void test_kv_crash(void **state)
{
    fx_t *fx = *state;
    crash_t *x = fx->x;
    long iterations = env_long("NS_CRASH_ITERATIONS", 20);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long seed = (unsigned long)env_long(
        "NS_CRASH_SEED", (long)(((unsigned long)ts.tv_sec * 1000003ul ^ (unsigned long)ts.tv_nsec ^
                                 (unsigned long)getpid()) &
                                0x7fffffff));
    printf("# kv crash test: seed %lu, %ld iterations (NS_CRASH_SEED=%lu to replay)\n", seed,
           iterations, seed);
    fflush(stdout);

    x->rng = (uint64_t)seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
    x->kill_rng = (uint64_t)seed * UINT64_C(0xD1B54A32D192ED03) + 7;
    for (int i = 0; i < NKEYS; i++) {
        snprintf(x->keys[i].name, sizeof x->keys[i].name, "key%02d", i);
        x->keys[i].last_acked = -1;
    }
    double t0 = now_ms();
    assert_int_equal(nstest_server_start(&fx->base.srv, fx->base.dir, NULL), 0);
    for (long it = 0; it < iterations; it++) {
        uint64_t acked_before = x->acked;
        int delay = 50 + (int)(xorshift(&x->kill_rng) % 351); /* 50..400 ms */
        double start = now_ms();
        x->first_ack_ms = 0;
        int status = stream_and_kill(x, &fx->base.srv, start + delay);
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
            fail_msg("iteration %ld: namesrvd died before the kill (status 0x%x)", it, status);
        if (nstest_server_start(&fx->base.srv, fx->base.dir, NULL) != 0)
            fail_msg("iteration %ld: namesrvd did not come back after kill -9", it);
        verify(x, &fx->base.srv, (int)it);
        printf("# iteration %ld: killed after %d ms, %llu acked (first after %.0f ms)\n", it, delay,
               (unsigned long long)(x->acked - acked_before),
               x->first_ack_ms > 0 ? x->first_ack_ms - start : -1.0);
    }
    int status = nstest_server_stop(&fx->base.srv, SIGTERM);
    double elapsed = now_ms() - t0;
    printf("# totals: %ld iterations, %llu ops sent, %llu acknowledged (%llu puts, %llu deletes), "
           "%llu error replies, %llu unacknowledged ops found applied, %llu violations, "
           "%.1f s (seed %lu)\n",
           iterations, (unsigned long long)x->sent, (unsigned long long)x->acked,
           (unsigned long long)x->acked_put, (unsigned long long)x->acked_del,
           (unsigned long long)x->failed_replies, (unsigned long long)x->unacked_applied,
           (unsigned long long)x->violations, elapsed / 1e3, seed);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(x->violations, 0);
    assert_int_equal(x->failed_replies, 0);
    assert_true(x->acked > 0);
    fx->passed = true;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kv_crash, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
