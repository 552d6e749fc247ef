/* kvsync.c - the NS_KV_SYNC_GET bodies and call (include/ns/kvsync.h). */
#include "ns/kvsync.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

int ns_kvsync_keys_encode(ns_buf_t *out, const char *const *ns, const char *const *key, size_t n)
{
    int rc = ns_buf_append_str(out, "{\"entries\":[");
    for (size_t i = 0; rc == NS_OK && i < n; i++) {
        rc = ns_buf_append_str(out, i ? ",[" : "[");
        rc = rc ? rc : ns_buf_append_json_str(out, ns[i], strlen(ns[i]), true);
        rc = rc ? rc : ns_buf_append_str(out, ",");
        rc = rc ? rc : ns_buf_append_json_str(out, key[i], strlen(key[i]), true);
        rc = rc ? rc : ns_buf_append_str(out, "]");
    }
    return rc ? rc : ns_buf_append_str(out, "]}");
}

void ns_kvsync_entries_free(ns_kvsync_entry_t *e, size_t n)
{
    for (size_t i = 0; e && i < n; i++) {
        free(e[i].ns);
        free(e[i].key);
        free(e[i].value);
    }
    free(e);
}

static bool str_ok(const cJSON *s)
{
    return cJSON_IsString(s) && s->valuestring != NULL;
}

/* The "entries" array of body, with its size checked against 1..max. */
static cJSON *entries_of(const uint8_t *body, size_t len, size_t max, cJSON **root, int *count)
{
    *root = body && len ? cJSON_ParseWithLength((const char *)body, len) : NULL;
    cJSON *list = cJSON_GetObjectItemCaseSensitive(*root, "entries");
    *count = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
    return *count >= 1 && (size_t)*count <= max ? list : NULL;
}

int ns_kvsync_keys_decode(const uint8_t *body, size_t len, ns_kvsync_entry_t **out, size_t *n)
{
    cJSON *root = NULL, *p;
    int count = 0, rc = NS_OK;
    ns_kvsync_entry_t *v = NULL;
    cJSON *list = entries_of(body, len, NS_KVSYNC_MAX_KEYS, &root, &count);
    *out = NULL;
    *n = 0;
    if (list == NULL) {
        rc = NS_EINVAL;
        goto out;
    }
    if ((v = calloc((size_t)count, sizeof *v)) == NULL) {
        rc = NS_ENOMEM;
        goto out;
    }
    cJSON_ArrayForEach(p, list)
    {
        const cJSON *a = cJSON_GetArrayItem(p, 0), *b = cJSON_GetArrayItem(p, 1);
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || !str_ok(a) || !str_ok(b)) {
            rc = NS_EINVAL;
            break;
        }
        ns_kvsync_entry_t *e = &v[(*n)++];
        e->ns = strdup(a->valuestring);
        e->key = strdup(b->valuestring);
        if (e->ns == NULL || e->key == NULL) {
            rc = NS_ENOMEM;
            break;
        }
    }
out:
    cJSON_Delete(root);
    if (rc != NS_OK) {
        ns_kvsync_entries_free(v, *n);
        v = NULL;
        *n = 0;
    }
    *out = v;
    return rc;
}

int ns_kvsync_reply_entry(ns_buf_t *out, bool first, const ns_kvsync_entry_t *e, size_t value_len)
{
    static const char *const states[] = {"absent", "value", "deleted"};
    char ver[34];
    int rc = ns_buf_append_str(out, first ? "{\"entries\":[{\"namespace\":" : ",{\"namespace\":");
    rc = rc ? rc : ns_buf_append_json_str(out, e->ns, strlen(e->ns), true);
    rc = rc ? rc : ns_buf_append_str(out, ",\"key\":");
    rc = rc ? rc : ns_buf_append_json_str(out, e->key, strlen(e->key), true);
    rc = rc ? rc : ns_buf_printf(out, ",\"state\":\"%s\"", states[e->state]);
    if (rc == NS_OK && e->state != NS_KVSYNC_ABSENT) {
        ns_kvver_format(&e->ver, ver);
        rc = ns_buf_printf(out, ",\"version\":\"%s\"", ver);
    }
    if (rc == NS_OK && e->state == NS_KVSYNC_VALUE) {
        rc = ns_buf_append_str(out, ",\"value\":");
        rc = rc ? rc : ns_buf_append_json_str(out, e->value, value_len, true);
    }
    return rc ? rc : ns_buf_append_str(out, "}");
}

int ns_kvsync_reply_end(ns_buf_t *out, bool any)
{
    return ns_buf_append_str(out, any ? "]}" : "{\"entries\":[]}");
}

static int entry_decode(const cJSON *o, ns_kvsync_entry_t *e)
{
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(o, "namespace");
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(o, "key");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "state");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(o, "version");
    const cJSON *val = cJSON_GetObjectItemCaseSensitive(o, "value");
    if (!cJSON_IsObject(o) || !str_ok(ns) || !str_ok(key) || !str_ok(st))
        return NS_EINVAL;
    if (strcmp(st->valuestring, "absent") == 0)
        e->state = NS_KVSYNC_ABSENT;
    else if (strcmp(st->valuestring, "value") == 0)
        e->state = NS_KVSYNC_VALUE;
    else if (strcmp(st->valuestring, "deleted") == 0)
        e->state = NS_KVSYNC_DELETED;
    else
        return NS_EINVAL;
    bool has_ver = e->state != NS_KVSYNC_ABSENT, has_val = e->state == NS_KVSYNC_VALUE;
    if ((ver != NULL) != has_ver || (val != NULL) != has_val || (has_val && !str_ok(val)))
        return NS_EINVAL;
    if (has_ver && (!str_ok(ver) || !ns_kvver_parse(ver->valuestring, &e->ver)))
        return NS_EINVAL;
    e->ver.deleted = e->state == NS_KVSYNC_DELETED;
    if (e->ver.deleted && e->ver.hlc == 0)
        return NS_EINVAL;
    e->ns = strdup(ns->valuestring);
    e->key = strdup(key->valuestring);
    e->value = has_val ? strdup(val->valuestring) : NULL;
    return e->ns && e->key && (!has_val || e->value) ? NS_OK : NS_ENOMEM;
}

int ns_kvsync_reply_decode(const uint8_t *body, size_t len, size_t max, ns_kvsync_entry_t **out,
                           size_t *n)
{
    cJSON *root = NULL, *p;
    int count = 0, rc = NS_OK;
    ns_kvsync_entry_t *v = NULL;
    cJSON *list = entries_of(body, len, max, &root, &count);
    *out = NULL;
    *n = 0;
    if (list == NULL) {
        rc = NS_EINVAL;
        goto out;
    }
    if ((v = calloc((size_t)count, sizeof *v)) == NULL) {
        rc = NS_ENOMEM;
        goto out;
    }
    cJSON_ArrayForEach(p, list)
    {
        if ((rc = entry_decode(p, &v[(*n)++])) != NS_OK)
            break;
    }
out:
    cJSON_Delete(root);
    if (rc != NS_OK) {
        ns_kvsync_entries_free(v, *n);
        v = NULL;
        *n = 0;
    }
    *out = v;
    return rc;
}

int ns_kvsync_call(ns_client_t *c, const ns_buf_t *req, int timeout_ms, ns_buf_t *resp, char *why,
                   size_t whylen)
{
    return ns_client_call_body(c, NS_REQ_NS_KV_SYNC_GET, req, timeout_ms, resp, why, whylen);
}
