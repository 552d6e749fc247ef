/* test_hash_collisions.c - keys crafted to collide under FNV-1a no longer
 * make the hash indexes quadratic.
 *
 * Every index (a header's extFields, a registration body's topics, the
 * string map) takes its slot from the low bits of the key's hash. With
 * FNV-1a those low bits are a public function of the bytes, so anyone can
 * compute names that all land in one slot: then each insert probes past
 * every earlier key. The keys below all share the low 20 bits of their
 * FNV-1a hash (enough for any index up to 2^20 slots), found by meeting in
 * the middle: FNV-1a's step is invertible modulo 2^20, so two trailing
 * characters are solved backwards from the target, two leading ones
 * forwards from each prefix. Each index must take about as long over those
 * keys as over ordinary keys. Before the keyed hash (ns/hash.h) the crafted
 * keys cost hundreds of times more. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "ns/body.h"
#include "ns/buf.h"
#include "ns/err.h"
#include "ns/hash.h"
#include "ns/remoting.h"
#include "ns/strmap.h"

#define N_KEYS 20000
#define BITS 20
#define MASK ((1u << BITS) - 1)
#define FNV_PRIME 1099511628211ull
#define FNV_BASIS 1469598103934665603ull

static const char alpha[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
#define NA 62

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = FNV_BASIS;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * FNV_PRIME;
    return h;
}

static uint32_t step(uint32_t s, unsigned char c)
{
    return (uint32_t)(((s ^ c) * FNV_PRIME) & MASK);
}

/* N_KEYS distinct names whose FNV-1a hashes agree in the low BITS bits
 * (crafted) and as many ordinary ones (plain), each at most 15 bytes. */
static void make_keys(char (*crafted)[16], char (*plain)[16])
{
    uint64_t inv = FNV_PRIME; /* Newton: inverse of the prime modulo 2^64 */
    for (int i = 0; i < 6; i++)
        inv *= 2 - FNV_PRIME * inv;
    const uint32_t target = 0x5a5a5 & MASK;
    uint16_t *back = calloc(MASK + 1, sizeof *back); /* state -> 1 + x*NA + y */
    assert_non_null(back);
    for (int x = 0; x < NA; x++)
        for (int y = 0; y < NA; y++) {
            uint32_t s1 = (uint32_t)((target * inv) & MASK) ^ (unsigned char)alpha[y];
            uint32_t s0 = (uint32_t)((s1 * inv) & MASK) ^ (unsigned char)alpha[x];
            back[s0] = (uint16_t)(1 + x * NA + y);
        }
    int n = 0;
    for (int p = 0; n < N_KEYS; p++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "c%05d", p);
        uint32_t s = (uint32_t)(fnv1a(prefix) & MASK);
        for (int f = 0; f < NA * NA && n < N_KEYS; f++) {
            uint32_t t = step(step(s, (unsigned char)alpha[f / NA]), (unsigned char)alpha[f % NA]);
            if (back[t] == 0)
                continue;
            int xy = back[t] - 1;
            snprintf(crafted[n], 16, "%.7s%c%c%c%c", prefix, alpha[f / NA], alpha[f % NA],
                     alpha[xy / NA], alpha[xy % NA]);
            assert_int_equal(fnv1a(crafted[n]) & MASK, target);
            n++;
            break; /* one per prefix: distinct by construction */
        }
    }
    for (int i = 0; i < N_KEYS; i++)
        snprintf(plain[i], 16, "p%05dabcd", i % 100000);
    free(back);
}

static char (*crafted)[16], (*plain)[16];

static int setup(void **state)
{
    (void)state;
    crafted = calloc(N_KEYS, sizeof *crafted);
    plain = calloc(N_KEYS, sizeof *plain);
    if (crafted == NULL || plain == NULL)
        return -1;
    make_keys(crafted, plain);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(crafted);
    free(plain);
    return 0;
}

/* The crafted keys may cost a few times the plain ones (noise, cache), not
 * the ~N/2 probes per key that one shared slot costs. */
static void expect_flat(const char *what, double t_crafted, double t_plain)
{
    printf("# %-22s %d keys: crafted %.4f s, plain %.4f s\n", what, N_KEYS, t_crafted, t_plain);
    if (t_crafted > 4 * t_plain + 0.05)
        fail_msg("%s: crafted FNV-1a collisions cost %.3f s against %.3f s for plain keys", what,
                 t_crafted, t_plain);
}

/* SipHash-2-4 of bytes 0..14 under key 0..15: the reference vector of the
 * SipHash paper (appendix A); ns_hash runs the same code with 1 and 3. */
static void test_siphash_reference(void **state)
{
    (void)state;
    uint8_t key[16], msg[15];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 15; i++)
        msg[i] = (uint8_t)i;
    assert_true(ns_siphash(key, 2, 4, msg, sizeof msg) == 0xa129ca6149be45e5ull);
    assert_true(ns_hash_str("topic") == ns_hash("topic", 5));
    /* SipHash128-2-4 (the fleet digest's leaves), the reference's 128-bit
     * vectors for the empty message and for bytes 0..14, as bytes */
    static const uint8_t want0[16] = {0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6,
                                      0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55, 0x02, 0x93};
    static const uint8_t want15[16] = {0x54, 0x93, 0xe9, 0x99, 0x33, 0xb0, 0xa8, 0x11,
                                       0x7e, 0x08, 0xec, 0x0f, 0x97, 0xcf, 0xc3, 0xd9};
    for (int len = 0; len <= 15; len += 15) {
        uint64_t o[2];
        uint8_t got[16];
        ns_siphash128(key, 2, 4, msg, (size_t)len, o);
        for (int i = 0; i < 8; i++) {
            got[i] = (uint8_t)(o[0] >> (8 * i));
            got[8 + i] = (uint8_t)(o[1] >> (8 * i));
        }
        assert_memory_equal(got, len ? want15 : want0, 16);
    }
    /* SipHash-1-3, which every hash of the project takes (the fleet digest's
     * on the wire between servers): its own inlined path, pinned to what
     * the generic rounds gave for lengths 0..64 (every tail length) */
    uint8_t m64[64];
    for (int i = 0; i < 64; i++)
        m64[i] = (uint8_t)i;
    uint64_t acc = 0, acc_lo = 0, acc_hi = 0;
    for (size_t len = 0; len <= 64; len++) {
        uint64_t o[2];
        ns_siphash128(key, 1, 3, m64, len, o);
        acc = acc * 31 + ns_siphash(key, 1, 3, m64, len);
        acc_lo = acc_lo * 31 + o[0];
        acc_hi = acc_hi * 31 + o[1];
    }
    assert_true(acc == 0xa0b7a25b531a5624ull);
    assert_true(acc_lo == 0x1d3d3db7f1df370dull);
    assert_true(acc_hi == 0xa1c36ce7ce1ce9b4ull);
}

