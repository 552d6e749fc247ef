/* report.c - latency summaries and sampling of the server process from
 * /proc (nsbench.h). Loopback only: the server runs on this machine. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsbench.h"

void lat_summarize(const hist_t *h, lat_summary_t *s)
{
    s->n = h->total;
    s->p50 = (double)hist_quantile(h, 0.50) / 1000.0;
    s->p90 = (double)hist_quantile(h, 0.90) / 1000.0;
    s->p99 = (double)hist_quantile(h, 0.99) / 1000.0;
    s->p999 = (double)hist_quantile(h, 0.999) / 1000.0;
    s->max = h->total ? (double)h->max / 1000.0 : 0;
    s->min = h->total ? (double)h->min / 1000.0 : 0;
    s->mean = hist_mean(h) / 1000.0;
}

static bool read_file(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
    fclose(f);
    return got > 0;
}

static uint64_t field_after(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    if (p == NULL)
        return 0;
    p += strlen(key);
    while (*p == ' ' || *p == '\t' || *p == ':')
        p++;
    return strtoull(p, NULL, 10);
}

void proc_sample(int pid, const char *data_dir, proc_sample_t *out)
{
    char path[512], buf[16384];
    memset(out, 0, sizeof *out);
    if (pid > 0) {
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        if (read_file(path, buf, sizeof buf)) {
            char *p = strrchr(buf, ')');
            unsigned long long ut = 0, st = 0;
            /* after "comm)": state(3) ppid pgrp session tty tpgid flags minflt
             * cminflt majflt cmajflt utime(14) stime(15) */
            if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                            &st) == 2) {
                out->cpu_ticks = ut + st;
                out->ok = true;
            }
        }
        snprintf(path, sizeof path, "/proc/%d/task", pid);
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (e->d_name[0] == '.')
                    continue;
                char tp[600];
                snprintf(tp, sizeof tp, "/proc/%d/task/%s/schedstat", pid, e->d_name);
                if (read_file(tp, buf, sizeof buf))
                    out->cpu_ns += strtoull(buf, NULL, 10);
            }
            closedir(d);
        }
        snprintf(path, sizeof path, "/proc/%d/io", pid);
        if (read_file(path, buf, sizeof buf)) {
            out->have_io = true;
            out->write_bytes = field_after(buf, "\nwrite_bytes");
            out->wchar = field_after(buf, "wchar");
        }
        snprintf(path, sizeof path, "/proc/%d/status", pid);
        if (read_file(path, buf, sizeof buf)) {
            out->vm_hwm_kb = field_after(buf, "VmHWM");
            out->vm_rss_kb = field_after(buf, "VmRSS");
            out->rss_anon_kb = field_after(buf, "RssAnon");
            out->rss_file_kb = field_after(buf, "RssFile");
        }
        snprintf(path, sizeof path, "/proc/%d/maps", pid);
        FILE *f = fopen(path, "r");
        if (f) {
            char line[1024];
            while (fgets(line, sizeof line, f)) {
                size_t l = strlen(line);
                if (l > 10 && strstr(line, "/data.mdb")) {
                    unsigned long long a, b;
                    if (sscanf(line, "%llx-%llx", &a, &b) == 2)
                        out->db_map_bytes += b - a;
                }
            }
            fclose(f);
        }
    }
    if (data_dir && data_dir[0]) {
        struct stat stt;
        snprintf(path, sizeof path, "%s/data.mdb", data_dir);
        if (stat(path, &stt) == 0) {
            out->have_db = true;
            out->db_size = (uint64_t)stt.st_size;
            out->db_mtime_ns = (int64_t)stt.st_mtim.tv_sec * 1000000000 + stt.st_mtim.tv_nsec;
        }
    }
}

void cpu_sample(int cpu, cpu_sample_t *out)
{
    char buf[65536], key[16];
    memset(out, 0, sizeof *out);
    if (cpu < 0 || !read_file("/proc/stat", buf, sizeof buf))
        return;
    snprintf(key, sizeof key, "\ncpu%d ", cpu);
    const char *p = strstr(buf, key);
    if (p == NULL)
        return;
    unsigned long long v[8] = {0};
    if (sscanf(p + strlen(key), "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
               &v[3], &v[4], &v[5], &v[6], &v[7]) < 5)
        return;
    long tck = sysconf(_SC_CLK_TCK);
    uint64_t ns_per_tick = 1000000000ull / (uint64_t)(tck > 0 ? tck : 100);
    uint64_t total = 0;
    for (int i = 0; i < 8; i++)
        total += v[i];
    uint64_t idle = v[3] + v[4];
    out->ok = true;
    out->total_ns = total * ns_per_tick;
    out->busy_ns = (total - idle) * ns_per_tick;
}

uint64_t self_cpu_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_utime.tv_sec * 1000000000ull + (uint64_t)ru.ru_utime.tv_usec * 1000ull +
           (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000ull;
}
