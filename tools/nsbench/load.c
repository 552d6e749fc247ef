/* load.c - the client engine (nsbench.h).
 *
 * One libuv loop drives every connection:
 *   readers  (--conns)          GET_ROUTEINFO_BY_TOPIC, `depth` in flight each
 *   brokers  (--setup-brokers)  one connection per setup broker: registered
 *                               before measuring and kept open for the whole
 *                               run (closing it unregisters the broker); the
 *                               load in heartbeat mode
 *   regs     (--reg-brokers)    brokers with --reg-topics topics: re-register
 *                               on a timer (mixed) or back to back (register)
 *
 * Phases: CONNECT (at most connect_parallel connects at a time) -> SETUP
 * (every broker registers once, all must succeed) -> for each depth:
 * WARMUP -> MEASURE -> DRAIN (stop issuing, wait for what is in flight)
 * -> report -> HOLD (optional: keep the brokers' connections open) -> close.
 *
 * Requests are matched by opaque: each connection has a power-of-two table
 * of slots; opaque = seq * nslots + slot, so the slot is opaque & (nslots-1)
 * and a response whose opaque is not in flight is a mismatch. A latency is
 * the time from building the request to the read callback that delivered
 * its response (one clock reading per read callback). Only requests issued
 * during MEASURE count. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <uv.h>

#include <cjson/cJSON.h>

#include "nsbench.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/remoting.h"

enum { ROLE_READER, ROLE_BROKER, ROLE_REG };
enum { K_ROUTE, K_HB, K_REREG, K_REG_NEW, K_REG_SAME, K_SETUP, K_N };
static const char *const kind_name[K_N] = {
    "route", "heartbeat", "reregister_unchanged", "register_changed", "register_unchanged",
    "setup"};
enum { PH_CONNECT, PH_SETUP, PH_WARMUP, PH_MEASURE, PH_DRAIN, PH_HOLD, PH_CLOSING };

#define OPAQUE_SENTINEL 1234567890
#define MAX_ERR_CODES 6
#define KEEPALIVE_MS 20000

/* A request frame with a hole for the opaque. */
typedef struct {
    ns_buf_t pre;  /* header bytes before the opaque digits */
    ns_buf_t post; /* header bytes after them */
    ns_buf_t body;
} tmpl_t;

typedef struct {
    uint64_t t_send;
    int32_t opaque;
    uint32_t topic;
    uint8_t kind;
    bool used, measured, during_reg;
} slot_t;

typedef struct bench bench_t;

typedef struct {
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_write_t wreq;
    uv_timer_t timer;
    bench_t *b;
    uint32_t idx, broker;
    uint8_t role;
    bool started, connected, dead, writing, timer_init, closed;
    ns_buf_t rbuf, out, wbuf;
    slot_t *slots;
    uint32_t nslots, *freelist, nfree, seq, inflight;
    int cur_body;
} bconn_t;

typedef struct {
    uint32_t depth;
    double secs;
    uint64_t requests;
    double qps;
    lat_summary_t lat[K_N];
    lat_summary_t during_reg, outside_reg;
    uint64_t n_kind[K_N];
    uint64_t errors, mismatches, unknown_opaque, lost, conn_errors, skipped_ticks;
    int err_code[MAX_ERR_CODES];
    uint64_t err_code_n[MAX_ERR_CODES];
    double avg_body;
    bool have_server;
    double cpu_us_per_req_stat, cpu_us_per_req_sched, server_cpu_util;
    uint64_t write_bytes, wchar;
    bool have_io, have_db, db_changed;
    double client_cpu_util;   /* this process, share of one core */
    double server_core_other; /* share of the server's core used by anything else, -1 unknown */
    double client_core_other;
    uint64_t db_size0, db_size1, hwm_kb, rss_kb, rss_anon_kb, rss_file_kb, map_bytes;
} run_result_t;

struct bench {
    const nsb_opts_t *o;
    uv_loop_t *loop;
    struct sockaddr_storage addr;
    bconn_t *conns;
    uint32_t n_conns, n_readers, n_brokers, n_broker_conns, n_regs;
    uint32_t next_connect, connecting, connected_n;
    int phase;
    size_t depth_i;
    uint32_t depth;
    uint64_t t_setup_start, t_measure_start, t_measure_stop, t_last_done;
    double setup_ms;
    uint32_t setup_pending;
    uint64_t measured_issued;
    bool end_requested;
    /* per-run counters */
    uint64_t n_kind[K_N];
    uint64_t errors, mismatches, unknown_opaque, lost, conn_errors, skipped_ticks;
    int err_code[MAX_ERR_CODES];
    uint64_t err_code_n[MAX_ERR_CODES];
    uint64_t body_bytes, body_n;
    uint32_t reg_inflight; /* mixed: registrations in flight (changed or not) */
    hist_t *h[K_N];
    hist_t *h_during, *h_outside;
    rng_t rng;
    dist_t dist;
    char *topic_names; /* topics * TOPIC_STRIDE */
    uint8_t *topic_lens;
    char **patterns; /* "brokerName":"<primary>" per setup broker */
    size_t *pattern_lens;
    tmpl_t *setup_t, *hb_t; /* per setup broker */
    tmpl_t *reg_t;          /* per reg broker: n_versions bodies, [r * n_versions + v] */
    uint32_t n_versions;
    tmpl_t *reg_hb_t;
    uv_timer_t phase_timer, keepalive_timer, rate_timer;
    double tokens; /* --rate: requests that may be issued now */
    uint64_t t_tokens;
    bool timers_init;
    ns_buf_t scratch;
    bool failed;
    char fail_msg[256];
    proc_sample_t ps0, ps1;
    cpu_sample_t cs0[2], cs1[2]; /* server core, client core */
    uint64_t self0, self1;
    run_result_t runs[MAX_DEPTHS];
    size_t n_runs;
    uint32_t topics;
};

#define TOPIC_STRIDE 24

static void fail(bench_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refill(bench_t *b);
static void close_all(bench_t *b);
static void flush(bconn_t *c);
static void check_drained(bench_t *b);
static void end_measure(bench_t *b);

/* ---- templates ---- */

static void tmpl_free(tmpl_t *t)
{
    ns_buf_free(&t->pre);
    ns_buf_free(&t->post);
    ns_buf_free(&t->body);
}

/* frame was encoded with opaque OPAQUE_SENTINEL. */
static int tmpl_from_frame(tmpl_t *t, const ns_buf_t *frame)
{
    static const char key[] = "\"opaque\":1234567890";
    memset(t, 0, sizeof *t);
    if (frame->len < 8)
        return NS_EINVAL;
    uint32_t hlen = ns_be32_read(frame->data + 4) & 0xFFFFFFu;
    const uint8_t *h = frame->data + 8;
    const uint8_t *p = memmem(h, hlen, key, sizeof key - 1);
    if (p == NULL)
        return NS_EINVAL;
    size_t digits_at = (size_t)(p - h) + 9;
    int rc = ns_buf_append(&t->pre, h, digits_at);
    rc = rc ? rc : ns_buf_append(&t->post, h + digits_at + 10, hlen - digits_at - 10);
    rc = rc ? rc : ns_buf_append(&t->body, h + hlen, frame->len - 8 - hlen);
    return rc;
}

static int tmpl_emit(ns_buf_t *out, const tmpl_t *t, int32_t opaque)
{
    char num[16];
    int nl = snprintf(num, sizeof num, "%d", (int)opaque);
    size_t hlen = t->pre.len + (size_t)nl + t->post.len;
    if (ns_buf_reserve(out, 8 + hlen + t->body.len + 1) != NS_OK)
        return NS_ENOMEM;
    uint8_t *p = out->data + out->len;
    ns_be32_write(p, (uint32_t)(4 + hlen + t->body.len));
    ns_be32_write(p + 4, (uint32_t)hlen);
    p += 8;
    memcpy(p, t->pre.data, t->pre.len);
    p += t->pre.len;
    memcpy(p, num, (size_t)nl);
    p += nl;
    if (t->post.len)
        memcpy(p, t->post.data, t->post.len);
    p += t->post.len;
    if (t->body.len)
        memcpy(p, t->body.data, t->body.len);
    out->len += 8 + hlen + t->body.len;
    out->data[out->len] = 0;
    return NS_OK;
}

/* ---- helpers ---- */

static void fail(bench_t *b, const char *fmt, ...)
{
    if (!b->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->fail_msg, sizeof b->fail_msg, fmt, ap);
        va_end(ap);
        b->failed = true;
        fprintf(stderr, "nsbench: %s\n", b->fail_msg);
    }
    close_all(b);
}

