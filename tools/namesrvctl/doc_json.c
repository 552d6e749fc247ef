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
#include "ns/jsondoc.h"
#include "ns/names.h"

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

void ctl_doc_path_idx(char *out, size_t n, const char *base, size_t i)
{
    if (snprintf(out, n, "%s[%zu]", base, i) >= (int)n)
        out[n - 1] = 0;
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
        return ctl_doc_bad(d, path, "expected an integer, found %s", ns_json_type_name(v));
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
    ns_json_path_key(path, pn, base, key);
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
        return ctl_doc_bad(d, path, "expected a string, found %s", ns_json_type_name(v));
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
        return ctl_doc_bad(d, path, "expected a boolean, found %s", ns_json_type_name(v));
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
                           ns_json_type_name(*out));
    return CTL_OK;
}

/* Rejects an object that names one member twice (cJSON keeps both). */
int ctl_doc_unique_keys(ctl_doc_t *d, const cJSON *obj, const char *path)
{
    bool oom = false;
    const char *dup = ns_json_dup_member(obj, &oom);
    if (oom)
        return ctl_doc_bad(d, path, "out of memory");
    return dup ? ctl_doc_bad(d, path, "member '%s' appears twice", dup) : CTL_OK;
}

int ctl_write_json_text(const char *path, const char *text, size_t *written)
{
    ns_buf_t b = NS_BUF_INIT;
    int rc = ns_json_escape_bytes(text, strlen(text), &b);
    if (rc == NS_OK)
        b.data[b.len - 1] = '\n'; /* replaces the NUL; written with the newline */
    rc = rc == NS_OK ? ctl_write_file(path, b.data, b.len) : CTL_IO;
    if (written)
        *written = b.len;
    ns_buf_free(&b);
    return rc;
}
