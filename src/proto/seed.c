/* seed.c - the NS_SEED_PAGE bodies and call (include/ns/seed.h). */
#include "ns/seed.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/kvver.h"

#define MAX_SAFE_INT 9007199254740991LL

static const char *const names[NS_SEED_SECTIONS] = {"members", "groups", "live", "queues", "kv"};

const char *ns_seed_section_name(ns_seed_section_t s)
{
    return (unsigned)s < NS_SEED_SECTIONS ? names[s] : NULL;
}

size_t ns_seed_cursor_len(ns_seed_section_t s)
{
    return s == NS_SEED_GROUPS ? 1 : 2;
}

void ns_seed_cursor_free(ns_seed_cursor_t *c)
{
    free(c->a);
    free(c->b);
    c->a = c->b = NULL;
}

int ns_seed_cursor_cmp(const ns_seed_cursor_t *x, const ns_seed_cursor_t *y)
{
    if (x->a == NULL || y->a == NULL)
        return (x->a != NULL) - (y->a != NULL);
    int c = strcmp(x->a, y->a); /* a NUL separator sorts below every byte of a name */
    if (c != 0)
        return c;
    return strcmp(x->b ? x->b : "", y->b ? y->b : "");
}

/* ---- the request ---- */

static int cursor_encode(ns_buf_t *out, const ns_seed_cursor_t *c, size_t n)
{
    int rc = ns_buf_append_str(out, "[");
    rc = rc ? rc : ns_buf_append_json_str(out, c->a, strlen(c->a), true);
    if (rc == NS_OK && n == 2) {
        rc = ns_buf_append_str(out, ",");
        rc = rc ? rc : ns_buf_append_json_str(out, c->b ? c->b : "", c->b ? strlen(c->b) : 0, true);
    }
    return rc ? rc : ns_buf_append_str(out, "]");
}

int ns_seed_request_encode(ns_buf_t *out, const ns_seed_request_t *r)
{
    const char *name = ns_seed_section_name(r->section);
    if (name == NULL)
        return NS_EINVAL;
    int rc = ns_buf_printf(out, "{\"section\":\"%s\"", name);
    if (rc == NS_OK && r->after.a) {
        rc = ns_buf_append_str(out, ",\"after\":");
        rc = rc ? rc : cursor_encode(out, &r->after, ns_seed_cursor_len(r->section));
    }
    return rc ? rc : ns_buf_printf(out, ",\"maxBytes\":%lld}", (long long)r->max_bytes);
}

static bool str_ok(const cJSON *s)
{
    return cJSON_IsString(s) && s->valuestring != NULL;
}

static bool int_ok(const cJSON *n, int64_t *out)
{
    if (!cJSON_IsNumber(n) || !(n->valuedouble >= -MAX_SAFE_INT && n->valuedouble <= MAX_SAFE_INT))
        return false;
    int64_t v = (int64_t)n->valuedouble;
    if ((double)v != n->valuedouble)
        return false;
    *out = v;
    return true;
}

/* A cursor array of n names into *c (heap copies). */
static int cursor_decode(const cJSON *arr, size_t n, ns_seed_cursor_t *c)
{
    const cJSON *a = cJSON_GetArrayItem(arr, 0), *b = cJSON_GetArrayItem(arr, 1);
    if (!cJSON_IsArray(arr) || (size_t)cJSON_GetArraySize(arr) != n || !str_ok(a) ||
        (n == 2 && !str_ok(b)))
        return NS_EINVAL;
    c->a = strdup(a->valuestring);
    c->b = n == 2 ? strdup(b->valuestring) : NULL;
    return c->a && (n == 1 || c->b) ? NS_OK : NS_ENOMEM;
}

static int section_of(const cJSON *s, ns_seed_section_t *out)
{
    for (int i = 0; str_ok(s) && i < NS_SEED_SECTIONS; i++)
        if (strcmp(s->valuestring, names[i]) == 0) {
            *out = (ns_seed_section_t)i;
            return NS_OK;
        }
    return NS_EINVAL;
}

int ns_seed_request_decode(const uint8_t *body, size_t len, ns_seed_request_t *r)
{
    cJSON *root = body && len ? cJSON_ParseWithLength((const char *)body, len) : NULL;
    const cJSON *after = cJSON_GetObjectItemCaseSensitive(root, "after");
    const cJSON *max = cJSON_GetObjectItemCaseSensitive(root, "maxBytes");
    int rc = section_of(cJSON_GetObjectItemCaseSensitive(root, "section"), &r->section);
    memset(&r->after, 0, sizeof r->after);
    if (rc == NS_OK && (!int_ok(max, &r->max_bytes) || r->max_bytes < 1))
        rc = NS_EINVAL;
    if (rc == NS_OK && after)
        rc = cursor_decode(after, ns_seed_cursor_len(r->section), &r->after);
    if (rc != NS_OK)
        ns_seed_cursor_free(&r->after);
    cJSON_Delete(root);
    return rc;
}