static bool is_load(const bench_t *b, const bconn_t *c)
{
    switch (b->o->mode) {
    case MODE_SETUP:
        return false;
    case MODE_ROUTE:
    case MODE_MIXED:
        return c->role == ROLE_READER;
    case MODE_HEARTBEAT:
        return c->role == ROLE_BROKER;
    case MODE_REGISTER:
        return c->role == ROLE_REG;
    }
    return false;
}

static int main_kind(const bench_t *b)
{
    switch (b->o->mode) {
    case MODE_HEARTBEAT:
        return b->o->hb_kind == HB_REREGISTER ? K_REREG : K_HB;
    case MODE_REGISTER:
        return K_REG_NEW;
    default:
        return K_ROUTE;
    }
}

static void note_error_code(bench_t *b, int code)
{
    b->errors++;
    for (int i = 0; i < MAX_ERR_CODES; i++) {
        if (b->err_code_n[i] && b->err_code[i] == code) {
            b->err_code_n[i]++;
            return;
        }
        if (b->err_code_n[i] == 0) {
            b->err_code[i] = code;
            b->err_code_n[i] = 1;
            return;
        }
    }
}

/* ---- slots ---- */

static slot_t *slot_take(bconn_t *c, int32_t *opaque)
{
    if (c->nfree == 0)
        return NULL;
    uint32_t si = c->freelist[--c->nfree];
    slot_t *s = &c->slots[si];
    c->seq++;
    *opaque = (int32_t)(((uint32_t)c->seq * c->nslots + si) & 0x7FFFFFFFu);
    s->opaque = *opaque;
    s->used = true;
    c->inflight++;
    return s;
}

static void slot_give(bconn_t *c, slot_t *s)
{
    s->used = false;
    c->freelist[c->nfree++] = (uint32_t)(s - c->slots);
    c->inflight--;
}

/* ---- issuing ---- */

static bool phase_issues(const bench_t *b)
{
    return (b->phase == PH_WARMUP || b->phase == PH_MEASURE) && !b->end_requested;
}

/* May a load connection issue one more request (--rate applies to these only)? */
static bool can_issue(bench_t *b)
{
    return phase_issues(b) && (b->o->rate <= 0 || b->tokens >= 1.0);
}

static void after_issue(bench_t *b, slot_t *s, uint8_t kind)
{
    s->kind = kind;
    s->measured = b->phase == PH_MEASURE;
    s->during_reg = b->reg_inflight > 0;
    s->t_send = uv_hrtime();
    if (b->o->rate > 0 && kind == main_kind(b))
        b->tokens -= 1.0;
    if (s->measured) {
        b->measured_issued++;
        if (b->o->count && b->measured_issued >= b->o->count)
            b->end_requested = true;
    }
}

static const tmpl_t *reg_body(const bench_t *b, const bconn_t *c)
{
    return &b->reg_t[(size_t)c->broker * b->n_versions + (size_t)c->cur_body];
}

static int issue(bconn_t *c, uint8_t kind)
{
    bench_t *b = c->b;
    int32_t op;
    slot_t *s = slot_take(c, &op);
    if (s == NULL)
        return NS_EAGAIN;
    int rc = NS_OK;
    switch (kind) {
    case K_ROUTE: {
        uint32_t t = dist_next(&b->dist, &b->rng);
        s->topic = t;
        rc = topo_route_frame(&c->out, b->topic_names + (size_t)t * TOPIC_STRIDE, b->topic_lens[t],
                              op);
        break;
    }
    case K_HB:
        rc = tmpl_emit(&c->out, &b->hb_t[c->broker], op);
        break;
    case K_REREG:
        rc = tmpl_emit(&c->out, &b->setup_t[c->broker], op);
        break;
    case K_SETUP:
        rc = c->role == ROLE_REG ? tmpl_emit(&c->out, reg_body(b, c), op)
                                 : tmpl_emit(&c->out, &b->setup_t[c->broker], op);
        break;
    case K_REG_NEW: /* the next DataVersion (wraps around after n_versions) */
        c->cur_body = (c->cur_body + 1) % (int)b->n_versions;
        rc = tmpl_emit(&c->out, reg_body(b, c), op);
        break;
    case K_REG_SAME:
        rc = tmpl_emit(&c->out, reg_body(b, c), op);
        break;
    }
    if (rc != NS_OK) {
        slot_give(c, s);
        return rc;
    }
    if (kind == K_SETUP) {
        s->kind = K_SETUP;
        s->measured = false;
        s->t_send = uv_hrtime();
    } else {
        after_issue(b, s, kind);
    }
    if ((kind == K_REG_NEW || kind == K_REG_SAME) && b->o->mode == MODE_MIXED)
        b->reg_inflight++;
    return NS_OK;
}

/* Tops up a load connection to `depth` requests in flight (no write). */
static void pump(bconn_t *c)
{
    bench_t *b = c->b;
    if (c->dead || !c->connected || !is_load(b, c))
        return;
    int kind = main_kind(b);
    while (c->inflight < b->depth && can_issue(b))
        if (issue(c, (uint8_t)kind) != NS_OK)
            break;
}

static void pump_all(bench_t *b)
{
    for (uint32_t i = 0; i < b->n_conns; i++) {
        pump(&b->conns[i]);
        flush(&b->conns[i]);
    }
    if (b->end_requested && b->phase == PH_MEASURE)
        end_measure(b);
}

/* ---- writing ---- */

static void conn_dead(bconn_t *c, const char *why);

static void write_cb(uv_write_t *req, int status)
{
    bconn_t *c = req->data;
    c->writing = false;
    ns_buf_reset(&c->wbuf);
    if (status < 0) {
        conn_dead(c, uv_strerror(status));
        return;
    }
    flush(c);
}

static void flush(bconn_t *c)
{
    if (c->dead || c->writing || !c->connected || c->out.len == 0)
        return;
    ns_buf_t t = c->wbuf;
    c->wbuf = c->out;
    c->out = t;
    ns_buf_reset(&c->out);
    uv_buf_t ub = uv_buf_init((char *)c->wbuf.data, (unsigned)c->wbuf.len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &ub, 1);
    if (n == (int)c->wbuf.len) {
        ns_buf_reset(&c->wbuf);
        return;
    }
    if (n < 0 && n != UV_EAGAIN) {
        conn_dead(c, uv_strerror(n));
        return;
    }
    if (n > 0) {
        ub.base += n;
        ub.len -= (unsigned)n;
    }
    c->writing = true;
    c->wreq.data = c;
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &ub, 1, write_cb) != 0) {
        c->writing = false;
        conn_dead(c, "uv_write failed");
    }
}

