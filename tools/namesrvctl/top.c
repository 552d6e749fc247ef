/* top.c - `namesrvctl top`: a live view of a namesrvd read from its /metrics.
 *
 *   namesrvctl top [--http HOST:PORT] [--interval MS] [--count N] [--once]
 *
 * Scrapes /metrics every interval (1000 ms) and prints, for the last
 * interval: requests per second by request and response code, read and
 * write latency percentiles, the writer's commit latency and batch size,
 * and the brokers by state. On a terminal each frame replaces the last;
 * otherwise frames follow each other. --count N stops after N frames,
 * --once after one (both: for scripts and tests). The address defaults to
 * $NAMESRV_HTTP_ADDR, else 127.0.0.1:9877. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "ns/buf.h"
#include "ns/err.h"
#include "ns/httpget.h"

typedef struct {
    char *name;
    char *labels; /* k="v",... without the braces; "" when none */
    double value;
} sample_t;

typedef struct {
    sample_t *s;
    size_t n;
    double t_ms; /* monotonic time of the scrape */
} scrape_t;

static void scrape_free(scrape_t *sc)
{
    for (size_t i = 0; i < sc->n; i++) {
        free(sc->s[i].name);
        free(sc->s[i].labels);
    }
    free(sc->s);
    memset(sc, 0, sizeof *sc);
}

/* One exposition line: name{labels} value [timestamp]. */
static int parse_line(scrape_t *sc, const char *line, size_t len)
{
    if (len == 0 || line[0] == '#')
        return NS_OK;
    size_t i = 0;
    while (i < len && line[i] != '{' && line[i] != ' ')
        i++;
    size_t name_len = i, lab_start = i, lab_len = 0;
    if (i < len && line[i] == '{') {
        lab_start = ++i;
        bool quoted = false;
        for (; i < len && (quoted || line[i] != '}'); i++) {
            if (line[i] == '\\' && quoted)
                i++;
            else if (line[i] == '"')
                quoted = !quoted;
        }
        if (i >= len)
            return NS_EINVAL;
        lab_len = i - lab_start;
        i++;
    }
    char num[64];
    while (i < len && line[i] == ' ')
        i++;
    size_t k = 0;
    while (i < len && line[i] != ' ' && k + 1 < sizeof num)
        num[k++] = line[i++];
    num[k] = 0;
    char *end = NULL;
    double v = strtod(num, &end);
    if (k == 0 || *end)
        return NS_EINVAL;
    sample_t *p = ns_array_grow(sc->s, sc->n, sizeof *p);
    if (p == NULL)
        return NS_ENOMEM;
    sc->s = p;
    sample_t *s = &sc->s[sc->n];
    s->name = strndup(line, name_len);
    s->labels = strndup(line + lab_start, lab_len);
    s->value = v;
    if (s->name == NULL || s->labels == NULL) {
        free(s->name);
        free(s->labels);
        return NS_ENOMEM;
    }
    sc->n++;
    return NS_OK;
}

static int scrape(const char *addr, int timeout_ms, scrape_t *sc)
{
    ns_buf_t body = NS_BUF_INIT;
    int status = 0;
    int rc = ns_http_get_addr(addr, "/metrics", timeout_ms, &status, &body);
    sc->t_ms = (double)ctl_mono_ms();
    if (rc == NS_OK && status != 200)
        rc = NS_EINVAL;
    const char *p = (const char *)body.data, *end = p + body.len;
    while (rc == NS_OK && p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        rc = parse_line(sc, p, len);
        p += len + 1;
    }
    ns_buf_free(&body);
    return rc;
}

/* Value of label key in labels into out ("" when absent). */
static void label(const char *labels, const char *key, char *out, size_t n)
{
    size_t kl = strlen(key);
    out[0] = 0;
    for (const char *p = labels; (p = strstr(p, key)) != NULL; p += kl) {
        if ((p != labels && p[-1] != ',') || p[kl] != '=' || p[kl + 1] != '"')
            continue;
        const char *v = p + kl + 2, *q = strchr(v, '"');
        size_t len = q ? (size_t)(q - v) : strlen(v);
        snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), v);
        return;
    }
}

/* Sum of the samples named name whose label key (NULL: any) equals val. */
static double sum(const scrape_t *sc, const char *name, const char *key, const char *val)
{
    double v = 0;
    char buf[128];
    for (size_t i = 0; i < sc->n; i++) {
        if (strcmp(sc->s[i].name, name) != 0)
            continue;
        if (key) {
            label(sc->s[i].labels, key, buf, sizeof buf);
            if (strcmp(buf, val) != 0)
                continue;
        }
        v += sc->s[i].value;
    }
    return v;
}

