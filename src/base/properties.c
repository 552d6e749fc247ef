/* properties.c - Java .properties text (include/ns/properties.h).
 *
 * Follows java.util.Properties.load: logical lines are read first (line
 * terminators, comments, continuations), then split into key and value,
 * then each is unescaped (loadConvert). Differences from Java, by design:
 * input bytes are taken as UTF-8 and passed through (Java's InputStream form
 * reads ISO-8859-1); \uXXXX is written as UTF-8, a surrogate pair as one
 * 4-byte sequence and a lone surrogate as '?' (what Java's UTF-8 encoder
 * does); a NUL byte, raw or \u0000, is refused because the callback gets C
 * strings. */
#include "ns/properties.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ns/buf.h"
#include "ns/err.h"

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\f';
}

/* ---- properties text -------------------------------------------------- */

/* Reads the 4 hex digits of a \u escape at p[0..3] (n bytes available). */
static int read_u4(const char *p, size_t n, uint32_t *out)
{
    uint32_t v = 0;
    if (n < 4)
        return NS_EINVAL;
    for (size_t k = 0; k < 4; k++) {
        int h = ns_hex_digit(p[k]);
        if (h < 0)
            return NS_EINVAL;
        v = v << 4 | (uint32_t)h;
    }
    *out = v;
    return NS_OK;
}

