/* powercut.c - simulated power cuts: namesrvd loses exactly what a power cut
 * loses, and what it acknowledged must still be there.
 *
 * Each cut: namesrvd runs under the power-cut shim (tests/faults/
 * nspowercut.c), which journals an undo record of every write to the store's
 * files and what each sync made durable. A client streams writes (PUT_KV_
 * CONFIG, DELETE_KV_CONFIG, REGISTER_BROKER of one topic, DELETE_TOPIC_IN_
 * NAMESRV, up to WINDOW in flight) and records which were acknowledged; the
 * server dies by SIGKILL, either from the shim at the n-th write or sync of
 * the store (every point of a commit is reached) or from the harness after a
 * random delay. Then pc_power_cut() (pc_disk.c) turns the files into one of
 * the states a disk may hold after a power cut at that moment (unsynced
 * writes lost, torn per 512-byte sector, reordered, sizes and new directory
 * entries lost), `namesrvctl verify` must pass, and the next start of
 * namesrvd must serve every acknowledged write:
 *   every slot (a KV key or a topic) holds the effect of its last
 *   acknowledged op, or of the one op in flight on it at the cut - never an
 *   older state, never one that was not sent (values derive from the op's
 *   sequence number and are compared whole).
 * The state found becomes the next cut's baseline; now and then a cut starts
 * from an empty store (its creation is in the window too, and half of
 * those are cut while it is made), and one cut in ten is taken while
 * namesrvd starts.
 *
 * Usage: powercut [--cuts N] [--seed S] [--cut-seed S]
 *                 [--sync-mode full|nometasync|nosync]
 *                 [--ignore-sync] [--expect-loss] [--verbose]
 *   --cut-seed S   every cut is the one a run printed as "seed S" (a failing
 *                  cut of a fresh store replays alone; --cuts 1 for once)
 *   --ignore-sync  the shim records no sync as durable (a disk that lies
 *                  about flushes): the harness must then report losses
 *   --expect-loss  pass only if some loss or unopenable store was found
 *                  (the harness's own test, and the modes that promise less)
 * Without --expect-loss it passes only with no loss and no unopenable store.
 * Each cut prints its seed; with --seed S --cuts N the same op streams, cut
 * points and disk states are drawn (timing still varies). A failing cut's
 * files before the cut, its journal and its seed are kept for replay. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "pc_disk.h"

#define NKV 32
#define NTOPIC 16
#define NSLOTS (NKV + NTOPIC)
#define WINDOW 8
#define NSPACE "PC"
#define BROKER "pcb"
#define BROKER_ADDR "127.0.0.1:10911"
#define CLUSTER "PCCluster"
#define ANCHOR_TOPIC "pc_anchor"

enum { OP_NONE, OP_PUT, OP_DEL };

typedef struct {
    bool topic;
    char name[24];
    /* the acknowledged state: what a check must find unless the op in
     * flight took effect */
    bool present;
    uint32_t seq;
    /* the op in flight (one at most per slot: its order against the
     * acknowledged one is then certain) */
    uint8_t fl_type;
    uint32_t fl_seq;
    int32_t fl_opaque;
    bool acked_since_check;
    uint32_t acked_seq; /* the last acknowledged op's seq (put or delete) */
} slot_t;

typedef struct {
    long cuts;
    unsigned long seed;
    unsigned long cut_seed; /* --cut-seed: replay the one cut of this seed */
    const char *sync_mode;
    bool ignore_sync, expect_loss, verbose;
} opts_t;

typedef struct {
    uint64_t cuts, shim_cuts, startup_cuts, timer_cuts, fresh_stores;
    uint64_t sent, acked, acked_slots_checked, slots_checked, unacked_applied;
    uint64_t losses, unopenable, refused_start, error_replies, store_gone, unmigrated;
    /* how the losses look: checks that found some, the most acknowledged
     * writes one check found lost, and checks that found an acknowledged
     * write lost while one acknowledged after it was kept (a hole, not just
     * "the last ones") */
    uint64_t lossy_cuts, max_lost, holes;
    uint64_t strategies[PC_STRATEGIES], reverted_sectors, pending_writes;
} totals_t;

static opts_t g_opts = {1000, 0, 0, "full", false, false, false};

typedef struct {
    char *dir;       /* the test's temp directory (server log, port file) */
    char data[4096]; /* the store: dir/data */
    char journal[4096], arm[4096], precut[4096];
    nstest_server_t srv;
    ns_client_t *c;
    slot_t slots[NSLOTS];
    uint32_t next_seq;
    uint64_t rng;
    int n_fl;
    unsigned long prev_seed; /* the seed of the cut whose state is to be checked */
    totals_t t;
    bool kept_failure;
} pc_t;

