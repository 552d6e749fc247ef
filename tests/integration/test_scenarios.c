/* test_scenarios.c - replays the recorded Java 5.3.3 corpus
 * (tests/fixtures/vectors/scenarios/NAME.jsonl, see its README.md) against the
 * real namesrvd: all nine scenarios in the README's order on one fresh
 * server, then each alone on its own fresh server.
 *
 * Every compared step (not variable, not one-way) is classified as
 *   (a) byte-identical,
 *   (b) equivalent (nstest_json.h: same code/flag/opaque/remark/extFields,
 *       bodies equal as JSON with maps and lists in any order; a JSON answer
 *       to a binary-header request also counts here), or
 *   (c) different - which fails the test, with a readable diff.
 * Poll steps resend the same bytes every 100 ms until the answer is
 * equivalent (20 s at most). Both percentages are printed to stdout. */
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
#include <sys/socket.h>
#include <time.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "nstest.h"
#include "nstest_json.h"
#include "ns/buf.h"
#include "ns/client.h"
#include "ns/err.h"

/* The README's table order (the order matters on a shared server). */
static const char *const k_scenarios[] = {
    "kv",           "register-json",    "register-compressed",    "master-slave",
    "data-version", "perms-and-delete", "system-and-unit-topics", "order-topic",
    "config",
};
#define N_SCENARIOS (sizeof k_scenarios / sizeof k_scenarios[0])

#define RESPONSE_TIMEOUT_MS 5000
#define POLL_INTERVAL_MS 100
#define POLL_LIMIT_MS 20000
#define MAX_DIFFS_SHOWN 5

typedef struct {
    int compared, same, equiv, different, variable, oneway, polled;
} stats_t;

static stats_t g_shared, g_alone;
static int g_diffs_shown;

typedef struct {
    nstest_fx_t base;
    const char *scenario; /* alone tests: which one */
} fx_t;

static int setup(void **state)
{
    const char *scenario = *state; /* prestate: NULL or a scenario name */
    if (nstest_fx_setup_sized(state, sizeof(fx_t), "scenarios") != 0)
        return -1;
    fx_t *fx = *state;
    fx->scenario = scenario;
    if (nstest_server_start(&fx->base.srv, fx->base.dir, NULL) != 0) {
        nstest_fx_teardown(state);
        return -1;
    }
    return 0;
}

/* ---- raw frames over a client's socket (we never use ns_client_recv on
 * these clients, so nothing is buffered inside them) ---- */

static int read_exact(int fd, uint8_t *p, size_t n, int64_t deadline)
{
    size_t got = 0;
    while (got < n) {
        int left = (int)(deadline - nstest_mono_ms());
        if (left <= 0)
            return NS_ETIMEDOUT;
        struct pollfd pfd = {fd, POLLIN, 0};
        int r = poll(&pfd, 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return NS_ETIMEDOUT;
        ssize_t k = recv(fd, p + got, n - got, 0);
        if (k == 0)
            return NS_ECONN;
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return NS_ECONN;
        }
        got += (size_t)k;
    }
    return NS_OK;
}

/* Reads one whole frame (length prefix included); caller frees *out. */
static int read_frame(ns_client_t *c, int timeout_ms, uint8_t **out, size_t *len)
{
    int fd = ns_client_fd(c);
    int64_t deadline = nstest_mono_ms() + timeout_ms;
    uint8_t pre[4];
    int rc = read_exact(fd, pre, 4, deadline);
    if (rc != NS_OK)
        return rc;
    uint32_t flen = ns_be32_read(pre);
    if (flen < 4 || flen > NS_DEFAULT_MAX_FRAME_BYTES)
        return NS_EINVAL;
    uint8_t *p = malloc((size_t)flen + 4);
    if (p == NULL)
        return NS_ENOMEM;
    memcpy(p, pre, 4);
    rc = read_exact(fd, p + 4, flen, deadline);
    if (rc != NS_OK) {
        free(p);
        return rc;
    }
    *out = p;
    *len = (size_t)flen + 4;
    return NS_OK;
}

/* ---- connections by label ---- */

#define MAX_CONNS 16
typedef struct {
    char label[32];
    ns_client_t *c;
} conn_slot_t;

static ns_client_t *conn_get(conn_slot_t *slots, const nstest_server_t *srv, const char *label)
{
    conn_slot_t *free_slot = NULL;
    for (int i = 0; i < MAX_CONNS; i++) {
        if (slots[i].c && strcmp(slots[i].label, label) == 0)
            return slots[i].c;
        if (slots[i].c == NULL && free_slot == NULL)
            free_slot = &slots[i];
    }
    assert_non_null(free_slot);
    snprintf(free_slot->label, sizeof free_slot->label, "%s", label);
    free_slot->c = nstest_connect(srv);
    return free_slot->c;
}