/* ---- the reply, written ---- */

int ns_seed_reply_begin(ns_buf_t *out, const ns_seed_info_t *info)
{
    return ns_buf_printf(out,
                         "{\"digest\":\"%s\",\"leaves\":%lld,\"uptimeMillis\":%lld,"
                         "\"graceMillis\":%lld,\"unconfirmed\":%lld,\"items\":[",
                         info->digest, (long long)info->leaves, (long long)info->uptime_ms,
                         (long long)info->grace_ms, (long long)info->unconfirmed);
}

int ns_seed_reply_end(ns_buf_t *out, const ns_seed_cursor_t *next)
{
    int rc = ns_buf_append_str(out, "]");
    if (rc == NS_OK && next && next->a) {
        rc = ns_buf_append_str(out, ",\"next\":");
        rc = rc ? rc : cursor_encode(out, next, next->b ? 2 : 1);
    }
    return rc ? rc : ns_buf_append_str(out, "}");
}

int ns_seed_item_begin(ns_buf_t *out, bool first)
{
    return ns_buf_append_str(out, first ? "[" : ",[");
}

static int sep(ns_buf_t *out, int rc, bool more)
{
    return rc == NS_OK && more ? ns_buf_append_str(out, ",") : rc;
}

int ns_seed_item_str(ns_buf_t *out, const char *s, bool more)
{
    int rc = s ? ns_buf_append_json_str(out, s, strlen(s), true) : ns_buf_append_str(out, "null");
    return sep(out, rc, more);
}

int ns_seed_item_int(ns_buf_t *out, int64_t v, bool more)
{
    return sep(out, ns_buf_printf(out, "%lld", (long long)v), more);
}

int ns_seed_item_bool(ns_buf_t *out, bool v, bool more)
{
    return sep(out, ns_buf_append_str(out, v ? "true" : "false"), more);
}

int ns_seed_item_raw(ns_buf_t *out, const char *text, bool more)
{
    return sep(out, ns_buf_append_str(out, text), more);
}

int ns_seed_item_end(ns_buf_t *out)
{
    return ns_buf_append_str(out, "]");
}

/* ---- the reply, read ---- */

/* Each section's form: 's' string, 'z' string or null, 'i' integer, 'b'
 * boolean, 'p' list of [id, addr], 'l' list of strings, 'v' a KV version. */
static const char *const forms[NS_SEED_SECTIONS] = {"ss", "sszbp", "sssiziiiil", "ssiiii", "sssv"};

/* Checks item o against form f; counts its list entries into *list. */
static bool item_ok(const cJSON *o, const char *f, size_t *list)
{
    size_t n = strlen(f);
    const cJSON *e = cJSON_IsArray(o) ? o->child : NULL;
    int64_t v;
    ns_kvver_t ver;
    if (!cJSON_IsArray(o) || (size_t)cJSON_GetArraySize(o) != n)
        return false;
    for (size_t i = 0; i < n; i++, e = e->next) {
        bool ok = false;
        switch (f[i]) {
        case 's':
            ok = str_ok(e);
            break;
        case 'z':
            ok = str_ok(e) || cJSON_IsNull(e);
            break;
        case 'i':
            ok = int_ok(e, &v);
            break;
        case 'b':
            ok = cJSON_IsBool(e);
            break;
        case 'v':
            ok = str_ok(e) && ns_kvver_parse(e->valuestring, &ver);
            break;
        case 'p':
        case 'l': {
            const cJSON *x;
            ok = cJSON_IsArray(e);
            cJSON_ArrayForEach(x, e)
            {
                const cJSON *id = cJSON_GetArrayItem(x, 0), *addr = cJSON_GetArrayItem(x, 1);
                ok = ok && (f[i] == 'l' ? str_ok(x)
                                        : cJSON_IsArray(x) && cJSON_GetArraySize(x) == 2 &&
                                              int_ok(id, &v) && str_ok(addr));
                (*list)++;
            }
            break;
        }
        }
        if (!ok)
            return false;
    }
    return true;
}