/* The queue numbers registration seq gives its topic. */
static int32_t read_queues(uint32_t seq)
{
    return 1 + (int32_t)(seq % 8);
}
static int32_t write_queues(uint32_t seq)
{
    return 1 + (int32_t)((seq / 8) % 8);
}

static void reset_model(pc_t *x)
{
    x->n_fl = 0;
    for (int i = 0; i < NSLOTS; i++) {
        slot_t *s = &x->slots[i];
        s->topic = i >= NKV;
        snprintf(s->name, sizeof s->name, s->topic ? "pc_topic_%02d" : "pc_key_%02d",
                 s->topic ? i - NKV : i);
        s->present = false;
        s->seq = 0;
        s->fl_type = OP_NONE;
        s->acked_since_check = false;
    }
}

/* REGISTER_BROKER of broker BROKER with slot s's topic and ANCHOR_TOPIC
 * (a broker's first registration of one topic alone is refused as an
 * increment); the broker's other topics stay (deleteTopicWithBroker-
 * Registration=false). DataVersion counter seq. */
static int send_register(pc_t *x, slot_t *s, uint32_t seq, int32_t opaque)
{
    ns_topic_config_t tc[2] = {{s->name, read_queues(seq), write_queues(seq), 6, 0},
                               {ANCHOR_TOPIC, 1, 1, 6, 0}};
    ns_buf_t enc = NS_BUF_INIT;
    nstest_regbody_version(&enc, tc, 2, seq, 1700000000000LL + seq);
    char crc[16];
    snprintf(crc, sizeof crc, "%u", ns_body_crc32(enc.data, enc.len));
    /* clang-format off */
    const char *kv[] = {
        "brokerName", BROKER, "brokerAddr", BROKER_ADDR, "clusterName", CLUSTER,
        "haServerAddr", BROKER_ADDR, "brokerId", "0", "compressed", "false",
        "bodyCrc32", crc, "heartbeatTimeoutMillis", "600000", NULL};
    /* clang-format on */
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    nstest_cmd(&cmd, ext, NS_REQ_REGISTER_BROKER, kv);
    cmd.opaque = opaque;
    cmd.body = enc.data;
    cmd.body_len = enc.len;
    int rc = ns_client_send(x->c, &cmd);
    ns_buf_free(&enc);
    return rc;
}

/* Sends one op on a slot with nothing in flight. false: the connection is
 * gone. */
static bool send_op(pc_t *x)
{
    slot_t *s = NULL;
    for (int tries = 0; tries < 16 && s == NULL; tries++) {
        slot_t *c = &x->slots[pc_rand(&x->rng) % NSLOTS];
        if (c->fl_type == OP_NONE)
            s = c;
    }
    if (s == NULL)
        return true;
    uint8_t type = pc_rand(&x->rng) % 5 == 0 ? OP_DEL : OP_PUT;
    uint32_t seq = ++x->next_seq;
    int32_t opaque = ns_client_next_opaque(x->c);
    /* recorded before sending: a request that may have reached the server
     * counts as in flight */
    s->fl_type = type;
    s->fl_seq = seq;
    s->fl_opaque = opaque;
    x->n_fl++;
    x->t.sent++;
    int rc;
    if (s->topic && type == OP_PUT) {
        rc = send_register(x, s, seq, opaque);
    } else {
        char *val = type == OP_PUT ? nstest_kv_value(s->name, seq) : NULL;
        const char *kv_put[] = {"namespace", NSPACE, "key", s->name, "value", val, NULL};
        const char *kv_del[] = {"namespace", NSPACE, "key", s->name, NULL};
        const char *kv_topic[] = {"topic", s->name, NULL};
        int code = s->topic         ? NS_REQ_DELETE_TOPIC_IN_NAMESRV
                   : type == OP_PUT ? NS_REQ_PUT_KV_CONFIG
                                    : NS_REQ_DELETE_KV_CONFIG;
        ns_cmd_t cmd;
        ns_ext_field_t ext[16];
        nstest_cmd(&cmd, ext, code, s->topic ? kv_topic : type == OP_PUT ? kv_put : kv_del);
        cmd.opaque = opaque;
        rc = ns_client_send(x->c, &cmd);
        free(val);
    }
    if (rc != NS_OK) {
        /* the server was gone already: the op never reached it (kept in
         * flight, a delete would excuse a lost key) */
        s->fl_type = OP_NONE;
        x->n_fl--;
        x->t.sent--;
    }
    return rc == NS_OK;
}

