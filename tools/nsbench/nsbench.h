/* nsbench.h - load generator and benchmarks for a RocketMQ NameServer.
 *
 *   nsbench --ns HOST:PORT [--mode route|mixed|heartbeat|register] ...
 *   nsbench --echo-server --port P --response-bytes N
 *   nsbench --restart-probe --ns HOST:PORT ... -- CMD ARGS...
 *
 * Pieces (one file each):
 *   hist.c        log-linear latency histogram (HdrHistogram-like, 1/128 =
 *                 0.8% relative bucket width), hand-written
 *   topo.c        the benchmark topology: names, which topic lives on which
 *                 broker, REGISTER_BROKER bodies and request frames
 *   load.c        the client engine: one libuv loop, many connections, per
 *                 connection a pipeline of `depth` requests matched by
 *                 opaque; load.c sets a run up and runs it (load_run), its
 *                 internals are shared through load.h with:
 *   load_phase.c    the phases (set-up, warm-up, measure, drain, hold) and
 *                   timers (--rate, keep-alive, registration ticks)
 *   load_conn.c     connections: connecting, issuing, writing, reading and
 *                   matching responses
 *   load_out.c      a run's results and their text and JSON output
 *   echo.c        the echo server (the ceiling of any request/response server)
 *   probe.c       restart-to-first-correct-route probe
 *   report.c      latency summaries, /proc sampling of the server process
 *   main.c        options
 *
 * Everything runs on one thread; nothing here is thread-safe. */
#ifndef NSBENCH_H
#define NSBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ns/buf.h"
#include "ns/model.h"

/* ---- histogram (hist.c) ---- */

/* Values below 2^(SUB_BITS+1) are exact; above, each power-of-two range is
 * split into 2^SUB_BITS equal buckets: relative width 1/128 = 0.78%. */
#define HIST_SUB_BITS 7
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

typedef struct {
    uint64_t counts[HIST_BUCKETS];
    uint64_t total;
    uint64_t min, max; /* exact */
    double sum;        /* for the mean */
} hist_t;

void hist_reset(hist_t *h);
void hist_record(hist_t *h, uint64_t v);
/* Value at quantile q (0..1): the midpoint of the bucket holding it, clamped
 * to [min, max]. 0 for an empty histogram. */
uint64_t hist_quantile(const hist_t *h, double q);
double hist_mean(const hist_t *h);
void hist_merge(hist_t *into, const hist_t *from);
/* Bucket helpers (exposed for the self-test). */
size_t hist_index(uint64_t v);
uint64_t hist_bucket_low(size_t idx);
uint64_t hist_bucket_high(size_t idx); /* inclusive */

/* ---- random numbers and topic distributions (topo.c) ---- */

typedef struct {
    uint64_t s;
} rng_t;

void rng_seed(rng_t *r, uint64_t seed);
uint64_t rng_next(rng_t *r);
double rng_unit(rng_t *r); /* [0, 1) */

typedef struct {
    bool zipf;
    uint32_t n;
    double *cdf;    /* zipf: cumulative weights of ranks 0..n-1 (n entries) */
    uint32_t *perm; /* zipf: rank -> topic index (hot topics spread out) */
} dist_t;

int dist_init(dist_t *d, uint32_t n, bool zipf, double s, rng_t *r);
uint32_t dist_next(const dist_t *d, rng_t *r);
void dist_free(dist_t *d);

/* ---- topology (topo.c) ----
 * Topic i lives on broker i % B (its "primary", the broker a route of topic
 * i must mention) and, on every other round of B topics, also on a second
 * broker: 1-2 brokers per topic, 1.5 on average. Names:
 *   topic      BenchTopic-%07u         cluster BenchCluster
 *   broker     bench-broker-%05u       addr 127.0.0.1:(20000+b)   (nothing listens there)
 *   reg broker bench-regbroker-%03u    addr 127.0.0.1:(40000+r) */
#define TOPO_CLUSTER "BenchCluster"

void topo_topic_name(char *buf, size_t n, uint32_t topic);
void topo_broker_name(char *buf, size_t n, uint32_t broker, bool reg);
void topo_broker_addr(char *buf, size_t n, uint32_t broker, bool reg);
uint32_t topo_primary(uint32_t topic, uint32_t n_brokers);
/* Second broker of topic, or UINT32_MAX when it has only one. */
uint32_t topo_secondary(uint32_t topic, uint32_t n_brokers);

/* For every broker b < n_brokers, the topics it hosts (ascending).
 * lists[b] / counts[b]; free with topo_lists_free. */
int topo_broker_topics(uint32_t n_topics, uint32_t n_brokers, uint32_t ***lists, uint32_t **counts);
void topo_lists_free(uint32_t **lists, uint32_t *counts, uint32_t n_brokers);

/* A compressed RegisterBrokerBody (zlib, 5.x layout with the mapping count)
 * for the given topics, all with perm 6 and queue_nums read/write queues,
 * or its JSON form after topo_set_plain_bodies(true) (frames then say
 * compressed=false). Appended to out. */
int topo_regbody(ns_buf_t *out, const uint32_t *topics, size_t n, int32_t queue_nums,
                 const ns_dataversion_t *dv);

/* One REGISTER_BROKER request frame (header + body), appended to out.
 * oneway sets flag 2. */
int topo_register_frame(ns_buf_t *out, uint32_t broker, bool reg, const ns_buf_t *body,
                        int32_t opaque);
