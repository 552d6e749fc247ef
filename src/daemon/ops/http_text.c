/* http_text.c - /metrics in the Prometheus text exposition format 0.0.4.
 *
 * HTTP thread. Counters are summed over the loops' blocks with relaxed
 * atomic loads; gauges of the broker table and the store come from the
 * snapshot. Every metric is listed in docs/monitoring.md ("The metrics"). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cmd/dispatch.h"
#include "core/auth.h"
#include "net/budget.h"
#include "ops/http_guard.h"
#include "ops/http_int.h"
#include "ops/kvsync.h"
#include "ops/peers.h"
#include "ops/seed.h"

#ifndef NS_VERSION
#define NS_VERSION "unknown"
#endif
#ifndef NS_REVISION
#define NS_REVISION "unknown"
#endif

static void head(ns_buf_t *out, const char *name, const char *type, const char *help)
{
    ns_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(ns_buf_t *out, const char *name, const char *type, const char *help, double v)
{
    head(out, name, type, help);
    ns_buf_printf(out, "%s %.15g\n", name, v);
}

/* Sum of one counter over every loop's block (GNU statement expression). */
#define SUM(h, field)                                                                              \
    ({                                                                                             \
        uint64_t v_ = 0;                                                                           \
        for (size_t i_ = 0; i_ < (h)->n_loops; i_++)                                               \
            v_ += NS_M_GET((h)->loops[i_]->field);                                                 \
        v_;                                                                                        \
    })

static void requests(ns_http_t *h, ns_buf_t *out)
{
    head(out, "namesrv_requests_total", "counter",
         "Requests answered (or dropped, one-way), by request and response code.");
    for (int row = 1; row < NS_M_ROWS; row++) {
        const char *name = ns_dispatch_row_name(row);
        if (name == NULL)
            continue;
        for (int r = 0; r < NS_M_RSP_N; r++) {
            uint64_t v = SUM(h, req[row][r]);
            /* every request's SUCCESS series always exists, so rate() has a
             * zero to start from; other codes appear with their first reply */
            if (v == 0 && (r != NS_M_RSP_SUCCESS || row == NS_M_ROW_UNKNOWN))
                continue;
            ns_buf_printf(out, "namesrv_requests_total{request=\"%s\",code=\"%s\"} %llu\n", name,
                          ns_metrics_rsp_name(r), (unsigned long long)v);
        }
    }
    head(out, "namesrv_request_duration_seconds", "histogram",
         "Time from a request's arrival to its reply: kind=read when the loop answered "
         "it, kind=write when it waited for the writer's commit.");
    static const char *const kinds[NS_M_LAT_N] = {"read", "write"};
    for (int k = 0; k < NS_M_LAT_N; k++) {
        ns_hist_t *hs[64];
        size_t n = 0;
        for (size_t i = 0; i < h->n_loops && n < 64; i++)
            hs[n++] = &h->loops[i]->latency[k];
        char labels[32];
        snprintf(labels, sizeof labels, "kind=\"%s\"", kinds[k]);
        ns_metrics_hist_render(out, "namesrv_request_duration_seconds", labels, NS_HIST_LATENCY,
                               1e-9, hs, n);
    }
}

