/* test_route_crash.c - kill -9 namesrvd while brokers register changing
 * topic sets, then check that what the store kept is consistent and never
 * mixes two registrations.
 *
 * Model: NBROKERS brokers "cb-<b>" (one group each, id 0) register over
 * NTHREADS connections at once (each thread owns NBROKERS/NTHREADS brokers
 * and pipelines one registration per broker per round). Registration k of
 * broker b carries DataVersion {k, 0, TS_BASE + k} and exactly the topics of
 * topic_set(b, k): "T_<b>_<k>_<i>" (which only that version has), some of
 * the SHARED_<j> topics (hosted by several brokers) and "S_<b>" (in every
 * version); all with read/write queue numbers that depend on k. The server
 * runs with deleteTopicWithBrokerRegistration=true, so after a registration
 * commits, broker b's topics are exactly topic_set(b, k).
 *
 * Every iteration restarts the server on the same data directory (long grace
 * window: nobody expires), checks the state, runs the load, kills the server
 * at a random moment and verifies the store offline. The check:
 *   - `namesrvctl verify` (when built) and ns_store_verify() pass;
 *   - for every broker, acked <= stored counter <= sent (QUERY_DATA_VERSION),
 *     where acked is the last registration answered SUCCESS and sent the
 *     last one written to the socket;
 *   - the routes of all topics hold, for broker b, exactly topic_set(b,
 *     stored) with that version's queue numbers: one version, never a mix.
 *
 * NS_CRASH_ITERATIONS (default 20) and NS_CRASH_SEED (default: time) tune it;
 * the seed is printed. A thread switches to a new connection now and then
 * (re-registering there before closing the old one), so the close of an old
 * registration connection must not unregister anything either. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/store.h"

#define NBROKERS 8
#define NTHREADS 4
#define PER_THREAD (NBROKERS / NTHREADS)
#define NSHARED 10
#define MAX_TOPICS (24 + NSHARED + 1)
#define NAME_MAX_LEN 48
#define TS_BASE 1700000000000LL
#define CLUSTER "CrashCluster"
#define SWITCH_CONN_EVERY 40 /* rounds */

static const char *const server_args[] = {"--deleteTopicWithBrokerRegistration=true",
                                          "--brokerGraceWindowMillis=600000", NULL};

typedef char topic_name_t[NAME_MAX_LEN];

/* ---- the model ---- */

static void broker_name(int b, char *out, size_t n)
{
    snprintf(out, n, "cb-%d", b);
}

static void broker_addr(int b, char *out, size_t n)
{
    snprintf(out, n, "127.0.0.1:%d", 30911 + b);
}

static int32_t read_queues(int64_t k)
{
    return (int32_t)(1 + k % 8);
}

static int32_t write_queues(int64_t k)
{
    return (int32_t)(1 + (k + 3) % 8);
}

/* Topics of registration k of broker b; returns how many (<= MAX_TOPICS). */
static size_t topic_set(int b, int64_t k, topic_name_t *out)
{
    size_t n = 0;
    int64_t unique = 5 + (k * 7 + b) % 20;
    for (int64_t i = 0; i < unique; i++)
        snprintf(out[n++], NAME_MAX_LEN, "T_%d_%lld_%lld", b, (long long)k, (long long)i);
    for (int j = 0; j < NSHARED; j++)
        if ((k + b + j) % 3 == 0)
            snprintf(out[n++], NAME_MAX_LEN, "SHARED_%d", j);
    snprintf(out[n++], NAME_MAX_LEN, "S_%d", b);
    return n;
}

/* ---- shared state between the load threads and the checker ---- */

static _Atomic int64_t g_acked[NBROKERS]; /* last counter answered SUCCESS, 0 = none */
static _Atomic int64_t g_sent[NBROKERS];  /* last counter written to a socket */
static atomic_bool g_stop;
static atomic_long g_iter_acks; /* acknowledged in the current iteration */

typedef struct {
    int port;
    int brokers[PER_THREAD];
    long acks; /* registrations acknowledged */
    long bad;  /* answers other than SUCCESS */
    char first_bad[256];
    pthread_t tid;
} worker_t;