static int append_utf8(ns_buf_t *out, uint32_t cp)
{
    uint8_t b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (uint8_t)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (uint8_t)(0xC0 | cp >> 6);
        b[1] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (uint8_t)(0xE0 | cp >> 12);
        b[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (uint8_t)(0xF0 | cp >> 18);
        b[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return ns_buf_append(out, b, n);
}

/* Handles the \uXXXX escape whose digits start at p (n bytes left); *used
 * gets the bytes consumed after the 'u', a following low surrogate escape
 * included. */
static int unescape_u(const char *p, size_t n, ns_buf_t *out, size_t *used)
{
    uint32_t cp = 0, lo = 0;
    if (read_u4(p, n, &cp) != NS_OK || cp == 0)
        return NS_EINVAL;
    *used = 4;
    if (cp >= 0xD800 && cp <= 0xDBFF && n >= 6 && p[4] == '\\' && p[5] == 'u' &&
        read_u4(p + 6, n - 6, &lo) == NS_OK && lo >= 0xDC00 && lo <= 0xDFFF) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        *used = 10;
    } else if (cp >= 0xD800 && cp <= 0xDFFF) {
        cp = '?'; /* lone surrogate, as Java's UTF-8 encoder writes it */
    }
    return append_utf8(out, cp);
}

/* Java's loadConvert: resolves the escapes of [p, p+n) into out, which ends
 * up NUL-terminated. */
static int unescape(const char *p, size_t n, ns_buf_t *out)
{
    ns_buf_reset(out);
    if (ns_buf_reserve(out, n) != NS_OK)
        return NS_ENOMEM;
    out->data[0] = 0;
    for (size_t i = 0; i < n;) {
        char c = p[i++];
        int rc = NS_OK;
        size_t used = 0;
        if (c == 0)
            return NS_EINVAL;
        if (c != '\\') {
            rc = ns_buf_append_u8(out, (uint8_t)c);
        } else if (i == n) {
            break; /* a lone trailing backslash: dropped */
        } else {
            c = p[i++];
            switch (c) {
            case 't':
                c = '\t';
                break;
            case 'n':
                c = '\n';
                break;
            case 'r':
                c = '\r';
                break;
            case 'f':
                c = '\f';
                break;
            case 0:
                return NS_EINVAL;
            default:
                break;
            }
            if (c == 'u') {
                rc = unescape_u(p + i, n - i, out, &used);
                i += used;
            } else {
                rc = ns_buf_append_u8(out, (uint8_t)c);
            }
        }
        if (rc != NS_OK)
            return rc;
    }
    return NS_OK;
}

/* True when the character at s[i] is escaped (an odd run of backslashes
 * before it). */
static bool escaped_at(const char *s, size_t i)
{
    size_t n = 0;
    while (i > n && s[i - n - 1] == '\\')
        n++;
    return n % 2 == 1;
}

/* Splits one logical line as Java's Properties.load0 does and hands the
 * unescaped pair (placed at [start, end) of the text) to cb. */
static int emit_pair(const ns_buf_t *line, ns_buf_t *key, ns_buf_t *val, size_t start, size_t end,
                     ns_properties_pair_cb cb, void *ctx)
{
    const char *s = (const char *)line->data;
    size_t n = line->len, klen = 0, vstart = n;
    bool sep = false, backslash = false;
    int rc = NS_OK;
    for (; klen < n; klen++) {
        char c = s[klen];
        if ((c == '=' || c == ':') && !backslash) {
            vstart = klen + 1;
            sep = true;
            break;
        }
        if (is_ws(c) && !backslash) {
            vstart = klen + 1;
            break;
        }
        backslash = c == '\\' ? !backslash : false;
    }
    for (; vstart < n; vstart++) {
        char c = s[vstart];
        if (is_ws(c))
            continue;
        if (sep || (c != '=' && c != ':'))
            break;
        sep = true;
    }
    size_t vend = n; /* where the unescaped trailing blanks begin */
    while (vend > vstart && is_ws(s[vend - 1]) && !escaped_at(s, vend - 1))
        vend--;
    rc = unescape(s, klen, key);
    if (rc == NS_OK)
        rc = unescape(s + vstart, vend - vstart, val);
    ns_properties_pair_t pair = {0};
    pair.trimmed_len = val->len;
    /* the blanks themselves, unescaped as they are (Java keeps them) */
    if (rc == NS_OK && vend < n && (rc = ns_buf_append(val, s + vend, n - vend)) == NS_OK &&
        (rc = ns_buf_reserve(val, 1)) == NS_OK)
        val->data[val->len] = 0;
    if (rc != NS_OK)
        return rc;
    pair.key = (const char *)key->data;
    pair.value = (const char *)val->data;
    pair.value_len = val->len;
    pair.start = start;
    pair.end = end;
    return cb(&pair, ctx);
}

typedef struct {
    ns_properties_cb cb;
    void *ctx;
} plain_ctx_t;

static int plain_cb(const ns_properties_pair_t *pair, void *ctx)
{
    const plain_ctx_t *p = ctx;
    return p->cb(pair->key, pair->value, p->ctx);
}

int ns_properties_parse(const char *text, size_t len, ns_properties_cb cb, void *ctx)
{
    plain_ctx_t p = {cb, ctx};
    return ns_properties_scan(text, len, plain_cb, &p);
}

int ns_properties_scan(const char *text, size_t len, ns_properties_pair_cb cb, void *ctx)
{
    size_t start = 0; /* where the logical line being read began */
    ns_buf_t line = NS_BUF_INIT, key = NS_BUF_INIT, val = NS_BUF_INIT;
    bool skip_ws = true;    /* at the start of a line: skip blanks */
    bool new_line = true;   /* next character starts a logical line */
    bool comment = false;   /* inside a # or ! line */
    bool backslash = false; /* odd number of backslashes just read */
    bool continued = false; /* inside the leading blanks of a continuation */
    bool skip_lf = false;   /* a continuation ended in \r: a \n after it belongs to it */
    int rc = NS_OK;
    size_t i = 0;
    /* a UTF-8 byte order mark, which editors on Windows put first: not part
     * of the first key (it made "unknown key" with the mark invisible) */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        i = 3;

    for (; i < len && rc == NS_OK; i++) {
        char c = text[i];
        if (skip_lf) {
            skip_lf = false;
            if (c == '\n')
                continue;
        }
        if (skip_ws) {
            if (is_ws(c) || (!continued && (c == '\r' || c == '\n')))
                continue;
            skip_ws = false;
            continued = false;
        }
        if (new_line) {
            new_line = false;
            comment = c == '#' || c == '!';
            start = i;
        }
        if (c != '\n' && c != '\r') {
            if (!comment) {
                rc = ns_buf_append_u8(&line, (uint8_t)c);
                backslash = c == '\\' ? !backslash : false;
            }
            continue;
        }
        if (comment || line.len == 0) {
            /* end of a comment or an empty continuation: nothing to emit */
        } else if (backslash) {
            line.len--; /* drop the backslash, join the next line */
            backslash = false;
            skip_ws = true;
            continued = true;
            skip_lf = c == '\r';
            continue;
        } else {
            rc = emit_pair(&line, &key, &val, start, i, cb, ctx);
        }
        ns_buf_reset(&line);
        comment = false;
        new_line = true;
        skip_ws = true;
    }
    if (rc == NS_OK && !comment && backslash && line.len > 0)
        line.len--; /* a continuation at the end of the text joins nothing */
    if (rc == NS_OK && !comment && line.len > 0)
        rc = emit_pair(&line, &key, &val, start, len, cb, ctx);

    ns_buf_free(&line);
    ns_buf_free(&key);
    ns_buf_free(&val);
    return rc;
}

int ns_properties_append_escaped(ns_buf_t *out, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        const char *esc = NULL;
        switch (s[i]) {
        case '\\':
            esc = "\\\\";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        case '\f':
            esc = "\\f";
            break;
        case ' ':
            esc = i == 0 || i == n - 1 ? "\\ " : NULL;
            break;
        default:
            break;
        }
        int rc = esc ? ns_buf_append_str(out, esc) : ns_buf_append_u8(out, (uint8_t)s[i]);
        if (rc != NS_OK)
            return rc;
    }
    return NS_OK;
}