static void connections(ns_http_t *h, ns_buf_t *out)
{
    uint64_t acc = SUM(h, conn_accepted), closed = SUM(h, conn_closed);
    one(out, "namesrv_connections_open", "gauge", "Remoting connections open now.",
        (double)(acc > closed ? acc - closed : 0));
    one(out, "namesrv_connections_accepted_total", "counter", "Remoting connections accepted.",
        (double)acc);
    one(out, "namesrv_connections_closed_total", "counter", "Remoting connections closed.",
        (double)closed);
    one(out, "namesrv_tls_handshakes_offloaded_total", "counter",
        "TLS handshake steps fed on a worker thread, off the loop (tlsHandshakeOffload).",
        (double)SUM(h, tls_handshakes_offloaded));
    head(out, "namesrv_refusals_total", "counter",
         "Connections closed or refused because of their input or their peer, by reason.");
    for (int r = 0; r < NS_M_REFUSE_N; r++)
        ns_buf_printf(out, "namesrv_refusals_total{reason=\"%s\"} %llu\n",
                      ns_metrics_refusal_name(r), (unsigned long long)SUM(h, refused[r]));
    ns_budget_stats_t b;
    ns_budget_snapshot(&b);
    for (int r = 0; r < NS_REFUSE_COUNT; r++)
        ns_buf_printf(out, "namesrv_refusals_total{reason=\"budget_%s\"} %llu\n",
                      ns_refusal_name((ns_refuse_t)r), (unsigned long long)b.refused[r]);
    head(out, "namesrv_budget_used", "gauge",
         "Use of the server-wide budgets (maxConnections etc.).");
    const struct {
        const char *name;
        uint64_t used, max;
    } rows[] = {{"connections", b.connections, b.max_connections},
                {"unfinished_frame_bytes", b.unfinished_bytes, b.max_unfinished_bytes},
                {"unsent_reply_bytes", b.unsent_bytes, b.max_unsent_bytes},
                {"writer_queue_bytes", b.writer_bytes, b.max_writer_bytes},
                {"writer_queue_ops", b.writer_ops, b.max_writer_ops},
                {"pending_handshakes", b.handshakes, b.max_handshakes},
                {"tls_sessions", b.tls, b.max_tls}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        ns_buf_printf(out, "namesrv_budget_used{budget=\"%s\"} %llu\n", rows[i].name,
                      (unsigned long long)rows[i].used);
    head(out, "namesrv_budget_limit", "gauge", "Limits of the server-wide budgets.");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        ns_buf_printf(out, "namesrv_budget_limit{budget=\"%s\"} %llu\n", rows[i].name,
                      (unsigned long long)rows[i].max);
    one(out, "namesrv_received_bytes_total", "counter", "Bytes read from remoting connections.",
        (double)SUM(h, bytes_in));
    one(out, "namesrv_sent_bytes_total", "counter", "Bytes written to remoting connections.",
        (double)SUM(h, bytes_out));
}

static void brokers(ns_http_t *h, const ns_snap_t *s, uint64_t now, ns_buf_t *out)
{
    size_t by_state[NS_BROKER_STATE_N] = {0};
    for (size_t i = 0; s && i < s->n_brokers; i++)
        by_state[ns_snap_broker_state(&s->brokers[i], now)]++;
    head(out, "namesrv_brokers", "gauge",
         "Broker addresses in the liveness table by state (live, grace, expiring).");
    for (int st = 0; st < NS_BROKER_STATE_N; st++)
        ns_buf_printf(out, "namesrv_brokers{state=\"%s\"} %zu\n", ns_bstate_name((ns_bstate_t)st),
                      by_state[st]);
    size_t waiting = 0;
    uint64_t remaining = 0;
    ns_snap_grace(s, now, &waiting, &remaining);
    one(out, "namesrv_grace_window_active", "gauge",
        "1 while brokers restored at start-up have not been heard from and may still come back.",
        waiting > 0 ? 1 : 0);
    one(out, "namesrv_grace_window_remaining_seconds", "gauge",
        "Longest time a restored, silent broker may still wait before it expires.",
        (double)remaining / 1000.0);
    one(out, "namesrv_topics", "gauge", "Topics with a route.", s ? (double)s->topics : 0);
    one(out, "namesrv_clusters", "gauge", "Clusters.", s ? (double)s->clusters : 0);
    one(out, "namesrv_kv_keys", "gauge", "KV config keys in all namespaces.",
        s ? (double)s->kv_keys : 0);
    head(out, "namesrv_broker_registrations_total", "counter",
         "REGISTER_BROKER requests that succeeded, by whether the data version changed.");
    ns_buf_printf(out, "namesrv_broker_registrations_total{data_version=\"changed\"} %llu\n",
                  (unsigned long long)SUM(h, reg_changed));
    ns_buf_printf(out, "namesrv_broker_registrations_total{data_version=\"unchanged\"} %llu\n",
                  (unsigned long long)SUM(h, reg_unchanged));
    head(out, "namesrv_broker_identity_conflicts_total", "counter",
         "Registrations that ran into a broker identity conflict (brokerConflict), by kind.");
    for (int k = 1; k < NS_IDENTITY_KINDS; k++)
        ns_buf_printf(out, "namesrv_broker_identity_conflicts_total{kind=\"%s\"} %llu\n",
                      ns_identity_conflict_name((ns_identity_conflict_t)k),
                      (unsigned long long)SUM(h, identity_conflicts[k]));
    one(out, "namesrv_broker_heartbeats_total", "counter",
        "BROKER_HEARTBEAT and QUERY_DATA_VERSION requests of known brokers.",
        (double)SUM(h, heartbeats));
    head(out, "namesrv_broker_evictions_total", "counter",
         "Brokers removed without asking, by reason (heartbeat timeout, connection closed).");
    ns_buf_printf(out, "namesrv_broker_evictions_total{reason=\"heartbeat_timeout\"} %llu\n",
                  (unsigned long long)SUM(h, evictions[NS_M_EVICT_TIMEOUT]));
    ns_buf_printf(out, "namesrv_broker_evictions_total{reason=\"connection_closed\"} %llu\n",
                  (unsigned long long)SUM(h, evictions[NS_M_EVICT_CONN_CLOSED]));
    one(out, "namesrv_broker_unregistrations_total", "counter",
        "Brokers removed by an UNREGISTER_BROKER request.", (double)SUM(h, unregistrations));
}

/* Authentication (auth.c): the counters move on the main loop's block only. */
static void auth(ns_http_t *h, ns_buf_t *out)
{
    static const char *const modes[] = {"off", "writes", "all"};
    ns_auth_mode_t mode = ns_auth_mode();
    head(out, "namesrv_auth_mode", "gauge", "authMode: 1 for the mode in force, 0 for the others.");
    for (int m = 0; m < 3; m++)
        ns_buf_printf(out, "namesrv_auth_mode{mode=\"%s\"} %d\n", modes[m], (int)mode == m);
    one(out, "namesrv_auth_checks_total", "counter",
        "Requests the authentication check looked at (authMode writes or all, and user "
        "management in every mode).",
        (double)SUM(h, auth_checked));
    head(out, "namesrv_auth_refusals_total", "counter",
         "Requests refused NO_PERMISSION by the authentication check, by reason.");
    for (int r = 0; r < NS_M_AUTH_N; r++)
        ns_buf_printf(out, "namesrv_auth_refusals_total{reason=\"%s\"} %llu\n",
                      ns_metrics_auth_reason_name(r), (unsigned long long)SUM(h, auth_refused[r]));
    one(out, "namesrv_auth_delayed_refusals_total", "counter",
        "Refusals answered late: the address had failed three times in a row or more.",
        (double)SUM(h, auth_delayed));
    one(out, "namesrv_auth_unrecorded_refusals_total", "counter",
        "Refusals left out of the admin audit trail by its rate limit (20 a second).",
        (double)SUM(h, auth_unrecorded));
}

static void writer(ns_http_t *h, ns_buf_t *out)
{
    const ns_metrics_writer_t *w = h->writer;
    if (w == NULL)
        return;
    uint64_t q = NS_M_GET(w->queued), t = NS_M_GET(w->taken);
    one(out, "namesrv_writer_queue_depth", "gauge",
        "Mutations waiting for the writer (not yet in a batch).", (double)(q > t ? q - t : 0));
    one(out, "namesrv_writer_batches_total", "counter", "Write transactions run.",
        (double)NS_M_GET(w->batches));
    one(out, "namesrv_writer_failed_batches_total", "counter",
        "Batches that failed as a whole (every mutation answered SYSTEM_ERROR).",
        (double)NS_M_GET(w->failed_batches));
    one(out, "namesrv_writer_cut_batches_total", "counter",
        "Batches ended at writerBatchMaxBytes (the mutations after it waited for the next).",
        (double)NS_M_GET(w->cut_batches));
    one(out, "namesrv_writer_free_pages_dropped_total", "counter",
        "Store pages LMDB keeps free, unmapped and dropped from the page cache (their memory "
        "given back; the file is unchanged).",
        (double)NS_M_GET(w->pages_given_back));
    one(out, "namesrv_writer_map_grows_total", "counter", "Times the store map was grown.",
        (double)NS_M_GET(w->grows));
    ns_hist_t *hs[1] = {(ns_hist_t *)&w->batch_size};
    head(out, "namesrv_writer_batch_size", "histogram", "Mutations per write transaction.");
    ns_metrics_hist_render(out, "namesrv_writer_batch_size", "", NS_HIST_BATCH, 1, hs, 1);
    head(out, "namesrv_writer_apply_duration_seconds", "histogram",
         "Applying a batch and materialising its routes, before the commit (no fsync).");
    hs[0] = (ns_hist_t *)&w->apply_ns;
    ns_metrics_hist_render(out, "namesrv_writer_apply_duration_seconds", "", NS_HIST_LATENCY, 1e-9,
                           hs, 1);
    head(out, "namesrv_writer_commit_duration_seconds", "histogram",
         "The commit of a batch; fsync=\"true\" unless syncMode=nosync.");
    hs[0] = (ns_hist_t *)&w->commit_ns;
    ns_metrics_hist_render(out, "namesrv_writer_commit_duration_seconds",
                           h->fsync ? "fsync=\"true\"" : "fsync=\"false\"", NS_HIST_LATENCY, 1e-9,
                           hs, 1);
}

static void store(ns_http_t *h, const ns_snap_t *s, ns_buf_t *out)
{
    one(out, "namesrv_store_map_size_bytes", "gauge", "Current LMDB map size.",
        s ? (double)s->map_size_bytes : 0);
    one(out, "namesrv_store_used_bytes", "gauge", "Bytes of the map in use (last page).",
        s ? (double)s->map_used_bytes : 0);
    one(out, "namesrv_store_map_limit_bytes", "gauge", "mapMaxBytes: the map grows up to this.",
        (double)h->map_max_bytes);
    one(out, "namesrv_store_readers", "gauge", "LMDB reader slots used (high-water mark).",
        s ? s->readers : 0);
    one(out, "namesrv_store_readers_max", "gauge", "LMDB reader slots available.",
        s ? s->readers_max : 0);
    one(out, "namesrv_store_readable", "gauge", "1 when the last read transaction worked.",
        s && s->store_ok ? 1 : 0);
    uint64_t ok = atomic_load(&h->backup.ok), failed = atomic_load(&h->backup.failed);
    head(out, "namesrv_backups_total", "counter", "Online backups by result.");
    ns_buf_printf(out, "namesrv_backups_total{result=\"ok\"} %llu\n", (unsigned long long)ok);
    ns_buf_printf(out, "namesrv_backups_total{result=\"failed\"} %llu\n",
                  (unsigned long long)failed);
    /* with the timestamp's absence, what tells "never backed up" from
     * "backups off" (NamesrvBackupNeverSucceeded) */
    one(out, "namesrv_backup_interval_seconds", "gauge",
        "backupIntervalSeconds: periodic backups every this many seconds (0 = off).",
        (double)h->backup_interval_s);
    int64_t last = atomic_load(&h->backup.last_ok_wall_ms);
    if (last > 0) /* absent until the first one: absent() tells "never" apart */
        one(out, "namesrv_backup_last_success_timestamp_seconds", "gauge",
            "Wall-clock time of the last successful backup.", (double)last / 1000.0);
}

/* Open file descriptors: the entries of /proc/self/fd less the one the
 * count itself holds open; -1 when /proc cannot be read. */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;
    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1;
}

