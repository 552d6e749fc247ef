/* route_build.c - assembling and materialising routes (include/ns/store.h). */
#include "ns/store.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "ns/body.h"
#include "ns/err.h"

struct cached_group {
    char *name; /* the broker name, which the routes' queue data borrow */
    bool missing;
    ns_group_rec_t g;
    ns_broker_data_t view;
    ns_filter_entry_t *filters; /* one per member address with filter servers */
    size_t n_filters;
    ns_live_rec_t *lives; /* the live records the filters borrow from */
    size_t n_lives;
    ns_buf_t json[2]; /* view encoded: [0] legacy, [1] standard; lazily */
    int derives;      /* json[0] derives exactly from json[1]: 1, not: -1, unknown: 0 */
};

void ns_route_cache_init(ns_route_cache_t *c)
{
    ns_strmap_t empty = NS_STRMAP_INIT;
    c->groups = empty;
}

static void free_cached(const char *key, void *val, void *ctx)
{
    struct cached_group *cg = val;
    free(cg->name);
    ns_group_rec_free(&cg->g);
    for (size_t i = 0; i < cg->n_lives; i++)
        ns_live_rec_free(&cg->lives[i]);
    free(cg->lives);
    free(cg->filters);
    ns_buf_free(&cg->json[0]);
    ns_buf_free(&cg->json[1]);
    free(cg);
}

void ns_route_cache_free(ns_route_cache_t *c)
{
    ns_strmap_each(&c->groups, free_cached, NULL);
    ns_strmap_clear(&c->groups);
}

/* Loads a group and the filter servers of its members. */
static int load_group(ns_txn_t *txn, const char *name, struct cached_group **out)
{
    struct cached_group *cg = calloc(1, sizeof *cg);
    if (cg == NULL || (cg->name = strdup(name)) == NULL) {
        free(cg);
        return NS_ENOMEM;
    }
    int rc = ns_group_get(txn, name, &cg->g);
    if (rc == NS_ENOTFOUND) {
        cg->missing = true;
        *out = cg;
        return NS_OK;
    }
    if (rc != NS_OK)
        goto fail;
    ns_group_view(&cg->g, &cg->view);
    cg->lives = calloc(cg->g.n_addrs + 1, sizeof *cg->lives);
    cg->filters = calloc(cg->g.n_addrs + 1, sizeof *cg->filters);
    if (cg->lives == NULL || cg->filters == NULL) {
        rc = NS_ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < cg->g.n_addrs; i++) {
        ns_live_rec_t *lr = &cg->lives[cg->n_lives];
        rc = ns_live_get(txn, cg->g.cluster, cg->g.addrs[i].addr, lr);
        if (rc == NS_ENOTFOUND)
            continue;
        if (rc != NS_OK)
            goto fail;
        cg->n_lives++;
        if (lr->n_filter_servers == 0)
            continue;
        ns_filter_entry_t *f = &cg->filters[cg->n_filters++];
        f->broker_addr = lr->addr;
        f->servers = (const char *const *)lr->filter_servers;
        f->n_servers = lr->n_filter_servers;
    }
    *out = cg;
    return NS_OK;
fail:
    free_cached(NULL, cg, NULL);
    return rc;
}

static int cache_get(ns_txn_t *txn, ns_route_cache_t *c, const char *name,
                     struct cached_group **out)
{
    struct cached_group *cg = ns_strmap_get(&c->groups, name);
    if (cg == NULL) {
        int rc = load_group(txn, name, &cg);
        if (rc != NS_OK)
            return rc;
        if (ns_strmap_put(&c->groups, name, cg) != NS_OK) {
            free_cached(NULL, cg, NULL);
            return NS_ENOMEM;
        }
    }
    *out = cg;
    return NS_OK;
}

int ns_route_parts_own(ns_route_parts_t *p, void *mem)
{
    if (mem == NULL)
        return NS_ENOMEM;
    char **o = ns_array_grow(p->owned, p->n_owned, sizeof *o);
    if (o == NULL) {
        free(mem);
        return NS_ENOMEM;
    }
    o[p->n_owned++] = mem;
    p->owned = o;
    return NS_OK;
}

struct assemble_ctx {
    ns_txn_t *txn;
    ns_route_cache_t *cache;
    ns_route_parts_t *p;
};

/* One queue row: its broker's group looked up (once per cache), the row
 * kept with the group's copy of the name, the group's view kept when the
 * group exists. */
