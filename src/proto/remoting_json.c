/* remoting_json.c - the general JSON header decoder (docs/protocol.md §1.4):
 * any JSON object, parsed with cJSON, read as Java's fastjson would.
 *
 * Unknown keys are ignored and missing ones default to 0/absent; numbers,
 * numeric strings and null are accepted for the integer fields; extFields
 * values that are numbers or booleans become their text, nulls are skipped,
 * nested values become compact JSON; a \u0000 escape decodes as U+0001 and
 * a lone surrogate escape as its (invalid) UTF-8 bytes, for the name checks
 * to refuse (ns_json_fix_escapes). Real clients' headers take
 * remoting_fast.c instead.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ns/body.h"
#include "ns/codes.h"
#include "remoting_int.h"

/* JSON number/string -> int32 (fastjson converts numeric strings too);
 * null -> 0. Out of range or anything else -> NS_EINVAL. */
static int json_i32(const cJSON *v, int32_t *out)
{
    if (cJSON_IsNull(v)) {
        *out = 0;
        return NS_OK;
    }
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!(d > -2147483649.0 && d < 2147483648.0))
            return NS_EINVAL;
        *out = (int32_t)d;
        return NS_OK;
    }
    if (cJSON_IsString(v)) {
        int64_t x = 0;
        const char *s = v->valuestring;
        if (ns_parse_i64(s, strlen(s), &x) != NS_OK || x < INT32_MIN || x > INT32_MAX)
            return NS_EINVAL;
        *out = (int32_t)x;
        return NS_OK;
    }
    return NS_EINVAL;
}

/* Text of a JSON number as Java would print it: integers without a decimal
 * point ("5"), anything else in the shortest form that round-trips. tmp must
 * hold 32 bytes. Returns the length. */
static size_t number_text(double d, char *tmp)
{
    int n;
    if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
        n = snprintf(tmp, 32, "%lld", (long long)d);
    } else {
        n = snprintf(tmp, 32, "%.15g", d);
        if (strtod(tmp, NULL) != d)
            n = snprintf(tmp, 32, "%.17g", d);
    }
    return n > 0 ? (size_t)n : 0;
}

/* Puts the textual form of a scalar (or compact JSON of an object/array)
 * into the arena. *present = false for null. */
static int json_text(ns_buf_t *a, const cJSON *v, bool *present, size_t *off, size_t *len)
{
    char tmp[32];
    const char *s = NULL;
    char *printed = NULL;
    int rc = NS_OK;
    *present = true;
    if (cJSON_IsNull(v)) {
        *present = false;
        return NS_OK;
    } else if (cJSON_IsString(v)) {
        s = v->valuestring;
        *len = strlen(s);
    } else if (cJSON_IsNumber(v)) {
        *len = number_text(v->valuedouble, tmp);
        s = tmp;
    } else if (cJSON_IsTrue(v)) {
        s = "true";
        *len = 4;
    } else if (cJSON_IsFalse(v)) {
        s = "false";
        *len = 5;
    } else if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        printed = cJSON_PrintUnformatted(v);
        if (printed == NULL)
            return NS_ENOMEM;
        s = printed;
        *len = strlen(s);
    } else {
        return NS_EINVAL;
    }
    rc = ns_hdr_arena_put(a, s, *len, off);
    free(printed);
    return rc;
}

static int json_ext(ns_cmd_msg_t *m, const cJSON *obj)
{
    m->cmd.n_ext = 0;
    ns_hdr_index_drop(m);
    if (cJSON_IsNull(obj)) {
        m->cmd.has_ext = false;
        return NS_OK;
    }
    if (!cJSON_IsObject(obj))
        return NS_EINVAL;
    m->cmd.has_ext = true;
    for (const cJSON *it = obj->child; it != NULL; it = it->next) {
        size_t koff = 0, voff = 0, vlen = 0;
        bool present = false;
        int rc = json_text(&m->arena, it, &present, &voff, &vlen);
        if (rc != NS_OK)
            return rc;
        if (!present || it->string == NULL)
            continue;
        size_t klen = strlen(it->string);
        if (ns_hdr_arena_put(&m->arena, it->string, klen, &koff) != NS_OK)
            return NS_ENOMEM;
        if (ns_hdr_ext_add(m, koff, klen, voff, vlen) != NS_OK)
            return NS_ENOMEM;
    }
    return NS_OK;
}