/* ---- phases ---- */

static void sample_cpus(bench_t *b, cpu_sample_t *cs, uint64_t *self)
{
    cpu_sample(b->o->server_cpu, &cs[0]);
    cpu_sample(b->o->client_cpu, &cs[1]);
    *self = self_cpu_ns();
}

static void sample_server(bench_t *b, proc_sample_t *ps)
{
    if (b->o->server_pid > 0 || b->o->data_dir)
        proc_sample(b->o->server_pid, b->o->data_dir, ps);
    else
        memset(ps, 0, sizeof *ps);
}

static void reset_counters(bench_t *b)
{
    memset(b->n_kind, 0, sizeof b->n_kind);
    b->errors = b->mismatches = b->unknown_opaque = b->lost = b->conn_errors = 0;
    b->skipped_ticks = 0;
    memset(b->err_code_n, 0, sizeof b->err_code_n);
    b->body_bytes = b->body_n = 0;
    for (int k = 0; k < K_N; k++)
        hist_reset(b->h[k]);
    hist_reset(b->h_during);
    hist_reset(b->h_outside);
    b->measured_issued = 0;
    b->end_requested = false;
}

static void phase_timer_cb(uv_timer_t *t);

static void reg_tick_cb(uv_timer_t *t)
{
    bconn_t *c = t->data;
    bench_t *b = c->b;
    if (c->dead || !c->connected || !phase_issues(b))
        return;
    if (c->inflight > 0) {
        if (b->phase == PH_MEASURE)
            b->skipped_ticks++;
        return;
    }
    bool changed = rng_unit(&b->rng) < b->o->reg_change_fraction;
    if (issue(c, changed ? K_REG_NEW : K_REG_SAME) == NS_OK)
        flush(c);
}

static void reg_timers(bench_t *b, bool on)
{
    if (b->o->mode != MODE_MIXED)
        return;
    uint32_t iv = b->o->reg_interval_ms ? b->o->reg_interval_ms : 1000;
    for (uint32_t i = 0; i < b->n_conns; i++) {
        bconn_t *c = &b->conns[i];
        if (c->role != ROLE_REG || c->dead || !c->timer_init)
            continue;
        if (on) /* staggered, so registrations are spread over the interval */
            uv_timer_start(&c->timer, reg_tick_cb, 1 + (uint64_t)iv * c->broker / b->n_regs, iv);
        else
            uv_timer_stop(&c->timer);
    }
}

static void begin_measure(bench_t *b)
{
    reset_counters(b);
    b->phase = PH_MEASURE;
    sample_server(b, &b->ps0);
    sample_cpus(b, b->cs0, &b->self0);
    b->t_measure_start = uv_hrtime();
    b->t_last_done = b->t_measure_start;
    if (b->o->duration_s > 0)
        uv_timer_start(&b->phase_timer, phase_timer_cb, (uint64_t)(b->o->duration_s * 1000), 0);
    else
        uv_timer_stop(&b->phase_timer);
}

static void finish_all(bench_t *b);

static void start_run(bench_t *b)
{
    if (b->o->mode == MODE_SETUP) { /* topology only: report and hold */
        finish_all(b);
        return;
    }
    b->depth = b->o->depths[b->depth_i];
    b->end_requested = false;
    if (b->o->warmup_s > 0) {
        b->phase = PH_WARMUP;
        uv_timer_start(&b->phase_timer, phase_timer_cb, (uint64_t)(b->o->warmup_s * 1000), 0);
    } else {
        begin_measure(b);
    }
    reg_timers(b, true);
    pump_all(b);
}

static void end_measure(bench_t *b)
{
    if (b->phase != PH_MEASURE)
        return;
    b->phase = PH_DRAIN;
    b->t_measure_stop = uv_hrtime();
    reg_timers(b, false);
    uv_timer_start(&b->phase_timer, phase_timer_cb, (uint64_t)b->o->drain_timeout_ms, 0);
    check_drained(b);
}

static void fill_result(bench_t *b, run_result_t *r)
{
    memset(r, 0, sizeof *r);
    r->depth = b->depth;
    uint64_t end = b->t_last_done > b->t_measure_stop ? b->t_last_done : b->t_measure_stop;
    int mk = main_kind(b);
    r->secs = (double)(end - b->t_measure_start) / 1e9;
    r->requests = b->n_kind[mk];
    r->qps = r->secs > 0 ? (double)r->requests / r->secs : 0;
    for (int k = 0; k < K_N; k++) {
        lat_summarize(b->h[k], &r->lat[k]);
        r->n_kind[k] = b->n_kind[k];
    }
    lat_summarize(b->h_during, &r->during_reg);
    lat_summarize(b->h_outside, &r->outside_reg);
    r->errors = b->errors;
    r->mismatches = b->mismatches;
    r->unknown_opaque = b->unknown_opaque;
    r->lost = b->lost;
    r->conn_errors = b->conn_errors;
    r->skipped_ticks = b->skipped_ticks;
    memcpy(r->err_code, b->err_code, sizeof r->err_code);
    memcpy(r->err_code_n, b->err_code_n, sizeof r->err_code_n);
    r->avg_body = b->body_n ? (double)b->body_bytes / (double)b->body_n : 0;
    proc_sample_t *p0 = &b->ps0, *p1 = &b->ps1;
    double wall_ns =
        (double)(b->t_last_done > b->t_measure_stop ? b->t_last_done : b->t_measure_stop) -
        (double)b->t_measure_start;
    r->client_cpu_util = wall_ns > 0 ? (double)(b->self1 - b->self0) / wall_ns : 0;
    r->server_core_other = r->client_core_other = -1;
    if (b->cs0[0].ok && b->cs1[0].ok && b->cs1[0].total_ns > b->cs0[0].total_ns) {
        double busy = (double)(b->cs1[0].busy_ns - b->cs0[0].busy_ns);
        double own = p0->ok && p1->ok ? (double)(p1->cpu_ns - p0->cpu_ns) : 0;
        double o = (busy - own) / (double)(b->cs1[0].total_ns - b->cs0[0].total_ns);
        r->server_core_other = o < 0 ? 0 : o;
    }
    if (b->cs0[1].ok && b->cs1[1].ok && b->cs1[1].total_ns > b->cs0[1].total_ns) {
        double busy = (double)(b->cs1[1].busy_ns - b->cs0[1].busy_ns);
        double o = (busy - (double)(b->self1 - b->self0)) /
                   (double)(b->cs1[1].total_ns - b->cs0[1].total_ns);
        r->client_core_other = o < 0 ? 0 : o;
    }
    uint64_t all = 0;
    for (int k = 0; k < K_N; k++)
        if (k != K_SETUP)
            all += b->n_kind[k];
    if (p0->ok && p1->ok) {
        long tck = sysconf(_SC_CLK_TCK);
        double cpu_s = (double)(p1->cpu_ticks - p0->cpu_ticks) / (double)(tck > 0 ? tck : 100);
        r->have_server = true;
        r->cpu_us_per_req_stat = all ? cpu_s * 1e6 / (double)all : 0;
        r->cpu_us_per_req_sched = all ? (double)(p1->cpu_ns - p0->cpu_ns) / 1e3 / (double)all : 0;
        r->server_cpu_util = r->secs > 0 ? (double)(p1->cpu_ns - p0->cpu_ns) / 1e9 / r->secs : 0;
        r->hwm_kb = p1->vm_hwm_kb;
        r->rss_kb = p1->vm_rss_kb;
        r->rss_anon_kb = p1->rss_anon_kb;
        r->rss_file_kb = p1->rss_file_kb;
        r->map_bytes = p1->db_map_bytes;
    }
    if (p0->have_io && p1->have_io) {
        r->have_io = true;
        r->write_bytes = p1->write_bytes - p0->write_bytes;
        r->wchar = p1->wchar - p0->wchar;
    }
    if (p0->have_db && p1->have_db) {
        r->have_db = true;
        r->db_changed = p0->db_size != p1->db_size || p0->db_mtime_ns != p1->db_mtime_ns;
        r->db_size0 = p0->db_size;
        r->db_size1 = p1->db_size;
    }
}

