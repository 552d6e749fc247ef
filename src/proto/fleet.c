/* fleet.c - the FLEET_DIGEST bodies and the diff over several servers'
 * digests (include/ns/fleet.h).
 *
 * The diff walks the trees breadth first. A frontier holds the paths still
 * to look at, each with the set of servers that have it; one request per
 * server per level asks for every frontier path that server has (in
 * batches of NS_FLEET_MAX_PATHS), so the number of round trips is the
 * depth of the tree whatever the number of differences. A child goes into
 * the next frontier only when it is not present with the same hash on
 * every reachable server; at an item, each leaf that is not the same
 * everywhere becomes one difference. Equal subtrees are never fetched: one
 * topic differing among 100,000 costs six small requests per server. */
#include "ns/fleet.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

static const char *const kind_names[NS_FLEET_KINDS] = {"broker", "topic", "kv", "conflict"};

const char *ns_fleet_kind_name(ns_fleet_kind_t k)
{
    return k < NS_FLEET_KINDS ? kind_names[k] : "?";
}

/* ---- request bodies ---- */

static bool name_ok(const cJSON *s)
{
    if (!cJSON_IsString(s) || s->valuestring == NULL)
        return false;
    size_t n = strlen(s->valuestring);
    return n > 0 && n <= NS_FLEET_MAX_NAME;
}

int ns_fleet_paths_decode(const uint8_t *body, size_t len, ns_fleet_path_t *paths, size_t *n,
                          char **store)
{
    cJSON *root = NULL;
    size_t bytes = 0, used = 0;
    int rc = NS_EINVAL;
    *n = 0;
    *store = NULL;
    if (body == NULL || len == 0) {
        paths[0].depth = 0;
        *n = 1;
        return NS_OK;
    }
    if ((root = cJSON_ParseWithLength((const char *)body, len)) == NULL)
        return NS_EINVAL;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "paths");
    int count = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
    if (count < 0 || count > NS_FLEET_MAX_PATHS)
        goto out;
    const cJSON *p, *s;
    cJSON_ArrayForEach(p, list)
    {
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) > NS_FLEET_ITEM_DEPTH)
            goto out;
        cJSON_ArrayForEach(s, p)
        {
            if (!name_ok(s))
                goto out;
            bytes += strlen(s->valuestring) + 1;
        }
    }
    if ((*store = malloc(bytes + 1)) == NULL) {
        rc = NS_ENOMEM;
        goto out;
    }
    cJSON_ArrayForEach(p, list)
    {
        ns_fleet_path_t *fp = &paths[(*n)++];
        fp->depth = 0;
        cJSON_ArrayForEach(s, p)
        {
            size_t l = strlen(s->valuestring) + 1;
            memcpy(*store + used, s->valuestring, l);
            fp->v[fp->depth++] = *store + used;
            used += l;
        }
    }
    if (*n == 0) { /* {"paths":[]}: the root, as an empty body */
        paths[0].depth = 0;
        *n = 1;
    }
    rc = NS_OK;
out:
    if (rc != NS_OK) {
        free(*store);
        *store = NULL;
        *n = 0;
    }
    cJSON_Delete(root);
    return rc;
}

int ns_fleet_paths_encode(ns_buf_t *out, const ns_fleet_path_t *paths, size_t n)
{
    int rc = ns_buf_append_str(out, "{\"paths\":[");
    for (size_t i = 0; rc == NS_OK && i < n; i++) {
        rc = ns_buf_append_str(out, i ? ",[" : "[");
        for (size_t j = 0; rc == NS_OK && j < paths[i].depth; j++) {
            rc = j ? ns_buf_append_str(out, ",") : NS_OK;
            rc = rc ? rc : ns_buf_append_json_str(out, paths[i].v[j], strlen(paths[i].v[j]), true);
        }
        rc = rc ? rc : ns_buf_append_str(out, "]");
    }
    return rc ? rc : ns_buf_append_str(out, "]}");
}

int ns_fleet_call(ns_client_t *c, const ns_buf_t *req, int timeout_ms, ns_buf_t *resp, char *why,
                  size_t whylen)
{
    return ns_client_call_body(c, NS_REQ_NS_FLEET_DIGEST, req, timeout_ms, resp, why, whylen);
}

/* ---- the frontier ---- */

/* A path the diff still has to look at: names owned (heap), the servers
 * that have it (bit i), and what each of them answered for it. */
