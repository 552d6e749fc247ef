/* test_liveness_model.c - model test of liveness, eviction, fencing and
 * restart-with-grace, on a virtual clock.
 *
 * The real liveness table, registry and LMDB store are driven through the
 * same protocol src/daemon/cmd/cmd_broker.c and core/broker_life.c follow: writes
 * go through a FIFO queue
 * standing in for the writer thread (applied in random interleavings with
 * everything else), registrations that change nothing take the fast path
 * only when the queue is empty, a registration refreshes its liveness entry
 * on arrival, and unregisters name the broker id they were decided for. Random seeds plus the fixed
 * regression sequences of Apache RocketMQ #11043 and #5374. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/err.h"
#include "ns/log.h"
#include "ns/store.h"
#include "src/daemon/core/liveness.h"

#define NB 4
#define TIMEOUT_MS 1000
#define SCAN_MS 100
#define HEARTBEAT_MS 300
#define GRACE_MS 3000
#define SEEDS 500
#define STEPS 400

typedef enum { OP_REG, OP_UNREG } op_kind_t;

typedef struct op {
    op_kind_t kind;
    int b;
    int64_t id;
    int conn;
    uint64_t gen;
    struct op *next;
} op_t;

typedef struct {
    char name[32], addr[32], cluster[16];
    int64_t id;
    bool alive; /* heartbeats every HEARTBEAT_MS */
    int conn;   /* connection of its last registration */
    uint64_t silent_since;
    uint64_t last_beat;
    uint64_t last_applied; /* when its last registration was applied */
    bool back;             /* heartbeated or registered since the last restart */
    bool expected;         /* expected in the store once the queue drains */
} broker_t;

typedef struct {
    char *dir;
    ns_store_t *store;
    ns_registry_t *reg;
    ns_liveness_t *lv;
    op_t *head, *tail;
    size_t pending;
    uint64_t now;
    uint64_t restart_at; /* grace window start of the last restart */
    broker_t b[NB];
    int next_conn;
    ns_regbody_t body;
    ns_topic_config_t topics[2];
    unsigned seed;
} model_t;

static void open_store(model_t *m)
{
    ns_store_opts_t o = {m->dir, 8u << 20, 64u << 20, NS_SYNC_NOSYNC, false, true, 0, 0};
    char err[256];
    assert_int_equal(ns_store_open(&o, &m->store, err, sizeof err), NS_OK);
}

static void args_for(model_t *m, int i, ns_register_args_t *a)
{
    broker_t *b = &m->b[i];
    memset(a, 0, sizeof *a);
    a->cluster = b->cluster;
    a->addr = b->addr;
    a->broker_name = b->name;
    a->broker_id = b->id;
    a->ha_addr = "";
    a->heartbeat_timeout_ms = TIMEOUT_MS;
    a->audit_retention = 100;
    a->body = &m->body;
}

static void submit(model_t *m, op_kind_t kind, int b, int conn, uint64_t gen)
{
    op_t *op = calloc(1, sizeof *op);
    assert_non_null(op);
    op->kind = kind;
    op->b = b;
    op->id = m->b[b].id;
    op->conn = conn;
    op->gen = gen;
    if (m->tail)
        m->tail->next = op;
    else
        m->head = op;
    m->tail = op;
    m->pending++;
    m->b[b].expected = kind == OP_REG;
}

/* The writer applies the oldest op, commits, then the loop runs its "done". */
static void writer_step(model_t *m)
{
    op_t *op = m->head;
    if (op == NULL)
        return;
    m->head = op->next;
    if (m->head == NULL)
        m->tail = NULL;
    m->pending--;
    broker_t *b = &m->b[op->b];
    ns_txn_t *t = NULL;
    bool removed = false;
    assert_int_equal(ns_txn_begin(m->store, true, &t), NS_OK);
    ns_registry_batch_reset(m->reg);
    if (op->kind == OP_REG) {
        ns_register_args_t a;
        ns_register_result_t res;
        args_for(m, op->b, &a);
        assert_int_equal(ns_registry_register(m->reg, t, &a, &res), NS_OK);
        assert_false(res.failed);
        ns_register_result_free(&res);
    } else {
        assert_int_equal(
            ns_registry_unregister(m->reg, t, b->cluster, b->addr, b->name, op->id, &removed, NULL),
            NS_OK);
    }
    assert_int_equal(ns_registry_before_commit(m->reg, t), NS_OK);
    assert_int_equal(ns_txn_commit(t), NS_OK);
    if (op->kind == OP_REG) {
        ns_liveness_register(m->lv, b->cluster, b->addr, b->name, b->id, TIMEOUT_MS,
                             (void *)(intptr_t)op->conn, m->now);
        b->last_applied = m->now; /* a late registration counts from when it applied */
        b->back = true;
    } else if (removed) {
        ns_liveness_remove(m->lv, b->cluster, b->addr);
    }
    free(op);
}