static double strmap_cost(char (*keys)[16])
{
    ns_strmap_t m = NS_STRMAP_INIT;
    double t0 = cpu_now();
    for (int i = 0; i < N_KEYS; i++)
        assert_int_equal(ns_strmap_put(&m, keys[i], keys[i]), NS_OK);
    for (int i = 0; i < N_KEYS; i++)
        assert_ptr_equal(ns_strmap_get(&m, keys[i]), keys[i]);
    double dt = cpu_now() - t0;
    assert_int_equal(m.len, N_KEYS);
    ns_strmap_clear(&m);
    return dt;
}

static void test_strmap(void **state)
{
    (void)state;
    double c = strmap_cost(crafted), p = strmap_cost(plain);
    expect_flat("strmap", c, p);
}

static void bin_frame(ns_buf_t *f, char (*keys)[16])
{
    ns_buf_t ext = NS_BUF_INIT, h = NS_BUF_INIT;
    for (int i = 0; i < N_KEYS; i++) {
        assert_int_equal(ns_buf_append_be16(&ext, (uint16_t)strlen(keys[i])), NS_OK);
        assert_int_equal(ns_buf_append_str(&ext, keys[i]), NS_OK);
        assert_int_equal(ns_buf_append_be32(&ext, 1), NS_OK);
        assert_int_equal(ns_buf_append_u8(&ext, 'v'), NS_OK);
    }
    assert_int_equal(ns_buf_append_be16(&h, 103), NS_OK);
    assert_int_equal(ns_buf_append_u8(&h, 0), NS_OK);
    assert_int_equal(ns_buf_append_be16(&h, 453), NS_OK);
    assert_int_equal(ns_buf_append_be32(&h, 1), NS_OK);
    assert_int_equal(ns_buf_append_be32(&h, 0), NS_OK);
    assert_int_equal(ns_buf_append_be32(&h, 0), NS_OK);
    assert_int_equal(ns_buf_append_be32(&h, (uint32_t)ext.len), NS_OK);
    assert_int_equal(ns_buf_append(&h, ext.data, ext.len), NS_OK);
    ns_buf_reset(f);
    assert_int_equal(ns_buf_append_be32(f, (uint32_t)(4 + h.len)), NS_OK);
    assert_int_equal(ns_buf_append_be32(f, (1u << 24) | (uint32_t)h.len), NS_OK);
    assert_int_equal(ns_buf_append(f, h.data, h.len), NS_OK);
    ns_buf_free(&ext);
    ns_buf_free(&h);
}

static double header_cost(char (*keys)[16])
{
    ns_buf_t f = NS_BUF_INIT;
    bin_frame(&f, keys);
    ns_cmd_msg_t m;
    ns_cmd_msg_init(&m);
    double t0 = cpu_now();
    assert_int_equal(ns_remoting_decode(f.data, f.len, &m), NS_OK);
    double dt = cpu_now() - t0;
    assert_int_equal(m.cmd.n_ext, N_KEYS);
    ns_cmd_msg_free(&m);
    ns_buf_free(&f);
    return dt;
}

static void test_header_ext_index(void **state)
{
    (void)state;
    double c = header_cost(crafted), p = header_cost(plain);
    expect_flat("extFields index", c, p);
}

static double regbody_cost(char (*keys)[16])
{
    ns_regbody_t b, out;
    memset(&b, 0, sizeof b);
    b.data_version.counter = 1;
    b.data_version.timestamp = 1700000000000LL;
    ns_topic_config_t *t = calloc(N_KEYS, sizeof *t);
    assert_non_null(t);
    for (int i = 0; i < N_KEYS; i++)
        t[i] = (ns_topic_config_t){keys[i], 4, 4, 6, 0};
    b.topics = t;
    b.n_topics = N_KEYS;
    ns_buf_t body = NS_BUF_INIT;
    assert_int_equal(ns_regbody_encode_json(&body, &b), NS_OK);
    double t0 = cpu_now();
    assert_int_equal(ns_regbody_decode(body.data, body.len, 399, 0, &out), NS_OK);
    double dt = cpu_now() - t0;
    assert_int_equal(out.n_topics, N_KEYS);
    ns_regbody_free(&out);
    ns_buf_free(&body);
    free(t);
    return dt;
}

static void test_regbody_topic_index(void **state)
{
    (void)state;
    double c = regbody_cost(crafted), p = regbody_cost(plain);
    expect_flat("register body index", c, p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_siphash_reference),
        cmocka_unit_test(test_strmap),
        cmocka_unit_test(test_header_ext_index),
        cmocka_unit_test(test_regbody_topic_index),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
