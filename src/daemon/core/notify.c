/* notify.c - NOTIFY_MIN_BROKER_ID_CHANGE (905) to the brokers of a group
 * (notify.h).
 *
 * Each recipient is one job: parse its address, connect (timer armed with
 * the connect timeout), write the one-way frame (timer re-armed with the
 * write deadline), close. At most NS_NOTIFY_MAX_INFLIGHT jobs hold a socket;
 * the rest wait in FIFO order, at most NS_NOTIFY_MAX_QUEUED of them, one per
 * (group, recipient): a newer change of the group replaces what a waiting
 * job sends. A job leaves the queue when it is still a member's (the
 * owner's check) and the start credit allows: a token bucket refilled at
 * NS_NOTIFY_STARTS_PER_S, NS_NOTIFY_STARTS_BURST at most, in thousandths
 * of a start; when it is empty the pace timer starts the next one later. A
 * job ends exactly once (job_end), which logs its outcome and closes its two
 * handles; it is freed when both close callbacks have run. Everything runs on
 * the main loop: nothing here waits. */
#define _GNU_SOURCE /* asprintf */
#include "core/notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "ns/remoting.h"

typedef struct job job_t;

struct job {
    ns_notifier_t *n;
    job_t *next; /* queue link, then in-flight list */
    job_t *prev; /* in-flight list */
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_connect_t connect_req;
    uv_write_t write_req;
    ns_buf_t frame;
    char *group;      /* the broker group the change is of */
    char *to;         /* recipient address */
    char *what;       /* the notification, for the log line */
    int open_handles; /* handles still to close */
    bool ended;
    bool connected;
};

#define CREDIT_PER_START 1000 /* the bucket counts thousandths of a start */

struct ns_notifier {
    uv_loop_t *loop;
    job_t *head, *tail; /* waiting to start */
    job_t *live;        /* started, not yet freed */
    size_t queued, inflight;
    int32_t next_opaque;
    bool stopped;
    ns_notify_member_fn is_member;
    void *member_ctx;
    uv_timer_t pace; /* starts the next job once the credit allows */
    bool pace_init;
    uint64_t credit, credit_ms; /* start credit, and when it was last refilled */
    /* notifications not tried, for the summary line (at most one a second) */
    uint64_t superseded, over_cap, full, summary_ms;
};

int ns_notify_encode(const ns_minid_change_t *c, int32_t opaque, ns_buf_t *out)
{
    char id[24];
    ns_ext_field_t ext[4];
    size_t n = 0;
    snprintf(id, sizeof id, "%lld", (long long)c->min_broker_id);
    ext[n++] = ns_ext_field("minBrokerId", id);
    if (c->min_broker_addr)
        ext[n++] = ns_ext_field("minBrokerAddr", c->min_broker_addr);
    if (c->offline_broker_addr)
        ext[n++] = ns_ext_field("offlineBrokerAddr", c->offline_broker_addr);
    if (c->ha_broker_addr)
        ext[n++] = ns_ext_field("haBrokerAddr", c->ha_broker_addr);
    ns_cmd_t cmd;
    ns_cmd_request_init(&cmd, NS_REQ_NOTIFY_MIN_BROKER_ID_CHANGE, ext, n);
    cmd.opaque = opaque;
    cmd.flag = NS_FLAG_ONEWAY;
    return ns_remoting_encode(out, &cmd);
}

/* ---- jobs ---- */

int ns_notifier_new(uv_loop_t *loop, ns_notifier_t **out)
{
    ns_notifier_t *n = calloc(1, sizeof *n);
    if (n == NULL)
        return NS_ENOMEM;
    n->loop = loop;
    n->next_opaque = 1;
    n->credit = (uint64_t)NS_NOTIFY_STARTS_BURST * CREDIT_PER_START;
    n->credit_ms = uv_now(loop);
    *out = n;
    return NS_OK;
}

void ns_notifier_set_member_check(ns_notifier_t *n, ns_notify_member_fn fn, void *ctx)
{
    n->is_member = fn;
    n->member_ctx = ctx;
}

static void job_free(job_t *j)
{
    ns_buf_free(&j->frame);
    free(j->group);
    free(j->to);
    free(j->what);
    free(j);
}

static void start_next(ns_notifier_t *n);

static void on_handle_closed(uv_handle_t *h)
{
    job_t *j = h->data;
    if (--j->open_handles > 0)
        return;
    ns_notifier_t *n = j->n;
    if (j->prev)
        j->prev->next = j->next;
    else
        n->live = j->next;
    if (j->next)
        j->next->prev = j->prev;
    job_free(j);
    n->inflight--;
    start_next(n);
}

