/* buf.h - growable byte buffer and small string helpers.
 *
 * An ns_buf_t owns its memory: init with NS_BUF_INIT or ns_buf_init(), free
 * with ns_buf_free(). Append functions return NS_OK or NS_ENOMEM; on
 * NS_ENOMEM the buffer keeps its previous contents.
 */
#ifndef NS_BUF_H
#define NS_BUF_H

#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint8_t *data;
    size_t len;
    size_t cap;
} ns_buf_t;

#define NS_BUF_INIT                                                                                \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* A borrowed byte range; lifetime is stated by whoever hands it out. */
typedef struct {
    const uint8_t *ptr;
    size_t len;
} ns_slice_t;

void ns_buf_init(ns_buf_t *b);
void ns_buf_free(ns_buf_t *b);
void ns_buf_reset(ns_buf_t *b); /* len = 0, keeps capacity */
int ns_buf_reserve(ns_buf_t *b, size_t extra);
/* Appends n bytes and keeps a NUL after them. Inline when they fit (the
 * encoders call it for every fragment), else ns_buf_append_grow. */
int ns_buf_append_grow(ns_buf_t *b, const void *p, size_t n);
static inline int ns_buf_append(ns_buf_t *b, const void *p, size_t n)
{
    if (b->cap > b->len && n < b->cap - b->len) {
        if (n)
            memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = 0;
        return 0;
    }
    return ns_buf_append_grow(b, p, n);
}
int ns_buf_append_str(ns_buf_t *b, const char *s);
int ns_buf_append_u8(ns_buf_t *b, uint8_t v);
int ns_buf_append_be16(ns_buf_t *b, uint16_t v);
int ns_buf_append_be32(ns_buf_t *b, uint32_t v);
/* Appends v in decimal (ns_dec_write). */
int ns_buf_append_i64_dec(ns_buf_t *b, int64_t v);
int ns_buf_printf(ns_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The value of hex digit c (either case), -1 when c is not one. */
int ns_hex_digit(char c);
int ns_buf_vprintf(ns_buf_t *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Appends a JSON string literal with quotes, escaped as fastjson does:
 * '"', '\\' and control characters escaped; non-ASCII raw (ascii_only=false)
 * or as \uXXXX (ascii_only=true, for "standard" JSON, UTF-16 surrogates for
 * code points above U+FFFF). A byte that starts no valid UTF-8 sequence
 * (ns/utf8.h) is written as \uFFFD, as Java's decoder reads it, so the
 * text is valid JSON whatever bytes s holds. */
int ns_buf_append_json_str(ns_buf_t *b, const char *s, size_t n, bool ascii_only);
/* Returns a NUL-terminated copy of the buffer contents; caller frees. */
char *ns_buf_strdup(const ns_buf_t *b);
/* Detaches the data pointer (caller frees with free()); buffer becomes empty. */
uint8_t *ns_buf_steal(ns_buf_t *b, size_t *len_out);

static inline uint32_t ns_be32_read(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint16_t ns_be16_read(const uint8_t *p)
{
    return (uint16_t)(((uint16_t)p[0] << 8) | p[1]);
}
static inline void ns_be32_write(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* The one decimal integer writer, two digits at a time from ns_dec_pairs
 * (buf.c). ns_dec_len(v) is how many bytes v takes ('-' and digits);
 * ns_dec_write(p, v, len) writes exactly those len bytes at p (no NUL).
 * Underneath, for callers that hold a magnitude already: ns_dec_len_u32
 * counts its digits and ns_dec_put_u32/_u64 write them backwards so that
 * they end just before `end`, returning where they start. Inline: a reply
 * header patches its opaque with them on every route lookup, where a call
 * into the base library showed. Growable buffers use ns_buf_append_i64_dec
 * on top. */
extern const char ns_dec_pairs[200];
static inline size_t ns_dec_len_u32(uint32_t u)
{
    return 1u + (u >= 10u) + (u >= 100u) + (u >= 1000u) + (u >= 10000u) + (u >= 100000u) +
           (u >= 1000000u) + (u >= 10000000u) + (u >= 100000000u) + (u >= 1000000000u);
}
static inline uint8_t *ns_dec_put_u32(uint8_t *end, uint32_t u)
{
    uint8_t *q = end;
    while (u >= 100) {
        uint32_t r = u % 100;
        u /= 100;
        *--q = (uint8_t)ns_dec_pairs[2 * r + 1];
        *--q = (uint8_t)ns_dec_pairs[2 * r];
    }
    if (u >= 10) {
        *--q = (uint8_t)ns_dec_pairs[2 * u + 1];
        *--q = (uint8_t)ns_dec_pairs[2 * u];
    } else {
        *--q = (uint8_t)('0' + u);
    }
    return q;
}
static inline uint8_t *ns_dec_put_u64(uint8_t *end, uint64_t u)
{
    while (u > UINT32_MAX) { /* only 64-bit values pay for these divisions */
        uint64_t r = u % 100;
        u /= 100;
        *--end = (uint8_t)ns_dec_pairs[2 * r + 1];
        *--end = (uint8_t)ns_dec_pairs[2 * r];
    }
    return ns_dec_put_u32(end, (uint32_t)u);
}
static inline size_t ns_dec_len(int64_t v)
{
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    size_t n = v < 0;
    for (; u > UINT32_MAX; u /= 10)
        n++;
    return n + ns_dec_len_u32((uint32_t)u);
}
static inline void ns_dec_write(uint8_t *p, int64_t v, size_t len)
{
    uint8_t *q = ns_dec_put_u64(p + len, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
    if (v < 0)
        q[-1] = '-';
}

/* Room for element n of an array that grows one element at a time: when n
 * is 0 or a power of two the array is reallocated to twice n (at least 1)
 * elements of `size` bytes, so appending n elements costs O(n). Returns the
 * (possibly moved) array, or NULL on ENOMEM with arr left intact. Use it
 * for every growth of a given array, and only for arrays it allocated. */
void *ns_array_grow(void *arr, size_t n, size_t size);

/* Room for element n of an array whose capacity (*cap elements) the caller
 * keeps, so the array can be emptied and refilled without shrinking: when
 * n >= *cap the array is reallocated to twice *cap (at least 4, at least
 * n + 1) elements of `size` bytes and *cap updated. Returns the (possibly
 * moved) array, or NULL on ENOMEM with arr and *cap left intact. */
void *ns_array_room(void *arr, size_t *cap, size_t n, size_t size);

/* strtoll-style strict decimal parse of [p, p+n): optional sign, digits only.
 * Returns NS_OK or NS_EINVAL (empty, junk, overflow). */
int ns_parse_i64(const char *p, size_t n, int64_t *out);

#endif
