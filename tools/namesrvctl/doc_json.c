/* doc_json.c - typed access to JSON document members with path-named
 * errors (doc_json.h): the first problem wins.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "doc_json.h"
#include "ns/err.h"
#include "ns/names.h"
#include "ns/strmap.h"

/* ---- reporting: the first problem wins ---- */

int ctl_doc_bad(ctl_doc_t *d, const char *path, const char *fmt, ...)
{
    if (d->err[0] == 0) {
        va_list ap;
        va_start(ap, fmt);
        int n = snprintf(d->err, sizeof d->err, "%s: ", path);
        if (n > 0 && (size_t)n < sizeof d->err)
            vsnprintf(d->err + n, sizeof d->err - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return CTL_INVALID;
}

/* JSON path of member key under base: $.a.b, or $.a['odd key']. */
void ctl_doc_path_key(char *out, size_t n, const char *base, const char *key)
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

void ctl_doc_path_idx(char *out, size_t n, const char *base, size_t i)
{
    if (snprintf(out, n, "%s[%zu]", base, i) >= (int)n)
        out[n - 1] = 0;
}

const char *ctl_doc_type_name(const cJSON *v)
{
    return cJSON_IsString(v)   ? "a string"
           : cJSON_IsNumber(v) ? "a number"
           : cJSON_IsBool(v)   ? "a boolean"
           : cJSON_IsNull(v)   ? "null"
           : cJSON_IsArray(v)  ? "an array"
                               : "an object";
}

/* ---- typed access; every getter reports with the member's path ---- */

int ctl_doc_value_i64(ctl_doc_t *d, const cJSON *v, const char *path, int64_t min, int64_t max,
                      int64_t *out)
{
    if (cJSON_IsNumber(v)) {
        double x = v->valuedouble;
        if (x > (double)CTL_JSON_MAX_SAFE_INT || x < -(double)CTL_JSON_MAX_SAFE_INT ||
            x != (double)(int64_t)x) /* range first: the cast is defined only in range */
            return ctl_doc_bad(d, path, "expected an integer (beyond 2^53 write it as a string)");
        *out = (int64_t)x;
    } else if (cJSON_IsString(v)) {
        if (ns_parse_i64(v->valuestring, strlen(v->valuestring), out) != NS_OK)
            return ctl_doc_bad(d, path, "'%s' is not an integer", v->valuestring);
    } else {
        return ctl_doc_bad(d, path, "expected an integer, found %s", ctl_doc_type_name(v));
    }
    if (*out < min || *out > max)
        return ctl_doc_bad(d, path, "%lld is out of range [%lld, %lld]", (long long)*out,
                           (long long)min, (long long)max);
    return CTL_OK;
}

/* Member key of obj: *out NULL when absent (an error when required). */
int ctl_doc_member(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key, bool required,
                   cJSON **out, char *path, size_t pn)
{
    ctl_doc_path_key(path, pn, base, key);
    *out = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (*out == NULL && required)
        return ctl_doc_bad(d, path, "missing");
    return CTL_OK;
}

/* Members that name something stored under a key (ns/names.h). */
static bool is_name_field(const char *key)
{
    return strcmp(key, "cluster") == 0 || strcmp(key, "brokerAddr") == 0 ||
           strcmp(key, "brokerName") == 0 || strcmp(key, "bname") == 0;
}

int ctl_doc_get_str(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key,
                    bool required, bool nullable, const char **out)
{
    char path[512];
    cJSON *v;
    *out = NULL;
    if (ctl_doc_member(d, obj, base, key, required, &v, path, sizeof path) != CTL_OK || v == NULL)
        return d->err[0] ? CTL_INVALID : CTL_OK;
    if (nullable && cJSON_IsNull(v))
        return CTL_OK;
    if (!cJSON_IsString(v))
        return ctl_doc_bad(d, path, "expected a string, found %s", ctl_doc_type_name(v));
    if (!nullable && v->valuestring[0] == 0)
        return ctl_doc_bad(d, path, "must not be empty");
    if (is_name_field(key) && v->valuestring[0] != 0) {
        const char *why = ns_name_problem_stored(v->valuestring, strlen(v->valuestring));
        if (why != NULL)
            return ctl_doc_bad(d, path, "not a valid name: %s", why);
    }
    *out = v->valuestring;
    return CTL_OK;
}

int ctl_doc_get_i64(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key,
                    bool required, int64_t def, int64_t min, int64_t max, int64_t *out)
{
    char path[512];
    cJSON *v;
    *out = def;
    if (ctl_doc_member(d, obj, base, key, required, &v, path, sizeof path) != CTL_OK)
        return CTL_INVALID;
    return v ? ctl_doc_value_i64(d, v, path, min, max, out) : CTL_OK;
}

int ctl_doc_get_i32(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key,
                    bool required, int32_t *out)
{
    int64_t v = 0;
    int rc = ctl_doc_get_i64(d, obj, base, key, required, 0, INT32_MIN, INT32_MAX, &v);
    *out = (int32_t)v;
    return rc;
}

/* The same inside [min, max]: queue counts and flags are never negative. */
int ctl_doc_get_i32_in(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key,
                       bool required, int32_t min, int32_t max, int32_t *out)
{
    int64_t v = 0;
    int rc = ctl_doc_get_i64(d, obj, base, key, required, 0, min, max, &v);
    *out = (int32_t)v;
    return rc;
}

int ctl_doc_get_bool(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key, bool *out)
{
    char path[512];
    cJSON *v;
    *out = false; /* every boolean of the document is optional, default false */
    ctl_doc_member(d, obj, base, key, false, &v, path, sizeof path);
    if (v && !cJSON_IsBool(v))
        return ctl_doc_bad(d, path, "expected a boolean, found %s", ctl_doc_type_name(v));
    *out = v && cJSON_IsTrue(v);
    return CTL_OK;
}

/* Member that must be an object (want_array false) or an array. */
int ctl_doc_get_container(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key,
                          bool required, bool want_array, cJSON **out, char *path, size_t pn)
{
    if (ctl_doc_member(d, obj, base, key, required, out, path, pn) != CTL_OK)
        return CTL_INVALID;
    if (*out && (want_array ? !cJSON_IsArray(*out) : !cJSON_IsObject(*out)))
        return ctl_doc_bad(d, path, "expected %s, found %s", want_array ? "an array" : "an object",
                           ctl_doc_type_name(*out));
    return CTL_OK;
}

/* Rejects an object that names one member twice (cJSON keeps both). */
int ctl_doc_unique_keys(ctl_doc_t *d, const cJSON *obj, const char *path)
{
    ns_strmap_t seen = NS_STRMAP_INIT;
    int rc = CTL_OK;
    for (const cJSON *c = obj->child; c && rc == CTL_OK; c = c->next) {
        if (ns_strmap_get(&seen, c->string))
            rc = ctl_doc_bad(d, path, "member '%s' appears twice", c->string);
        else if (ns_strmap_put(&seen, c->string, (void *)1) != NS_OK)
            rc = ctl_doc_bad(d, path, "out of memory");
    }
    ns_strmap_clear(&seen);
    return rc;
}

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

int ctl_json_escape_bytes(const char *text, size_t len, ns_buf_t *out)
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

int ctl_json_unescape_bytes(const char *text, size_t len, ns_buf_t *out, size_t *bad_at)
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

int ctl_write_json_text(const char *path, const char *text, size_t *written)
{
    ns_buf_t b = NS_BUF_INIT;
    int rc = ctl_json_escape_bytes(text, strlen(text), &b);
    if (rc == NS_OK)
        b.data[b.len - 1] = '\n'; /* replaces the NUL; written with the newline */
    rc = rc == NS_OK ? ctl_write_file(path, b.data, b.len) : CTL_IO;
    if (written)
        *written = b.len;
    ns_buf_free(&b);
    return rc;
}