static void print_text(bench_t *b);
static void print_json(bench_t *b);

static void finish_all(bench_t *b)
{
    uv_timer_stop(&b->phase_timer);
    if (b->o->json)
        print_json(b);
    else
        print_text(b);
    fflush(stdout);
    if (b->o->hold_s > 0 && !b->failed) {
        b->phase = PH_HOLD;
        if (b->o->ready_file) {
            FILE *f = fopen(b->o->ready_file, "w");
            if (f) {
                fputs("ready\n", f);
                fclose(f);
            }
        }
        uv_timer_start(&b->phase_timer, phase_timer_cb, (uint64_t)(b->o->hold_s * 1000), 0);
        return;
    }
    close_all(b);
}

static void check_drained(bench_t *b)
{
    if (b->phase != PH_DRAIN)
        return;
    for (uint32_t i = 0; i < b->n_conns; i++)
        if (!b->conns[i].dead && b->conns[i].inflight > 0)
            return;
    sample_server(b, &b->ps1);
    sample_cpus(b, b->cs1, &b->self1);
    fill_result(b, &b->runs[b->n_runs++]);
    b->depth_i++;
    if (b->depth_i < b->o->n_depths && !b->failed)
        start_run(b);
    else
        finish_all(b);
}

static void phase_timer_cb(uv_timer_t *t)
{
    bench_t *b = t->data;
    switch (b->phase) {
    case PH_SETUP:
        fail(b, "setup timed out after %d ms (%u registrations unanswered)", b->o->setup_timeout_ms,
             b->setup_pending);
        break;
    case PH_WARMUP:
        begin_measure(b);
        break;
    case PH_MEASURE:
        end_measure(b);
        break;
    case PH_DRAIN:
        for (uint32_t i = 0; i < b->n_conns; i++) {
            bconn_t *c = &b->conns[i];
            b->lost += c->inflight;
        }
        fprintf(stderr, "nsbench: %llu request(s) unanswered %d ms after the run\n",
                (unsigned long long)b->lost, b->o->drain_timeout_ms);
        sample_server(b, &b->ps1);
        sample_cpus(b, b->cs1, &b->self1);
        fill_result(b, &b->runs[b->n_runs++]);
        b->failed = true;
        snprintf(b->fail_msg, sizeof b->fail_msg, "requests lost");
        finish_all(b);
        break;
    case PH_HOLD:
        close_all(b);
        break;
    default:
        break;
    }
}

/* ---- responses ---- */

static void setup_done(bench_t *b, bconn_t *c, int code)
{
    if (code != 0) {
        fail(b, "setup registration of broker %u%s answered code %d", c->broker,
             c->role == ROLE_REG ? " (reg)" : "", code);
        return;
    }
    if (--b->setup_pending == 0) {
        b->setup_ms = (double)(uv_hrtime() - b->t_setup_start) / 1e6;
        uv_timer_stop(&b->phase_timer);
        start_run(b);
    }
}

static void handle_frame(bconn_t *c, const uint8_t *f, size_t len, uint64_t now)
{
    bench_t *b = c->b;
    int32_t code, opaque, flag;
    const uint8_t *body;
    size_t blen;
    if (frame_scan(f, len, &code, &opaque, &flag, &body, &blen) != NS_OK) {
        conn_dead(c, "undecodable response");
        return;
    }
    if (!(flag & NS_FLAG_RESPONSE))
        return; /* a request from the server: not ours to answer */
    slot_t *s = &c->slots[(uint32_t)opaque & (c->nslots - 1)];
    if (!s->used || s->opaque != opaque) {
        b->unknown_opaque++;
        b->mismatches++;
        return;
    }
    uint8_t kind = s->kind;
    slot_give(c, s);
    if ((kind == K_REG_NEW || kind == K_REG_SAME) && b->o->mode == MODE_MIXED &&
        b->reg_inflight > 0)
        b->reg_inflight--;
    if (kind == K_SETUP) {
        setup_done(b, c, code);
        return;
    }
    bool found = true;
    if (kind == K_ROUTE) {
        /* the route must name the topic's primary broker; scanned even with
         * --no-verify so that the client does the same work on every target */
        uint32_t p = topo_primary(s->topic, b->n_brokers ? b->n_brokers : 1);
        found = p < b->n_brokers && memmem(body, blen, b->patterns[p], b->pattern_lens[p]) != NULL;
    }
    if (code != 0)
        note_error_code(b, code);
    else if (!found && b->o->verify)
        b->mismatches++;
    if (s->measured) {
        uint64_t lat = now - s->t_send;
        hist_record(b->h[kind], lat);
        if (kind == K_ROUTE && b->o->mode == MODE_MIXED)
            hist_record(s->during_reg ? b->h_during : b->h_outside, lat);
        b->n_kind[kind]++;
        if (kind == K_ROUTE) {
            b->body_bytes += blen;
            b->body_n++;
        }
        if (now > b->t_last_done)
            b->t_last_done = now;
    }
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    bconn_t *c = h->data;
    nsb_read_buf(&c->rbuf, buf);
}

static void read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    bconn_t *c = st->data;
    bench_t *b = c->b;
    if (nread < 0) {
        conn_dead(c, nread == UV_EOF ? "closed by the server" : uv_strerror((int)nread));
        return;
    }
    if (nread == 0)
        return;
    c->rbuf.len += (size_t)nread;
    uint64_t now = uv_hrtime();
    size_t off = 0;
    while (!c->dead) {
        size_t flen = 0;
        int rc = ns_frame_peek(c->rbuf.data + off, c->rbuf.len - off, 256u << 20, &flen);
        if (rc == NS_EAGAIN) {
            if (flen > c->rbuf.len - off && ns_buf_reserve(&c->rbuf, flen) != NS_OK)
                conn_dead(c, "out of memory");
            break;
        }
        if (rc != NS_OK) {
            conn_dead(c, "malformed frame from the server");
            break;
        }
        handle_frame(c, c->rbuf.data + off, flen, now);
        off += flen;
    }
    if (c->dead)
        return;
    if (off > 0) {
        memmove(c->rbuf.data, c->rbuf.data + off, c->rbuf.len - off);
        c->rbuf.len -= off;
    }
    if (b->o->rate > 0) {
        /* paced: every answer is a chance for any idle connection to go on */
        refill(b);
        pump_all(b);
    } else {
        pump(c);
        flush(c);
    }
    if (b->end_requested && b->phase == PH_MEASURE)
        end_measure(b);
    else if (b->phase == PH_DRAIN)
        check_drained(b);
}

