/* digest_json.c - the FLEET_DIGEST reply (include/ns/fleet.h) from the
 * stored digest: the node, then its children (one prefix walk of the
 * digest table) or, for an item, its leaves (read from the data tables). */
#include <string.h>

#include "ns/fleet.h"
#include "internal.h"

static int hash_member(ns_buf_t *out, const ns_digest_sum_t *s)
{
    char hex[33];
    ns_digest_hex(s, hex);
    return ns_buf_printf(out, "\"hash\":\"%s\",\"count\":%lld", hex, (long long)s->count);
}

struct reply_ctx {
    ns_buf_t *out;
    bool first;
};

static int child_cb(const char *name, const ns_digest_sum_t *sum, void *ctx)
{
    struct reply_ctx *c = ctx;
    int rc = ns_buf_append_str(c->out, c->first ? "{\"name\":" : ",{\"name\":");
    c->first = false;
    rc = rc ? rc : ns_buf_append_json_str(c->out, name, strlen(name), true);
    rc = rc ? rc : ns_buf_append_str(c->out, ",");
    rc = rc ? rc : hash_member(c->out, sum);
    return rc ? rc : ns_buf_append_str(c->out, "}");
}

static int leaf_cb(const char *name, const ns_digest_sum_t *h, const char *json, size_t len,
                   void *ctx)
{
    struct reply_ctx *c = ctx;
    char hex[33];
    ns_digest_hex(h, hex);
    int rc = ns_buf_append_str(c->out, c->first ? "{\"name\":" : ",{\"name\":");
    c->first = false;
    rc = rc ? rc : ns_buf_append_json_str(c->out, name, strlen(name), true);
    rc = rc ? rc : ns_buf_printf(c->out, ",\"hash\":\"%s\",\"value\":", hex);
    rc = rc ? rc : ns_buf_append(c->out, json, len);
    return rc ? rc : ns_buf_append_str(c->out, "}");
}

static int node_reply(ns_txn_t *t, const ns_fleet_path_t *p, ns_buf_t *out)
{
    ns_digest_sum_t s;
    struct reply_ctx c = {out, true};
    bool item = p->depth == NS_FLEET_ITEM_DEPTH;
    int rc = p->depth <= NS_FLEET_ITEM_DEPTH ? ns_digest_get(t, p->v, p->depth, &s) : NS_EINVAL;
    if (rc == NS_ENOTFOUND)
        rc = NS_OK; /* no leaf below: answered as an empty node */
    rc = rc ? rc : ns_buf_append_str(out, "{\"path\":[");
    for (size_t i = 0; rc == NS_OK && i < p->depth; i++) {
        rc = i ? ns_buf_append_str(out, ",") : NS_OK;
        rc = rc ? rc : ns_buf_append_json_str(out, p->v[i], strlen(p->v[i]), true);
    }
    rc = rc ? rc : ns_buf_append_str(out, "],");
    rc = rc ? rc : hash_member(out, &s);
    rc = rc ? rc : ns_buf_append_str(out, item ? ",\"leaves\":[" : ",\"children\":[");
    if (rc == NS_OK && s.count > 0)
        rc = item ? ns_digest_leaves(t, p->v, p->depth, leaf_cb, &c)
                  : ns_digest_children(t, p->v, p->depth, child_cb, &c);
    return rc ? rc : ns_buf_append_str(out, "]}");
}

int ns_digest_reply(ns_txn_t *t, const ns_fleet_path_t *paths, size_t n, ns_buf_t *out)
{
    int rc = ns_buf_append_str(out, "{\"nodes\":[");
    for (size_t i = 0; rc == NS_OK && i < n; i++) {
        rc = i ? ns_buf_append_str(out, ",") : NS_OK;
        rc = rc ? rc : node_reply(t, &paths[i], out);
    }
    return rc ? rc : ns_buf_append_str(out, "]}");
}
