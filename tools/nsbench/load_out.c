/* load_out.c - results of a run of the client engine (load.h): fill_result
 * turns counters, histograms and /proc samples into a run_result_t; the
 * rest prints the runs as text or as one line of JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "load.h"

/* Names of the K_* request kinds, as printed and as JSON keys. */
static const char *const kind_name[K_N] = {
    "route", "heartbeat", "reregister_unchanged", "register_changed", "register_unchanged",
    "setup"};

/* ---- results ---- */

void fill_result(bench_t *b, run_result_t *r)
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

/* ---- output ---- */

static void print_lat(const char *what, const lat_summary_t *l)
{
    if (l->n == 0)
        return;
    printf("  %-22s n=%-9llu p50=%.1fus p90=%.1fus p99=%.1fus p99.9=%.1fus max=%.1fus "
           "mean=%.1fus\n",
           what, (unsigned long long)l->n, l->p50, l->p90, l->p99, l->p999, l->max, l->mean);
}

const char *mode_name(int m)
{
    static const char *const n[] = {"route", "mixed", "heartbeat", "register", "setup"};
    return n[m];
}

void print_text(bench_t *b)
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

void print_json(bench_t *b)
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