static void drain(model_t *m)
{
    while (m->head)
        writer_step(m);
}

static bool in_store(model_t *m, int i)
{
    ns_txn_t *t = NULL;
    ns_live_rec_t r;
    assert_int_equal(ns_txn_begin(m->store, false, &t), NS_OK);
    int rc = ns_live_get(t, m->b[i].cluster, m->b[i].addr, &r);
    size_t nroutes = 0;
    assert_int_equal(ns_route_count(t, &nroutes), NS_OK);
    bool routed = nroutes > 0;
    ns_txn_abort(t);
    if (rc == NS_OK)
        ns_live_rec_free(&r);
    (void)routed;
    return rc == NS_OK;
}

/* REGISTER_BROKER as cmd_broker.c does it. */
static void do_register(model_t *m, int i)
{
    broker_t *b = &m->b[i];
    int conn = ++m->next_conn;
    ns_live_entry_t *e = ns_liveness_get(m->lv, b->cluster, b->addr);
    if (e && !e->evicting && m->pending == 0) {
        ns_txn_t *t = NULL;
        ns_register_args_t a;
        ns_register_result_t res;
        args_for(m, i, &a);
        assert_int_equal(ns_txn_begin(m->store, false, &t), NS_OK);
        bool same = ns_registry_unchanged(t, &a, &res);
        ns_txn_abort(t);
        if (same) {
            ns_register_result_free(&res);
            ns_liveness_register(m->lv, b->cluster, b->addr, b->name, b->id, TIMEOUT_MS,
                                 (void *)(intptr_t)conn, m->now);
            b->conn = conn;
            b->expected = true;
            b->back = true;
            return;
        }
    }
    if (e) { /* fencing rule 2 of cmd_broker.c */
        e->conn = (void *)(intptr_t)conn;
        ns_liveness_heartbeat(m->lv, b->cluster, b->addr, m->now);
        b->back = true;
    }
    b->conn = conn;
    submit(m, OP_REG, i, conn, 0);
}

static int index_of(model_t *m, const ns_live_entry_t *e)
{
    for (int i = 0; i < NB; i++)
        if (strcmp(m->b[i].addr, e->addr) == 0)
            return i;
    fail_msg("unknown entry %s", e->addr);
    return -1;
}

static void unregister_entry(model_t *m, ns_live_entry_t *e)
{
    e->evicting = true;
    submit(m, OP_UNREG, index_of(m, e), 0, e->generation);
}

static void do_scan(model_t *m)
{
    ns_live_entry_t *found[NB];
    size_t n = ns_liveness_expired(m->lv, m->now, found, NB);
    for (size_t k = 0; k < n; k++) {
        int i = index_of(m, found[k]);
        broker_t *b = &m->b[i];
        /* property: a broker heartbeating within its timeout is never evicted */
        if (b->alive && m->now - b->last_beat <= TIMEOUT_MS)
            fail_msg("seed %u: live broker %s evicted at %llu (last beat %llu)", m->seed, b->name,
                     (unsigned long long)m->now, (unsigned long long)b->last_beat);
        /* property: restored brokers are not evicted before the window ends */
        if (m->now < m->restart_at + GRACE_MS && found[k]->grace_until_ms > 0)
            fail_msg("seed %u: restored broker %s evicted inside the grace window", m->seed,
                     b->name);
        unregister_entry(m, found[k]);
    }
}

static void do_close(model_t *m, int i)
{
    ns_live_entry_t *found[NB];
    size_t n = ns_liveness_by_conn(m->lv, (void *)(intptr_t)m->b[i].conn, found, NB);
    for (size_t k = 0; k < n; k++)
        unregister_entry(m, found[k]);
    ns_liveness_forget_conn(m->lv, (void *)(intptr_t)m->b[i].conn);
}

