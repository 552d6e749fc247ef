/* hash.h - the keyed hash of every in-memory hash index a peer can fill.
 *
 * The indexes that a peer fills (a header's extFields, a registration body's
 * topics and mappings, the string maps of routes and liveness) used FNV-1a,
 * whose low bits anyone can steer: keys crafted to share a slot made each
 * index quadratic again. ns_hash is SipHash-1-3 (Aumasson and Bernstein's
 * SipHash with one compression and three finalisation rounds, the variant
 * Rust's and Python's hash tables use) under a 128-bit key drawn from
 * getrandom(2) once per process, before main. Hand-written (about 50 lines):
 * the Debian libraries at hand offer only SipHash-2-4 (libsodium, OpenSSL's
 * EVP_MAC) behind a call that costs more than the hashing of a topic name. */
#ifndef NS_HASH_H
#define NS_HASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-c-d of [p, p+n) under key (16 bytes, little-endian k0, k1). */
uint64_t ns_siphash(const uint8_t key[16], int c_rounds, int d_rounds, const void *p, size_t n);
/* The 128-bit output variant (SipHash128: v1 ^= 0xee at the start, two
 * finalisations), one pass over the data: out[0] the first 64 bits. */
void ns_siphash128(const uint8_t key[16], int c_rounds, int d_rounds, const void *p, size_t n,
                   uint64_t out[2]);
/* SipHash-1-3 of [p, p+n) under this process's random key. */
uint64_t ns_hash(const void *p, size_t n);
/* ns_hash of a NUL-terminated string (without the NUL). */
uint64_t ns_hash_str(const char *s);

#endif
