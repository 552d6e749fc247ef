/* load_phase.c - phases and timers of the client engine (load.h):
 * set-up, warm-up, measure, drain and hold, the per-reg-broker registration
 * timers, the --rate token bucket, keep-alive heartbeats and closing. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "load.h"
#include "ns/err.h"

/* ---- failure ---- */

void fail(bench_t *b, const char *fmt, ...)
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

void end_measure(bench_t *b)
{
    if (b->phase != PH_MEASURE)
        return;
    b->phase = PH_DRAIN;
    b->t_measure_stop = uv_hrtime();
    reg_timers(b, false);
    uv_timer_start(&b->phase_timer, phase_timer_cb, (uint64_t)b->o->drain_timeout_ms, 0);
    check_drained(b);
}

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

void check_drained(bench_t *b)
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

/* ---- set-up ---- */

void start_setup(bench_t *b)
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

void setup_done(bench_t *b, bconn_t *c, int code)
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

/* ---- timers ---- */

/* --rate: a token bucket (at most 2 ms of burst), refilled from the clock
 * whenever the loop runs: at every read callback and every millisecond. */
void refill(bench_t *b)
{
    uint64_t now = uv_hrtime();
    double max = b->o->rate * 0.002 < 1.0 ? 1.0 : b->o->rate * 0.002;
    b->tokens += b->o->rate * (double)(now - b->t_tokens) / 1e9;
    if (b->tokens > max)
        b->tokens = max;
    b->t_tokens = now;
}

void rate_cb(uv_timer_t *t)
{
    bench_t *b = t->data;
    refill(b);
    if (b->phase == PH_WARMUP || b->phase == PH_MEASURE)
        pump_all(b);
}

void keepalive_cb(uv_timer_t *t)
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

void close_all(bench_t *b)
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