/* Fills it from a checked item o of form f; list entries go to ids/strs
 * from *at on. */
static void item_fill(const cJSON *o, const char *f, ns_seed_item_t *it, int64_t *ids,
                      const char **strs, size_t *at)
{
    size_t ns = 0, ni = 0;
    const cJSON *e = o->child;
    memset(it, 0, sizeof *it);
    for (size_t i = 0; f[i]; i++, e = e->next) {
        switch (f[i]) {
        case 's':
        case 'z':
        case 'v':
            it->s[ns++] = cJSON_IsNull(e) ? NULL : e->valuestring;
            break;
        case 'i':
            int_ok(e, &it->n[ni++]);
            break;
        case 'b':
            it->flag = cJSON_IsTrue(e);
            break;
        case 'p':
        case 'l': {
            const cJSON *x;
            it->ids = ids + *at;
            it->list = strs + *at;
            cJSON_ArrayForEach(x, e)
            {
                if (f[i] == 'l') {
                    strs[*at] = x->valuestring;
                } else {
                    int_ok(cJSON_GetArrayItem(x, 0), &ids[*at]);
                    strs[*at] = cJSON_GetArrayItem(x, 1)->valuestring;
                }
                (*at)++;
                it->n_list++;
            }
            break;
        }
        }
    }
}

static bool hex32_ok(const cJSON *d)
{
    if (!str_ok(d) || strlen(d->valuestring) != 32)
        return false;
    for (const char *c = d->valuestring; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

int ns_seed_page_decode(const uint8_t *body, size_t len, ns_seed_section_t s, size_t max_items,
                        ns_seed_page_t *p)
{
    cJSON *root = NULL;
    const cJSON *it;
    size_t list = 0, at = 0;
    int rc = NS_EINVAL;
    memset(p, 0, sizeof *p);
    if ((unsigned)s >= NS_SEED_SECTIONS || body == NULL || len == 0)
        return NS_EINVAL;
    root = cJSON_ParseWithLength((const char *)body, len);
    const cJSON *dg = cJSON_GetObjectItemCaseSensitive(root, "digest");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(root, "items");
    const cJSON *next = cJSON_GetObjectItemCaseSensitive(root, "next");
    int count = cJSON_IsArray(items) ? cJSON_GetArraySize(items) : -1;
    if (!cJSON_IsObject(root) || !hex32_ok(dg) || count < 0 || (size_t)count > max_items ||
        (next && count == 0) ||
        !int_ok(cJSON_GetObjectItemCaseSensitive(root, "leaves"), &p->info.leaves) ||
        !int_ok(cJSON_GetObjectItemCaseSensitive(root, "uptimeMillis"), &p->info.uptime_ms) ||
        !int_ok(cJSON_GetObjectItemCaseSensitive(root, "graceMillis"), &p->info.grace_ms) ||
        !int_ok(cJSON_GetObjectItemCaseSensitive(root, "unconfirmed"), &p->info.unconfirmed))
        goto fail;
    memcpy(p->info.digest, dg->valuestring, 33);
    cJSON_ArrayForEach(it, items)
    {
        if (!item_ok(it, forms[s], &list))
            goto fail;
    }
    if (next && (rc = cursor_decode(next, ns_seed_cursor_len(s), &p->next)) != NS_OK)
        goto fail;
    rc = NS_ENOMEM;
    p->items = calloc(count ? (size_t)count : 1, sizeof *p->items);
    p->ids = calloc(list ? list : 1, sizeof *p->ids);
    p->strs = calloc(list ? list : 1, sizeof *p->strs);
    if (p->items == NULL || p->ids == NULL || p->strs == NULL)
        goto fail;
    cJSON_ArrayForEach(it, items)
    {
        item_fill(it, forms[s], &p->items[p->n++], p->ids, p->strs, &at);
    }
    p->mem = root;
    return NS_OK;
fail:
    cJSON_Delete(root);
    ns_seed_page_free(p);
    return rc;
}

void ns_seed_page_free(ns_seed_page_t *p)
{
    cJSON_Delete(p->mem);
    free(p->items);
    free(p->ids);
    free(p->strs);
    ns_seed_cursor_free(&p->next);
    memset(p, 0, sizeof *p);
}

int ns_seed_call(ns_client_t *c, const ns_buf_t *req, int timeout_ms, ns_buf_t *resp, char *why,
                 size_t whylen)
{
    return ns_client_call_body(c, NS_REQ_NS_SEED_PAGE, req, timeout_ms, resp, why, whylen);
}