static int restore_cb(const ns_live_rec_t *r, void *ctx)
{
    model_t *m = ctx;
    ns_liveness_restore(m->lv, r->cluster, r->addr, r->broker_name, r->broker_id,
                        r->heartbeat_timeout_ms, m->now, m->now + GRACE_MS);
    return 0;
}

/* kill -9 and start again: unapplied writes are lost (their senders never
 * got an answer), liveness is rebuilt from the store with a grace window. */
static void do_restart(model_t *m)
{
    while (m->head) {
        op_t *op = m->head;
        m->head = op->next;
        free(op);
    }
    m->tail = NULL;
    m->pending = 0;
    ns_liveness_free(m->lv);
    ns_store_close(m->store);
    open_store(m);
    assert_int_equal(ns_liveness_new(&m->lv), NS_OK);
    ns_txn_t *t = NULL;
    assert_int_equal(ns_txn_begin(m->store, false, &t), NS_OK);
    assert_int_equal(ns_live_iter(t, restore_cb, m), NS_OK);
    ns_txn_abort(t);
    m->restart_at = m->now;
    for (int i = 0; i < NB; i++) {
        m->b[i].expected = in_store(m, i);
        m->b[i].silent_since = m->now; /* silence counts from the restart */
        m->b[i].back = false;
    }
}

static void model_init(model_t *m, unsigned seed)
{
    memset(m, 0, sizeof *m);
    m->seed = seed;
    m->dir = nstest_tmpdir("model");
    open_store(m);
    assert_int_equal(ns_registry_new(&m->reg), NS_OK);
    assert_int_equal(ns_liveness_new(&m->lv), NS_OK);
    m->topics[0] = (ns_topic_config_t){"TopicA", 4, 4, 6, 0};
    m->topics[1] = (ns_topic_config_t){"TopicB", 4, 4, 6, 0};
    m->body.topics = m->topics;
    m->body.n_topics = 2;
    m->body.data_version.counter = 1;
    m->now = 1000;
    for (int i = 0; i < NB; i++) {
        snprintf(m->b[i].name, sizeof m->b[i].name, "broker-%d", i);
        snprintf(m->b[i].addr, sizeof m->b[i].addr, "10.0.0.%d:10911", i + 1);
        snprintf(m->b[i].cluster, sizeof m->b[i].cluster, "C");
    }
}

static void model_free(model_t *m)
{
    drain(m);
    ns_liveness_free(m->lv);
    ns_registry_free(m->reg);
    ns_store_close(m->store);
    nstest_rmtree(m->dir);
    free(m->dir);
}

/* After a drain the store holds exactly the brokers whose last queued op
 * was a registration (fencing), and liveness agrees with the store. */
static void check_drained(model_t *m)
{
    drain(m);
    for (int i = 0; i < NB; i++) {
        bool stored = in_store(m, i);
        if (stored != m->b[i].expected)
            fail_msg("seed %u t=%llu: %s stored=%d expected=%d", m->seed,
                     (unsigned long long)m->now, m->b[i].name, stored, m->b[i].expected);
        bool live = ns_liveness_get(m->lv, m->b[i].cluster, m->b[i].addr) != NULL;
        if (live != stored)
            fail_msg("seed %u: %s liveness=%d store=%d", m->seed, m->b[i].name, live, stored);
    }
}