/* ---- connections ---- */

static void conn_close_cb(uv_handle_t *h)
{
    bconn_t *c = h->data;
    c->closed = true;
    ns_buf_free(&c->rbuf);
    ns_buf_free(&c->out);
    ns_buf_free(&c->wbuf);
}

static void timer_close_cb(uv_handle_t *h)
{
    (void)h;
}

static void conn_close(bconn_t *c)
{
    if (c->timer_init && !uv_is_closing((uv_handle_t *)&c->timer))
        uv_close((uv_handle_t *)&c->timer, timer_close_cb);
    if (c->started && !uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, conn_close_cb);
}

static void conn_dead(bconn_t *c, const char *why)
{
    bench_t *b = c->b;
    if (c->dead)
        return;
    c->dead = true;
    if (c->timer_init)
        uv_timer_stop(&c->timer);
    if (b->phase == PH_HOLD || b->phase == PH_CLOSING) {
        conn_close(c);
        /* the server went away: nothing left to hold */
        bool any = false;
        for (uint32_t i = 0; i < b->n_conns; i++)
            any = any || (!b->conns[i].dead && b->conns[i].role != ROLE_READER);
        if (!any && b->phase == PH_HOLD)
            close_all(b);
        return;
    }
    b->conn_errors++;
    b->lost += c->inflight;
    for (uint32_t i = 0; i < c->nslots; i++)
        if (c->slots[i].used && (c->slots[i].kind == K_REG_NEW || c->slots[i].kind == K_REG_SAME) &&
            b->reg_inflight > 0)
            b->reg_inflight--;
    conn_close(c);
    if (b->phase == PH_CONNECT || b->phase == PH_SETUP) {
        fail(b, "connection %u (%s) failed during %s: %s", c->idx,
             c->role == ROLE_READER ? "reader" : "broker",
             b->phase == PH_CONNECT ? "connect" : "setup", why);
        return;
    }
    fprintf(stderr, "nsbench: connection %u lost: %s\n", c->idx, why);
    bool any_load = false;
    for (uint32_t i = 0; i < b->n_conns; i++)
        any_load = any_load || (!b->conns[i].dead && is_load(b, &b->conns[i]));
    if (!any_load) {
        fail(b, "every load connection is gone");
        return;
    }
    check_drained(b);
}

static void start_setup(bench_t *b)
{
    b->phase = PH_SETUP;
    b->t_setup_start = uv_hrtime();
    b->setup_pending = 0;
    if (!b->o->no_setup) {
        for (uint32_t i = 0; i < b->n_conns; i++) {
            bconn_t *c = &b->conns[i];
            if (c->role == ROLE_READER)
                continue;
            if (issue(c, K_SETUP) != NS_OK) {
                fail(b, "cannot build a registration");
                return;
            }
            b->setup_pending++;
            flush(c);
        }
    }
    if (b->setup_pending == 0) {
        start_run(b);
        return;
    }
    uv_timer_start(&b->phase_timer, phase_timer_cb, (uint64_t)b->o->setup_timeout_ms, 0);
}

static void connect_next(bench_t *b);

static void connect_cb(uv_connect_t *req, int status)
{
    bconn_t *c = req->data;
    bench_t *b = c->b;
    b->connecting--;
    if (b->failed || c->dead)
        return;
    if (status < 0) {
        conn_dead(c, uv_strerror(status));
        return;
    }
    c->connected = true;
    b->connected_n++;
    uv_tcp_nodelay(&c->tcp, 1);
    if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) != 0) {
        conn_dead(c, "read start failed");
        return;
    }
    if (b->connected_n == b->n_conns)
        start_setup(b);
    else
        connect_next(b);
}

static void connect_next(bench_t *b)
{
    uint32_t par = b->o->connect_parallel ? b->o->connect_parallel : 64;
    while (b->next_connect < b->n_conns && b->connecting < par && !b->failed) {
        bconn_t *c = &b->conns[b->next_connect++];
        uv_tcp_init(b->loop, &c->tcp);
        c->tcp.data = c;
        c->started = true;
        c->creq.data = c;
        b->connecting++;
        int rc = uv_tcp_connect(&c->creq, &c->tcp, (struct sockaddr *)&b->addr, connect_cb);
        if (rc != 0) {
            b->connecting--;
            conn_dead(c, uv_strerror(rc));
            return;
        }
    }
}

/* --rate: a token bucket (at most 2 ms of burst), refilled from the clock
 * whenever the loop runs: at every read callback and every millisecond. */
static void refill(bench_t *b)
{
    uint64_t now = uv_hrtime();
    double max = b->o->rate * 0.002 < 1.0 ? 1.0 : b->o->rate * 0.002;
    b->tokens += b->o->rate * (double)(now - b->t_tokens) / 1e9;
    if (b->tokens > max)
        b->tokens = max;
    b->t_tokens = now;
}

static void rate_cb(uv_timer_t *t)
{
    bench_t *b = t->data;
    refill(b);
    if (b->phase == PH_WARMUP || b->phase == PH_MEASURE)
        pump_all(b);
}

static void keepalive_cb(uv_timer_t *t)
{
    bench_t *b = t->data;
    /* one-way heartbeats keep the brokers' connections from idling out
     * (serverChannelMaxIdleTimeSeconds) and their liveness fresh */
    for (uint32_t i = 0; i < b->n_conns; i++) {
        bconn_t *c = &b->conns[i];
        if (c->role == ROLE_READER || c->dead || !c->connected)
            continue;
        const tmpl_t *hb = c->role == ROLE_REG ? &b->reg_hb_t[c->broker] : &b->hb_t[c->broker];
        ns_buf_t tmp = NS_BUF_INIT;
        if (tmpl_emit(&tmp, hb, 0) == NS_OK && tmp.len > 12) {
            /* flag 0 -> 2 (one-way): the template was built as a request */
            uint8_t *h = tmp.data + 8;
            uint8_t *p = memmem(h, tmp.len - 8, "\"flag\":0", 8);
            if (p)
                p[7] = '2';
            ns_buf_append(&c->out, tmp.data, tmp.len);
        }
        ns_buf_free(&tmp);
        flush(c);
    }
}

static void close_all(bench_t *b)
{
    if (b->phase == PH_CLOSING)
        return;
    b->phase = PH_CLOSING;
    if (b->timers_init) {
        if (!uv_is_closing((uv_handle_t *)&b->phase_timer))
            uv_close((uv_handle_t *)&b->phase_timer, timer_close_cb);
        if (!uv_is_closing((uv_handle_t *)&b->keepalive_timer))
            uv_close((uv_handle_t *)&b->keepalive_timer, timer_close_cb);
        if (!uv_is_closing((uv_handle_t *)&b->rate_timer))
            uv_close((uv_handle_t *)&b->rate_timer, timer_close_cb);
    }
    for (uint32_t i = 0; i < b->n_conns; i++) {
        bconn_t *c = &b->conns[i];
        c->dead = true;
        conn_close(c);
    }
}

/* ---- output ---- */

static void print_lat(const char *what, const lat_summary_t *l)
{
    if (l->n == 0)
        return;
    printf("  %-22s n=%-9llu p50=%.1fus p90=%.1fus p99=%.1fus p99.9=%.1fus max=%.1fus "
           "mean=%.1fus\n",
           what, (unsigned long long)l->n, l->p50, l->p90, l->p99, l->p999, l->max, l->mean);
}