static int json_language(const cJSON *v, int32_t *out)
{
    if (cJSON_IsString(v)) {
        *out = ns_language_code(v->valuestring, strlen(v->valuestring));
    } else if (cJSON_IsNumber(v)) { /* fastjson accepts an enum ordinal */
        double d = v->valuedouble;
        *out =
            (d >= 0 && d <= 255 && ns_language_name((int)d) != NULL) ? (int32_t)d : NS_LANG_OTHER;
    } else if (cJSON_IsNull(v)) {
        *out = NS_LANG_JAVA;
    } else {
        return NS_EINVAL;
    }
    return NS_OK;
}

/* Whether [p, p+n) may hold an escape ns_json_fix_escapes rewrites: a
 * \u0000 or a surrogate (\uD800-\uDFFF, pairs included). */
static bool has_fixable_escape(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 6 <= n; i++)
        if (p[i] == '\\' && p[i + 1] == 'u' &&
            (memcmp(p + i + 2, "0000", 4) == 0 ||
             ((p[i + 2] | 0x20) == 'd' && ns_hex_digit((char)p[i + 3]) >= 8)))
            return true;
    return false;
}

int ns_hdr_json_decode(const uint8_t *hdr, size_t hdr_len, ns_cmd_msg_t *m)
{
    int rc = NS_EINVAL;
    cJSON *root = NULL;
    uint8_t *copy = NULL;
    const char *end = NULL;
    bool has_remark = false;
    size_t remark_off = 0;

    if (has_fixable_escape(hdr, hdr_len)) {
        /* a NUL would end the C string early, a lone surrogate fail it all */
        if ((copy = malloc(hdr_len)) == NULL) {
            rc = NS_ENOMEM;
            goto cleanup;
        }
        memcpy(copy, hdr, hdr_len);
        hdr_len = ns_json_fix_escapes(copy, hdr_len);
        hdr = copy;
    }
    root = cJSON_ParseWithLengthOpts((const char *)hdr, hdr_len, &end, false);
    if (root == NULL || !cJSON_IsObject(root))
        goto cleanup;
    for (const uint8_t *q = (const uint8_t *)end; q < hdr + hdr_len; q++)
        if (!ns_hdr_is_fastjson_space(*q))
            goto cleanup;

    for (const cJSON *it = root->child; it != NULL; it = it->next) {
        const char *k = it->string;
        int r = NS_OK;
        if (k == NULL)
            continue;
        if (strcmp(k, "code") == 0) {
            r = json_i32(it, &m->cmd.code);
        } else if (strcmp(k, "flag") == 0) {
            r = json_i32(it, &m->cmd.flag);
        } else if (strcmp(k, "opaque") == 0) {
            r = json_i32(it, &m->cmd.opaque);
        } else if (strcmp(k, "version") == 0) {
            r = json_i32(it, &m->cmd.version);
        } else if (strcmp(k, "language") == 0) {
            r = json_language(it, &m->cmd.language);
        } else if (strcmp(k, "remark") == 0) {
            r = json_text(&m->arena, it, &has_remark, &remark_off, &m->cmd.remark_len);
            if (!has_remark)
                m->cmd.remark_len = 0;
        } else if (strcmp(k, "extFields") == 0) {
            r = json_ext(m, it);
        }
        if (r != NS_OK) {
            rc = r;
            goto cleanup;
        }
    }
    ns_hdr_fix_pointers(m, has_remark, remark_off);
    rc = NS_OK;

cleanup:
    cJSON_Delete(root);
    free(copy);
    return rc;
}