static void conn_close(conn_slot_t *slots, const char *label)
{
    for (int i = 0; i < MAX_CONNS; i++) {
        if (slots[i].c && strcmp(slots[i].label, label) == 0) {
            ns_client_close(slots[i].c);
            slots[i].c = NULL;
        }
    }
}

static void conn_close_all(conn_slot_t *slots)
{
    for (int i = 0; i < MAX_CONNS; i++) {
        if (slots[i].c)
            ns_client_close(slots[i].c);
        slots[i].c = NULL;
    }
}

/* ---- one step ---- */

static bool json_bool(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void show_diff(const char *scenario, int step, const char *name, const char *why,
                      const uint8_t *exp, size_t ne, const uint8_t *act, size_t na)
{
    printf("DIFFERENT %s step %d (%s): %s\n", scenario, step, name, why);
    if (g_diffs_shown++ >= MAX_DIFFS_SHOWN)
        return;
    nstest_frame_print("  java  ", exp, ne);
    nstest_frame_print("  ours  ", act, na);
}

/* Why an equivalent answer is not byte-identical, in a few words. */
static const char *equiv_note(const uint8_t *exp, size_t ne, const uint8_t *act, size_t na)
{
    uint32_t he = ns_be32_read(exp + 4), ha = ns_be32_read(act + 4);
    if ((he >> 24) != (ha >> 24))
        return "header serialize type (binary answer to a binary request)";
    size_t hle = he & 0xFFFFFF, hla = ha & 0xFFFFFF;
    bool hdr_same = hle == hla && memcmp(exp + 8, act + 8, hle) == 0;
    bool body_same =
        ne - 8 - hle == na - 8 - hla && memcmp(exp + 8 + hle, act + 8 + hla, ne - 8 - hle) == 0;
    if (!hdr_same && !body_same)
        return "header bytes and body order";
    return hdr_same ? "body order" : "header bytes";
}

/* Checks a variable step (GET_NAMESRV_CONFIG): code 0, properties body
 * naming productEnvName. */
static bool check_variable(const char *step_name, const uint8_t *act, size_t na, char *why,
                           size_t whylen)
{
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    bool ok = false;
    if (act == NULL) {
        snprintf(why, whylen, "no response");
    } else if (ns_remoting_decode(act, na, &m) != NS_OK) {
        snprintf(why, whylen, "response does not decode");
    } else if (m.cmd.code != 0) {
        snprintf(why, whylen, "code %d, expected 0", m.cmd.code);
    } else {
        char *body = strndup((const char *)m.cmd.body, m.cmd.body_len);
        const char *want =
            strstr(step_name, "after-update") ? "productEnvName=corpus\n" : "productEnvName=";
        ok = body && strstr(body, want) != NULL;
        if (!ok)
            snprintf(why, whylen, "body does not contain \"%s\"", want);
        free(body);
    }
    ns_cmd_msg_free(&m);
    return ok;
}

/* Runs one scenario file; returns the number of (c) steps. */
static int run_scenario(const nstest_server_t *srv, const char *scenario, stats_t *total)
{
    char rel[256];
    snprintf(rel, sizeof rel, "vectors/scenarios/%s.jsonl", scenario);
    size_t flen = 0;
    uint8_t *file = nstest_fixture(rel, &flen);
    conn_slot_t slots[MAX_CONNS];
    memset(slots, 0, sizeof slots);
    stats_t st = {0};
    int64_t t0 = nstest_mono_ms();

    char *save = NULL;
    char *text = strndup((const char *)file, flen);
    assert_non_null(text);
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '\0')
            continue;
        cJSON *o = cJSON_Parse(line);
        assert_non_null(o);
        int step = cJSON_GetObjectItemCaseSensitive(o, "step")->valueint;
        const char *name = json_str(o, "name");
        const char *label = json_str(o, "conn");
        const char *req_hex = json_str(o, "request_hex");
        const char *rsp_hex = json_str(o, "response_hex");
        bool variable = json_bool(o, "variable"), oneway = json_bool(o, "oneway");
        bool do_poll = json_bool(o, "poll"), close_after = json_bool(o, "close_after");
        assert_non_null(name);
        assert_non_null(label);
        assert_non_null(req_hex);
        size_t nreq = 0, nexp = 0;
        uint8_t *req = nstest_hex_decode(req_hex, &nreq);
        uint8_t *exp = rsp_hex ? nstest_hex_decode(rsp_hex, &nexp) : NULL;
        assert_non_null(req);

        ns_client_t *c = conn_get(slots, srv, label);
        assert_int_equal(ns_client_send_raw(c, req, nreq), NS_OK);
        uint8_t *act = NULL;
        size_t nact = 0;
        char why[2048] = "";
        if (oneway) {
            st.oneway++;
        } else if (variable) {
            st.variable++;
            int rc = read_frame(c, RESPONSE_TIMEOUT_MS, &act, &nact);
            if (rc != NS_OK)
                act = NULL;
            if (!check_variable(name, act, nact, why, sizeof why)) {
                st.different++;
                printf("DIFFERENT %s step %d (%s, variable): %s\n", scenario, step, name, why);
            }
        } else {
            assert_non_null(exp);
            st.compared++;
            int64_t poll_deadline = nstest_mono_ms() + POLL_LIMIT_MS;
            nstest_match_t m = NSTEST_DIFFERENT;
            for (;;) {
                free(act);
                act = NULL;
                int rc = read_frame(c, RESPONSE_TIMEOUT_MS, &act, &nact);
                if (rc != NS_OK) {
                    snprintf(why, sizeof why, "no response: %s", ns_strerror(rc));
                    act = NULL;
                    nact = 0;
                    break;
                }
                m = nstest_frame_compare(exp, nexp, act, nact, why, sizeof why);
                if (m != NSTEST_DIFFERENT || !do_poll || nstest_mono_ms() >= poll_deadline)
                    break;
                nstest_sleep_ms(POLL_INTERVAL_MS);
                assert_int_equal(ns_client_send_raw(c, req, nreq), NS_OK);
                st.polled++;
            }
            if (m == NSTEST_SAME_BYTES) {
                st.same++;
            } else if (m == NSTEST_EQUIVALENT) {
                st.equiv++;
                printf("    equivalent: %s step %d (%s): %s\n", scenario, step, name,
                       equiv_note(exp, nexp, act, nact));
            } else {
                st.different++;
                show_diff(scenario, step, name, why, exp, nexp, act, nact);
            }
        }
        if (close_after)
            conn_close(slots, label);
        free(act);
        free(req);
        free(exp);
        cJSON_Delete(o);
    }
    conn_close_all(slots);
    free(text);
    free(file);

    printf("  %-24s %3d compared: %3d byte-identical, %3d equivalent, %d different "
           "(+%d variable, %d one-way; %d poll resends) %lld ms\n",
           scenario, st.compared, st.same, st.equiv, st.different, st.variable, st.oneway,
           st.polled, (long long)(nstest_mono_ms() - t0));
    fflush(stdout);
    total->compared += st.compared;
    total->same += st.same;
    total->equiv += st.equiv;
    total->different += st.different;
    total->variable += st.variable;
    total->oneway += st.oneway;
    total->polled += st.polled;
    return st.different;
}