static const char *mode_name(int m)
{
    static const char *const n[] = {"route", "mixed", "heartbeat", "register", "setup"};
    return n[m];
}

static void print_text(bench_t *b)
{
    const nsb_opts_t *o = b->o;
    printf("nsbench %s%s%s: target %s:%d, %u reader conn(s), %u broker(s) x %u topic(s)%s, "
           "%u reg broker(s) x %u topic(s), dist %s, seed %llu\n",
           mode_name(o->mode), o->label ? " " : "", o->label ? o->label : "", o->host, o->port,
           b->n_readers, b->n_brokers, b->topics, o->no_setup ? " (not set up)" : "", b->n_regs,
           o->reg_topics, o->zipf ? "zipf" : "uniform", (unsigned long long)o->seed);
    if (!o->no_setup)
        printf("setup: %.1f ms\n", b->setup_ms);
    if (o->rate > 0)
        printf("rate limit: %.0f requests/s\n", o->rate);
    for (size_t i = 0; i < b->n_runs; i++) {
        run_result_t *r = &b->runs[i];
        printf("depth %u: %llu %s requests in %.2f s = %.0f /s\n", r->depth,
               (unsigned long long)r->requests, kind_name[main_kind(b)], r->secs, r->qps);
        for (int k = 0; k < K_N; k++)
            print_lat(kind_name[k], &r->lat[k]);
        if (o->mode == MODE_MIXED)
            print_lat("route during a reg", &r->during_reg);
        if (o->mode == MODE_MIXED)
            print_lat("route, no reg in flight", &r->outside_reg);
        printf("  errors=%llu mismatches=%llu (unknown opaque %llu) lost=%llu conn_errors=%llu",
               (unsigned long long)r->errors, (unsigned long long)r->mismatches,
               (unsigned long long)r->unknown_opaque, (unsigned long long)r->lost,
               (unsigned long long)r->conn_errors);
        for (int e = 0; e < MAX_ERR_CODES; e++)
            if (r->err_code_n[e])
                printf(" code%d=%llu", r->err_code[e], (unsigned long long)r->err_code_n[e]);
        if (o->mode == MODE_MIXED)
            printf(" skipped_reg_ticks=%llu", (unsigned long long)r->skipped_ticks);
        printf("\n");
        if (r->avg_body > 0)
            printf("  avg route body %.0f bytes\n", r->avg_body);
        printf("  client cpu %.0f%% of a core", r->client_cpu_util * 100);
        if (r->server_core_other >= 0)
            printf("; other processes on the server core %.0f%%", r->server_core_other * 100);
        if (r->client_core_other >= 0)
            printf(", on the client core %.0f%%", r->client_core_other * 100);
        printf("\n");
        if (r->have_server)
            printf("  server: cpu %.2f us/req (stat), %.2f us/req (schedstat), util %.0f%%, "
                   "VmHWM %llu KiB, VmRSS %llu KiB (anon %llu, file %llu), data.mdb mapped %llu "
                   "bytes\n",
                   r->cpu_us_per_req_stat, r->cpu_us_per_req_sched, r->server_cpu_util * 100,
                   (unsigned long long)r->hwm_kb, (unsigned long long)r->rss_kb,
                   (unsigned long long)r->rss_anon_kb, (unsigned long long)r->rss_file_kb,
                   (unsigned long long)r->map_bytes);
        if (r->have_io || r->have_db)
            printf("  disk: write_bytes +%llu, data.mdb %s (size %llu -> %llu)\n",
                   (unsigned long long)r->write_bytes, r->db_changed ? "CHANGED" : "unchanged",
                   (unsigned long long)r->db_size0, (unsigned long long)r->db_size1);
    }
    if (b->failed)
        printf("FAILED: %s\n", b->fail_msg);
}

static cJSON *lat_json(const lat_summary_t *l)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "n", (double)l->n);
    cJSON_AddNumberToObject(j, "p50", l->p50);
    cJSON_AddNumberToObject(j, "p90", l->p90);
    cJSON_AddNumberToObject(j, "p99", l->p99);
    cJSON_AddNumberToObject(j, "p999", l->p999);
    cJSON_AddNumberToObject(j, "max", l->max);
    cJSON_AddNumberToObject(j, "mean", l->mean);
    return j;
}

static void print_json(bench_t *b)
{
    const nsb_opts_t *o = b->o;
    cJSON *root = cJSON_CreateObject();
    char target[300];
    snprintf(target, sizeof target, "%s:%d", o->host, o->port);
    cJSON_AddStringToObject(root, "target", target);
    if (o->label)
        cJSON_AddStringToObject(root, "label", o->label);
    cJSON_AddStringToObject(root, "mode", mode_name(o->mode));
    cJSON_AddNumberToObject(root, "conns", b->n_readers);
    cJSON_AddStringToObject(root, "dist", o->zipf ? "zipf" : "uniform");
    cJSON_AddNumberToObject(root, "seed", (double)o->seed);
    cJSON_AddNumberToObject(root, "rate", o->rate);
    cJSON_AddNumberToObject(root, "brokers", b->n_brokers);
    cJSON_AddNumberToObject(root, "topics", b->topics);
    cJSON_AddNumberToObject(root, "reg_brokers", b->n_regs);
    cJSON_AddNumberToObject(root, "reg_topics", o->reg_topics);
    cJSON_AddBoolToObject(root, "setup", !o->no_setup);
    cJSON_AddNumberToObject(root, "setup_ms", b->setup_ms);
    cJSON_AddBoolToObject(root, "ok", !b->failed);
    if (b->failed)
        cJSON_AddStringToObject(root, "error", b->fail_msg);
    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    for (size_t i = 0; i < b->n_runs; i++) {
        run_result_t *r = &b->runs[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "depth", r->depth);
        cJSON_AddStringToObject(j, "kind", kind_name[main_kind(b)]);
        cJSON_AddNumberToObject(j, "secs", r->secs);
        cJSON_AddNumberToObject(j, "requests", (double)r->requests);
        cJSON_AddNumberToObject(j, "qps", r->qps);
        cJSON *lat = cJSON_AddObjectToObject(j, "latency_us");
        for (int k = 0; k < K_N; k++)
            if (r->lat[k].n)
                cJSON_AddItemToObject(lat, kind_name[k], lat_json(&r->lat[k]));
        if (o->mode == MODE_MIXED)
            cJSON_AddItemToObject(lat, "route_during_registration", lat_json(&r->during_reg));
        if (o->mode == MODE_MIXED)
            cJSON_AddItemToObject(lat, "route_outside_registration", lat_json(&r->outside_reg));
        cJSON_AddNumberToObject(j, "errors", (double)r->errors);
        cJSON_AddNumberToObject(j, "mismatches", (double)r->mismatches);
        cJSON_AddNumberToObject(j, "unknown_opaque", (double)r->unknown_opaque);
        cJSON_AddNumberToObject(j, "lost", (double)r->lost);
        cJSON_AddNumberToObject(j, "conn_errors", (double)r->conn_errors);
        cJSON *codes = cJSON_AddObjectToObject(j, "error_codes");
        for (int e = 0; e < MAX_ERR_CODES; e++)
            if (r->err_code_n[e]) {
                char k[16];
                snprintf(k, sizeof k, "%d", r->err_code[e]);
                cJSON_AddNumberToObject(codes, k, (double)r->err_code_n[e]);
            }
        if (o->mode == MODE_MIXED)
            cJSON_AddNumberToObject(j, "skipped_reg_ticks", (double)r->skipped_ticks);
        cJSON_AddNumberToObject(j, "avg_body_bytes", r->avg_body);
        cJSON_AddNumberToObject(j, "client_cpu_util", r->client_cpu_util);
        if (r->server_core_other >= 0)
            cJSON_AddNumberToObject(j, "server_core_other_load", r->server_core_other);
        if (r->client_core_other >= 0)
            cJSON_AddNumberToObject(j, "client_core_other_load", r->client_core_other);
        if (r->have_server) {
            cJSON *s = cJSON_AddObjectToObject(j, "server");
            cJSON_AddNumberToObject(s, "cpu_us_per_req_stat", r->cpu_us_per_req_stat);
            cJSON_AddNumberToObject(s, "cpu_us_per_req_sched", r->cpu_us_per_req_sched);
            cJSON_AddNumberToObject(s, "cpu_util", r->server_cpu_util);
            cJSON_AddNumberToObject(s, "vm_hwm_kb", (double)r->hwm_kb);
            cJSON_AddNumberToObject(s, "vm_rss_kb", (double)r->rss_kb);
            cJSON_AddNumberToObject(s, "rss_anon_kb", (double)r->rss_anon_kb);
            cJSON_AddNumberToObject(s, "rss_file_kb", (double)r->rss_file_kb);
            cJSON_AddNumberToObject(s, "db_map_bytes", (double)r->map_bytes);
        }
        if (r->have_io || r->have_db) {
            cJSON *d = cJSON_AddObjectToObject(j, "disk");
            cJSON_AddNumberToObject(d, "write_bytes", (double)r->write_bytes);
            cJSON_AddNumberToObject(d, "wchar", (double)r->wchar);
            cJSON_AddBoolToObject(d, "db_changed", r->db_changed);
            cJSON_AddNumberToObject(d, "db_size_before", (double)r->db_size0);
            cJSON_AddNumberToObject(d, "db_size_after", (double)r->db_size1);
        }
        cJSON_AddItemToArray(runs, j);
    }
    char *s = cJSON_PrintUnformatted(root);
    if (s) {
        puts(s);
        free(s);
    }
    cJSON_Delete(root);
}