/* q-quantile of the interval's observations of histogram name (label
 * key=val, or all), interpolated in the bucket like histogram_quantile(). */
static double quantile(const scrape_t *a, const scrape_t *b, const char *name, const char *key,
                       const char *val, double q)
{
    char bucket[128], le[32], kv[128];
    double bounds[64], counts[64];
    size_t n = 0;
    snprintf(bucket, sizeof bucket, "%s_bucket", name);
    for (size_t i = 0; i < b->n && n < 64; i++) {
        if (strcmp(b->s[i].name, bucket) != 0)
            continue;
        if (key) {
            label(b->s[i].labels, key, kv, sizeof kv);
            if (strcmp(kv, val) != 0)
                continue;
        }
        label(b->s[i].labels, "le", le, sizeof le);
        double prev = 0;
        for (size_t j = 0; a && j < a->n; j++)
            if (strcmp(a->s[j].name, bucket) == 0 && strcmp(a->s[j].labels, b->s[i].labels) == 0)
                prev = a->s[j].value;
        bounds[n] = strcmp(le, "+Inf") == 0 ? INFINITY : strtod(le, NULL);
        counts[n++] = b->s[i].value - prev;
    }
    if (n == 0 || counts[n - 1] <= 0)
        return NAN;
    double rank = q * counts[n - 1], lo = 0, below = 0;
    for (size_t i = 0; i < n; i++) {
        if (counts[i] >= rank) {
            if (isinf(bounds[i]))
                return lo;
            double in = counts[i] - below;
            return in > 0 ? lo + (bounds[i] - lo) * (rank - below) / in : bounds[i];
        }
        lo = bounds[i];
        below = counts[i];
    }
    return lo;
}

static void fmt_dur(char *out, size_t n, double s)
{
    if (isnan(s))
        snprintf(out, n, "-");
    else if (s < 1e-3)
        snprintf(out, n, "%.1fus", s * 1e6);
    else if (s < 1)
        snprintf(out, n, "%.2fms", s * 1e3);
    else
        snprintf(out, n, "%.2fs", s);
}

static void print_requests(const scrape_t *a, const scrape_t *b, double secs)
{
    printf("%-38s %10s  %s\n", "requests/s", "rate", "response codes");
    double total = 0;
    char req[96], code[48], seen[64][96];
    size_t n_seen = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (strcmp(b->s[i].name, "namesrv_requests_total") != 0)
            continue;
        label(b->s[i].labels, "request", req, sizeof req);
        bool dup = false;
        for (size_t k = 0; k < n_seen && !dup; k++)
            dup = strcmp(seen[k], req) == 0;
        if (dup || n_seen == 64)
            continue;
        snprintf(seen[n_seen++], sizeof seen[0], "%s", req);
        double d = sum(b, "namesrv_requests_total", "request", req) -
                   (a ? sum(a, "namesrv_requests_total", "request", req) : 0);
        if (d <= 0)
            continue;
        total += d;
        printf("  %-36s %10.1f ", req, d / secs);
        for (size_t j = 0; j < b->n; j++) { /* the codes of this request */
            if (strcmp(b->s[j].name, "namesrv_requests_total") != 0)
                continue;
            label(b->s[j].labels, "request", code, sizeof code);
            if (strcmp(code, req) != 0)
                continue;
            double prev = 0;
            for (size_t k = 0; a && k < a->n; k++)
                if (strcmp(a->s[k].name, b->s[j].name) == 0 &&
                    strcmp(a->s[k].labels, b->s[j].labels) == 0)
                    prev = a->s[k].value;
            if (b->s[j].value - prev > 0) {
                label(b->s[j].labels, "code", code, sizeof code);
                printf(" %s %.0f%%", code, 100.0 * (b->s[j].value - prev) / d);
            }
        }
        printf("\n");
    }
    printf("  %-36s %10.1f\n", "(all)", total / secs);
}

