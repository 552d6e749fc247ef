/* json_read.c - tolerant JSON value access (json_read.h). */
#include "json_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ns/body.h"
#include "ns/buf.h"
#include "ns/err.h"

int ns_jr_parse(const uint8_t *p, size_t n, cJSON **out)
{
    ns_buf_t norm = NS_BUF_INIT;
    int rc = ns_fastjson_normalize(p, n, &norm);
    *out = NULL;
    if (rc != NS_OK)
        goto cleanup;
    *out = cJSON_ParseWithLength((const char *)norm.data, norm.len);
    if (*out == NULL)
        rc = NS_EINVAL;
cleanup:
    ns_buf_free(&norm);
    return rc;
}

int ns_jr_parse_object(const uint8_t *p, size_t n, cJSON **out)
{
    int rc = ns_jr_parse(p, n, out);
    if (rc == NS_OK && !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        rc = NS_EINVAL;
    }
    return rc;
}

bool ns_jr_blank(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            return false;
    return true;
}

bool ns_jr_absent(const cJSON *v)
{
    return v == NULL || cJSON_IsNull(v) ||
           (cJSON_IsObject(v) && cJSON_GetObjectItemCaseSensitive(v, "$ref") != NULL);
}

const cJSON *ns_jr_get(const cJSON *o, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(o, name);
}

static int double_to_i64(double d, int64_t *out)
{
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        return NS_EINVAL; /* also NaN */
    *out = (int64_t)d;
    return NS_OK;
}

int ns_jr_i64(const cJSON *v, int64_t *out)
{
    if (ns_jr_absent(v))
        return NS_OK;
    if (cJSON_IsNumber(v))
        return double_to_i64(v->valuedouble, out);
    if (cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v) ? 1 : 0;
        return NS_OK;
    }
    if (!cJSON_IsString(v))
        return NS_EINVAL;
    const char *s = v->valuestring;
    if (*s == 0 || strcmp(s, "null") == 0)
        return NS_OK;
    if (ns_parse_i64(s, strlen(s), out) == NS_OK)
        return NS_OK;
    if (strspn(s, "0123456789+-.eE") != strlen(s))
        return NS_EINVAL;
    char *end = NULL;
    double d = strtod(s, &end);
    if (end == s || *end != 0)
        return NS_EINVAL;
    return double_to_i64(d, out);
}

int ns_jr_i32(const cJSON *v, int32_t *out)
{
    int64_t x = *out;
    int rc = ns_jr_i64(v, &x);
    if (rc != NS_OK)
        return rc;
    if (x < INT32_MIN || x > INT32_MAX)
        return NS_EINVAL;
    *out = (int32_t)x;
    return NS_OK;
}

int ns_jr_bool(const cJSON *v, bool *out)
{
    if (ns_jr_absent(v))
        return NS_OK;
    if (cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v);
        return NS_OK;
    }
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble != 0;
        return NS_OK;
    }
    if (!cJSON_IsString(v))
        return NS_EINVAL;
    const char *s = v->valuestring;
    if (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0)
        *out = true;
    else if (strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0)
        *out = false;
    else if (*s != 0 && strcmp(s, "null") != 0)
        return NS_EINVAL;
    return NS_OK;
}

int ns_jr_str(const cJSON *v, char **out)
{
    char tmp[64];
    const char *s = NULL;
    *out = NULL;
    if (ns_jr_absent(v))
        return NS_OK;
    if (cJSON_IsString(v)) {
        s = v->valuestring;
    } else if (cJSON_IsBool(v)) {
        s = cJSON_IsTrue(v) ? "true" : "false";
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 9.2e18)
            snprintf(tmp, sizeof tmp, "%lld", (long long)d);
        else
            snprintf(tmp, sizeof tmp, "%.17g", d);
        s = tmp;
    } else {
        return NS_EINVAL;
    }
    *out = strdup(s);
    return *out != NULL ? NS_OK : NS_ENOMEM;
}