static void on_reply(pc_t *x, const ns_cmd_t *rsp)
{
    for (int i = 0; i < NSLOTS; i++) {
        slot_t *s = &x->slots[i];
        if (s->fl_type == OP_NONE || s->fl_opaque != rsp->opaque)
            continue;
        if (rsp->code == NS_RSP_SUCCESS) {
            s->present = s->fl_type == OP_PUT;
            s->seq = s->present ? s->fl_seq : 0;
            s->acked_since_check = true;
            s->acked_seq = s->fl_seq;
            x->t.acked++;
        } else {
            x->t.error_replies++; /* not applied: the state stays */
            print_error("reply %d to %s of %s\n", rsp->code,
                        s->fl_type == OP_PUT ? "put" : "delete", s->name);
        }
        s->fl_type = OP_NONE;
        x->n_fl--;
        return;
    }
    fail_msg("reply with unknown opaque %d", rsp->opaque);
}

/* Reads the replies available (waiting wait_ms for the first). false: the
 * connection is gone. */
static bool drain(pc_t *x, int wait_ms)
{
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    bool alive = true;
    for (;;) {
        int rc = ns_client_recv(x->c, wait_ms, &rsp);
        if (rc == NS_ETIMEDOUT)
            break;
        if (rc != NS_OK) {
            alive = false;
            break;
        }
        on_reply(x, &rsp.cmd);
        wait_ms = 0;
    }
    ns_cmd_msg_free(&rsp);
    return alive;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Streams ops until the server dies (the shim's cut) or until kill_at_ms
 * (monotonic), when the harness kills it; then collects the replies sent
 * before the death. */
static void stream_until_cut(pc_t *x, double kill_at_ms)
{
    bool alive = true;
    while (alive && now_ms() < kill_at_ms) {
        while (alive && x->n_fl < WINDOW)
            alive = send_op(x);
        struct pollfd p = {ns_client_fd(x->c), POLLIN, 0};
        if (alive && poll(&p, 1, 2) > 0)
            alive = drain(x, 0);
    }
    nstest_server_stop(&x->srv, SIGKILL);
    /* replies already on their way were sent after their commit: they count */
    if (alive)
        drain(x, 100);
    ns_client_close(x->c);
    x->c = NULL;
    /* whatever is still in flight stays so: its op may or may not have
     * taken effect */
}

static bool value_is(const char *got, const char *key, uint32_t seq)
{
    char *want = nstest_kv_value(key, seq);
    bool eq = strcmp(got, want) == 0;
    free(want);
    return eq;
}

/* Reads slot s on the server: *present, and *what describes what is there.
 * Returns 1 when the answer is well-formed, 0 when not, -1 when there was
 * no answer. */
static int observe(pc_t *x, slot_t *s, ns_cmd_msg_t *rsp, bool *present, char *what, size_t n)
{
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    const char *kv_get[] = {"namespace", NSPACE, "key", s->name, NULL};
    const char *kv_topic[] = {"topic", s->name, NULL};
    nstest_cmd(&cmd, ext, s->topic ? NS_REQ_GET_ROUTEINFO_BY_TOPIC : NS_REQ_GET_KV_CONFIG,
               s->topic ? kv_topic : kv_get);
    if (ns_client_call(x->c, &cmd, 30000, rsp) != NS_OK)
        return -1; /* the server died (a cut while it started) */
    int absent_code = s->topic ? NS_RSP_TOPIC_NOT_EXIST : NS_RSP_QUERY_NOT_FOUND;
    *present = rsp->cmd.code == NS_RSP_SUCCESS;
    if (!*present) {
        snprintf(what, n, "(absent)");
        return rsp->cmd.code == absent_code;
    }
    if (!s->topic) {
        const char *v = ns_cmd_ext_get(&rsp->cmd, "value");
        snprintf(what, n, "%.60s", v ? v : "(no value)");
        return v != NULL;
    }
    cJSON *doc = cJSON_ParseWithLength((const char *)rsp->cmd.body, rsp->cmd.body_len);
    cJSON *qd = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "queueDatas"), 0);
    cJSON *rq = cJSON_GetObjectItemCaseSensitive(qd, "readQueueNums");
    cJSON *wq = cJSON_GetObjectItemCaseSensitive(qd, "writeQueueNums");
    bool ok = cJSON_IsNumber(rq) && cJSON_IsNumber(wq);
    snprintf(what, n, "route with queues %d/%d", ok ? rq->valueint : -1, ok ? wq->valueint : -1);
    cJSON_Delete(doc);
    return ok;
}