static void print_frame(const char *addr, const scrape_t *a, const scrape_t *b)
{
    double secs = a ? (b->t_ms - a->t_ms) / 1000.0 : sum(b, "namesrv_uptime_seconds", NULL, NULL);
    if (secs <= 0)
        secs = 1;
    double up = sum(b, "namesrv_uptime_seconds", NULL, NULL);
    printf("namesrvd %s  up %.0fs  %s  loops %.0f  connections %.0f  topics %.0f  clusters %.0f  "
           "kv %.0f\n",
           addr, up, sum(b, "namesrv_ready", NULL, NULL) > 0 ? "ready" : "NOT READY",
           sum(b, "namesrv_io_loops", NULL, NULL), sum(b, "namesrv_connections_open", NULL, NULL),
           sum(b, "namesrv_topics", NULL, NULL), sum(b, "namesrv_clusters", NULL, NULL),
           sum(b, "namesrv_kv_keys", NULL, NULL));
    bool grace = sum(b, "namesrv_grace_window_active", NULL, NULL) > 0;
    printf("brokers  live %.0f  grace %.0f  expiring %.0f   grace window %s",
           sum(b, "namesrv_brokers", "state", "live"), sum(b, "namesrv_brokers", "state", "grace"),
           sum(b, "namesrv_brokers", "state", "expiring"), grace ? "RUNNING" : "ended");
    if (grace)
        printf(" (%.0fs left)", sum(b, "namesrv_grace_window_remaining_seconds", NULL, NULL));
    printf("\n\n");
    print_requests(a, b, secs);
    printf("\n%-12s %10s %10s %10s   (last %.1fs)\n", "latency", "p50", "p90", "p99", secs);
    static const char *const kinds[] = {"read", "write"};
    char p[3][32];
    static const double qs[3] = {0.5, 0.9, 0.99};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 3; i++)
            fmt_dur(p[i], sizeof p[i],
                    quantile(a, b, "namesrv_request_duration_seconds", "kind", kinds[k], qs[i]));
        printf("  %-10s %10s %10s %10s\n", kinds[k], p[0], p[1], p[2]);
    }
    for (int i = 0; i < 3; i++)
        fmt_dur(p[i], sizeof p[i],
                quantile(a, b, "namesrv_writer_commit_duration_seconds", NULL, NULL, qs[i]));
    printf("  %-10s %10s %10s %10s\n", "commit", p[0], p[1], p[2]);
    double batches = sum(b, "namesrv_writer_batch_size_count", NULL, NULL) -
                     (a ? sum(a, "namesrv_writer_batch_size_count", NULL, NULL) : 0);
    double ops = sum(b, "namesrv_writer_batch_size_sum", NULL, NULL) -
                 (a ? sum(a, "namesrv_writer_batch_size_sum", NULL, NULL) : 0);
    printf("writer   %.1f commits/s  %.1f ops/batch  queue %.0f\n", batches / secs,
           batches > 0 ? ops / batches : 0, sum(b, "namesrv_writer_queue_depth", NULL, NULL));
    fflush(stdout);
}

int ctl_cmd_top(int argc, char **argv)
{
    const char *addr = getenv("NAMESRV_HTTP_ADDR"), *interval_s = NULL, *count_s = NULL;
    bool once = false;
    ctl_opt_t opts[] = {{"--http", &addr, NULL},
                        {"--interval", &interval_s, NULL},
                        {"--count", &count_s, NULL},
                        {"--once", NULL, &once},
                        {NULL, NULL, NULL}};
    int rc = ctl_parse("top", argc, argv, opts, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    if (addr == NULL || *addr == 0)
        addr = "127.0.0.1:9877";
    long interval = interval_s ? strtol(interval_s, NULL, 10) : 1000;
    long count = once ? 1 : count_s ? strtol(count_s, NULL, 10) : -1;
    if (interval < 100 || (count_s && count < 1)) {
        ctl_err("top: --interval is at least 100 (ms), --count at least 1");
        return CTL_USAGE;
    }
    bool tty = isatty(STDOUT_FILENO);
    scrape_t prev = {0}, cur = {0};
    if (scrape(addr, 5000, &prev) != NS_OK) {
        ctl_err("top: cannot read http://%s/metrics: top reads the server's HTTP endpoint, so "
                "the server needs httpListen set (e.g. httpListen=127.0.0.1:9877) and --http "
                "or $NAMESRV_HTTP_ADDR naming that address",
                addr);
        return CTL_IO;
    }
    for (long frame = 0; count < 0 || frame < count; frame++) {
        struct timespec ts = {interval / 1000, (interval % 1000) * 1000000};
        nanosleep(&ts, NULL);
        if (scrape(addr, 5000, &cur) != NS_OK) {
            ctl_err("top: cannot read http://%s/metrics", addr);
            scrape_free(&prev);
            scrape_free(&cur);
            return CTL_IO;
        }
        if (tty)
            printf("\033[H\033[2J");
        else if (frame > 0)
            printf("\n");
        print_frame(addr, &prev, &cur);
        scrape_free(&prev);
        prev = cur;
        memset(&cur, 0, sizeof cur);
    }
    scrape_free(&prev);
    return CTL_OK;
}