/* ---- set-up of the run ---- */

static int build_templates(bench_t *b)
{
    const nsb_opts_t *o = b->o;
    uint32_t **lists = NULL, *counts = NULL;
    ns_buf_t body = NS_BUF_INIT, frame = NS_BUF_INIT;
    uint32_t *rt = NULL;
    int rc = NS_OK;
    uint32_t nb = b->n_brokers;
    b->setup_t = calloc(nb + 1, sizeof *b->setup_t);
    b->hb_t = calloc(nb + 1, sizeof *b->hb_t);
    b->reg_t = calloc((size_t)b->n_regs * b->n_versions + 1, sizeof *b->reg_t);
    b->reg_hb_t = calloc(b->n_regs + 1, sizeof *b->reg_hb_t);
    if (!b->setup_t || !b->hb_t || !b->reg_t || !b->reg_hb_t)
        return NS_ENOMEM;
    if (nb > 0 && (rc = topo_broker_topics(o->setup_topics, nb, &lists, &counts)) != NS_OK)
        return rc;
    for (uint32_t i = 0; i < nb && rc == NS_OK; i++) {
        ns_dataversion_t dv = {1, 0, 1700000000000ll + i};
        ns_buf_reset(&body);
        ns_buf_reset(&frame);
        rc = o->no_setup ? NS_OK : topo_regbody(&body, lists[i], counts[i], 4, &dv);
        rc = rc ? rc : topo_register_frame(&frame, i, false, &body, OPAQUE_SENTINEL);
        rc = rc ? rc : tmpl_from_frame(&b->setup_t[i], &frame);
        ns_buf_reset(&frame);
        rc = rc ? rc : topo_heartbeat_frame(&frame, i, false, OPAQUE_SENTINEL, false);
        rc = rc ? rc : tmpl_from_frame(&b->hb_t[i], &frame);
    }
    if (o->reg_topics > 0 && (rt = malloc(o->reg_topics * sizeof *rt)) == NULL)
        rc = NS_ENOMEM;
    for (uint32_t r = 0; r < b->n_regs && rc == NS_OK; r++) {
        for (uint32_t k = 0; k < o->reg_topics; k++)
            rt[k] = r * o->reg_topics + k;
        /* growing DataVersions; with --reg-mutate every other one flips the
         * queue counts, so that each new version really changes every topic */
        for (uint32_t v = 0; v < b->n_versions && rc == NS_OK; v++) {
            ns_dataversion_t dv = {1 + (int64_t)v, 0, 1700000000000ll + 1000000ll * r + v};
            int32_t qn = (v % 2 == 1 && o->reg_mutate) ? 8 : 4;
            ns_buf_reset(&body);
            ns_buf_reset(&frame);
            rc = topo_regbody(&body, rt, o->reg_topics, qn, &dv);
            rc = rc ? rc : topo_register_frame(&frame, r, true, &body, OPAQUE_SENTINEL);
            rc = rc ? rc : tmpl_from_frame(&b->reg_t[(size_t)r * b->n_versions + v], &frame);
        }
        ns_buf_reset(&frame);
        rc = rc ? rc : topo_heartbeat_frame(&frame, r, true, OPAQUE_SENTINEL, false);
        rc = rc ? rc : tmpl_from_frame(&b->reg_hb_t[r], &frame);
    }
    free(rt);
    ns_buf_free(&body);
    ns_buf_free(&frame);
    topo_lists_free(lists, counts, nb);
    return rc;
}

static int resolve(const nsb_opts_t *o, struct sockaddr_storage *ss)
{
    if (uv_ip4_addr(o->host, o->port, (struct sockaddr_in *)ss) == 0)
        return NS_OK;
    if (uv_ip6_addr(o->host, o->port, (struct sockaddr_in6 *)ss) == 0)
        return NS_OK;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    if (getaddrinfo(o->host, port, &hints, &res) != 0 || res == NULL)
        return NS_EINVAL;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return NS_OK;
}

/* nsbench generates load on this machine only. */
static bool is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr, &in6addr_loopback,
                      sizeof in6addr_loopback) == 0;
    return false;
}