static bool matches(const slot_t *s, bool present, const ns_cmd_msg_t *rsp, const char *what,
                    bool want_present, uint32_t seq)
{
    if (present != want_present)
        return false;
    if (!present)
        return true;
    if (!s->topic)
        return value_is(ns_cmd_ext_get(&rsp->cmd, "value"), s->name, seq);
    if (seq == 0)
        return true; /* a route after a loss: what it holds is not known */
    char want[64];
    snprintf(want, sizeof want, "route with queues %d/%d", read_queues(seq), write_queues(seq));
    return strcmp(what, want) == 0;
}

/* Checks every slot on the running server against the model; the state
 * found becomes the baseline. Returns the number of slots lost, or -1 when
 * the server went away before all were read (nothing is changed then). */
static int check(pc_t *x, long cut, unsigned long cut_seed)
{
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    int lost = 0;
    bool present[NSLOTS];
    char what[NSLOTS][96];
    int ok[NSLOTS];
    ns_cmd_msg_t got[NSLOTS];
    for (int i = 0; i < NSLOTS; i++)
        ns_cmd_msg_init(&got[i]);
    for (int i = 0; i < NSLOTS; i++) {
        ok[i] = observe(x, &x->slots[i], &got[i], &present[i], what[i], sizeof what[i]);
        if (ok[i] < 0) {
            for (int j = 0; j <= i; j++)
                ns_cmd_msg_free(&got[j]);
            return -1;
        }
    }
    bool lost_slot[NSLOTS] = {false};
    for (int i = 0; i < NSLOTS; i++) {
        slot_t *s = &x->slots[i];
        rsp = got[i];
        ns_cmd_msg_init(&got[i]);
        bool ok_i = ok[i] == 1, present_i = present[i];
        char *what_i = what[i];
        x->t.slots_checked++;
        x->t.acked_slots_checked += s->acked_since_check;
        if (ok_i && matches(s, present_i, &rsp, what_i, s->present, s->seq)) {
            /* the acknowledged state */
        } else if (ok_i && s->fl_type != OP_NONE &&
                   matches(s, present_i, &rsp, what_i, s->fl_type == OP_PUT, s->fl_seq)) {
            x->t.unacked_applied++; /* committed, its reply lost in the cut */
            s->present = present_i;
            s->seq = present_i ? s->fl_seq : 0;
        } else {
            lost++;
            lost_slot[i] = s->acked_since_check;
            print_error("LOST: cut %ld (seed %lu): %s %s holds %s; acknowledged: %s (op seq %u); "
                        "in flight: %s (op seq %u)\n",
                        cut, cut_seed, s->topic ? "topic" : "key", s->name, what_i,
                        s->present ? "present" : "absent", s->acked_seq,
                        s->fl_type == OP_NONE  ? "none"
                        : s->fl_type == OP_PUT ? "put"
                                               : "delete",
                        s->fl_type == OP_NONE ? 0 : s->fl_seq);
            /* the next cut starts from what is there */
            s->present = present_i;
            s->seq = 0;
            if (present_i && !s->topic) {
                const char *v = ns_cmd_ext_get(&rsp.cmd, "value");
                const char *h = v ? strchr(v, '#') : NULL;
                s->seq = h ? (uint32_t)strtoul(h + 1, NULL, 10) : 0;
            } else if (present_i) {
                /* unknown queue numbers: the next check accepts only what
                 * a later acknowledged op wrote */
                s->present = true;
                s->seq = 0;
            }
        }
        ns_cmd_msg_free(&rsp);
    }
    if (lost > 0) {
        uint32_t oldest_lost = UINT32_MAX;
        for (int i = 0; i < NSLOTS; i++)
            if (lost_slot[i] && x->slots[i].acked_seq < oldest_lost)
                oldest_lost = x->slots[i].acked_seq;
        /* evidence of a newer write kept: a key holding the value of a put
         * acknowledged after the oldest lost write (a delete or a topic's
         * queue numbers may equal the state before them) */
        bool hole = false;
        for (int i = 0; i < NSLOTS; i++) {
            const slot_t *k = &x->slots[i];
            hole = hole || (k->acked_since_check && !lost_slot[i] && !k->topic && k->present &&
                            k->seq == k->acked_seq && k->acked_seq > oldest_lost);
        }
        x->t.lossy_cuts++;
        x->t.holes += hole;
        x->t.max_lost = (uint64_t)lost > x->t.max_lost ? (uint64_t)lost : x->t.max_lost;
    }
    for (int i = 0; i < NSLOTS; i++) {
        x->slots[i].fl_type = OP_NONE;
        x->slots[i].acked_since_check = false;
    }
    x->n_fl = 0;
    return lost;
}