typedef struct {
    char *v[NS_FLEET_ITEM_DEPTH];
    size_t depth;
    uint64_t have;
    cJSON **node; /* per server, borrowed from that server's reply */
} fpath_t;

typedef struct {
    fpath_t *p;
    size_t n;
} frontier_t;

static void frontier_free(frontier_t *f)
{
    for (size_t i = 0; i < f->n; i++) {
        for (size_t j = 0; j < f->p[i].depth; j++)
            free(f->p[i].v[j]);
        free(f->p[i].node);
    }
    free(f->p);
    f->p = NULL;
    f->n = 0;
}

/* Appends parent's path + name, had by the servers in have. */
static int frontier_add(frontier_t *f, const fpath_t *parent, const char *name, uint64_t have,
                        size_t n_servers)
{
    fpath_t *p = ns_array_grow(f->p, f->n, sizeof *f->p);
    if (p == NULL)
        return NS_ENOMEM;
    f->p = p;
    p = &f->p[f->n];
    memset(p, 0, sizeof *p);
    if ((p->node = calloc(n_servers, sizeof *p->node)) == NULL)
        return NS_ENOMEM;
    f->n++;
    for (size_t j = 0; parent && j < parent->depth; j++)
        if ((p->v[p->depth++] = strdup(parent->v[j])) == NULL)
            return NS_ENOMEM;
    if (name && (p->v[p->depth++] = strdup(name)) == NULL)
        return NS_ENOMEM;
    p->have = have;
    return NS_OK;
}

/* ---- fetching one level ---- */

typedef struct {
    ns_fleet_fetch_fn fetch;
    void *ctx;
    size_t n;
    ns_fleet_report_t *r;
    cJSON **replies; /* every reply of this level, freed after it */
    size_t n_replies;
    uint64_t reached; /* bit i: server i still in the comparison */
} diff_t;

static void unreach(diff_t *d, size_t s, const char *why)
{
    d->reached &= ~(1ull << s);
    d->r->reached[s] = false;
    if (d->r->error[s] == NULL)
        d->r->error[s] = strdup(why ? why : "unreachable");
}

static int keep_reply(diff_t *d, cJSON *j)
{
    cJSON **r = ns_array_grow(d->replies, d->n_replies, sizeof *r);
    if (r == NULL) {
        cJSON_Delete(j);
        return NS_ENOMEM;
    }
    d->replies = r;
    d->replies[d->n_replies++] = j;
    return NS_OK;
}

/* Asks server s for the frontier paths idx[0..k) and files the nodes. */
static int fetch_batch(diff_t *d, frontier_t *f, size_t s, const size_t *idx, size_t k)
{
    ns_fleet_path_t paths[NS_FLEET_MAX_PATHS];
    ns_buf_t req = NS_BUF_INIT, resp = NS_BUF_INIT;
    const char *why = NULL;
    for (size_t i = 0; i < k; i++) {
        fpath_t *p = &f->p[idx[i]];
        paths[i].depth = p->depth;
        for (size_t j = 0; j < p->depth; j++)
            paths[i].v[j] = p->v[j];
    }
    int rc = ns_fleet_paths_encode(&req, paths, k);
    if (rc != NS_OK)
        goto out;
    d->r->requests++;
    d->r->bytes_sent += req.len;
    if (d->fetch(d->ctx, s, &req, &resp, &why) != NS_OK) {
        unreach(d, s, why);
        goto out;
    }
    d->r->bytes_received += resp.len;
    cJSON *j = cJSON_ParseWithLength((const char *)resp.data, resp.len);
    const cJSON *nodes = j ? cJSON_GetObjectItemCaseSensitive(j, "nodes") : NULL;
    if (!cJSON_IsArray(nodes) || cJSON_GetArraySize(nodes) != (int)k) {
        cJSON_Delete(j);
        unreach(d, s, "answered a digest that does not decode");
        goto out;
    }
    if ((rc = keep_reply(d, j)) != NS_OK)
        goto out;
    size_t i = 0;
    cJSON *node;
    cJSON_ArrayForEach(node, nodes) f->p[idx[i++]].node[s] = node;
out:
    ns_buf_free(&req);
    ns_buf_free(&resp);
    return rc;
}