int load_run(const nsb_opts_t *o)
{
    bench_t *b = calloc(1, sizeof *b);
    int status = 1;
    if (b == NULL)
        return 1;
    b->o = o;
    b->loop = uv_default_loop();
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (topo_selftest() != NS_OK) {
        fprintf(stderr, "nsbench: internal error: route frame template differs from the codec\n");
        goto cleanup;
    }
    if (resolve(o, &b->addr) != NS_OK) {
        fprintf(stderr, "nsbench: cannot resolve %s\n", o->host);
        goto cleanup;
    }
    if (!is_loopback(&b->addr)) {
        fprintf(stderr, "nsbench: %s is not a loopback address; nsbench loads this machine only\n",
                o->host);
        goto cleanup;
    }
    b->n_readers = (o->mode == MODE_ROUTE || o->mode == MODE_MIXED) ? o->conns : 0;
    b->n_brokers = o->setup_brokers;
    /* without set-up, reads need the brokers' names only, not their connections */
    b->n_broker_conns = (o->no_setup && o->mode != MODE_HEARTBEAT) ? 0 : b->n_brokers;
    b->n_regs = (o->mode == MODE_MIXED || o->mode == MODE_REGISTER) ? o->reg_brokers : 0;
    b->topics = o->topics ? o->topics : o->setup_topics;
    /* registration bodies with growing DataVersions, built before the run
     * (compressing 10k topics takes ~15 ms: not on the loop while measuring) */
    b->n_versions = o->reg_versions;
    if (b->n_versions == 0) {
        if (o->mode == MODE_REGISTER && o->count)
            b->n_versions = o->count + 1 < 64 ? (uint32_t)o->count + 1 : 64;
        else
            b->n_versions = o->mode == MODE_REGISTER ? 32 : 16;
    }
    b->n_versions += b->n_versions % 2; /* even: the queue flip alternates across the wrap too */
    if (b->n_readers > 0 && b->topics == 0) {
        fprintf(stderr, "nsbench: route lookups need topics (--setup-topics or --topics)\n");
        goto cleanup;
    }
    if (o->mode == MODE_HEARTBEAT && b->n_brokers == 0) {
        fprintf(stderr, "nsbench: heartbeat mode needs --setup-brokers\n");
        goto cleanup;
    }
    if ((o->mode == MODE_MIXED || o->mode == MODE_REGISTER) &&
        (b->n_regs == 0 || o->reg_topics == 0)) {
        fprintf(stderr, "nsbench: %s mode needs --reg-brokers and --reg-topics\n",
                mode_name(o->mode));
        goto cleanup;
    }
    b->n_conns = b->n_readers + b->n_broker_conns + b->n_regs;
    b->conns = calloc(b->n_conns + 1, sizeof *b->conns);
    for (int k = 0; k < K_N; k++)
        b->h[k] = malloc(sizeof(hist_t));
    b->h_during = malloc(sizeof(hist_t));
    b->h_outside = malloc(sizeof(hist_t));
    for (int k = 0; k < K_N; k++)
        if (b->h[k] == NULL)
            goto cleanup;
    if (b->conns == NULL || b->h_during == NULL || b->h_outside == NULL)
        goto cleanup;
    rng_seed(&b->rng, o->seed);
    if (dist_init(&b->dist, b->topics ? b->topics : 1, o->zipf, o->zipf_s, &b->rng) != NS_OK)
        goto cleanup;
    b->topic_names = calloc((size_t)(b->topics + 1), TOPIC_STRIDE);
    b->topic_lens = calloc(b->topics + 1, 1);
    if (b->topic_names == NULL || b->topic_lens == NULL)
        goto cleanup;
    for (uint32_t t = 0; t < b->topics; t++) {
        char *n = b->topic_names + (size_t)t * TOPIC_STRIDE;
        topo_topic_name(n, TOPIC_STRIDE, t);
        b->topic_lens[t] = (uint8_t)strlen(n);
    }
    b->patterns = calloc(b->n_brokers + 1, sizeof *b->patterns);
    b->pattern_lens = calloc(b->n_brokers + 1, sizeof *b->pattern_lens);
    if (b->patterns == NULL || b->pattern_lens == NULL)
        goto cleanup;
    for (uint32_t i = 0; i < b->n_brokers; i++) {
        char name[48], pat[80];
        topo_broker_name(name, sizeof name, i, false);
        snprintf(pat, sizeof pat, "\"brokerName\":\"%s\"", name);
        if ((b->patterns[i] = strdup(pat)) == NULL)
            goto cleanup;
        b->pattern_lens[i] = strlen(pat);
    }
    if (build_templates(b) != NS_OK) {
        fprintf(stderr, "nsbench: cannot build the registration bodies\n");
        goto cleanup;
    }
    uint32_t maxd = 1;
    for (size_t i = 0; i < o->n_depths; i++)
        if (o->depths[i] > maxd)
            maxd = o->depths[i];
    uint32_t ns = 4;
    while (ns < maxd + 1)
        ns *= 2;
    for (uint32_t i = 0; i < b->n_conns; i++) {
        bconn_t *c = &b->conns[i];
        c->b = b;
        c->idx = i;
        if (i < b->n_readers) {
            c->role = ROLE_READER;
        } else if (i < b->n_readers + b->n_broker_conns) {
            c->role = ROLE_BROKER;
            c->broker = i - b->n_readers;
        } else {
            c->role = ROLE_REG;
            c->broker = i - b->n_readers - b->n_broker_conns;
        }
        c->nslots = ns;
        c->slots = calloc(ns, sizeof *c->slots);
        c->freelist = calloc(ns, sizeof *c->freelist);
        if (c->slots == NULL || c->freelist == NULL)
            goto cleanup;
        for (uint32_t s = 0; s < ns; s++)
            c->freelist[c->nfree++] = ns - 1 - s;
        if (c->role == ROLE_REG) {
            uv_timer_init(b->loop, &c->timer);
            c->timer.data = c;
            c->timer_init = true;
        }
    }
    uv_timer_init(b->loop, &b->phase_timer);
    uv_timer_init(b->loop, &b->keepalive_timer);
    uv_timer_init(b->loop, &b->rate_timer);
    b->phase_timer.data = b;
    b->keepalive_timer.data = b;
    b->rate_timer.data = b;
    b->timers_init = true;
    uv_timer_start(&b->keepalive_timer, keepalive_cb, KEEPALIVE_MS, KEEPALIVE_MS);
    if (o->rate > 0) {
        b->t_tokens = uv_hrtime();
        uv_timer_start(&b->rate_timer, rate_cb, 1, 1);
    }
    for (int k = 0; k < K_N; k++)
        hist_reset(b->h[k]);
    hist_reset(b->h_during);
    hist_reset(b->h_outside);
    b->phase = PH_CONNECT;
    if (b->n_conns == 0) {
        fprintf(stderr, "nsbench: nothing to do (no connections)\n");
        close_all(b);
    } else {
        connect_next(b);
    }
    uv_run(b->loop, UV_RUN_DEFAULT);
    status = b->failed ? 1 : 0;
    for (size_t i = 0; i < b->n_runs && status == 0; i++)
        if (b->runs[i].errors || b->runs[i].mismatches || b->runs[i].lost)
            status = 2;
cleanup:
    if (b->conns)
        for (uint32_t i = 0; i < b->n_conns; i++) {
            free(b->conns[i].slots);
            free(b->conns[i].freelist);
        }
    free(b->conns);
    for (int k = 0; k < K_N; k++)
        free(b->h[k]);
    free(b->h_during);
    free(b->h_outside);
    dist_free(&b->dist);
    free(b->topic_names);
    free(b->topic_lens);
    if (b->patterns)
        for (uint32_t i = 0; i < b->n_brokers; i++)
            free(b->patterns[i]);
    free(b->patterns);
    free(b->pattern_lens);
    if (b->setup_t)
        for (uint32_t i = 0; i < b->n_brokers; i++) {
            tmpl_free(&b->setup_t[i]);
            tmpl_free(&b->hb_t[i]);
        }
    if (b->reg_t)
        for (uint32_t i = 0; i < b->n_regs; i++) {
            for (uint32_t v = 0; v < b->n_versions; v++)
                tmpl_free(&b->reg_t[(size_t)i * b->n_versions + v]);
            tmpl_free(&b->reg_hb_t[i]);
        }
    free(b->setup_t);
    free(b->hb_t);
    free(b->reg_t);
    free(b->reg_hb_t);
    ns_buf_free(&b->scratch);
    free(b);
    return status;
}