/* Logs the job's one line (why NULL = delivered) and closes its handles. */
static void job_end(job_t *j, const char *why, int uv_err)
{
    if (j->ended)
        return;
    j->ended = true;
    if (why == NULL)
        NS_LOG_INFO("NOTIFY_MIN_BROKER_ID_CHANGE to %s sent: %s", j->to, j->what);
    else
        NS_LOG_WARN("NOTIFY_MIN_BROKER_ID_CHANGE to %s not sent (%s%s%s): %s", j->to, why,
                    uv_err ? ": " : "", uv_err ? uv_strerror(uv_err) : "", j->what);
    uv_timer_stop(&j->timer);
    uv_close((uv_handle_t *)&j->timer, on_handle_closed);
    uv_close((uv_handle_t *)&j->tcp, on_handle_closed);
}

static void on_timeout(uv_timer_t *t)
{
    job_t *j = t->data;
    job_end(j, j->connected ? "write deadline passed" : "connect timed out", 0);
}

static void on_write(uv_write_t *req, int status)
{
    job_t *j = req->data;
    job_end(j, status == 0 ? NULL : "write failed", status);
}

static void on_connect(uv_connect_t *req, int status)
{
    job_t *j = req->data;
    if (j->ended)
        return;
    if (status < 0) {
        job_end(j, "connect failed", status);
        return;
    }
    j->connected = true;
    uv_timer_start(&j->timer, on_timeout, NS_NOTIFY_WRITE_DEADLINE_MS, 0);
    uv_buf_t b = uv_buf_init((char *)j->frame.data, (unsigned)j->frame.len);
    j->write_req.data = j;
    int rc = uv_write(&j->write_req, (uv_stream_t *)&j->tcp, &b, 1, on_write);
    if (rc != 0)
        job_end(j, "write failed", rc);
}

/* "1.2.3.4:10911" or "[::1]:10911" -> sockaddr; false when not numeric. */
static bool parse_addr(const char *s, struct sockaddr_storage *sa)
{
    const char *colon = strrchr(s, ':');
    if (colon == NULL || colon == s || colon[1] == 0)
        return false;
    char host[64];
    size_t hl = (size_t)(colon - s);
    if (s[0] == '[' && hl >= 2 && s[hl - 1] == ']') {
        s++;
        hl -= 2;
    }
    if (hl >= sizeof host)
        return false;
    memcpy(host, s, hl);
    host[hl] = 0;
    int64_t port;
    if (ns_parse_i64(colon + 1, strlen(colon + 1), &port) != NS_OK || port <= 0 || port > 65535)
        return false;
    return uv_ip4_addr(host, (int)port, (struct sockaddr_in *)sa) == 0 ||
           uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)sa) == 0;
}

static void job_start(job_t *j)
{
    ns_notifier_t *n = j->n;
    struct sockaddr_storage sa;
    n->inflight++;
    j->prev = NULL;
    j->next = n->live;
    if (n->live)
        n->live->prev = j;
    n->live = j;
    uv_tcp_init(n->loop, &j->tcp);
    uv_timer_init(n->loop, &j->timer);
    j->tcp.data = j->timer.data = j->connect_req.data = j;
    j->open_handles = 2;
    if (!parse_addr(j->to, &sa)) {
        job_end(j, "not an IP address and port", 0);
        return;
    }
    uv_timer_start(&j->timer, on_timeout, NS_NOTIFY_CONNECT_TIMEOUT_MS, 0);
    int rc = uv_tcp_connect(&j->connect_req, &j->tcp, (const struct sockaddr *)&sa, on_connect);
    if (rc != 0)
        job_end(j, "connect failed", rc);
}

static void drop(const char *to, const char *what, const char *why)
{
    NS_LOG_WARN("NOTIFY_MIN_BROKER_ID_CHANGE to %s not sent (%s): %s", to, why,
                what ? what : "(out of memory)");
}

/* One line for the notifications that were never tried, at most one a
 * second (a flood of changes must not become a flood of log lines). */
static void summary(ns_notifier_t *n)
{
    uint64_t now = uv_now(n->loop);
    if ((n->superseded | n->over_cap | n->full) == 0 ||
        (n->summary_ms != 0 && now - n->summary_ms < 1000))
        return;
    NS_LOG_WARN("NOTIFY_MIN_BROKER_ID_CHANGE: %llu superseded by a newer change of their group "
                "before they were sent, %llu recipients past the %d of a change, %llu dropped "
                "with %d waiting",
                (unsigned long long)n->superseded, (unsigned long long)n->over_cap,
                NS_NOTIFY_MAX_PER_CHANGE, (unsigned long long)n->full, NS_NOTIFY_MAX_QUEUED);
    n->superseded = n->over_cap = n->full = 0;
    n->summary_ms = now;
}

/* Takes the credit of one start when the bucket holds it. */
static bool take_credit(ns_notifier_t *n)
{
    uint64_t now = uv_now(n->loop), cap = (uint64_t)NS_NOTIFY_STARTS_BURST * CREDIT_PER_START;
    n->credit += (now - n->credit_ms) * NS_NOTIFY_STARTS_PER_S;
    if (n->credit > cap)
        n->credit = cap;
    n->credit_ms = now;
    if (n->credit < CREDIT_PER_START)
        return false;
    n->credit -= CREDIT_PER_START;
    return true;
}

