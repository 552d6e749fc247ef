/* jsondoc.c - JSON documents handed over as files (jsondoc.h): the byte
 * escaping of names that are not UTF-8, parsing with line and column, and
 * the small helpers the validators name their problems with.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ns/err.h"
#include "ns/jsondoc.h"
#include "ns/strmap.h"

/* ---- bytes that are not UTF-8 ---- */

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), 0 when there is none.
 * Hand-written: a dozen lines, where a library would bring glib or ICU. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    size_t len = c < 0x80                 ? 1
                 : c >= 0xC2 && c <= 0xDF ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F) || (c == 0xF0 && p[1] < 0x90) ||
        (c == 0xF4 && p[1] > 0x8F))
        return 0;
    return len;
}

int ns_json_escape_bytes(const char *text, size_t len, ns_buf_t *out)
{
    const unsigned char *u = (const unsigned char *)text;
    int rc = ns_buf_reserve(out, len + 1);
    size_t run = 0;
    for (size_t i = 0; rc == NS_OK && i < len;) {
        size_t l = utf8_len(u + i, len - i);
        if (l > 0) {
            i += l;
            continue;
        }
        rc = ns_buf_append(out, u + run, i - run);
        rc = rc ? rc : ns_buf_printf(out, "\\uDC%02X", u[i]);
        run = ++i;
    }
    rc = rc ? rc : ns_buf_append(out, u + run, len - run);
    return rc ? rc : ns_buf_append_u8(out, 0);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* The value of the four hex digits at p, -1 when they are not. */
static long hex4(const char *p, size_t n)
{
    long v = 0;
    if (n < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    return v;
}

int ns_json_unescape_bytes(const char *text, size_t len, ns_buf_t *out, size_t *bad_at)
{
    int rc = ns_buf_reserve(out, len + 1);
    bool in_str = false;
    size_t run = 0;
    for (size_t i = 0; rc == NS_OK && i < len; i++) {
        char c = text[i];
        if (c == '"') {
            in_str = !in_str;
        } else if (in_str && c == '\\' && i + 1 < len) {
            long v = text[i + 1] == 'u' ? hex4(text + i + 2, len - i - 2) : -1;
            if (v == 0) { /* a name or value with NUL in it: cut short by every C reader */
                *bad_at = i;
                return NS_EINVAL;
            }
            if (v >= 0xDC80 && v <= 0xDCFF) { /* one byte of a name that is not UTF-8 */
                rc = ns_buf_append(out, text + run, i - run);
                rc = rc ? rc : ns_buf_append_u8(out, (uint8_t)(v & 0xFF));
                i += 5;
                run = i + 1;
            } else {
                i++; /* the escaped character is never a quote that ends the string */
            }
        }
    }
    rc = rc ? rc : ns_buf_append(out, text + run, len - run);
    return rc ? rc : ns_buf_append_u8(out, 0);
}

/* Line and column of offset off in text (both from 1). */
static void line_col(const char *text, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++, (*col)++)
        if (text[i] == '\n') {
            (*line)++;
            *col = 0;
        }
}

int ns_json_parse_object(const char *orig, size_t orig_len, cJSON **root, char *err, size_t errlen)
{
    const char *end = NULL;
    ns_buf_t b = NS_BUF_INIT;
    size_t bad = 0, line, col;
    *root = NULL;
    int rc = ns_json_unescape_bytes(orig, orig_len, &b, &bad);
    if (rc == NS_EINVAL) {
        line_col(orig, bad, &line, &col);
        snprintf(err, errlen, "\\u0000 at line %zu, column %zu: no name or value may hold NUL",
                 line, col);
        goto out;
    }
    if (rc != NS_OK) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    const char *text = (const char *)b.data;
    size_t len = b.len - 1;
    *root = cJSON_ParseWithLengthOpts(text, len + 1, &end, true);
    if (*root == NULL) {
        size_t off = end ? (size_t)(end - text) : 0;
        line_col(text, off < len ? off : len, &line, &col);
        snprintf(err, errlen, "not valid JSON (line %zu, column %zu)", line, col);
        rc = NS_EINVAL;
    } else if (!cJSON_IsObject(*root)) {
        snprintf(err, errlen, "$: expected an object, found %s", ns_json_type_name(*root));
        cJSON_Delete(*root);
        *root = NULL;
        rc = NS_EINVAL;
    }
out:
    ns_buf_free(&b); /* the tree holds copies */
    return rc;
}

/* JSON path of member key under base: $.a.b, or $.a['odd key']. */
void ns_json_path_key(char *out, size_t n, const char *base, const char *key)
{
    bool plain = *key != 0;
    for (const char *p = key; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                strchr("_-%|", *p) != NULL;
    if (plain) {
        if (snprintf(out, n, "%s.%s", base, key) >= (int)n)
            out[n - 1] = 0; /* truncated: still a readable prefix */
        return;
    }
    size_t w = (size_t)snprintf(out, n, "%s['", base);
    for (const char *p = key; *p && w + 4 < n; p++) {
        if (*p == '\'' || *p == '\\')
            out[w++] = '\\';
        out[w++] = *p;
    }
    snprintf(out + (w < n ? w : n - 1), n - (w < n ? w : n - 1), "']");
}

const char *ns_json_type_name(const cJSON *v)
{
    return cJSON_IsString(v)   ? "a string"
           : cJSON_IsNumber(v) ? "a number"
           : cJSON_IsBool(v)   ? "a boolean"
           : cJSON_IsNull(v)   ? "null"
           : cJSON_IsArray(v)  ? "an array"
                               : "an object";
}

const char *ns_json_dup_member(const cJSON *obj, bool *oom)
{
    ns_strmap_t seen = NS_STRMAP_INIT;
    const char *dup = NULL;
    *oom = false;
    for (const cJSON *c = obj->child; c && dup == NULL && !*oom; c = c->next) {
        if (ns_strmap_get(&seen, c->string))
            dup = c->string;
        else if (ns_strmap_put(&seen, c->string, (void *)1) != NS_OK)
            *oom = true;
    }
    ns_strmap_clear(&seen);
    return dup;
}
