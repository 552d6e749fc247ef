/* nsshapebench - cost of decoding one route-lookup request header in the
 * shape each client sends (Java, Go, C++, ali-ons; JSON and the same
 * command re-encoded as a RocketMQ binary header), by the general decoder
 * alone and by ns_remoting_decode (fast path first).
 *
 *   nsshapebench [reps]                   every combination, ns per decode
 *   nsshapebench --one SHAPE FORM MODE [reps]
 *       one combination only (SHAPE java|go|cpp|ali-ons, FORM json|binary,
 *       MODE general|fast), for an exact count under callgrind:
 *       valgrind --tool=callgrind --callgrind-out-file=cg.out \
 *           build-release/nsshapebench --one java json fast 10000
 *       callgrind_annotate --inclusive=yes cg.out | grep ns_remoting_decode
 *       (the inclusive count of ns_remoting_decode{,_general} / reps).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ns/buf.h"
#include "ns/err.h"
#include "ns/remoting.h"

static const struct {
    const char *name, *hdr;
} SHAPES[] = {
    {"java", "{\"code\":105,\"extFields\":{\"topic\":\"BenchTopic-0000042\"},\"flag\":0,"
             "\"language\":\"JAVA\",\"opaque\":12345,\"serializeTypeCurrentRPC\":\"JSON\","
             "\"version\":479}"},
    {"go", "{\"code\":105,\"language\":\"GO\",\"version\":317,\"opaque\":3,\"flag\":0,"
           "\"remark\":\"\",\"extFields\":{\"topic\":\"BenchTopic-0000042\"}}"},
    {"cpp", "{\"code\":105,\"extFields\":{\"AccessKey\":\"\",\"OnsChannel\":\"\",\"Signature\":"
            "\"\",\"topic\":\"BenchTopic-0000042\"},\"flag\":0,\"language\":\"CPP\",\"opaque\":5,"
            "\"remark\":\"\",\"version\":333}\n"},
    {"ali-ons", "{\"code\":105,\"language\":\"JAVA\",\"opaque\":1,\"flag\":0,\"version\":121,"
                "\"extFields\":{\"topic\":\"BenchTopic-0000042\"}}"},
};
#define N_SHAPES (sizeof SHAPES / sizeof SHAPES[0])

typedef int (*decode_fn)(const uint8_t *, size_t, ns_cmd_msg_t *);

/* The frame of shape i in form binary (0 JSON, 1 binary) into f. */
static int build(ns_buf_t *f, size_t i, int binary)
{
    size_t n = strlen(SHAPES[i].hdr);
    ns_buf_t j = NS_BUF_INIT;
    ns_cmd_msg_t m;
    int rc = NS_OK;
    ns_cmd_msg_init(&m);
    rc |= ns_buf_append_be32(&j, (uint32_t)(4 + n));
    rc |= ns_buf_append_be32(&j, (uint32_t)n);
    rc |= ns_buf_append(&j, SHAPES[i].hdr, n);
    ns_buf_reset(f);
    if (rc == NS_OK && !binary) {
        rc = ns_buf_append(f, j.data, j.len);
    } else if (rc == NS_OK && (rc = ns_remoting_decode_general(j.data, j.len, &m)) == NS_OK) {
        m.cmd.serialize_type = NS_SERIALIZE_ROCKETMQ;
        rc = ns_remoting_encode(f, &m.cmd);
    }
    ns_cmd_msg_free(&m);
    ns_buf_free(&j);
    return rc;
}

/* Decodes f reps times; CPU ns per decode, or -1 on a decode error. */
static double run(const ns_buf_t *f, decode_fn fn, long reps)
{
    ns_cmd_msg_t m;
    struct timespec a, b;
    ns_cmd_msg_init(&m);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (long r = 0; r < reps; r++)
        if (fn(f->data, f->len, &m) != NS_OK) {
            ns_cmd_msg_free(&m);
            return -1;
        }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    ns_cmd_msg_free(&m);
    return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)reps;
}

static int one(char **argv, long reps)
{
    ns_buf_t f = NS_BUF_INIT;
    size_t i = 0;
    while (i < N_SHAPES && strcmp(SHAPES[i].name, argv[0]) != 0)
        i++;
    if (i == N_SHAPES || build(&f, i, strcmp(argv[1], "binary") == 0) != NS_OK) {
        fprintf(stderr, "nsshapebench: unknown shape or form\n");
        return 2;
    }
    decode_fn fn =
        strcmp(argv[2], "general") == 0 ? ns_remoting_decode_general : ns_remoting_decode;
    double ns = run(&f, fn, reps);
    ns_buf_free(&f);
    return ns < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "--one") == 0)
        return one(argv + 2, argc > 5 ? atol(argv[5]) : 10000);
    long reps = argc > 1 ? atol(argv[1]) : 200000;
    ns_buf_t f = NS_BUF_INIT;
    printf("%-8s %-7s %6s %12s %12s\n", "shape", "form", "bytes", "general ns", "fast ns");
    for (size_t i = 0; i < N_SHAPES; i++)
        for (int binary = 0; binary <= 1; binary++) {
            if (build(&f, i, binary) != NS_OK) {
                fprintf(stderr, "nsshapebench: cannot build %s\n", SHAPES[i].name);
                return 1;
            }
            double g = run(&f, ns_remoting_decode_general, reps);
            double x = run(&f, ns_remoting_decode, reps);
            if (g < 0 || x < 0) {
                fprintf(stderr, "nsshapebench: %s does not decode\n", SHAPES[i].name);
                return 1;
            }
            printf("%-8s %-7s %6zu %12.1f %12.1f\n", SHAPES[i].name, binary ? "binary" : "json",
                   f.len, g, x);
        }
    ns_buf_free(&f);
    return 0;
}