static void copy_file(const char *from, const char *to)
{
    uint8_t *b = NULL;
    size_t n = 0;
    if (nstest_read_file(from, &b, &n) != 0)
        return;
    int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, b, n) != (ssize_t)n)
            print_error("cannot copy %s to %s\n", from, to);
        close(fd);
    }
    free(b);
}

static const char *const store_files[] = {"data.mdb", "lock.mdb", "LOCK", NULL};

/* Writes dir/name into out (n bytes); false (and nothing to use) when it
 * does not fit. The result checked keeps optimised -Werror builds quiet
 * about truncation no temp directory can reach. */
static bool path_join(char *out, size_t n, const char *dir, const char *name)
{
    int len = snprintf(out, n, "%s/%s", dir, name);
    return len >= 0 && (size_t)len < n;
}

/* Copies the store's files (and with_journal, the journal) from directory
 * `from` to directory `to`. */
static void copy_store(const char *from, const char *to, const char *with_journal)
{
    mkdir(to, 0700);
    char a[4200], b[4200];
    for (int i = 0; store_files[i]; i++) {
        if (!path_join(a, sizeof a, from, store_files[i]) ||
            !path_join(b, sizeof b, to, store_files[i]))
            return;
        unlink(b);
        copy_file(a, b);
    }
    if (with_journal && path_join(b, sizeof b, to, "journal"))
        copy_file(with_journal, b);
}

/* Keeps a failing cut's files from before the cut, its journal and seed. */
static void keep_failure(pc_t *x, long cut, unsigned long cut_seed, const char *why)
{
    char to[4200];
    snprintf(to, sizeof to, "%s/failed-cut-%ld", x->dir, cut);
    char journal[4200];
    snprintf(journal, sizeof journal, "%s/journal", x->precut);
    copy_store(x->precut, to, journal);
    char note[4400];
    snprintf(note, sizeof note, "%s/README", to);
    FILE *f = fopen(note, "w");
    if (f) {
        fprintf(f,
                "cut %ld, seed %lu (pc_power_cut seed), syncMode %s: %s\n"
                "files: the store as the process left it; journal: the shim's records\n",
                cut, cut_seed, g_opts.sync_mode, why);
        fclose(f);
    }
    print_error("kept the failing cut's files in %s\n", to);
    x->kept_failure = true;
}

static void fresh_store(pc_t *x)
{
    nstest_rmtree(x->data);
    assert_int_equal(mkdir(x->data, 0700), 0);
    /* the directory itself is the operator's (the package makes it): its
     * entry is made durable here, the shim watches what is inside */
    int fd = open(x->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0 && fsync(fd) == 0);
    close(fd);
    reset_model(x);
    x->t.fresh_stores++;
}

/* Starts namesrvd under the shim; returns nstest_server_start's result. */
static int start_under_shim(pc_t *x, long cut_at)
{
    char at[32], sync_arg[64];
    snprintf(at, sizeof at, "%ld", cut_at);
    snprintf(sync_arg, sizeof sync_arg, "--syncMode=%s", g_opts.sync_mode);
    const char *env[] = {"NSPC_DIR",
                         x->data,
                         "NSPC_JOURNAL",
                         x->journal,
                         "NSPC_ARM",
                         x->arm,
                         "NSPC_CUT_AT",
                         at,
                         "NSPC_IGNORE_SYNC",
                         g_opts.ignore_sync ? "1" : "0",
                         NULL};
    const char *args[] = {sync_arg, "--backupIntervalSeconds=0",
                          "--deleteTopicWithBrokerRegistration=false", NULL};
    return nstest_server_start_preloaded(&x->srv, x->dir, args, NS_POWERCUT_LIB, env);
}

static int verify_store(pc_t *x, char **out)
{
    const char *args[] = {"verify", "--data-dir", x->data, NULL};
    return nstest_run(NS_NAMESRVCTL_PATH, args, out, 60000);
}

/* The last lines of the server log (for a start that failed). */
static void print_log_tail(pc_t *x)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/namesrvd.log", x->dir);
    char *log = nstest_read_text(path);
    if (log) {
        size_t n = strlen(log);
        print_error("namesrvd.log (end):\n%s\n", n > 1500 ? log + n - 1500 : log);
        free(log);
    }
}

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

