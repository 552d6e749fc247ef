/* fleet.c - namesrvctl fleet diff: the servers of --ns compared by their
 * digests (FLEET_DIGEST, include/ns/fleet.h). One connection per server,
 * kept for the whole diff; ns_fleet_diff descends only into the subtrees
 * whose hashes differ, so the cost follows the differences, not the size
 * of the tables.
 *
 * Exit: 0 every server agrees, 1 they differ, 5 (CTL_IO) a server could
 * not be reached or answered garbage (the others are still compared and
 * shown), 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/fleet.h"

typedef struct {
    session_t *s;
    ns_client_t *c[MAX_SERVERS];
    bool failed[MAX_SERVERS];
    char why[MAX_SERVERS][160];
} fleet_ctx_t;

/* Sends one FLEET_DIGEST to server i over its kept connection. */
static int fetch(void *ctx, size_t i, const ns_buf_t *req, ns_buf_t *resp, const char **why)
{
    fleet_ctx_t *f = ctx;
    session_t *s = f->s;
    int rc = NS_OK;
    const char *cwhy = NULL;
    if (f->failed[i])
        return NS_ECONN;
    if (f->c[i] == NULL && (rc = ctl_connect(s, s->addrs[i], &f->c[i], &cwhy)) != NS_OK) {
        snprintf(f->why[i], sizeof f->why[i], "%s%s%s", ns_strerror(rc), cwhy && *cwhy ? ": " : "",
                 cwhy ? cwhy : "");
        goto fail;
    }
    rc = ns_fleet_call(f->c[i], req, s->timeout_ms, resp, f->why[i], sizeof f->why[i]);
    if (rc == NS_OK)
        return NS_OK;
fail:
    f->failed[i] = true;
    *why = f->why[i];
    return rc ? rc : NS_ECONN;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_table(const session_t *s, const ns_fleet_report_t *r, double secs)
{
    printf("%-24s %-34s %s\n", "SERVER", "ROOT", "LEAVES");
    for (size_t i = 0; i < r->n_servers; i++) {
        if (r->reached[i])
            printf("%-24s %-34s %lld\n", s->addrs[i], r->root[i], (long long)r->root_count[i]);
        else
            printf("%-24s unreachable: %s\n", s->addrs[i], r->error[i] ? r->error[i] : "?");
    }
    if (r->n > 0) {
        printf("\n%-7s %-32s %-26s %-24s %s\n", "KIND", "ITEM", "LEAF", "SERVER", "VALUE");
        for (size_t k = 0; k < r->n; k++) {
            const ns_fleet_diff_t *d = &r->d[k];
            bool first = true;
            for (size_t i = 0; i < r->n_servers; i++) {
                if (!r->reached[i])
                    continue;
                printf("%-7s %-32s %-26s %-24s %s\n", first ? ns_fleet_kind_name(d->kind) : "",
                       first ? d->item : "", first ? d->leaf : "", s->addrs[i],
                       d->values[i] ? d->values[i] : "(absent)");
                first = false;
            }
        }
    }
    printf("\n%s: %zu of %zu servers compared; %zu item(s) differ (broker %zu, topic %zu, "
           "kv %zu)%s; %zu identity conflict(s); %zu requests, %llu bytes sent, %llu received, "
           "%.1f ms\n",
           ns_fleet_reached(r) < 2 ? "nothing to compare"
           : ns_fleet_agree(r)     ? "all agree"
                                   : "DIFFER",
           ns_fleet_reached(r), r->n_servers, ns_fleet_items(r), r->items[0], r->items[1],
           r->items[2], r->truncated ? " (stopped at --max: more differ)" : "",
           r->items[NS_FLEET_CONFLICT], r->requests, (unsigned long long)r->bytes_sent,
           (unsigned long long)r->bytes_received, secs * 1e3);
}

static int fleet_diff(int argc, char **argv)
{
    session_t s = {0};
    fleet_ctx_t f = {0};
    const char *max_s = NULL;
    ctl_opt_t extra[] = {{"--max", &max_s, NULL}, {NULL, NULL, NULL}};
    int n_pos = 0;
    int rc = ctl_session_init(&s, "fleet diff", argc, argv, extra, NULL, 0, 0, &n_pos);
    int64_t max_items = 1000;
    if (rc == CTL_OK && max_s &&
        (ns_parse_i64(max_s, strlen(max_s), &max_items) != NS_OK || max_items < 1)) {
        fprintf(stderr, "namesrvctl fleet diff: --max '%s' is not a positive number\n", max_s);
        rc = CTL_USAGE;
    }
    if (rc != CTL_OK) {
        ctl_session_free(&s);
        return rc;
    }
    f.s = &s;
    ns_fleet_report_t r;
    double t0 = now_s();
    int drc = ns_fleet_diff(fetch, &f, s.n_addrs, (size_t)max_items, &r);
    double secs = now_s() - t0;
    for (size_t i = 0; i < s.n_addrs; i++)
        ns_client_close(f.c[i]);
    if (drc != NS_OK) {
        ctl_err("fleet diff: %s", ns_strerror(drc));
        ctl_session_free(&s);
        return CTL_IO;
    }
    if (s.json) {
        ns_buf_t out = NS_BUF_INIT;
        if (ns_fleet_report_json(&r, s.addrs, &out) == NS_OK)
            printf("%.*s\n", (int)out.len, (const char *)out.data);
        ns_buf_free(&out);
    } else {
        print_table(&s, &r, secs);
    }
    for (size_t i = 0; i < s.n_addrs; i++)
        if (!r.reached[i])
            ctl_err("fleet diff: %s: %s", s.addrs[i], r.error[i] ? r.error[i] : "unreachable");
    rc = ns_fleet_reached(&r) < s.n_addrs ? CTL_IO : ns_fleet_agree(&r) ? CTL_OK : CTL_FAILED;
    ns_fleet_report_free(&r);
    ctl_session_free(&s);
    return rc;
}

int ctl_cmd_fleet(int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "diff") != 0) {
        fprintf(stderr, "usage: namesrvctl fleet diff [--ns \"a;b;c\"] [--max N] [--json]\n");
        return CTL_USAGE;
    }
    return fleet_diff(argc - 1, argv + 1);
}
