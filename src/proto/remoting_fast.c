/* remoting_fast.c - the fast path of the JSON header decoder.
 *
 * The headers real clients send are flat: numbers for code/flag/opaque/
 * version, plain strings elsewhere, an extFields object of plain strings.
 * This scanner decodes exactly that shape without building a cJSON tree;
 * anything else (escapes, nulls, nested values, numeric ext values, odd
 * spacing it does not expect) makes it give up with NS_EFALLBACK, and the
 * general decoder (remoting_json.c) handles the header from scratch.
 */
#include <limits.h>
#include <string.h>

#include "ns/codes.h"
#include "remoting_int.h"

static bool is_json_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\b';
}

typedef struct {
    const uint8_t *p, *end;
} scan_t;

static void skip_ws(scan_t *s)
{
    while (s->p < s->end && is_json_space(*s->p))
        s->p++;
}

static bool scan_char(scan_t *s, uint8_t c)
{
    skip_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* A string without escapes or control characters: [*str, *str+*len). */
static bool scan_plain_str(scan_t *s, const uint8_t **str, size_t *len)
{
    if (!scan_char(s, '"'))
        return false;
    const uint8_t *q = s->p;
    while (q < s->end && *q != '"') {
        if (*q == '\\' || *q < 0x20)
            return false;
        q++;
    }
    if (q >= s->end)
        return false;
    *str = s->p;
    *len = (size_t)(q - s->p);
    s->p = q + 1;
    return true;
}

/* An integer in int32 range, not followed by a fraction or exponent. Up
 * to 10 digits (11 would not fit anyway, leading zeros aside: those fall
 * back to the general decoder). */
static bool scan_i32(scan_t *s, int32_t *out)
{
    skip_ws(s);
    const uint8_t *q = s->p, *end = s->end;
    bool neg = q < end && *q == '-';
    q += neg;
    const uint8_t *digits = q;
    uint64_t v = 0;
    unsigned d;
    while (q < end && (d = (unsigned)(*q - '0')) < 10) {
        if (q - digits == 10)
            return false;
        v = v * 10 + d;
        q++;
    }
    if (q == digits || (q < end && (*q == '.' || (*q | 0x20) == 'e')))
        return false;
    if (v > (uint64_t)INT32_MAX + neg)
        return false;
    *out = neg ? (int32_t)(-(int64_t)v) : (int32_t)v;
    s->p = q;
    return true;
}

static bool key_is(const uint8_t *k, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(k, lit, n) == 0;
}

static int scan_ext(scan_t *s, ns_cmd_msg_t *m)
{
    if (!scan_char(s, '{'))
        return NS_EFALLBACK;
    m->cmd.has_ext = true;
    if (scan_char(s, '}'))
        return NS_OK;
    do {
        const uint8_t *k, *v;
        size_t kn, vn, koff, voff;
        if (!scan_plain_str(s, &k, &kn) || !scan_char(s, ':') || !scan_plain_str(s, &v, &vn))
            return NS_EFALLBACK;
        if (ns_hdr_arena_put(&m->arena, k, kn, &koff) != NS_OK ||
            ns_hdr_arena_put(&m->arena, v, vn, &voff) != NS_OK ||
            ns_hdr_ext_add(m, koff, kn, voff, vn) != NS_OK)
            return NS_ENOMEM;
    } while (scan_char(s, ','));
    return scan_char(s, '}') ? NS_OK : NS_EFALLBACK;
}

int ns_hdr_json_fast(const uint8_t *hdr, size_t hdr_len, ns_cmd_msg_t *m)
{
    scan_t s = {hdr, hdr + hdr_len};
    bool has_remark = false;
    size_t remark_off = 0;
    if (!scan_char(&s, '{'))
        return NS_EFALLBACK;
    if (!scan_char(&s, '}')) {
        do {
            const uint8_t *k, *v;
            size_t kn, vn;
            int32_t num;
            if (!scan_plain_str(&s, &k, &kn) || !scan_char(&s, ':'))
                return NS_EFALLBACK;
            if (key_is(k, kn, "code") || key_is(k, kn, "flag") || key_is(k, kn, "opaque") ||
                key_is(k, kn, "version")) {
                if (!scan_i32(&s, &num))
                    return NS_EFALLBACK;
                int32_t *f = k[0] == 'c'   ? &m->cmd.code
                             : k[0] == 'f' ? &m->cmd.flag
                             : k[0] == 'o' ? &m->cmd.opaque
                                           : &m->cmd.version;
                *f = num;
            } else if (key_is(k, kn, "extFields")) {
                int rc = scan_ext(&s, m);
                if (rc != NS_OK)
                    return rc;
            } else if (key_is(k, kn, "language")) {
                if (!scan_plain_str(&s, &v, &vn))
                    return NS_EFALLBACK;
                m->cmd.language = ns_language_code((const char *)v, vn);
            } else if (key_is(k, kn, "remark")) {
                if (!scan_plain_str(&s, &v, &vn))
                    return NS_EFALLBACK;
                if (ns_hdr_arena_put(&m->arena, v, vn, &remark_off) != NS_OK)
                    return NS_ENOMEM;
                has_remark = true;
                m->cmd.remark_len = vn;
            } else if (!scan_plain_str(&s, &v, &vn) && !scan_i32(&s, &num)) {
                return NS_EFALLBACK; /* an unknown member that is not a plain value */
            }
        } while (scan_char(&s, ','));
        if (!scan_char(&s, '}'))
            return NS_EFALLBACK;
    }
    skip_ws(&s);
    if (s.p != s.end)
        return NS_EFALLBACK;
    ns_hdr_fix_pointers(m, has_remark, remark_off);
    return NS_OK;
}