static void pace_cb(uv_timer_t *t)
{
    start_next(t->data);
}

/* Arms the pace timer for when the bucket holds one start again. */
static void pace_later(ns_notifier_t *n)
{
    if (!n->pace_init) {
        uv_timer_init(n->loop, &n->pace);
        n->pace.data = n;
        n->pace_init = true;
    }
    if (uv_is_active((uv_handle_t *)&n->pace))
        return;
    uint64_t missing = CREDIT_PER_START - n->credit;
    uv_timer_start(&n->pace, pace_cb,
                   (missing + NS_NOTIFY_STARTS_PER_S - 1) / NS_NOTIFY_STARTS_PER_S, 0);
}

static job_t *pop(ns_notifier_t *n)
{
    job_t *j = n->head;
    n->head = j->next;
    if (n->head == NULL)
        n->tail = NULL;
    n->queued--;
    return j;
}

static void start_next(ns_notifier_t *n)
{
    while (!n->stopped && n->head && n->inflight < NS_NOTIFY_MAX_INFLIGHT) {
        job_t *j = n->head;
        if (n->is_member && !n->is_member(n->member_ctx, j->group, j->to)) {
            drop(j->to, j->what, "no longer a broker of that group");
            job_free(pop(n));
            continue;
        }
        if (!take_credit(n)) {
            pace_later(n);
            break;
        }
        job_start(pop(n));
    }
    summary(n);
}

static char *describe(const ns_minid_change_t *c)
{
    char *s = NULL;
    int len = asprintf(&s,
                       "group %s minBrokerId=%lld minBrokerAddr=%s offlineBrokerAddr=%s "
                       "haBrokerAddr=%s",
                       c->broker_name, (long long)c->min_broker_id,
                       c->min_broker_addr ? c->min_broker_addr : "null",
                       c->offline_broker_addr ? c->offline_broker_addr : "null",
                       c->ha_broker_addr ? c->ha_broker_addr : "null");
    return len < 0 ? NULL : s;
}

/* The waiting job of group for recipient to, or NULL. */
static job_t *waiting(ns_notifier_t *n, const char *group, const char *to)
{
    for (job_t *j = n->head; j; j = j->next)
        if (strcmp(j->to, to) == 0 && strcmp(j->group, group) == 0)
            return j;
    return NULL;
}

/* Makes the waiting job j send c instead (what: c's description). */
static void supersede(ns_notifier_t *n, job_t *j, const ns_minid_change_t *c, const char *what)
{
    char *w = what ? strdup(what) : NULL;
    ns_buf_t frame = NS_BUF_INIT;
    if (w == NULL || ns_notify_encode(c, n->next_opaque++, &frame) != NS_OK) {
        free(w); /* out of memory: the older notification goes out */
        ns_buf_free(&frame);
        return;
    }
    free(j->what);
    j->what = w;
    ns_buf_free(&j->frame);
    j->frame = frame;
    n->superseded++;
}

void ns_notifier_send(ns_notifier_t *n, ns_minid_change_t *c)
{
    char *what = describe(c);
    for (size_t i = 0; i < c->to.n; i++) {
        job_t *j = NULL;
        if (n->stopped) {
            drop(c->to.v[i], what, "shutting down");
            continue;
        }
        if (i >= NS_NOTIFY_MAX_PER_CHANGE) { /* the members with the smallest ids come first */
            n->over_cap++;
            continue;
        }
        if ((j = waiting(n, c->broker_name, c->to.v[i])) != NULL) {
            supersede(n, j, c, what);
            continue;
        }
        if (n->queued >= NS_NOTIFY_MAX_QUEUED) {
            n->full++;
            continue;
        }
        j = calloc(1, sizeof *j);
        if (j == NULL || what == NULL || (j->what = strdup(what)) == NULL ||
            (j->to = strdup(c->to.v[i])) == NULL || (j->group = strdup(c->broker_name)) == NULL ||
            ns_notify_encode(c, n->next_opaque++, &j->frame) != NS_OK) {
            if (j)
                job_free(j);
            drop(c->to.v[i], what, "out of memory");
            continue;
        }
        j->n = n;
        if (n->tail)
            n->tail->next = j;
        else
            n->head = j;
        n->tail = j;
        n->queued++;
    }
    free(what);
    ns_minid_change_free(c);
    start_next(n);
}

void ns_notifier_stop(ns_notifier_t *n)
{
    if (n == NULL || n->stopped)
        return;
    n->stopped = true;
    while (n->head) {
        job_t *j = n->head;
        n->head = j->next;
        drop(j->to, j->what, "shutting down");
        job_free(j);
    }
    n->tail = NULL;
    n->queued = 0;
    n->summary_ms = 0;
    summary(n);
    if (n->pace_init)
        uv_close((uv_handle_t *)&n->pace, NULL);
    for (job_t *j = n->live; j; j = j->next)
        job_end(j, "shutting down", 0); /* frees nothing yet: close callbacks do */
}

void ns_notifier_free(ns_notifier_t *n)
{
    free(n);
}