/* Counts a check's result; keeps the first failing cut's files. */
static void count_check(pc_t *x, long cut, int lost)
{
    if (lost <= 0)
        return;
    x->t.losses += (uint64_t)lost;
    if (!x->kept_failure)
        keep_failure(x, cut, x->prev_seed, "acknowledged writes lost");
}

/* Checks the last cut's state on a server started without the shim. */
static void check_on_plain_server(pc_t *x, long cut)
{
    const char *args[] = {"--backupIntervalSeconds=0", "--deleteTopicWithBrokerRegistration=false",
                          NULL};
    if (nstest_server_start(&x->srv, x->dir, args) != 0) {
        x->t.unopenable++;
        x->t.refused_start++;
        print_error("UNOPENABLE: cut %ld (seed %lu): namesrvd refused to start\n", cut,
                    x->prev_seed);
        print_log_tail(x);
        return;
    }
    x->c = nstest_connect(&x->srv);
    int lost = check(x, cut, x->prev_seed);
    if (lost < 0)
        fail_msg("namesrvd went away during the check of cut %ld", cut);
    count_check(x, cut, lost);
    ns_client_close(x->c);
    x->c = NULL;
    assert_int_equal(nstest_server_stop(&x->srv, SIGTERM), 0);
}

/* A power cut stops every process at once; the shim's SIGKILL stops only
 * namesrvd. What it forked (the store check's child, which dies with it:
 * store/check.c) is reparented to this harness, a subreaper (setup), and
 * waited for here before the disk is judged: a child still reading the
 * store would hold the lock region the cut left (an emptied lock.mdb is
 * then mapped with size 0 by the next opener, EINVAL), which no cut does. */
static void reap_orphans(const pc_t *x, long cut)
{
    double deadline = now_ms() + 10000;
    pid_t p;
    while (x->srv.pid <= 0 && (p = waitpid(-1, NULL, WNOHANG)) >= 0) {
        if (p > 0)
            continue;
        if (now_ms() > deadline)
            fail_msg("cut %ld: a process namesrvd forked outlived it by 10 s", cut);
        usleep(1000);
    }
}

