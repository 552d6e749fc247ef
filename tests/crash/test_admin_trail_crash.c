/* test_admin_trail_crash.c - kill -9 while admin writes stream in: the
 * admin trail and the effects are committed together or not at all.
 *
 * Each round pipelines PUT_KV_CONFIG requests (unique keys) on one
 * connection, kills namesrvd with SIGKILL at a random moment, and reads the
 * store back offline (namesrvctl dump and audit --admin):
 *   - every acknowledged put has its value in the store AND its record in
 *     the trail (with the client's address);
 *   - every trail record of a put has its value in the store, and every
 *     stored key has its record: nothing applied without a record, no
 *     record of something not applied.
 * Rounds accumulate on one data directory. NS_CRASH_ITERATIONS (default 5),
 * NS_CRASH_SEED (default time-based, printed). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

#define NSPACE "TRAIL"
#define WINDOW 8
#define MAX_KEYS 20000

typedef struct {
    bool sent, acked;
} key_state_t;

static key_state_t keys[MAX_KEYS];
static int next_key;

static void key_name(int i, char *out, size_t n)
{
    snprintf(out, n, "k%05d", i);
}

/* Sends put of key i (value = key name) without waiting. */
static void send_put(ns_client_t *c, int i)
{
    char k[16];
    key_name(i, k, sizeof k);
    const char *kv[] = {"namespace", NSPACE, "key", k, "value", k, NULL};
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    nstest_cmd(&cmd, ext, NS_REQ_PUT_KV_CONFIG, kv);
    cmd.opaque = i + 1;
    assert_int_equal(ns_client_send(c, &cmd), NS_OK);
    keys[i].sent = true;
}

/* Streams puts with WINDOW in flight until kill_after_ms passes, then
 * kills the server (requests still in flight). */
static void stream_and_kill(nstest_server_t *srv, int kill_after_ms, char *peer, size_t peer_n)
{
    ns_client_t *c = nstest_connect(srv);
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    getsockname(ns_client_fd(c), (struct sockaddr *)&sa, &len);
    snprintf(peer, peer_n, "127.0.0.1:%d", ntohs(sa.sin_port));
    int in_flight = 0;
    int64_t t0 = nstest_mono_ms();
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    while (nstest_mono_ms() - t0 < kill_after_ms && next_key < MAX_KEYS) {
        while (in_flight < WINDOW && next_key < MAX_KEYS) {
            send_put(c, next_key++);
            in_flight++;
        }
        if (ns_client_recv(c, 1000, &rsp) != NS_OK)
            break;
        int i = rsp.cmd.opaque - 1;
        assert_true(i >= 0 && i < next_key);
        assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
        keys[i].acked = true;
        in_flight--;
    }
    nstest_server_stop(srv, SIGKILL);
    ns_cmd_msg_free(&rsp);
    ns_client_close(c);
}

/* Reads the namespace's stored keys (dump) into present[]. */
static void read_store(const char *data, bool *present)
{
    char *out = NULL;
    int rc = nstest_ctl(60000, &out, "dump", "--data-dir", data, "--compact", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    cJSON *doc = cJSON_Parse(out);
    assert_non_null(doc);
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "kv"), NSPACE))
    {
        int i = atoi(e->string + 1);
        assert_true(i >= 0 && i < MAX_KEYS);
        assert_string_equal(e->valuestring, e->string); /* never torn */
        present[i] = true;
    }
    cJSON_Delete(doc);
    free(out);
}

/* Reads the trail's put records into recorded[] (and checks their peer). */
static void read_trail(const char *data, bool *recorded, const char *const *peers, int n_peers)
{
    char *out = NULL;
    int rc = nstest_ctl(60000, &out, "audit", "--admin", "--data-dir", data, "--json", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    for (char *line = out, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        cJSON *r = cJSON_Parse(line);
        assert_non_null(r);
        cJSON *f = cJSON_GetObjectItem(r, "fields");
        const char *key = cJSON_GetObjectItem(f, "key")->valuestring;
        int i = atoi(key + 1);
        assert_false(recorded[i]); /* one record per put */
        recorded[i] = true;
        const char *peer = cJSON_GetObjectItem(r, "peer")->valuestring;
        bool known = false;
        for (int p = 0; p < n_peers; p++)
            known = known || strcmp(peers[p], peer) == 0;
        assert_true(known);
        cJSON_Delete(r);
    }
    free(out);
}

static void test_trail_and_effect_together(void **state)
{
    (void)state;
    const char *it = getenv("NS_CRASH_ITERATIONS"), *sd = getenv("NS_CRASH_SEED");
    int rounds = it ? atoi(it) : 5;
    unsigned seed = sd ? (unsigned)strtoul(sd, NULL, 10) : (unsigned)time(NULL);
    printf("# seed %u, %d rounds\n", seed, rounds);
    srand(seed);
    char *dir = nstest_tmpdir("trail-crash");
    char peers[32][64];
    const char *peer_ptrs[32];
    nstest_server_t srv;
    static bool present[MAX_KEYS], recorded[MAX_KEYS];
    for (int r = 0; r < rounds && r < 32; r++) {
        assert_int_equal(nstest_server_start(&srv, dir, NULL), 0);
        stream_and_kill(&srv, 50 + rand() % 400, peers[r], sizeof peers[r]);
        peer_ptrs[r] = peers[r];
        memset(present, 0, sizeof present);
        memset(recorded, 0, sizeof recorded);
        read_store(srv.data, present);
        read_trail(srv.data, recorded, peer_ptrs, r + 1);
        int acked = 0, stored = 0;
        for (int i = 0; i < next_key; i++) {
            if (keys[i].acked) {
                acked++;
                assert_true(present[i]);
                assert_true(recorded[i]);
            }
            if (present[i] != recorded[i])
                fail_msg("key %d: stored %d but recorded %d", i, present[i], recorded[i]);
            stored += present[i];
        }
        printf("# round %d: %d sent, %d acknowledged, %d stored = recorded\n", r, next_key, acked,
               stored);
    }
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trail_and_effect_together),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