static int fetch_level(diff_t *d, frontier_t *f)
{
    size_t idx[NS_FLEET_MAX_PATHS];
    int rc = NS_OK;
    for (size_t s = 0; s < d->n && rc == NS_OK; s++) {
        size_t k = 0;
        for (size_t i = 0; i < f->n && rc == NS_OK && (d->reached >> s & 1); i++) {
            if (!(f->p[i].have >> s & 1))
                continue;
            idx[k++] = i;
            if (k == NS_FLEET_MAX_PATHS) {
                rc = fetch_batch(d, f, s, idx, k);
                k = 0;
            }
        }
        if (rc == NS_OK && k > 0 && (d->reached >> s & 1))
            rc = fetch_batch(d, f, s, idx, k);
    }
    return rc;
}

/* ---- comparing one node across servers ---- */

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* The entries (children or leaves) of each server's node for p, and the
 * union of their names in order. */
typedef struct {
    const char *name;
    uint64_t have;
} uname_t;

static int cmp_uname(const void *a, const void *b)
{
    return strcmp(((const uname_t *)a)->name, ((const uname_t *)b)->name);
}

/* The entry named name in server s's list, or NULL. Lists are short (16
 * children, a few leaves) but for the clusters and namespaces. */
static const cJSON *entry_of(const cJSON *list, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, list) if (strcmp(jstr(e, "name"), name) == 0) return e;
    return NULL;
}

static int names_union(diff_t *d, const fpath_t *p, const char *key, uname_t **out, size_t *n_out)
{
    uname_t *u = NULL;
    size_t n = 0;
    *out = NULL;
    *n_out = 0;
    for (size_t s = 0; s < d->n; s++) {
        const cJSON *list = p->node[s] ? cJSON_GetObjectItemCaseSensitive(p->node[s], key) : NULL,
                    *e;
        if (!(d->reached >> s & 1) || !cJSON_IsArray(list))
            continue;
        cJSON_ArrayForEach(e, list)
        {
            const char *name = jstr(e, "name");
            size_t i = 0;
            while (i < n && strcmp(u[i].name, name) != 0)
                i++;
            if (i == n) {
                uname_t *g = ns_array_grow(u, n, sizeof *u);
                if (g == NULL) {
                    free(u);
                    return NS_ENOMEM;
                }
                u = g;
                u[n++] = (uname_t){name, 0};
            }
            u[i].have |= 1ull << s;
        }
    }
    if (n > 1)
        qsort(u, n, sizeof *u, cmp_uname);
    *out = u;
    *n_out = n;
    return NS_OK;
}

/* True when the entry is present with one hash on every reachable server. */
static bool same_everywhere(diff_t *d, const fpath_t *p, const char *key, const uname_t *u)
{
    const char *first = NULL;
    if ((u->have & d->reached) != d->reached)
        return false;
    for (size_t s = 0; s < d->n; s++) {
        if (!(d->reached >> s & 1))
            continue;
        const cJSON *e = entry_of(cJSON_GetObjectItemCaseSensitive(p->node[s], key), u->name);
        const char *h = e ? jstr(e, "hash") : "";
        if (first == NULL)
            first = h;
        else if (strcmp(first, h) != 0)
            return false;
    }
    return true;
}

static ns_fleet_kind_t kind_of(const fpath_t *p)
{
    return strcmp(p->v[0], "c") == 0   ? NS_FLEET_BROKER
           : strcmp(p->v[0], "t") == 0 ? NS_FLEET_TOPIC
                                       : NS_FLEET_KV;
}

ns_fleet_diff_t *ns_fleet_report_append(ns_fleet_report_t *r, ns_fleet_kind_t kind)
{
    ns_fleet_diff_t *g = ns_array_grow(r->d, r->n, sizeof *r->d);
    if (g == NULL)
        return NULL;
    r->d = g;
    ns_fleet_diff_t *x = &r->d[r->n++];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    return x;
}

static int add_diff(diff_t *d, const fpath_t *p, const uname_t *u)
{
    ns_fleet_diff_t *x = ns_fleet_report_append(d->r, kind_of(p));
    if (x == NULL)
        return NS_ENOMEM;
    ns_buf_t item = NS_BUF_INIT;
    int rc = x->kind == NS_FLEET_TOPIC ? ns_buf_append_str(&item, p->v[4])
                                       : ns_buf_printf(&item, "%s/%s", p->v[1], p->v[4]);
    x->cluster_len = strlen(p->v[1]);
    if (rc == NS_OK && (x->item = ns_buf_strdup(&item)) == NULL)
        rc = NS_ENOMEM;
    ns_buf_free(&item);
    if (rc == NS_OK && ((x->leaf = strdup(u->name)) == NULL ||
                        (x->values = calloc(d->n, sizeof *x->values)) == NULL))
        rc = NS_ENOMEM;
    for (size_t s = 0; rc == NS_OK && s < d->n; s++) {
        if (!(d->reached >> s & 1) || !(u->have >> s & 1))
            continue;
        const cJSON *e = entry_of(cJSON_GetObjectItemCaseSensitive(p->node[s], "leaves"), u->name);
        const cJSON *v = e ? cJSON_GetObjectItemCaseSensitive(e, "value") : NULL;
        if (v && (x->values[s] = cJSON_PrintUnformatted(v)) == NULL)
            rc = NS_ENOMEM;
    }
    return rc;
}