/* One cut. check_due: the previous cut's state is still to be checked. */
static void one_cut(pc_t *x, long cut, unsigned long cut_seed, bool *check_due)
{
    x->rng = cut_seed;
    double t_start = now_ms();
    bool fresh = cut == 0 || pc_rand(&x->rng) % 25 == 0;
    if (fresh && *check_due) { /* what the last cut left is checked first */
        check_on_plain_server(x, cut - 1);
        *check_due = false;
    }
    if (fresh)
        fresh_store(x);
    /* a fresh store is cut while it is made half the time, within its
     * first dozen writes and syncs (the making of data.mdb); otherwise one
     * cut in ten comes while namesrvd starts */
    bool by_shim = pc_rand(&x->rng) % 4 != 0;
    bool at_start = by_shim && pc_rand(&x->rng) % (fresh ? 2 : 10) == 0;
    long span = at_start ? (fresh ? 12 : 40) : 100;
    long cut_at = by_shim ? 1 + (long)(pc_rand(&x->rng) % (uint64_t)span) : 0;
    int delay = 2 + (int)(pc_rand(&x->rng) % 50);
    uint64_t disk_seed = pc_rand(&x->rng);
    unlink(x->journal);
    unlink(x->arm);
    if (at_start)
        touch(x->arm);
    uint64_t acked0 = x->t.acked;
    int rc = start_under_shim(x, cut_at);
    if (rc == 0 && ns_client_connect("127.0.0.1", x->srv.port, 5000, &x->c) != NS_OK)
        x->c = NULL; /* died at once: a cut while starting (the journal says) */
    bool checked = true;
    if (rc == 0 && x->c != NULL && *check_due) {
        int lost = check(x, cut - 1, x->prev_seed);
        checked = lost >= 0; /* else the shim cut namesrvd while it started */
        if (checked) {
            count_check(x, cut - 1, lost);
            *check_due = false;
        }
    }
    if (rc == 0 && x->c != NULL && checked) {
        touch(x->arm);
        stream_until_cut(x, now_ms() + (by_shim ? 3000 : delay));
    } else if (rc == 0) {
        nstest_server_stop(&x->srv, SIGKILL);
        ns_client_close(x->c);
        x->c = NULL;
    }
    /* (a start the shim killed before its port file was reaped by
     * nstest_server_start) */
    reap_orphans(x, cut);
    copy_store(x->data, x->precut, x->journal);
    pc_stats_t st;
    char err[512], why[256] = "";
    if (pc_power_cut(x->journal, x->data, disk_seed, &st, err, sizeof err) != 0)
        fail_msg("cut %ld (seed %lu): cannot simulate: %s", cut, cut_seed, err);
    if (rc != 0 && !st.cut_by_shim) {
        /* the server would not start on the store the last cut left */
        x->t.refused_start++;
        x->t.unopenable++;
        snprintf(why, sizeof why, "namesrvd refused to start on the store of cut %ld", cut - 1);
        print_error("UNOPENABLE: cut %ld (seed %lu): %s\n", cut - 1, x->prev_seed, why);
        print_log_tail(x);
        if (!x->kept_failure)
            keep_failure(x, cut, cut_seed, why);
    }
    x->t.cuts++;
    x->t.shim_cuts += st.cut_by_shim;
    x->t.startup_cuts += st.cut_by_shim && at_start;
    x->t.timer_cuts += !st.cut_by_shim && rc == 0;
    x->t.strategies[st.strategy]++;
    x->t.reverted_sectors += st.reverted;
    x->t.pending_writes += st.pending;
    char *out = NULL, mdb[4200];
    snprintf(mdb, sizeof mdb, "%s/data.mdb", x->data);
    /* no data.mdb: the cut took its directory entry (the next start makes
     * an empty store, and the check finds what that loses) */
    bool gone = access(mdb, F_OK) != 0;
    x->t.store_gone += gone;
    int vrc = why[0] || gone ? 0 : verify_store(x, &out);
    if (vrc == 5 && out && strstr(out, "start namesrvd once to migrate it")) {
        /* a whole, empty store cut before its first migration committed:
         * the next start migrates it (and must open it) */
        x->t.unmigrated++;
        vrc = 0;
    }
    if (vrc != 0) {
        x->t.unopenable++;
        snprintf(why, sizeof why, "namesrvctl verify exited %d", vrc);
        print_error("UNOPENABLE: cut %ld (seed %lu): %s:\n%s\n", cut, cut_seed, why,
                    out ? out : "");
        if (!x->kept_failure)
            keep_failure(x, cut, cut_seed, why);
        /* and would namesrvd start on it? */
        const char *args[] = {"--backupIntervalSeconds=0", NULL};
        if (nstest_server_start(&x->srv, x->dir, args) != 0)
            x->t.refused_start++;
        else
            nstest_server_stop(&x->srv, SIGKILL);
    }
    free(out);
    if (g_opts.verbose || why[0] || cut % 100 == 0)
        printf("# cut %ld seed %lu: %s%s at %s %ld, %llu acked, %s: %u pending, %u durable, "
               "%u sectors, %u reverted, %u resized, %u removed, lock %u, %.0f ms%s\n",
               cut, cut_seed, fresh ? "fresh store, " : "",
               st.cut_by_shim ? "shim cut" : "harness kill", st.cut_by_shim ? "event" : "ms",
               st.cut_by_shim ? cut_at : (long)delay, (unsigned long long)(x->t.acked - acked0),
               pc_strategy_name(st.strategy), st.pending, st.durable, st.sectors, st.reverted,
               st.resized, st.removed, st.lock_mode, now_ms() - t_start, why[0] ? " - FAILED" : "");
    fflush(stdout);
    if (why[0]) {
        /* an unopenable store: what it held is lost; start over */
        fresh_store(x);
        *check_due = false;
    } else {
        x->prev_seed = cut_seed;
        *check_due = true;
    }
}