/* Appends the REGISTER_BROKER frame for (b, k) to out, with opaque. */
static int encode_registration(ns_buf_t *out, int b, int64_t k, int32_t opaque)
{
    topic_name_t names[MAX_TOPICS];
    ns_topic_config_t tc[MAX_TOPICS];
    size_t n = topic_set(b, k, names);
    memset(tc, 0, sizeof tc);
    for (size_t i = 0; i < n; i++) {
        tc[i].topic_name = names[i];
        tc[i].read_queue_nums = read_queues(k);
        tc[i].write_queue_nums = write_queues(k);
        tc[i].perm = 6;
    }
    ns_regbody_t body = {0};
    body.data_version.counter = k;
    body.data_version.timestamp = TS_BASE + k;
    body.topics = tc;
    body.n_topics = n;
    body.has_filter_server_list = true;
    ns_buf_t enc = NS_BUF_INIT;
    int rc = ns_regbody_encode_json(&enc, &body);
    if (rc == NS_OK) {
        char name[32], addr[32], ha[40], crc[16];
        broker_name(b, name, sizeof name);
        broker_addr(b, addr, sizeof addr);
        snprintf(ha, sizeof ha, "%s-ha", addr);
        snprintf(crc, sizeof crc, "%u", ns_body_crc32(enc.data, enc.len));
        /* clang-format off */
        const char *kv[] = {
            "brokerName", name,
            "brokerAddr", addr,
            "clusterName", CLUSTER,
            "haServerAddr", ha,
            "brokerId", "0",
            "enableActingMaster", "false",
            "compressed", "false",
            "bodyCrc32", crc,
            "heartbeatTimeoutMillis", "600000",
            NULL};
        /* clang-format on */
        ns_cmd_t cmd;
        ns_ext_field_t ext[16];
        nstest_cmd(&cmd, ext, NS_REQ_REGISTER_BROKER, kv);
        cmd.opaque = opaque;
        cmd.body = enc.data;
        cmd.body_len = enc.len;
        rc = ns_remoting_encode(out, &cmd);
    }
    ns_buf_free(&enc);
    return rc;
}

/* One round on c: a registration per broker, pipelined, then the answers.
 * Returns false when the connection is gone (the server was killed). */
static bool worker_round(worker_t *w, ns_client_t *c, ns_cmd_msg_t *rsp)
{
    ns_buf_t frames = NS_BUF_INIT;
    int32_t opaque[PER_THREAD];
    int64_t counter[PER_THREAD];
    bool answered[PER_THREAD] = {false};
    bool ok = true;
    for (int i = 0; i < PER_THREAD; i++) {
        int b = w->brokers[i];
        counter[i] = atomic_load(&g_sent[b]) + 1;
        opaque[i] = ns_client_next_opaque(c);
        if (encode_registration(&frames, b, counter[i], opaque[i]) != NS_OK) {
            ns_buf_free(&frames);
            return false;
        }
    }
    /* sent before the bytes go out: a registration may be stored without
     * an answer, never with a counter beyond g_sent */
    for (int i = 0; i < PER_THREAD; i++)
        atomic_store(&g_sent[w->brokers[i]], counter[i]);
    if (ns_client_send_raw(c, frames.data, frames.len) != NS_OK)
        ok = false;
    for (int got = 0; ok && got < PER_THREAD;) {
        if (ns_client_recv(c, 20000, rsp) != NS_OK) {
            ok = false;
            break;
        }
        for (int i = 0; i < PER_THREAD; i++) {
            if (answered[i] || rsp->cmd.opaque != opaque[i])
                continue;
            answered[i] = true;
            got++;
            if (rsp->cmd.code == NS_RSP_SUCCESS) {
                atomic_store(&g_acked[w->brokers[i]], counter[i]);
                atomic_fetch_add(&g_iter_acks, 1);
                w->acks++;
            } else if (w->bad++ == 0) {
                snprintf(w->first_bad, sizeof w->first_bad, "cb-%d counter %lld: code %d %.*s",
                         w->brokers[i], (long long)counter[i], rsp->cmd.code,
                         (int)rsp->cmd.remark_len, rsp->cmd.remark ? rsp->cmd.remark : "");
            }
        }
    }
    ns_buf_free(&frames);
    return ok;
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    ns_client_t *c = NULL, *old = NULL;
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    if (ns_client_connect("127.0.0.1", w->port, 5000, &c) != NS_OK)
        goto out;
    for (long round = 1; !atomic_load(&g_stop); round++) {
        if (!worker_round(w, c, &rsp))
            break;
        /* the brokers now speak over c: closing old unregisters nothing */
        if (old) {
            ns_client_close(old);
            old = NULL;
        }
        if (round % SWITCH_CONN_EVERY == 0) {
            old = c;
            c = NULL;
            if (ns_client_connect("127.0.0.1", w->port, 5000, &c) != NS_OK)
                break;
        }
    }
out:
    ns_client_close(old);
    ns_client_close(c);
    ns_cmd_msg_free(&rsp);
    return NULL;
}