/* Looks at one frontier path: children that differ go to next, leaves that
 * differ become differences. */
static int compare(diff_t *d, const fpath_t *p, frontier_t *next, size_t max_items)
{
    bool item = p->depth == NS_FLEET_ITEM_DEPTH;
    const char *key = item ? "leaves" : "children";
    uname_t *u = NULL;
    size_t n = 0;
    int rc = names_union(d, p, key, &u, &n);
    bool counted = false;
    for (size_t i = 0; rc == NS_OK && i < n; i++) {
        if (same_everywhere(d, p, key, &u[i]))
            continue;
        if (item) {
            if (!counted) {
                counted = true;
                d->r->items[kind_of(p)]++;
            }
            rc = add_diff(d, p, &u[i]);
        } else if (p->depth + 1 == NS_FLEET_ITEM_DEPTH && next->n >= max_items) {
            d->r->truncated = true;
        } else {
            rc = frontier_add(next, p, u[i].name, u[i].have & d->reached, d->n);
        }
    }
    free(u);
    return rc;
}

static int cmp_diff(const void *a, const void *b)
{
    const ns_fleet_diff_t *x = a, *y = b;
    if (x->kind != y->kind)
        return (int)x->kind - (int)y->kind;
    int c = strcmp(x->item, y->item);
    return c ? c : strcmp(x->leaf, y->leaf);
}

static void record_roots(diff_t *d, const fpath_t *root)
{
    for (size_t s = 0; s < d->n; s++) {
        if (!(d->reached >> s & 1) || root->node[s] == NULL)
            continue;
        snprintf(d->r->root[s], sizeof d->r->root[s], "%s", jstr(root->node[s], "hash"));
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(root->node[s], "count");
        d->r->root_count[s] = cJSON_IsNumber(c) ? (int64_t)c->valuedouble : 0;
    }
}

int ns_fleet_diff(ns_fleet_fetch_fn fetch, void *ctx, size_t n, size_t max_items,
                  ns_fleet_report_t *out)
{
    frontier_t cur = {NULL, 0}, next = {NULL, 0};
    diff_t d = {fetch, ctx, n, out, NULL, 0, 0};
    memset(out, 0, sizeof *out);
    if (n == 0 || n > 64)
        return NS_EINVAL;
    out->n_servers = n;
    out->reached = calloc(n, sizeof *out->reached);
    out->error = calloc(n, sizeof *out->error);
    out->root = calloc(n, sizeof *out->root);
    out->root_count = calloc(n, sizeof *out->root_count);
    int rc = out->reached && out->error && out->root && out->root_count ? NS_OK : NS_ENOMEM;
    for (size_t s = 0; s < n; s++)
        out->reached[s] = true;
    d.reached = n == 64 ? ~0ull : (1ull << n) - 1;
    rc = rc ? rc : frontier_add(&cur, NULL, NULL, d.reached, n);
    for (size_t level = 0; rc == NS_OK && cur.n > 0; level++) {
        rc = fetch_level(&d, &cur);
        if (rc == NS_OK && level == 0)
            record_roots(&d, &cur.p[0]);
        for (size_t i = 0; rc == NS_OK && i < cur.n; i++)
            rc = compare(&d, &cur.p[i], &next, max_items);
        frontier_free(&cur);
        cur = next;
        next = (frontier_t){NULL, 0};
        for (size_t i = 0; i < d.n_replies; i++)
            cJSON_Delete(d.replies[i]);
        d.n_replies = 0;
        if (__builtin_popcountll(d.reached) < 2)
            break; /* nothing left to compare with */
    }
    frontier_free(&cur);
    frontier_free(&next);
    for (size_t i = 0; i < d.n_replies; i++)
        cJSON_Delete(d.replies[i]);
    free(d.replies);
    rc = rc ? rc : ns_fleet_conflicts(out);
    if (rc == NS_OK && out->n > 1)
        qsort(out->d, out->n, sizeof *out->d, cmp_diff);
    if (rc != NS_OK)
        ns_fleet_report_free(out);
    return rc;
}