static void test_power_cuts(void **state)
{
    pc_t *x = *state;
    unsigned long seed = g_opts.seed;
    if (seed == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((unsigned long)ts.tv_sec * 1000003ul ^ (unsigned long)ts.tv_nsec ^
                (unsigned long)getpid()) &
               0x7fffffffUL;
    }
    printf("# power cuts: %ld under syncMode=%s%s, seed %lu (--seed %lu to replay)\n", g_opts.cuts,
           g_opts.sync_mode, g_opts.ignore_sync ? " with syncs ignored" : "", seed, seed);
    fflush(stdout);
    double t0 = now_ms();
    bool check_due = false;
    uint64_t run = seed;
    for (long cut = 0; cut < g_opts.cuts; cut++) {
        unsigned long cut_seed = (unsigned long)(pc_rand(&run) & 0x7fffffffffffULL);
        /* a replayed cut is drawn as a later cut is (cut 0 is always fresh) */
        if (g_opts.cut_seed != 0)
            cut_seed = g_opts.cut_seed, cut += cut == 0;
        one_cut(x, cut, cut_seed, &check_due);
    }
    if (check_due) /* the last cut's state */
        check_on_plain_server(x, g_opts.cuts - 1);
    totals_t *t = &x->t;
#define U(v) ((unsigned long long)(v))
    printf("# totals, syncMode=%s%s, seed %lu, %.1f s:\n"
           "#   %llu cuts: %llu by the shim at a write or sync (%llu while starting), %llu by a "
           "timed kill; %llu fresh stores\n"
           "#   %llu ops sent, %llu acknowledged, %llu error replies; %llu slot checks, %llu of a "
           "slot acknowledged since its last check; %llu unacknowledged ops found applied\n"
           "#   %llu writes pending at the cuts, %llu sectors set back, %llu stores gone, %llu not "
           "yet migrated; disk "
           "states: lose-all %llu, keep-all %llu, by-write %llu, by-sector %llu, prefix %llu\n"
           "#   LOSSES %llu (in %llu checks, at most %llu in one, %llu checks with a newer "
           "acknowledged write kept); UNOPENABLE %llu (%llu refused by namesrvd)\n",
           g_opts.sync_mode, g_opts.ignore_sync ? " (syncs ignored)" : "", seed,
           (now_ms() - t0) / 1e3, U(t->cuts), U(t->shim_cuts), U(t->startup_cuts), U(t->timer_cuts),
           U(t->fresh_stores), U(t->sent), U(t->acked), U(t->error_replies), U(t->slots_checked),
           U(t->acked_slots_checked), U(t->unacked_applied), U(t->pending_writes),
           U(t->reverted_sectors), U(t->store_gone), U(t->unmigrated), U(t->strategies[0]),
           U(t->strategies[1]), U(t->strategies[2]), U(t->strategies[3]), U(t->strategies[4]),
           U(t->losses), U(t->lossy_cuts), U(t->max_lost), U(t->holes), U(t->unopenable),
           U(t->refused_start));
#undef U
    fflush(stdout);
    assert_true(t->acked > 0);
    assert_int_equal(t->error_replies, 0);
    if (g_opts.expect_loss) {
        if (t->losses + t->unopenable == 0)
            fail_msg("expected the harness to find losses (--expect-loss), found none");
    } else {
        assert_int_equal(t->losses, 0);
        assert_int_equal(t->unopenable, 0);
    }
}

static int setup(void **state)
{
    pc_t *x = calloc(1, sizeof *x);
    if (x == NULL || (x->dir = nstest_tmpdir("powercut")) == NULL) {
        free(x);
        return -1;
    }
    snprintf(x->data, sizeof x->data, "%s/data", x->dir);
    snprintf(x->journal, sizeof x->journal, "%s/journal", x->dir);
    snprintf(x->arm, sizeof x->arm, "%s/armed", x->dir);
    snprintf(x->precut, sizeof x->precut, "%s/precut", x->dir);
    x->srv.pid = -1;
    reset_model(x);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) { /* reap_orphans */
        free(x->dir);
        free(x);
        return -1;
    }
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    pc_t *x = *state;
    if (x->srv.pid > 0)
        nstest_server_stop(&x->srv, SIGKILL);
    ns_client_close(x->c);
    if (x->kept_failure)
        print_error("kept %s for inspection\n", x->dir);
    else
        nstest_rmtree(x->dir);
    free(x->dir);
    free(x);
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: powercut [--cuts N] [--seed S] [--cut-seed S] "
                    "[--sync-mode full|nometasync|nosync] [--ignore-sync] [--expect-loss] "
                    "[--verbose]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--cuts") == 0 && i + 1 < argc)
            g_opts.cuts = strtol(argv[++i], NULL, 10);
        else if (strcmp(a, "--seed") == 0 && i + 1 < argc)
            g_opts.seed = strtoul(argv[++i], NULL, 10);
        else if (strcmp(a, "--cut-seed") == 0 && i + 1 < argc)
            g_opts.cut_seed = strtoul(argv[++i], NULL, 10);
        else if (strcmp(a, "--sync-mode") == 0 && i + 1 < argc)
            g_opts.sync_mode = argv[++i];
        else if (strcmp(a, "--ignore-sync") == 0)
            g_opts.ignore_sync = true;
        else if (strcmp(a, "--expect-loss") == 0)
            g_opts.expect_loss = true;
        else if (strcmp(a, "--verbose") == 0)
            g_opts.verbose = true;
        else
            usage();
    }
    if (g_opts.cuts < 1)
        usage();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_power_cuts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