static void print_summary(const char *what, const stats_t *s)
{
    double n = s->compared ? s->compared : 1;
    printf("%s: %d compared steps: byte-identical %.1f%% (%d), equivalent-or-better %.1f%% (%d), "
           "different %d; %d variable steps checked, %d one-way\n",
           what, s->compared, 100.0 * s->same / n, s->same, 100.0 * (s->same + s->equiv) / n,
           s->same + s->equiv, s->different, s->variable, s->oneway);
}

/* All nine in the README's order against ONE fresh server. */
static void test_all_on_one_server(void **state)
{
    fx_t *fx = *state;
    memset(&g_shared, 0, sizeof g_shared);
    printf("replay: all scenarios on one server\n");
    int different = 0;
    for (size_t i = 0; i < N_SCENARIOS; i++)
        different += run_scenario(&fx->base.srv, k_scenarios[i], &g_shared);
    print_summary("replay (one server)", &g_shared);
    assert_int_equal(g_shared.compared + g_shared.variable + g_shared.oneway, 170);
    assert_int_equal(different, 0);
}

/* One scenario on its own fresh server. */
static void test_alone(void **state)
{
    fx_t *fx = *state;
    printf("replay: %s alone\n", fx->scenario);
    assert_int_equal(run_scenario(&fx->base.srv, fx->scenario, &g_alone), 0);
}

#define ALONE(i)                                                                                   \
    cmocka_unit_test_prestate_setup_teardown(test_alone, setup, nstest_fx_teardown,                \
                                             (void *)k_scenarios[i])

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate_setup_teardown(test_all_on_one_server, setup, nstest_fx_teardown,
                                                 NULL),
        ALONE(0),
        ALONE(1),
        ALONE(2),
        ALONE(3),
        ALONE(4),
        ALONE(5),
        ALONE(6),
        ALONE(7),
        ALONE(8),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    print_summary("replay (one server)", &g_shared);
    print_summary("replay (each alone)", &g_alone);
    return rc;
}