/* The series of Prometheus's process collector (client libraries' "process"
 * metrics: CPU, memory, descriptors, start time), read from /proc/self/stat
 * (fields 14-15 utime/stime in clock ticks, 23 vsize in bytes, 24 rss in
 * pages) and getrlimit. Left out when /proc cannot be read. */
static void process(ns_http_t *h, ns_buf_t *out)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command may hold spaces and ')' */
    unsigned long long field[32] = {0};
    for (int i = 3; p && i <= 24; i++) { /* p stands before field i */
        p = strchr(p + 1, ' ');
        if (p == NULL)
            break;
        if (i >= 4)
            field[i] = strtoull(p + 1, NULL, 10);
    }
    if (p == NULL)
        return;
    double tick = (double)sysconf(_SC_CLK_TCK), page = (double)sysconf(_SC_PAGESIZE);
    one(out, "process_cpu_seconds_total", "counter",
        "Total user and system CPU time spent in seconds.",
        (double)(field[14] + field[15]) / (tick > 0 ? tick : 100));
    one(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
        (double)field[24] * page);
    one(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
        (double)field[23]);
    long fds = open_fds();
    if (fds >= 0)
        one(out, "process_open_fds", "gauge", "Number of open file descriptors.", (double)fds);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        one(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
            (double)rl.rlim_cur);
    one(out, "process_start_time_seconds", "gauge",
        "Start time of the process since unix epoch in seconds.",
        (double)h->start_wall_ms / 1000.0);
}