static void run_seed(unsigned seed)
{
    model_t m;
    model_init(&m, seed);
    srand(seed);
    for (int step = 0; step < STEPS; step++) {
        m.now += 50;
        int i = rand() % NB;
        broker_t *b = &m.b[i];
        switch (rand() % 12) {
        case 0:
        case 1:
            do_register(&m, i);
            b->alive = true;
            b->last_beat = m.now;
            break;
        case 2:
            if (b->alive) {
                b->alive = false; /* goes silent */
                b->silent_since = m.now;
            }
            break;
        case 3:
            do_close(&m, i);
            break;
        case 4:
            if (rand() % 4 == 0) {
                ns_live_entry_t *e = ns_liveness_get(m.lv, b->cluster, b->addr);
                uint64_t gen = e ? e->generation : 0;
                if (e)
                    e->evicting = true;
                submit(&m, OP_UNREG, i, 0, gen);
            }
            break;
        case 5:
            if (rand() % 10 == 0)
                do_restart(&m);
            break;
        case 6:
            check_drained(&m);
            break;
        default:
            if (rand() % 2)
                writer_step(&m);
            break;
        }
        for (int k = 0; k < NB; k++) {
            broker_t *x = &m.b[k];
            if (x->alive && m.now - x->last_beat >= HEARTBEAT_MS) {
                if (ns_liveness_heartbeat(m.lv, x->cluster, x->addr, m.now))
                    x->back = true;
                x->last_beat = m.now;
            }
        }
        if (m.now % SCAN_MS == 0)
            do_scan(&m);
        /* property: a silent broker is gone within timeout + scan interval
         * (after a restart: within the grace window + scan interval) */
        for (int k = 0; k < NB; k++) {
            broker_t *x = &m.b[k];
            uint64_t quiet = x->silent_since > x->last_applied ? x->silent_since : x->last_applied;
            uint64_t limit = quiet + TIMEOUT_MS + SCAN_MS;
            if (m.restart_at && !x->back) /* restored, not seen since: the grace window */
                limit = m.restart_at + GRACE_MS + SCAN_MS;
            if (!x->alive && m.now > limit + SCAN_MS && x->expected) {
                ns_live_entry_t *e = ns_liveness_get(m.lv, x->cluster, x->addr);
                if (e && !e->evicting)
                    fail_msg(
                        "seed %u: silent broker %s not evicted by %llu (quiet since %llu, "
                        "last update %llu, deadline %llu, grace %llu, restart %llu)",
                        seed, x->name, (unsigned long long)m.now, (unsigned long long)quiet,
                        (unsigned long long)e->last_update_ms, (unsigned long long)e->deadline_ms,
                        (unsigned long long)e->grace_until_ms, (unsigned long long)m.restart_at);
            }
        }
    }
    check_drained(&m);
    model_free(&m);
}

static void test_random_interleavings(void **state)
{
    for (unsigned seed = 1; seed <= SEEDS; seed++)
        run_seed(seed);
    printf("model: %d seeds x %d steps passed\n", SEEDS, STEPS);
}

/* #11043: an eviction decided for generation g is still queued when the
 * broker registers again; the stale eviction must not remove it. Likewise
 * the close of the broker's previous connection after it re-registered. */
static void test_regression_11043(void **state)
{
    model_t m;
    model_init(&m, 11043);
    do_register(&m, 0);
    drain(&m);
    m.now += TIMEOUT_MS + SCAN_MS + 1; /* the broker looks dead (GC pause) */
    do_scan(&m);                       /* eviction decided and queued */
    m.b[0].last_beat = m.now;
    do_register(&m, 0); /* it is alive after all and registers again */
    check_drained(&m);
    assert_true(in_store(&m, 0));
    assert_non_null(ns_liveness_get(m.lv, m.b[0].cluster, m.b[0].addr));
    /* channel-close variant: re-register on conn 2 is in flight when conn 1 closes */
    int old_conn = m.b[0].conn;
    m.b[0].alive = true;
    m.body.data_version.counter = 2; /* a change, so it goes through the writer */
    do_register(&m, 0);
    m.b[0].conn = old_conn;
    do_close(&m, 0);
    check_drained(&m);
    assert_true(in_store(&m, 0));
    model_free(&m);
}

/* #5374: a delayed unregister of the old slave id must not remove the same
 * address that meanwhile registered as master (id 0). */
static void test_regression_5374(void **state)
{
    model_t m;
    model_init(&m, 5374);
    snprintf(m.b[1].name, sizeof m.b[1].name, "%s", m.b[0].name); /* one group */
    m.b[0].id = 0;
    m.b[1].id = 1;
    do_register(&m, 0);
    do_register(&m, 1);
    drain(&m);
    /* the slave's unregister is delayed; meanwhile the master dies and the
     * slave's address is promoted to id 0 */
    submit(&m, OP_UNREG, 1, 0, 0);
    op_t *stale = m.head;
    m.head = m.tail = NULL;
    m.pending = 0;
    m.b[1].id = 0;
    m.body.data_version.counter = 2;
    do_register(&m, 1);
    drain(&m);
    /* now the stale unregister (id 1) arrives */
    m.head = m.tail = stale;
    m.pending = 1;
    drain(&m);
    assert_true(in_store(&m, 1));
    ns_txn_t *t = NULL;
    ns_group_rec_t g;
    assert_int_equal(ns_txn_begin(m.store, false, &t), NS_OK);
    assert_int_equal(ns_group_get(t, m.b[1].name, &g), NS_OK);
    const char *master = ns_group_addr_of(&g, 0);
    assert_non_null(master);
    assert_string_equal(master, m.b[1].addr);
    ns_group_rec_free(&g);
    ns_txn_abort(t);
    model_free(&m);
}

