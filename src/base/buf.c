/* buf.c - growable byte buffer and string helpers (include/ns/buf.h). */
#include "ns/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/err.h"
#include "ns/utf8.h"

void ns_buf_init(ns_buf_t *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void ns_buf_free(ns_buf_t *b)
{
    free(b->data);
    ns_buf_init(b);
}

void ns_buf_reset(ns_buf_t *b)
{
    b->len = 0;
}

int ns_buf_reserve(ns_buf_t *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        return NS_ENOMEM;
    size_t need = b->len + extra + 1; /* room for a NUL terminator */
    if (need <= b->cap)
        return NS_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *p = realloc(b->data, cap);
    if (p == NULL)
        return NS_ENOMEM;
    b->data = p;
    b->cap = cap;
    return NS_OK;
}

int ns_buf_append_grow(ns_buf_t *b, const void *p, size_t n)
{
    if (ns_buf_reserve(b, n) != NS_OK)
        return NS_ENOMEM;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return NS_OK;
}

int ns_buf_append_str(ns_buf_t *b, const char *s)
{
    return ns_buf_append(b, s, strlen(s));
}

int ns_buf_append_u8(ns_buf_t *b, uint8_t v)
{
    return ns_buf_append(b, &v, 1);
}

int ns_buf_append_be16(ns_buf_t *b, uint16_t v)
{
    uint8_t p[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    return ns_buf_append(b, p, 2);
}

int ns_buf_append_be32(ns_buf_t *b, uint32_t v)
{
    uint8_t p[4];
    ns_be32_write(p, v);
    return ns_buf_append(b, p, 4);
}

const char ns_dec_pairs[200] = {
#define NS_DEC_PAIR(t)                                                                             \
    t, '0', t, '1', t, '2', t, '3', t, '4', t, '5', t, '6', t, '7', t, '8', t, '9'
    NS_DEC_PAIR('0'), NS_DEC_PAIR('1'), NS_DEC_PAIR('2'), NS_DEC_PAIR('3'), NS_DEC_PAIR('4'),
    NS_DEC_PAIR('5'), NS_DEC_PAIR('6'), NS_DEC_PAIR('7'), NS_DEC_PAIR('8'), NS_DEC_PAIR('9'),
#undef NS_DEC_PAIR
};

/* Written out by hand: snprintf("%lld") was the largest single cost of
 * encoding a batch of routes (four numbers per queue, two forms per topic). */
int ns_buf_append_i64_dec(ns_buf_t *b, int64_t v)
{
    if ((uint64_t)v < 10 && b->cap > b->len + 1) { /* most numbers in a route: perm, flags */
        b->data[b->len++] = (uint8_t)('0' + v);
        b->data[b->len] = 0;
        return NS_OK;
    }
    size_t n = ns_dec_len(v);
    if ((b->cap <= b->len || n >= b->cap - b->len) && ns_buf_reserve(b, n) != NS_OK)
        return NS_ENOMEM;
    ns_dec_write(b->data + b->len, v, n);
    b->len += n;
    b->data[b->len] = 0;
    return NS_OK;
}

int ns_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int ns_buf_vprintf(ns_buf_t *b, const char *fmt, va_list ap)
{
    va_list again;
    size_t room = b->cap > b->len ? b->cap - b->len : 0;
    va_copy(again, ap);
    int n = vsnprintf(room ? (char *)b->data + b->len : NULL, room, fmt, ap);
    int rc = NS_OK;
    if (n < 0) {
        rc = NS_EINVAL;
    } else if ((size_t)n < room) { /* it fitted: one pass */
        b->len += (size_t)n;
    } else if (ns_buf_reserve(b, (size_t)n) != NS_OK) {
        rc = NS_ENOMEM;
    } else {
        vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
    return rc;
}

int ns_buf_printf(ns_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = ns_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

/* True for the bytes a JSON string holds as they are in either form. */
static inline bool json_plain(unsigned char c)
{
    return (unsigned char)(c - 0x20) < 0x60 && c != '"' && c != '\\';
}

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* The high bit of every byte of w that is zero (and maybe of a byte after
 * one that is: only "any" is read from it). */
static inline uint64_t zero_bytes(uint64_t w)
{
    return (w - ONES) & ~w & HIGHS;
}

/* How many bytes at the start of u[0, n) need no escaping, eight at a time
 * (every name in a route is plain ASCII; the bytes of a word with one to
 * escape are then looked at one by one). */
static size_t json_plain_run(const unsigned char *u, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, u + i, 8);
        uint64_t bad =
            (w | (w - 0x20 * ONES) | zero_bytes(w ^ ('"' * ONES)) | zero_bytes(w ^ ('\\' * ONES))) &
            HIGHS;
        if (bad)
            break;
    }
    while (i < n && json_plain(u[i]))
        i++;
    return i;
}

/* Appends u[i, n) escaped, then the closing quote: the rest of
 * ns_buf_append_json_str from the first byte that may need escaping. */
static int json_str_escape(ns_buf_t *b, const unsigned char *u, size_t n, size_t i, bool ascii_only)
{
    static const char hex[] = "0123456789ABCDEF"; /* fastjson writes upper case */
    size_t run = i; /* start of the pending run of bytes copied as they are */
    while (i < n) {
        unsigned char c = u[i];
        const char *esc = NULL;
        char ubuf[32];
        size_t adv = 1;
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\b')
            esc = "\\b";
        else if (c == '\f')
            esc = "\\f";
        else if (c < 0x20) {
            snprintf(ubuf, sizeof ubuf, "\\u%04X", c);
            esc = ubuf;
        } else if (c >= 0x80) {
            uint32_t cp = 0;
            adv = ns_utf8_decode(u + i, n - i, &cp);
            if (adv == 0) { /* never invalid JSON text: what Java decodes it to */
                adv = 1;
                esc = "\\uFFFD";
            } else if (!ascii_only) {
                i += adv; /* copied as it is */
                continue;
            } else if (cp >= 0x10000) {
                uint32_t v = cp - 0x10000;
                uint32_t hi = 0xD800 + (v >> 10), lo = 0xDC00 + (v & 0x3FF);
                snprintf(ubuf, sizeof ubuf, "\\u%04X\\u%04X", hi, lo);
                esc = ubuf;
            } else {
                ubuf[0] = '\\';
                ubuf[1] = 'u';
                ubuf[2] = hex[(cp >> 12) & 15];
                ubuf[3] = hex[(cp >> 8) & 15];
                ubuf[4] = hex[(cp >> 4) & 15];
                ubuf[5] = hex[cp & 15];
                ubuf[6] = 0;
                esc = ubuf;
            }
        }
        if (esc) {
            if (ns_buf_append(b, u + run, i - run) != NS_OK || ns_buf_append_str(b, esc) != NS_OK)
                return NS_ENOMEM;
            i += adv;
            run = i;
        } else {
            i++;
        }
    }
    if (ns_buf_append(b, u + run, n - run) != NS_OK)
        return NS_ENOMEM;
    return ns_buf_append_u8(b, '"');
}

/* Most strings (names, addresses) hold nothing to escape: one scan and one
 * copy, the escaping loop only from the first byte that may need it (it
 * was the largest own cost of a batch's route encoding). */
int ns_buf_append_json_str(ns_buf_t *b, const char *s, size_t n, bool ascii_only)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = json_plain_run(u, n);
    if (ns_buf_reserve(b, n + 2) != NS_OK)
        return NS_ENOMEM;
    uint8_t *p = b->data + b->len;
    p[0] = '"';
    if (i)
        memcpy(p + 1, u, i);
    b->len += 1 + i;
    if (i < n)
        return json_str_escape(b, u, n, i, ascii_only);
    p[1 + i] = '"';
    b->len++;
    b->data[b->len] = 0;
    return NS_OK;
}

char *ns_buf_strdup(const ns_buf_t *b)
{
    char *s = malloc(b->len + 1);
    if (s == NULL)
        return NULL;
    if (b->len)
        memcpy(s, b->data, b->len);
    s[b->len] = 0;
    return s;
}

uint8_t *ns_buf_steal(ns_buf_t *b, size_t *len_out)
{
    uint8_t *p = b->data;
    if (len_out)
        *len_out = b->len;
    ns_buf_init(b);
    return p;
}

int ns_parse_i64(const char *p, size_t n, int64_t *out)
{
    if (n == 0 || n >= 32) /* strtoll's reach with leading zeros, as before */
        return NS_EINVAL;
    bool neg = p[0] == '-';
    size_t i = (neg || p[0] == '+') ? 1 : 0;
    if (i == n)
        return NS_EINVAL;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, u = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)p[i] - '0';
        if (d > 9 || u > (limit - d) / 10)
            return NS_EINVAL;
        u = u * 10 + d;
    }
    *out = neg ? -(int64_t)(u - 1) - 1 : (int64_t)u;
    return NS_OK;
}

void *ns_array_grow(void *arr, size_t n, size_t size)
{
    if (n != 0 && (n & (n - 1)) != 0)
        return arr; /* capacity is the next power of two: room left */
    size_t cap = n ? 2 * n : 1;
    if (cap > SIZE_MAX / size)
        return NULL;
    return realloc(arr, cap * size);
}

void *ns_array_room(void *arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return arr;
    size_t c = *cap ? 2 * *cap : 4;
    while (c <= n && c <= SIZE_MAX / 2)
        c *= 2;
    if (c <= n || c > SIZE_MAX / size)
        return NULL;
    void *na = realloc(arr, c * size);
    if (na != NULL)
        *cap = c;
    return na;
}