void ns_http_metrics_text(ns_http_t *h, const ns_snap_t *s, uint64_t now_ms, ns_buf_t *out)
{
    head(out, "namesrv_build_info", "gauge", "Version and store schema of this namesrvd.");
    ns_buf_printf(out, "namesrv_build_info{version=\"%s\",revision=\"%s\",schema=\"%u\"} 1\n",
                  NS_VERSION, NS_REVISION, ns_store_latest_schema());
    one(out, "namesrv_start_time_seconds", "gauge", "Wall-clock start time.",
        (double)h->start_wall_ms / 1000.0);
    one(out, "namesrv_uptime_seconds", "gauge", "Seconds since start.",
        (double)(now_ms - h->start_mono_ms) / 1000.0);
    one(out, "namesrv_io_loops", "gauge", "Event loops serving connections (ioThreads).",
        h->io_loops);
    one(out, "namesrv_io_forwarded_total", "counter",
        "Requests an extra I/O loop sent to the main loop (every one but the lookups it serves "
        "itself, and those that do not pass the authentication check there).",
        (double)SUM(h, forwarded));
    one(out, "namesrv_ready", "gauge", "1 when /readyz answers 200.",
        atomic_load(&h->listening) && ns_http_verified(h) == 1 ? 1 : 0);
    one(out, "namesrv_http_header_timeouts_total", "counter",
        "HTTP connections closed for sending no whole request header within "
        "httpHeaderTimeoutMillis.",
        (double)ns_http_guard_cut_total(h->guard));
    requests(h, out);
    connections(h, out);
    brokers(h, s, now_ms, out);
    auth(h, out);
    writer(h, out);
    store(h, s, out);
    process(h, out);
    ns_peers_render(h->peers, out);
    ns_kvsync_render(h->kvsync, out);
    ns_seed_render(out);
    ns_addrsrv_render(&h->addrsrv, out);
}
