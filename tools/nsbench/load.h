/* load.h - internals of the client engine (nsbench.h), shared by its files.
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
 * during MEASURE count.
 *
 * Files:
 *   load.c        load_run(): checks, topic names, request templates,
 *                 connections' slot tables, timers; frees it all after the run
 *   load_phase.c  phases and timers: set-up, warm-up, measure, drain, hold,
 *                 the --rate token bucket, keep-alive heartbeats, close_all
 *   load_conn.c   connections: connecting, issuing into slots, writing,
 *                 reading and matching responses, losing a connection
 *   load_out.c    results of a run (fill_result) and their text/JSON output
 *
 * Everything runs on the loop's thread; nothing here is thread-safe. */
#ifndef NSBENCH_LOAD_H
#define NSBENCH_LOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "nsbench.h"
#include "ns/tls.h"

/* Connection roles, request kinds (index of the histograms and counters;
 * names in load_out.c) and phases of the run. */
enum { ROLE_READER, ROLE_BROKER, ROLE_REG };
enum { K_ROUTE, K_HB, K_REREG, K_REG_NEW, K_REG_SAME, K_SETUP, K_N };
enum { PH_CONNECT, PH_SETUP, PH_WARMUP, PH_MEASURE, PH_DRAIN, PH_HOLD, PH_CLOSING };

#define MAX_ERR_CODES 6 /* distinct error response codes counted per run */
#define TOPIC_STRIDE 24 /* bytes per topic name in bench_t.topic_names */

/* tmpl_t: a request frame with a hole for the opaque. */
typedef struct {
    ns_buf_t pre;  /* header bytes before the opaque digits */
    ns_buf_t post; /* header bytes after them */
    ns_buf_t body;
} tmpl_t;

/* slot_t: one request in flight on a connection, found again by its opaque. */
typedef struct {
    uint64_t t_send;
    int32_t opaque;
    uint32_t topic;
    uint8_t kind;
    bool used, measured, during_reg;
} slot_t;

typedef struct bench bench_t;

/* bconn_t: one connection (reader, setup broker or reg broker) with its
 * read/out/write buffers and its table of slots. */
typedef struct {
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_write_t wreq;
    uv_timer_t timer;
    bench_t *b;
    uint32_t idx, broker;
    uint8_t role;
    bool started, connected, dead, writing, timer_init, closed;
    bool linked; /* TCP is up (connected: and TLS, if any, established) */
    ns_buf_t rbuf, out, wbuf;
    ns_tls_sess_t *tls; /* --tls: the session; cin its ciphertext in, tout out */
    ns_buf_t cin, tout;
    slot_t *slots;
    uint32_t nslots, *freelist, nfree, seq, inflight;
    int cur_body;
} bconn_t;

/* run_result_t: what one depth's run measured; printed by load_out.c. */
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

/* bench_t: the whole benchmark: options, connections, phase, per-run
 * counters and histograms, templates, and the results of finished runs. */
struct bench {
    const nsb_opts_t *o;
    ns_tls_ctx_t *tctx; /* --tls */
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

/* ---- load.c ---- */

/* Appends template t with the given opaque filled in to out. */
int tmpl_emit(ns_buf_t *out, const tmpl_t *t, int32_t opaque);

/* ---- load_phase.c ---- */

/* Records the first failure (printed to stderr) and closes everything. */
void fail(bench_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Answer to a set-up registration: the run starts when all are answered. */
void setup_done(bench_t *b, bconn_t *c, int code);
/* Every connection is up: each broker registers once (or the run starts). */
void start_setup(bench_t *b);
/* MEASURE -> DRAIN: stops issuing and waits for what is in flight. */
void end_measure(bench_t *b);
/* In DRAIN with nothing in flight: records the run, starts the next or ends. */
void check_drained(bench_t *b);
/* --rate: adds the tokens earned since the last refill. */
void refill(bench_t *b);
/* --rate timer (every millisecond): refill and pump. */
void rate_cb(uv_timer_t *t);
/* Keep-alive timer: a one-way heartbeat on every broker connection. */
void keepalive_cb(uv_timer_t *t);
/* Closes every timer and connection; uv_run returns once they are closed. */
void close_all(bench_t *b);

/* ---- load_conn.c ---- */

/* The kind of request that is the load of the current mode. */
int main_kind(const bench_t *b);
/* Does the current phase issue load (WARMUP or MEASURE, end not requested)? */
bool phase_issues(const bench_t *b);
/* Appends one request of the given kind to c->out in a free slot; no write. */
int issue(bconn_t *c, uint8_t kind);
/* Tops up and flushes every connection; ends MEASURE when --count is reached. */
void pump_all(bench_t *b);
/* Writes c->out unless a write is already under way. */
void flush(bconn_t *c);
/* Close callback of the timers (nothing to free). */
void timer_close_cb(uv_handle_t *h);
/* Closes a connection's timer and socket (once). */
void conn_close(bconn_t *c);
/* Starts connects, at most connect_parallel at a time. */
void connect_next(bench_t *b);

/* ---- load_out.c ---- */

/* Fills r from the counters, histograms and samples of the run just ended. */
void fill_result(bench_t *b, run_result_t *r);
/* "route", "mixed", ... for a MODE_* value. */
const char *mode_name(int m);
/* Prints the set-up and every run as text (stdout). */
void print_text(bench_t *b);
/* Prints the set-up and every run as one line of JSON (stdout). */
void print_json(bench_t *b);

#endif
