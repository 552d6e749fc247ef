/* nsdecodebench - cost per extFields entry of decoding a request header, for
 * n = 10, 100, ..., 10^6 entries, in both header forms (JSON, RocketMQ
 * binary). Decoding must be linear: the ns/entry column stays flat.
 *
 *   nsdecodebench [max_entries]      (default 1000000)
 *
 * Prints one line per (form, n): entries, header bytes, repetitions, ns per
 * entry (best of the repetitions, CPU time). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ns/buf.h"
#include "ns/err.h"
#include "ns/remoting.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Builds a whole frame with n distinct ext keys into f. */
static int build(ns_buf_t *f, int binary, long n)
{
    ns_buf_t h = NS_BUF_INIT;
    int rc = NS_OK;
    char k[24];
    if (!binary) {
        rc |= ns_buf_append_str(&h, "{\"code\":103,\"extFields\":{");
        for (long i = 0; i < n; i++)
            rc |= ns_buf_printf(&h, "%s\"k%ld\":\"v\"", i ? "," : "", i);
        rc |= ns_buf_append_str(&h, "},\"flag\":0,\"language\":\"JAVA\",\"opaque\":1,"
                                    "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":453}");
    } else {
        ns_buf_t e = NS_BUF_INIT;
        for (long i = 0; i < n; i++) {
            int kl = snprintf(k, sizeof k, "k%ld", i);
            rc |= ns_buf_append_be16(&e, (uint16_t)kl);
            rc |= ns_buf_append(&e, k, (size_t)kl);
            rc |= ns_buf_append_be32(&e, 1);
            rc |= ns_buf_append_u8(&e, 'v');
        }
        rc |= ns_buf_append_be16(&h, 103);
        rc |= ns_buf_append_u8(&h, 0);
        rc |= ns_buf_append_be16(&h, 453);
        rc |= ns_buf_append_be32(&h, 1);
        rc |= ns_buf_append_be32(&h, 0);
        rc |= ns_buf_append_be32(&h, 0);
        rc |= ns_buf_append_be32(&h, (uint32_t)e.len);
        rc |= ns_buf_append(&h, e.data, e.len);
        ns_buf_free(&e);
    }
    ns_buf_reset(f);
    rc |= ns_buf_append_be32(f, (uint32_t)(4 + h.len));
    rc |= ns_buf_append_be32(f, ((uint32_t)(binary ? 1 : 0) << 24) | (uint32_t)h.len);
    rc |= ns_buf_append(f, h.data, h.len);
    ns_buf_free(&h);
    return rc == NS_OK ? NS_OK : NS_ENOMEM;
}

int main(int argc, char **argv)
{
    long max = argc > 1 ? atol(argv[1]) : 1000000;
    ns_buf_t f = NS_BUF_INIT;
    printf("%-7s %9s %10s %6s %10s\n", "form", "entries", "bytes", "reps", "ns/entry");
    for (int binary = 0; binary <= 1; binary++) {
        for (long n = 10; n <= max; n *= 10) {
            if (build(&f, binary, n) != NS_OK) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            long reps = 2000000 / n > 0 ? 2000000 / n : 1;
            if (reps > 10000)
                reps = 10000;
            if (reps < 3)
                reps = 3;
            double best = 1e30;
            ns_cmd_msg_t m;
            ns_cmd_msg_init(&m);
            for (long r = 0; r < reps; r++) {
                double t0 = cpu_now();
                int rc = ns_remoting_decode(f.data, f.len, &m);
                double dt = cpu_now() - t0;
                if (rc != NS_OK || (long)m.cmd.n_ext != n) {
                    fprintf(stderr, "decode failed: %d\n", rc);
                    return 1;
                }
                if (dt < best)
                    best = dt;
            }
            ns_cmd_msg_free(&m);
            printf("%-7s %9ld %10zu %6ld %10.1f\n", binary ? "binary" : "json", n, f.len, reps,
                   best * 1e9 / (double)n);
            fflush(stdout);
        }
    }
    ns_buf_free(&f);
    return 0;
}