void ns_fleet_report_free(ns_fleet_report_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->d[i].item);
        free(r->d[i].leaf);
        for (size_t s = 0; r->d[i].values && s < r->n_servers; s++)
            free(r->d[i].values[s]);
        free(r->d[i].values);
    }
    for (size_t s = 0; r->error && s < r->n_servers; s++)
        free(r->error[s]);
    free(r->d);
    free(r->reached);
    free(r->error);
    free(r->root);
    free(r->root_count);
    memset(r, 0, sizeof *r);
}

size_t ns_fleet_items(const ns_fleet_report_t *r)
{
    return r->items[NS_FLEET_BROKER] + r->items[NS_FLEET_TOPIC] + r->items[NS_FLEET_KV];
}

size_t ns_fleet_reached(const ns_fleet_report_t *r)
{
    size_t k = 0;
    for (size_t s = 0; s < r->n_servers; s++)
        k += r->reached[s];
    return k;
}

bool ns_fleet_agree(const ns_fleet_report_t *r)
{
    return r->n == 0 && !r->truncated;
}

int ns_fleet_report_json(const ns_fleet_report_t *r, const char *const *names, ns_buf_t *out)
{
    int rc = ns_buf_append_str(out, "{\"servers\":[");
    for (size_t s = 0; rc == NS_OK && s < r->n_servers; s++) {
        rc = ns_buf_append_str(out, s ? ",{\"addr\":" : "{\"addr\":");
        rc = rc ? rc : ns_buf_append_json_str(out, names[s], strlen(names[s]), true);
        rc = rc ? rc : ns_buf_printf(out, ",\"reached\":%s", r->reached[s] ? "true" : "false");
        if (rc == NS_OK && r->reached[s])
            rc = ns_buf_printf(out, ",\"root\":\"%s\",\"leaves\":%lld", r->root[s],
                               (long long)r->root_count[s]);
        else if (rc == NS_OK && r->error[s]) {
            rc = ns_buf_append_str(out, ",\"error\":");
            rc = rc ? rc : ns_buf_append_json_str(out, r->error[s], strlen(r->error[s]), true);
        }
        rc = rc ? rc : ns_buf_append_str(out, "}");
    }
    rc = rc ? rc
            : ns_buf_printf(out,
                            "],\"agree\":%s,\"truncated\":%s,\"items\":{\"broker\":%zu,"
                            "\"topic\":%zu,\"kv\":%zu},\"conflicts\":%zu,\"requests\":%zu,"
                            "\"bytesSent\":%llu,\"bytesReceived\":%llu,\"differences\":[",
                            ns_fleet_agree(r) ? "true" : "false", r->truncated ? "true" : "false",
                            r->items[0], r->items[1], r->items[2], r->items[NS_FLEET_CONFLICT],
                            r->requests, (unsigned long long)r->bytes_sent,
                            (unsigned long long)r->bytes_received);
    for (size_t i = 0; rc == NS_OK && i < r->n; i++) {
        const ns_fleet_diff_t *x = &r->d[i];
        rc = ns_buf_printf(out, "%s{\"kind\":\"%s\",\"item\":", i ? "," : "",
                           ns_fleet_kind_name(x->kind));
        rc = rc ? rc : ns_buf_append_json_str(out, x->item, strlen(x->item), true);
        rc = rc ? rc : ns_buf_append_str(out, ",\"leaf\":");
        rc = rc ? rc : ns_buf_append_json_str(out, x->leaf, strlen(x->leaf), true);
        rc = rc ? rc : ns_buf_append_str(out, ",\"values\":{");
        bool first = true;
        for (size_t s = 0; rc == NS_OK && s < r->n_servers; s++) {
            if (!r->reached[s])
                continue;
            rc = ns_buf_append_str(out, first ? "" : ",");
            first = false;
            rc = rc ? rc : ns_buf_append_json_str(out, names[s], strlen(names[s]), true);
            rc = rc ? rc : ns_buf_printf(out, ":%s", x->values[s] ? x->values[s] : "null");
        }
        rc = rc ? rc : ns_buf_append_str(out, "}}");
    }
    return rc ? rc : ns_buf_append_str(out, "]}");
}
