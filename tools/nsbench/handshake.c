/* handshake.c - nsbench --handshakes: the cost of a new connection.
 *
 * One connection at a time, as fast as the server takes them: TCP connect,
 * the TLS handshake (with --tls), one GET_ROUTEINFO_BY_TOPIC (so the server
 * has finished its side of the handshake and served a frame), close. Runs
 * for --duration seconds or --count connections after --warmup seconds and
 * reports connections per second and the latency of the whole cycle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nsbench.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One cycle; NS_OK or the failure (why says more for TLS). */
static int one(const nsb_opts_t *o, const ns_client_tls_t *tls, ns_cmd_msg_t *rsp, const char **why)
{
    ns_client_t *c = NULL;
    int rc = ns_client_connect_tls(o->host, o->port, 5000, tls, &c, why);
    if (rc != NS_OK)
        return rc;
    ns_ext_field_t ext[1] = {ns_ext_field("topic", "nsbench-handshake")};
    ns_cmd_t req;
    ns_cmd_request_init(&req, NS_REQ_GET_ROUTEINFO_BY_TOPIC, ext, 1);
    rc = ns_client_call(c, &req, 5000, rsp);
    ns_client_close(c);
    return rc;
}

int handshake_run(const nsb_opts_t *o)
{
    ns_client_tls_t tls = {.ca_file = o->tls_ca, .cert_file = o->tls_cert, .key_file = o->tls_key};
    ns_cmd_msg_t rsp;
    hist_t *h = calloc(1, sizeof *h);
    int status = 0;
    if (h == NULL)
        return 1;
    hist_reset(h);
    ns_cmd_msg_init(&rsp);
    uint64_t t0 = now_ns(), warm_end = t0 + (uint64_t)(o->warmup_s * 1e9), start = 0;
    uint64_t end = 0, n = 0, errors = 0;
    const char *why = NULL;
    for (;;) {
        uint64_t a = now_ns();
        bool measuring = a >= warm_end;
        if (measuring && start == 0) {
            start = a;
            end = o->duration_s > 0 ? start + (uint64_t)(o->duration_s * 1e9) : 0;
        }
        if (measuring && ((end && a >= end) || (o->count && n >= o->count)))
            break;
        int rc = one(o, o->tls ? &tls : NULL, &rsp, &why);
        if (rc != NS_OK) {
            fprintf(stderr, "nsbench: connection failed: %s%s%s\n", ns_strerror(rc),
                    why && *why ? ": " : "", why && *why ? why : "");
            if (++errors > 10) {
                status = 1;
                break;
            }
            continue;
        }
        if (measuring) {
            hist_record(h, now_ns() - a);
            n++;
        }
    }
    double secs = (double)(now_ns() - start) / 1e9;
    lat_summary_t s;
    lat_summarize(h, &s);
    printf("handshakes: %s%s, %llu connections in %.2f s = %.0f conn/s; cycle us p50 %.0f p90 "
           "%.0f p99 %.0f max %.0f; errors %llu\n",
           o->tls ? "TLS" : "plain", o->label ? o->label : "", (unsigned long long)n, secs,
           secs > 0 ? (double)n / secs : 0, s.p50, s.p90, s.p99, s.max, (unsigned long long)errors);
    ns_cmd_msg_free(&rsp);
    free(h);
    return status ? status : errors ? 2 : 0;
}