static int queue_cb(const char *topic, const ns_queue_data_t *q, void *ctx)
{
    struct assemble_ctx *a = ctx;
    ns_route_parts_t *p = a->p;
    struct cached_group *cg = NULL;
    int rc = cache_get(a->txn, a->cache, q->broker_name, &cg);
    if (rc != NS_OK)
        return rc;
    ns_queue_data_t *nq = ns_array_room(p->queues, &p->cap_queues, p->n_queues, sizeof *nq);
    if (nq == NULL)
        return NS_ENOMEM;
    p->queues = nq;
    p->queues[p->n_queues] = *q;
    p->queues[p->n_queues++].broker_name = cg->name;
    if (cg->missing)
        return 0;
    struct cached_group **ng = ns_array_room(p->groups, &p->cap_groups, p->n_brokers, sizeof *ng);
    if (ng != NULL)
        p->groups = ng;
    ns_broker_data_t *nb = ns_array_room(p->brokers, &p->cap_brokers, p->n_brokers, sizeof *nb);
    if (nb != NULL)
        p->brokers = nb;
    if (ng == NULL || nb == NULL)
        return NS_ENOMEM;
    p->groups[p->n_brokers] = cg;
    p->brokers[p->n_brokers++] = cg->view;
    return 0;
}

static int mapping_cb(const ns_mapping_info_t *m, void *ctx)
{
    ns_route_parts_t *p = ctx;
    ns_mapping_info_t *nm = ns_array_grow(p->mappings, p->n_mappings, sizeof *nm);
    if (nm == NULL)
        return NS_ENOMEM;
    p->mappings = nm;
    ns_mapping_info_t *d = &p->mappings[p->n_mappings];
    *d = *m;
    char *topic = strdup(m->topic), *bname = strdup(m->bname);
    char *scope = m->scope ? strdup(m->scope) : NULL;
    ns_id_pair_t *pairs = malloc((m->n_curr_id_map + 1) * sizeof *pairs);
    void *mem[4] = {topic, bname, pairs, scope};
    int rc = NS_OK;
    for (size_t i = 0; i < (m->scope ? 4u : 3u); i++) {
        if (rc == NS_OK)
            rc = ns_route_parts_own(p, mem[i]); /* frees mem[i] when it fails */
        else
            free(mem[i]); /* would leak once an earlier one failed */
    }
    if (rc != NS_OK)
        return rc;
    memcpy(pairs, m->curr_id_map, m->n_curr_id_map * sizeof *pairs);
    d->topic = topic;
    d->bname = bname;
    d->scope = scope;
    d->curr_id_map = pairs;
    p->n_mappings++;
    return 0;
}

/* Empties p for the next assembly, keeping its queue and broker arrays. */
static void parts_clear(ns_route_parts_t *p)
{
    for (size_t i = 0; i < p->n_owned; i++)
        free(p->owned[i]);
    free(p->owned);
    free(p->filters);
    free(p->mappings);
    ns_route_parts_t kept = {
        .queues = p->queues,
        .brokers = p->brokers,
        .groups = p->groups,
        .cap_queues = p->cap_queues,
        .cap_brokers = p->cap_brokers,
        .cap_groups = p->cap_groups,
    };
    *p = kept;
}

int ns_route_assemble(ns_txn_t *txn, ns_route_cache_t *cache, const char *topic,
                      ns_route_parts_t *out)
{
    parts_clear(out);
    struct assemble_ctx a = {txn, cache, out};
    int rc = ns_queue_iter_topic(txn, topic, queue_cb, &a);
    if (rc != NS_OK)
        goto fail;
    size_t n_filters = 0;
    for (size_t i = 0; i < out->n_brokers; i++)
        n_filters += out->groups[i]->n_filters;
    if (out->n_queues == 0 || out->n_brokers == 0) {
        rc = NS_ENOTFOUND;
        goto fail;
    }
    if (n_filters) {
        out->filters = calloc(n_filters, sizeof *out->filters);
        if (out->filters == NULL) {
            rc = NS_ENOMEM;
            goto fail;
        }
        for (size_t i = 0; i < out->n_brokers; i++) {
            const struct cached_group *cg = out->groups[i];
            for (size_t k = 0; k < cg->n_filters; k++)
                out->filters[out->n_filters++] = cg->filters[k];
        }
    }
    if ((rc = ns_mapping_iter_topic(txn, topic, mapping_cb, out)) != NS_OK)
        goto fail;
    out->route.brokers = out->brokers;
    out->route.n_brokers = out->n_brokers;
    out->route.queues = out->queues;
    out->route.n_queues = out->n_queues;
    out->route.filters = out->filters;
    out->route.n_filters = out->n_filters;
    out->route.mappings = out->mappings;
    out->route.n_mappings = out->n_mappings;
    return NS_OK;
fail:
    ns_route_parts_free(out);
    return rc;
}

void ns_route_parts_free(ns_route_parts_t *p)
{
    parts_clear(p);
    free(p->queues);
    free(p->brokers);
    free(p->groups);
    memset(p, 0, sizeof *p);
}

/* The encoding of group cg's view in the given form, made once per cache (a
 * batch re-encodes many topics of one broker). Borrowed from cg. */
static int fragment(struct cached_group *cg, bool standard, const ns_buf_t **out)
{
    ns_buf_t *enc = &cg->json[standard];
    if (enc->len == 0) {
        int rc = ns_json_broker_data_encode(enc, &cg->view, standard);
        if (rc != NS_OK)
            return rc;
    }
    *out = enc;
    return NS_OK;
}

