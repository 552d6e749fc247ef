/* hash.c - SipHash under a per-process random key (ns/hash.h). */
#include "ns/hash.h"

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static uint8_t process_key[16];

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static uint64_t le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* the project builds for little-endian hosts only */
    return v;
}

static inline void sip_round(uint64_t v[4])
{
    v[0] += v[1];
    v[1] = ROTL(v[1], 13);
    v[1] ^= v[0];
    v[0] = ROTL(v[0], 32);
    v[2] += v[3];
    v[3] = ROTL(v[3], 16);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = ROTL(v[3], 21);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = ROTL(v[1], 17);
    v[1] ^= v[2];
    v[2] = ROTL(v[2], 32);
}

/* The last 0-7 bytes of the input and its length, as SipHash pads them. */
static inline uint64_t sip_tail(const uint8_t *p, size_t n)
{
    uint64_t b = (uint64_t)n << 56;
    switch (n & 7) { /* p may be NULL when n is 0 */
    case 7:
        b |= (uint64_t)p[6] << 48; /* fall through */
    case 6:
        b |= (uint64_t)p[5] << 40; /* fall through */
    case 5:
        b |= (uint64_t)p[4] << 32; /* fall through */
    case 4:
        b |= (uint64_t)p[3] << 24; /* fall through */
    case 3:
        b |= (uint64_t)p[2] << 16; /* fall through */
    case 2:
        b |= (uint64_t)p[1] << 8; /* fall through */
    case 1:
        b |= (uint64_t)p[0];
        break;
    default:
        break;
    }
    return b;
}

/* The state after key setup and compression of [data, data+n); wide: the
 * 128-bit variant's initial v1. Inlined where the round counts are
 * constants, so SipHash-1-3 (every hash the project takes) runs without
 * loops over its rounds. */
static inline __attribute__((always_inline)) void sip_absorb(uint64_t v[4], const uint8_t key[16],
                                                             bool wide, int c_rounds,
                                                             const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t k0 = le64(key), k1 = le64(key + 8);
    v[0] = 0x736f6d6570736575ull ^ k0;
    v[1] = 0x646f72616e646f6dull ^ k1 ^ (wide ? 0xee : 0);
    v[2] = 0x6c7967656e657261ull ^ k0;
    v[3] = 0x7465646279746573ull ^ k1;
    size_t blocks = n / 8;
    for (size_t j = 0; j < blocks; j++) {
        uint64_t m = le64(p + 8 * j);
        v[3] ^= m;
        for (int i = 0; i < c_rounds; i++)
            sip_round(v);
        v[0] ^= m;
    }
    uint64_t b = sip_tail(p + 8 * blocks, n);
    v[3] ^= b;
    for (int i = 0; i < c_rounds; i++)
        sip_round(v);
    v[0] ^= b;
}

static inline __attribute__((always_inline)) uint64_t
sip64(const uint8_t key[16], int c_rounds, int d_rounds, const void *data, size_t n)
{
    uint64_t v[4];
    sip_absorb(v, key, false, c_rounds, data, n);
    v[2] ^= 0xff;
    for (int i = 0; i < d_rounds; i++)
        sip_round(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

static inline __attribute__((always_inline)) void sip128(const uint8_t key[16], int c_rounds,
                                                         int d_rounds, const void *data, size_t n,
                                                         uint64_t out[2])
{
    uint64_t v[4];
    sip_absorb(v, key, true, c_rounds, data, n);
    v[2] ^= 0xee;
    for (int i = 0; i < d_rounds; i++)
        sip_round(v);
    out[0] = v[0] ^ v[1] ^ v[2] ^ v[3];
    v[1] ^= 0xdd;
    for (int i = 0; i < d_rounds; i++)
        sip_round(v);
    out[1] = v[0] ^ v[1] ^ v[2] ^ v[3];
}

uint64_t ns_siphash(const uint8_t key[16], int c_rounds, int d_rounds, const void *data, size_t n)
{
    if (c_rounds == 1 && d_rounds == 3)
        return sip64(key, 1, 3, data, n);
    return sip64(key, c_rounds, d_rounds, data, n);
}

void ns_siphash128(const uint8_t key[16], int c_rounds, int d_rounds, const void *data, size_t n,
                   uint64_t out[2])
{
    if (c_rounds == 1 && d_rounds == 3)
        sip128(key, 1, 3, data, n, out);
    else
        sip128(key, c_rounds, d_rounds, data, n, out);
}

uint64_t ns_hash(const void *p, size_t n)
{
    return sip64(process_key, 1, 3, p, n);
}

uint64_t ns_hash_str(const char *s)
{
    return sip64(process_key, 1, 3, s, strlen(s));
}

/* Before main, so no index is ever built under another key. getrandom
 * blocks only until the kernel's pool is first initialised (early boot);
 * if it fails anyway the clock and pid still make the key differ per
 * process. */
__attribute__((constructor)) static void seed_process_key(void)
{
    size_t got = 0;
    while (got < sizeof process_key) {
        ssize_t r = getrandom(process_key + got, sizeof process_key - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (got < sizeof process_key) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t a = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30);
        uint64_t b = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&ts;
        memcpy(process_key, &a, 8);
        memcpy(process_key + 8, &b, 8);
    }
}