/* ---- checks ---- */

/* namesrvctl verify (when it is built) and ns_store_verify() in-process. */
static void verify_store(const char *data_dir)
{
    if (access(NS_NAMESRVCTL_PATH, X_OK) == 0) {
        const char *args[] = {"verify", "--data-dir", data_dir, NULL};
        char *out = NULL;
        int rc = nstest_run(NS_NAMESRVCTL_PATH, args, &out, 60000);
        if (rc != 0)
            fail_msg("namesrvctl verify --data-dir %s exited %d:\n%s", data_dir, rc, out);
        free(out);
    }
    ns_store_opts_t o = {0};
    o.dir = data_dir;
    o.read_only = true;
    o.lock = false;
    ns_store_t *s = NULL;
    ns_txn_t *t = NULL;
    ns_buf_t report = NS_BUF_INIT;
    char err[512];
    int rc = ns_store_open(&o, &s, err, sizeof err);
    if (rc != NS_OK)
        fail_msg("cannot open %s read-only: %s (%s)", data_dir, ns_strerror(rc), err);
    assert_int_equal(ns_txn_begin(s, false, &t), NS_OK);
    int n = ns_store_verify(t, &report);
    ns_txn_abort(t);
    ns_store_close(s);
    if (n != 0) {
        char *text = ns_buf_strdup(&report);
        fail_msg("ns_store_verify on %s: %d\n%s", data_dir, n, text ? text : "");
    }
    ns_buf_free(&report);
}

typedef struct {
    char topic[NAME_MAX_LEN];
    int32_t rq, wq;
} seen_t;

typedef struct {
    seen_t *v;
    size_t n, cap;
} seen_list_t;

static void seen_add(seen_list_t *l, const char *topic, int32_t rq, int32_t wq)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        assert_non_null(l->v);
    }
    snprintf(l->v[l->n].topic, NAME_MAX_LEN, "%s", topic);
    l->v[l->n].rq = rq;
    l->v[l->n].wq = wq;
    l->n++;
}