/* Points json[i] at the encoding of route broker i in the given form. */
static int broker_fragments(const ns_route_parts_t *p, bool standard, ns_slice_t *json)
{
    for (size_t i = 0; i < p->n_brokers; i++) {
        const ns_buf_t *enc = NULL;
        int rc = fragment(p->groups[i], standard, &enc);
        if (rc != NS_OK)
            return rc;
        json[i].ptr = enc->data;
        json[i].len = enc->len;
    }
    return NS_OK;
}

/* Encodes the route in one form into out, reusing the cached broker parts. */
static int encode_form(ns_route_parts_t *p, bool standard, ns_buf_t *out, size_t *insert_at)
{
    ns_slice_t small[8], *json = small;
    if (p->n_brokers > sizeof small / sizeof small[0] &&
        (json = malloc(p->n_brokers * sizeof *json)) == NULL)
        return NS_ENOMEM;
    int rc = broker_fragments(p, standard, json);
    if (rc == NS_OK) {
        p->route.broker_json = json;
        ns_buf_reset(out);
        rc = ns_json_route_encode(out, &p->route, standard, insert_at);
        p->route.broker_json = NULL;
    }
    if (json != small)
        free(json);
    return rc;
}

void ns_route_scratch_free(ns_route_scratch_t *s)
{
    ns_buf_free(&s->std);
    ns_buf_free(&s->legacy);
    ns_buf_free(&s->derived);
    ns_route_parts_free(&s->parts);
}

/* True when the lookup can derive s->legacy from s->std: then only the
 * standard form is stored, half of what the route would take. */
static bool legacy_derivable(ns_route_scratch_t *s, size_t std_ins, size_t legacy_ins)
{
    size_t ins = 0;
    ns_buf_reset(&s->derived);
    return ns_json_route_legacy(&s->derived, s->std.data, s->std.len, std_ins, &ins) == NS_OK &&
           ins == legacy_ins && s->derived.len == s->legacy.len &&
           memcmp(s->derived.data, s->legacy.data, s->legacy.len) == 0;
}

/* Whether group cg's legacy fragment derives exactly from its standard one,
 * compared once per cache; tmp is scratch. */
static int group_derives(struct cached_group *cg, ns_buf_t *tmp, bool *out)
{
    if (cg->derives == 0) {
        const ns_buf_t *std = NULL, *legacy = NULL;
        size_t ins = 0;
        int rc = fragment(cg, true, &std);
        if (rc == NS_OK)
            rc = fragment(cg, false, &legacy);
        if (rc != NS_OK)
            return rc;
        ns_buf_reset(tmp);
        bool same = ns_json_route_legacy(tmp, std->data, std->len, 0, &ins) == NS_OK &&
                    tmp->len == legacy->len && memcmp(tmp->data, legacy->data, legacy->len) == 0;
        cg->derives = same ? 1 : -1;
    }
    *out = cg->derives > 0;
    return NS_OK;
}

/* True (*out) when the route's legacy form derives exactly from its standard
 * form by ns_json_route_legacy_by_parts: then neither the legacy form nor
 * the comparison is made per topic (most routes; a batch writes thousands). */
static int derives_by_parts(ns_route_parts_t *p, ns_route_scratch_t *s, bool *out)
{
    *out = false;
    if (!ns_json_route_legacy_by_parts(&p->route))
        return NS_OK;
    for (size_t i = 0; i < p->n_brokers; i++) {
        bool same = false;
        int rc = group_derives(p->groups[i], &s->derived, &same);
        if (rc != NS_OK || !same)
            return rc;
    }
    *out = true;
    return NS_OK;
}

int ns_route_materialise(ns_txn_t *txn, ns_route_cache_t *cache, const char *topic,
                         ns_route_scratch_t *s)
{
    ns_route_parts_t *parts = &s->parts;
    int rc = ns_route_assemble(txn, cache, topic, parts);
    if (rc == NS_ENOTFOUND)
        return ns_route_del(txn, topic);
    if (rc != NS_OK)
        return rc;
    size_t std_ins = 0, legacy_ins = 0;
    bool derive = false;
    rc = encode_form(parts, true, &s->std, &std_ins);
    if (rc == NS_OK)
        rc = derives_by_parts(parts, s, &derive);
#ifndef NDEBUG /* test builds check the argument of ns_json_route_legacy_by_parts */
    if (rc == NS_OK && derive && encode_form(parts, false, &s->legacy, &legacy_ins) == NS_OK)
        assert(legacy_derivable(s, std_ins, legacy_ins));
#endif
    if (rc == NS_OK && !derive) {
        rc = encode_form(parts, false, &s->legacy, &legacy_ins);
        if (rc == NS_OK)
            derive = legacy_derivable(s, std_ins, legacy_ins);
    }
    if (rc == NS_OK)
        rc = ns_route_put(txn, topic, &s->std, std_ins, derive ? NULL : &s->legacy, legacy_ins);
    return rc;
}