/* Restored brokers: not evicted inside the grace window, evicted after it. */
static void test_restart_grace(void **state)
{
    model_t m;
    model_init(&m, 7);
    do_register(&m, 0);
    do_register(&m, 1);
    drain(&m);
    m.b[0].alive = m.b[1].alive = false;
    do_restart(&m);
    for (int t = 0; t < GRACE_MS / SCAN_MS - 1; t++) {
        m.now += SCAN_MS;
        do_scan(&m);
        drain(&m);
        assert_true(in_store(&m, 0));
    }
    /* broker 1 comes back and heartbeats; broker 0 stays silent */
    ns_liveness_heartbeat(m.lv, m.b[1].cluster, m.b[1].addr, m.now);
    for (int t = 0; t < 4 * SCAN_MS / SCAN_MS + 2; t++) {
        m.now += SCAN_MS;
        ns_liveness_heartbeat(m.lv, m.b[1].cluster, m.b[1].addr, m.now);
        do_scan(&m);
        drain(&m);
    }
    assert_false(in_store(&m, 0));
    assert_true(in_store(&m, 1));
    model_free(&m);
}

/* After a stall of the loop every entry gets max(grace, its timeout) from
 * the end of the stall, an entry being evicted is left alone, and the heap
 * still hands out the earliest deadline first; a heartbeat ends the grace. */
static void test_stall_grace(void **state)
{
    (void)state;
    ns_liveness_t *lv = NULL;
    ns_live_entry_t *out[8];
    int conn_a = 0, conn_c = 0;
    assert_int_equal(ns_liveness_new(&lv), NS_OK);
    assert_non_null(ns_liveness_register(lv, "c", "a:1", "a", 0, 1000, &conn_a, 1000));
    assert_non_null(ns_liveness_register(lv, "c", "b:1", "b", 0, 5000, NULL, 1000));
    assert_non_null(ns_liveness_register(lv, "c", "d:1", "d", 0, 1000, NULL, 1000));
    assert_non_null(ns_liveness_register(lv, "c", "e:1", "e", 0, 1000, &conn_c, 1000));
    assert_int_equal(ns_liveness_by_conn(lv, &conn_c, out, 8), 1); /* e is being evicted */
    uint64_t now = 1000 + 200000; /* every deadline ran out during the stall */
    assert_int_equal(ns_liveness_grace_all(lv, now, 3000), 3);
    assert_true(ns_liveness_get(lv, "c", "a:1")->grace_after_stall);
    assert_int_equal(ns_liveness_expired(lv, now + 3000, out, 8), 0);
    /* d heartbeats: its own timeout again; a stays silent */
    assert_true(ns_liveness_heartbeat(lv, "c", "d:1", now + 100));
    assert_false(ns_liveness_get(lv, "c", "d:1")->grace_after_stall);
    assert_int_equal(ns_liveness_expired(lv, now + 1101, out, 8), 1);
    assert_string_equal(out[0]->addr, "d:1");
    assert_int_equal(ns_liveness_expired(lv, now + 3001, out, 8), 1);
    assert_string_equal(out[0]->addr, "a:1");
    assert_int_equal(ns_liveness_expired(lv, now + 5000, out, 8), 0);
    assert_int_equal(ns_liveness_expired(lv, now + 5001, out, 8), 1);
    assert_string_equal(out[0]->addr, "b:1");
    /* a later grace already granted is kept (a and d are being evicted now) */
    ns_live_entry_t *b = ns_liveness_get(lv, "c", "b:1");
    ns_liveness_retry(lv, b);
    assert_int_equal(ns_liveness_grace_all(lv, now, 100000), 1);
    assert_int_equal(ns_liveness_grace_all(lv, now + 1, 0), 1);
    assert_int_equal(b->grace_until_ms, now + 100000);
    ns_liveness_free(lv);
}

int main(void)
{
    ns_log_set_level(NS_LOG_LEVEL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regression_11043),     cmocka_unit_test(test_regression_5374),
        cmocka_unit_test(test_restart_grace),        cmocka_unit_test(test_stall_grace),
        cmocka_unit_test(test_random_interleavings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