static int seen_cmp(const void *a, const void *b)
{
    return strcmp(((const seen_t *)a)->topic, ((const seen_t *)b)->topic);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* Sends a request and returns the response (caller frees rsp). */
static void call(ns_client_t *c, ns_cmd_t *cmd, ns_cmd_msg_t *rsp)
{
    ns_cmd_msg_init(rsp);
    assert_int_equal(ns_client_call(c, cmd, 10000, rsp), NS_OK);
}

static int64_t stored_counter(ns_client_t *c, int b)
{
    char name[32], addr[32];
    broker_name(b, name, sizeof name);
    broker_addr(b, addr, sizeof addr);
    /* clang-format off */
    const char *kv[] = {
        "brokerName", name,
        "brokerAddr", addr,
        "clusterName", CLUSTER,
        "brokerId", "0",
        NULL};
    /* clang-format on */
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    nstest_cmd(&cmd, ext, NS_REQ_QUERY_DATA_VERSION, kv);
    call(c, &cmd, &rsp);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    int64_t k = 0;
    if (rsp.cmd.body_len > 0) {
        ns_dataversion_t dv;
        assert_int_equal(ns_json_dataversion_decode(rsp.cmd.body, rsp.cmd.body_len, &dv), NS_OK);
        if (dv.timestamp != TS_BASE + dv.counter || dv.state_version != 0)
            fail_msg("cb-%d: stored DataVersion {%lld,%lld,%lld} was never sent", b,
                     (long long)dv.counter, (long long)dv.state_version, (long long)dv.timestamp);
        k = dv.counter;
        assert_true(k > 0);
    }
    ns_cmd_msg_free(&rsp);
    return k;
}

/* Parses a JSON body (fastjson legacy keys allowed). */
static cJSON *parse_body(const ns_cmd_msg_t *rsp)
{
    ns_buf_t norm = NS_BUF_INIT;
    assert_int_equal(ns_fastjson_normalize(rsp->cmd.body, rsp->cmd.body_len, &norm), NS_OK);
    cJSON *j = cJSON_Parse((const char *)norm.data);
    ns_buf_free(&norm);
    assert_non_null(j);
    return j;
}

/* Reads every topic's route and files each queueData under its broker. */
static void collect_routes(ns_client_t *c, seen_list_t *per_broker)
{
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    ns_cmd_msg_t rsp;
    nstest_cmd(&cmd, ext, NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL);
    call(c, &cmd, &rsp);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    cJSON *list = parse_body(&rsp);
    ns_cmd_msg_free(&rsp);
    const cJSON *topic;
    cJSON_ArrayForEach(topic, cJSON_GetObjectItemCaseSensitive(list, "topicList"))
    {
        assert_true(cJSON_IsString(topic));
        const char *kv[] = {"topic", topic->valuestring, NULL};
        nstest_cmd(&cmd, ext, NS_REQ_GET_ROUTEINFO_BY_TOPIC, kv);
        call(c, &cmd, &rsp);
        if (rsp.cmd.code != NS_RSP_SUCCESS)
            fail_msg("topic %s is listed but its route answers %d", topic->valuestring,
                     rsp.cmd.code);
        cJSON *r = parse_body(&rsp);
        ns_cmd_msg_free(&rsp);
        const cJSON *q, *bd;
        const cJSON *qds = cJSON_GetObjectItemCaseSensitive(r, "queueDatas");
        const cJSON *bds = cJSON_GetObjectItemCaseSensitive(r, "brokerDatas");
        assert_true(cJSON_GetArraySize(qds) > 0);
        cJSON_ArrayForEach(q, qds)
        {
            const cJSON *bn = cJSON_GetObjectItemCaseSensitive(q, "brokerName");
            const cJSON *rq = cJSON_GetObjectItemCaseSensitive(q, "readQueueNums");
            const cJSON *wq = cJSON_GetObjectItemCaseSensitive(q, "writeQueueNums");
            int b = -1;
            assert_true(cJSON_IsString(bn) && cJSON_IsNumber(rq) && cJSON_IsNumber(wq));
            if (sscanf(bn->valuestring, "cb-%d", &b) != 1 || b < 0 || b >= NBROKERS)
                fail_msg("topic %s: unknown broker %s", topic->valuestring, bn->valuestring);
            bool has_group = false;
            cJSON_ArrayForEach(bd, bds)
            {
                const cJSON *n = cJSON_GetObjectItemCaseSensitive(bd, "brokerName");
                if (cJSON_IsString(n) && strcmp(n->valuestring, bn->valuestring) == 0)
                    has_group = true;
            }
            if (!has_group)
                fail_msg("topic %s: queue data of %s without its BrokerData", topic->valuestring,
                         bn->valuestring);
            seen_add(&per_broker[b], topic->valuestring, (int32_t)rq->valueint,
                     (int32_t)wq->valueint);
        }
        cJSON_Delete(r);
    }
    cJSON_Delete(list);
}

/* The state the restarted server reports against what the load recorded. */
static void check_state(ns_client_t *c)
{
    seen_list_t seen[NBROKERS];
    memset(seen, 0, sizeof seen);
    int64_t stored[NBROKERS];
    for (int b = 0; b < NBROKERS; b++) {
        stored[b] = stored_counter(c, b);
        int64_t acked = atomic_load(&g_acked[b]), sent = atomic_load(&g_sent[b]);
        if (stored[b] < acked || stored[b] > sent)
            fail_msg("cb-%d: stored counter %lld outside [acked %lld, sent %lld]", b,
                     (long long)stored[b], (long long)acked, (long long)sent);
    }
    collect_routes(c, seen);
    for (int b = 0; b < NBROKERS; b++) {
        topic_name_t want[MAX_TOPICS];
        size_t n_want = stored[b] > 0 ? topic_set(b, stored[b], want) : 0;
        qsort(want, n_want, sizeof want[0], name_cmp);
        if (seen[b].n > 0)
            qsort(seen[b].v, seen[b].n, sizeof seen[b].v[0], seen_cmp);
        bool same = n_want == seen[b].n;
        for (size_t i = 0; same && i < n_want; i++)
            same = strcmp(want[i], seen[b].v[i].topic) == 0 &&
                   seen[b].v[i].rq == read_queues(stored[b]) &&
                   seen[b].v[i].wq == write_queues(stored[b]);
        if (!same) {
            fprintf(stderr, "cb-%d stored counter %lld: want %zu topics, routes show %zu:\n", b,
                    (long long)stored[b], n_want, seen[b].n);
            for (size_t i = 0; i < seen[b].n; i++)
                fprintf(stderr, "  %s r%d w%d\n", seen[b].v[i].topic, seen[b].v[i].rq,
                        seen[b].v[i].wq);
            fail_msg("cb-%d: routes are not exactly the topic set of version %lld", b,
                     (long long)stored[b]);
        }
        free(seen[b].v);
    }
}

/* ---- the loop ---- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 0) : dflt;
}

typedef nstest_fx_t fx_t;

static int setup(void **state)
{
    return nstest_fx_setup_dir(state, "routecrash");
}

/* Also runs after a failed check: the server must not outlive the test. */
static int teardown(void **state)
{
    fx_t *fx = *state;
    atomic_store(&g_stop, true);
    nstest_server_stop(&fx->srv, SIGKILL);
    nstest_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

static void test_kill_during_registrations(void **state)
{
    fx_t *fx = *state;
    nstest_server_t *srv = &fx->srv;
    long iterations = env_long("NS_CRASH_ITERATIONS", 20);
    uint64_t seed = (uint64_t)env_long("NS_CRASH_SEED", (long)time(NULL) ^ ((long)getpid() << 16));
    uint64_t rng = seed ? seed : 1;
    print_message("route crash: seed %llu (NS_CRASH_SEED), %ld iterations (NS_CRASH_ITERATIONS)\n",
                  (unsigned long long)seed, iterations);
    int64_t t_start = nstest_mono_ms();
    long total_acks = 0;
    for (int b = 0; b < NBROKERS; b++) {
        atomic_store(&g_acked[b], 0);
        atomic_store(&g_sent[b], 0);
    }
    for (long it = 0; it <= iterations; it++) {
        assert_int_equal(nstest_server_start(srv, fx->dir, server_args), 0);
        ns_client_t *c = nstest_connect(srv);
        check_state(c);
        ns_client_close(c);
        if (it == iterations)
            break;

        worker_t w[NTHREADS];
        memset(w, 0, sizeof w);
        atomic_store(&g_stop, false);
        atomic_store(&g_iter_acks, 0);
        for (int i = 0; i < NTHREADS; i++) {
            w[i].port = srv->port;
            for (int j = 0; j < PER_THREAD; j++)
                w[i].brokers[j] = i * PER_THREAD + j;
            assert_int_equal(pthread_create(&w[i].tid, NULL, worker_main, &w[i]), 0);
        }
        /* kill while writes are going on: at a random moment after the
         * first answer (slow sanitizer builds take a while to get there) */
        int64_t t_load = nstest_mono_ms();
        while (atomic_load(&g_iter_acks) == 0 && nstest_mono_ms() - t_load < 10000)
            nstest_sleep_ms(1);
        int kill_after = (int)(rng_next(&rng) % 600);
        nstest_sleep_ms(kill_after);
        nstest_server_stop(srv, SIGKILL);
        atomic_store(&g_stop, true);
        long acks = 0, bad = 0;
        for (int i = 0; i < NTHREADS; i++) {
            pthread_join(w[i].tid, NULL);
            acks += w[i].acks;
            if (w[i].bad) {
                bad += w[i].bad;
                fprintf(stderr, "worker %d: %ld failed registrations, first: %s\n", i, w[i].bad,
                        w[i].first_bad);
            }
        }
        total_acks += acks;
        print_message("iteration %ld: killed %d ms after the first answer (%lld ms after the "
                      "start), %ld registrations acknowledged\n",
                      it, kill_after, (long long)(nstest_mono_ms() - t_load), acks);
        assert_int_equal(bad, 0);
        verify_store(srv->data);
    }
    /* a clean stop after all that leaves a consistent store too */
    int status = nstest_server_stop(srv, SIGTERM);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    verify_store(srv->data);
    print_message("route crash: %ld registrations acknowledged in %ld iterations, %lld ms\n",
                  total_acks, iterations, (long long)(nstest_mono_ms() - t_start));
    assert_true(total_acks > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill_during_registrations, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