/* One BROKER_HEARTBEAT frame. */
int topo_heartbeat_frame(ns_buf_t *out, uint32_t broker, bool reg, int32_t opaque, bool oneway);
/* One GET_ROUTEINFO_BY_TOPIC frame, built from a template (no JSON writer):
 * byte-identical to what ns_remoting_encode writes (checked at start-up by
 * topo_selftest). */
int topo_route_frame(ns_buf_t *out, const char *topic, size_t topic_len, int32_t opaque);
/* Every frame built from now on is signed with these (borrowed for the
 * life of the process; NULL access_key: unsigned). */
void topo_set_credentials(const char *access_key, const char *secret_key);
void topo_set_plain_bodies(bool plain);
/* Compares topo_route_frame with ns_remoting_encode; NS_OK when equal. */
int topo_selftest(void);

/* ---- fast response header scan (topo.c) ----
 * code and opaque of a whole response frame, without a JSON parser; falls
 * back to ns_remoting_decode for anything unusual. Returns NS_OK or
 * NS_EINVAL. */
int frame_scan(const uint8_t *frame, size_t len, int32_t *code, int32_t *opaque, int32_t *flag,
               const uint8_t **body, size_t *body_len);

/* ---- process sampling (report.c) ---- */

typedef struct {
    bool ok;
    uint64_t cpu_ticks;   /* utime + stime from /proc/PID/stat */
    uint64_t cpu_ns;      /* run time summed over /proc/PID/task/TID/schedstat */
    uint64_t write_bytes; /* /proc/PID/io */
    uint64_t wchar;
    uint64_t vm_hwm_kb, vm_rss_kb, rss_anon_kb, rss_file_kb;
    bool have_io;
    /* data dir */
    bool have_db;
    uint64_t db_size;
    int64_t db_mtime_ns;
    uint64_t db_map_bytes; /* size of the data.mdb mapping in /proc/PID/maps */
} proc_sample_t;

void proc_sample(int pid, const char *data_dir, proc_sample_t *out);

/* Busy and total time of one CPU from /proc/stat, nanoseconds. */
typedef struct {
    bool ok;
    uint64_t busy_ns, total_ns;
} cpu_sample_t;
void cpu_sample(int cpu, cpu_sample_t *out);
/* CPU time of this process (user + system), nanoseconds. */
uint64_t self_cpu_ns(void);

/* ---- options (main.c) and the programs ---- */

enum { MODE_ROUTE, MODE_MIXED, MODE_HEARTBEAT, MODE_REGISTER, MODE_SETUP };
enum { HB_HEARTBEAT, HB_REREGISTER };
#define MAX_DEPTHS 8

typedef struct {
    char host[256];
    int port;
    int mode;
    uint32_t conns;
    uint32_t depths[MAX_DEPTHS];
    size_t n_depths;
    double duration_s; /* 0 = not bounded by time (then count must be set) */
    uint64_t count;    /* 0 = not bounded by count */
    double warmup_s;
    uint64_t seed;
    bool zipf;
    double zipf_s;
    double rate; /* load requests per second in all, 0 = as fast as answered */
    uint32_t setup_brokers, setup_topics;
    uint32_t topics; /* topics read: [0, topics); default setup_topics */
    bool no_setup;   /* topology names only (echo target, pre-built server) */
    uint32_t reg_brokers, reg_topics, reg_interval_ms;
    double reg_change_fraction;
    bool reg_mutate;       /* a new DataVersion also changes every topic's queue numbers */
    uint32_t reg_versions; /* DataVersions prepared per reg broker, 0 = automatic */
    int hb_kind;
    bool verify;
    bool json;
    int server_pid;
    const char *data_dir;
    double hold_s;
    const char *ready_file;
    int drain_timeout_ms;
    int setup_timeout_ms;
    uint32_t connect_parallel;
    const char *label;
    /* restart probe */
    uint32_t probe_topic;
    int probe_timeout_ms;
    const char *pid_file;
    int exec_cpu;               /* -1 = do not pin */
    int server_cpu, client_cpu; /* cores to watch for other load; -1 = none */
    /* TLS (--tls, --tls-ca, --tls-cert, --tls-key) */
    bool tls;
    const char *tls_ca, *tls_cert, *tls_key;
    bool handshakes; /* --handshakes: connect, handshake, one lookup, close; repeat */
} nsb_opts_t;

/* load.c: runs the benchmark; returns the process exit status (0 ok,
 * 1 failure, 2 the run finished with errors/mismatches/lost requests). */
int load_run(const nsb_opts_t *o);
/* echo.c: serves until SIGINT/SIGTERM. */
int echo_run(const char *bind_addr, int port, size_t response_bytes, const char *port_file);
/* handshake.c: --handshakes: sequential connections, each one lookup. */
int handshake_run(const nsb_opts_t *o);
/* probe.c: starts argv, polls for the first correct route. */
int probe_run(const nsb_opts_t *o, char **argv);

/* report.c: latency summary in microseconds. */
typedef struct {
    uint64_t n;
    double p50, p90, p99, p999, max, mean, min;
} lat_summary_t;
void lat_summarize(const hist_t *h, lat_summary_t *s);

/* libuv alloc callback body shared by the client and the echo server:
 * hands out the free tail of rbuf (at least 64 KiB), or an empty buffer on
 * ENOMEM (libuv then reports UV_ENOBUFS). */
void nsb_read_buf(ns_buf_t *rbuf, uv_buf_t *out);

#endif
