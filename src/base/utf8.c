/* utf8.c - strict UTF-8 and the escaping of shown text (include/ns/utf8.h).
 *
 * Hand-written: the Debian libraries that validate UTF-8 (glib, ICU,
 * libunistring) are large for two loops, and none has this escaping; the
 * rules are RFC 3629's table 3-7 ("well-formed byte sequences"). */
#include "ns/utf8.h"

#include <string.h>

#include "ns/err.h"

/* The range the second byte of a sequence led by c must fall in (table 3-7
 * of RFC 3629): narrower than 80..BF after E0 (no overlongs), ED (no
 * surrogates), F0 (no overlongs) and F4 (nothing above U+10FFFF). */
static void second_range(uint8_t c, uint8_t *lo, uint8_t *hi)
{
    *lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    *hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
}

/* Length of the sequence lead byte c starts (2..4), 0 for a byte that
 * never leads one (80..C1, F5..FF). */
static size_t lead_len(uint8_t c)
{
    return c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
}

size_t ns_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
    uint8_t c = s[0], lo, hi;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len = lead_len(c);
    if (len == 0 || n < len)
        return 0;
    second_range(c, &lo, &hi);
    if (s[1] < lo || s[1] > hi)
        return 0;
    uint32_t v = c & (0x7Fu >> len);
    for (size_t k = 1; k < len; k++) {
        if (k > 1 && (s[k] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (s[k] & 0x3Fu);
    }
    *cp = v;
    return len;
}

/* Whether none of the eight bytes at p has its high bit set. */
static inline bool ascii8(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return (w & 0x8080808080808080ull) == 0;
}

bool ns_utf8_valid(const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        if (n - i >= 8 && ascii8(p + i)) {
            i += 8;
            continue;
        }
        size_t k = ns_utf8_decode(p + i, n - i, &cp);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

/* Why no valid sequence starts at p[0] (n > 0 bytes left). */
static const char *sequence_problem(const uint8_t *p, size_t n)
{
    uint8_t c = p[0], lo, hi;
    if (c >= 0x80 && c <= 0xBF)
        return "is not valid UTF-8: a stray continuation byte";
    if (c == 0xC0 || c == 0xC1)
        return "is not valid UTF-8: an overlong sequence";
    if (c >= 0xF5 && c <= 0xF7)
        return "is not valid UTF-8: a code point above U+10FFFF";
    if (c >= 0xF8)
        return "is not valid UTF-8: a byte UTF-8 never uses";
    size_t len = lead_len(c);
    if (n < 2 || (p[1] & 0xC0) != 0x80)
        return "is not valid UTF-8: a truncated sequence";
    second_range(c, &lo, &hi);
    if (p[1] < lo)
        return "is not valid UTF-8: an overlong sequence";
    if (p[1] > hi)
        return c == 0xED ? "is not valid UTF-8: a surrogate encoded in UTF-8"
                         : "is not valid UTF-8: a code point above U+10FFFF";
    for (size_t k = 2; k < len; k++)
        if (k >= n || (p[k] & 0xC0) != 0x80)
            return "is not valid UTF-8: a truncated sequence";
    return NULL; /* not reached for an invalid sequence */
}

const char *ns_utf8_problem(const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        size_t k = ns_utf8_decode(p + i, n - i, &cp);
        if (k == 0) {
            const char *why = sequence_problem(p + i, n - i);
            return why ? why : "is not valid UTF-8: a byte UTF-8 never uses";
        }
        i += k;
    }
    return NULL;
}

/* Code points written as \uHHHH although valid: C1 controls, bidi
 * embeddings/overrides/isolates and the line and paragraph separators. */
static bool shown_escaped(uint32_t cp)
{
    return ns_utf8_is_c1(cp) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) ||
           cp == 0x2028 || cp == 0x2029;
}

static const char hex[] = "0123456789abcdef";

/* The escaped form of what starts at s[0] (n > 0 bytes) into tmp (room for
 * 6 bytes); its length is returned, the bytes it stands for in *adv. */
static size_t escape_one(const uint8_t *s, size_t n, unsigned flags, char *tmp, size_t *adv)
{
    uint8_t c = s[0];
    uint32_t cp;
    *adv = 1;
    if (c >= 0x20 && c < 0x7f) {
        if ((c == '\\' && (flags & NS_ESC_BACKSLASH)) || (c == '"' && (flags & NS_ESC_QUOTE))) {
            tmp[0] = '\\';
            tmp[1] = (char)c;
            return 2;
        }
        tmp[0] = (char)c;
        return 1;
    }
    if (c == '\n' || c == '\r' || c == '\t') {
        tmp[0] = '\\';
        tmp[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        return 2;
    }
    size_t len = c < 0x80 ? 0 : ns_utf8_decode(s, n, &cp);
    if (len == 0) { /* C0, DEL, or a byte no valid sequence starts with */
        tmp[0] = '\\';
        tmp[1] = 'x';
        tmp[2] = hex[c >> 4];
        tmp[3] = hex[c & 15];
        return 4;
    }
    *adv = len;
    if (shown_escaped(cp)) {
        tmp[0] = '\\';
        tmp[1] = 'u';
        for (int k = 0; k < 4; k++)
            tmp[2 + k] = hex[(cp >> (12 - 4 * k)) & 15];
        return 6;
    }
    memcpy(tmp, s, len);
    return len;
}

char *ns_escape(const char *s, size_t n, unsigned flags, char *out, size_t out_size)
{
    const uint8_t *p = (const uint8_t *)s;
    char tmp[8];
    size_t total = 0, o = 0, adv;
    if (out_size == 0)
        return out;
    for (size_t i = 0; i < n; i += adv)
        total += escape_one(p + i, n - i, flags, tmp, &adv);
    /* all of it when it fits; else as much as fits before a "..." */
    bool cut = total >= out_size;
    size_t room = !cut ? out_size - 1 : (out_size >= 4 ? out_size - 4 : 0);
    for (size_t i = 0; i < n; i += adv) {
        size_t k = escape_one(p + i, n - i, flags, tmp, &adv);
        if (o + k > room)
            break;
        memcpy(out + o, tmp, k);
        o += k;
    }
    if (cut && out_size >= 4) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = 0;
    return out;
}

int ns_buf_append_escaped(ns_buf_t *b, const char *s, size_t n, unsigned flags)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t len0 = b->len, adv;
    char tmp[8];
    if (ns_buf_reserve(b, n) != NS_OK)
        return NS_ENOMEM;
    for (size_t i = 0; i < n; i += adv) {
        size_t k = escape_one(p + i, n - i, flags, tmp, &adv);
        if (ns_buf_append(b, tmp, k) != NS_OK) {
            b->len = len0;
            b->data[len0] = 0;
            return NS_ENOMEM;
        }
    }
    return NS_OK;
}
