/* doc.c - validating dump documents and kvConfig.json files (doc.h).
 *
 * Two passes: the sections are type-checked in document order into plain
 * arrays (groups, registrations, queue data, mappings) plus lookup sets,
 * then cross_check() walks the references in the order of store/keys.h
 * (clusters -> brokers -> registrations -> topics), so the error reported
 * is always the first one in a fixed, documented order. The typed getters
 * that name each member by its JSON path are in doc_json.c.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "doc.h"
#include "doc_json.h"
#include "ns/names.h"
#include "ns/err.h"

void ctl_doc_free(ctl_doc_t *d)
{
    for (size_t i = 0; i < d->n_groups; i++)
        free(d->groups[i].addrs);
    for (size_t i = 0; i < d->n_regs; i++)
        free(d->regs[i].filter_servers);
    for (size_t i = 0; i < d->n_maps; i++)
        free((void *)d->maps[i].curr_id_map);
    free(d->members);
    free(d->groups);
    free(d->regs);
    free(d->queues);
    free(d->maps);
    ns_strmap_clear(&d->group_idx);
    ns_strmap_clear(&d->member_set);
    ns_strmap_clear(&d->reg_set);
    cJSON_Delete(d->root);
}

/* Unambiguous composite key "len:a" + b for the lookup sets. */
static int pair_key(char *out, size_t n, const char *a, const char *b)
{
    int w = snprintf(out, n, "%zu:%s%s", strlen(a), a, b);
    return w > 0 && (size_t)w < n ? 0 : -1;
}

static void *grow(void *arr, size_t n, size_t size)
{
    return (n & (n - 1)) == 0 ? realloc(arr, (n ? n * 2 : 1) * size) : arr; /* at powers of 2 */
}

/* ---- sections ---- */

static int parse_clusters(ctl_doc_t *d, const cJSON *clusters)
{
    char path[512], ep[600], key[1024];
    if (ctl_doc_unique_keys(d, clusters, "$.clusters") != CTL_OK)
        return CTL_INVALID;
    for (const cJSON *c = clusters->child; c; c = c->next) {
        ns_json_path_key(path, sizeof path, "$.clusters", c->string);
        if (c->string[0] == 0)
            return ctl_doc_bad(d, path, "empty cluster name");
        if (!cJSON_IsArray(c))
            return ctl_doc_bad(d, path, "expected an array of broker names, found %s",
                               ns_json_type_name(c));
        size_t i = 0;
        for (const cJSON *b = c->child; b; b = b->next, i++) {
            ctl_doc_path_idx(ep, sizeof ep, path, i);
            if (!cJSON_IsString(b) || b->valuestring[0] == 0)
                return ctl_doc_bad(d, ep, "expected a broker name");
            if (pair_key(key, sizeof key, c->string, b->valuestring) != 0)
                return ctl_doc_bad(d, ep, "name too long");
            if (ns_strmap_get(&d->member_set, key))
                return ctl_doc_bad(d, ep, "broker '%s' listed twice", b->valuestring);
            void *m = grow(d->members, d->n_members, sizeof *d->members);
            if (m == NULL || ns_strmap_put(&d->member_set, key, (void *)1) != NS_OK)
                return ctl_doc_bad(d, ep, "out of memory");
            d->members = m;
            d->members[d->n_members++] = (ctl_member_t){c->string, b->valuestring, i};
        }
    }
    return CTL_OK;
}

static int cmp_addr(const void *a, const void *b)
{
    int64_t x = ((const ns_broker_addr_t *)a)->id, y = ((const ns_broker_addr_t *)b)->id;
    return x < y ? -1 : x > y;
}

static int parse_broker(ctl_doc_t *d, const cJSON *o, const char *base, ns_group_rec_t *g)
{
    char path[512], ap[600];
    cJSON *addrs;
    const char *zone;
    if (!cJSON_IsObject(o))
        return ctl_doc_bad(d, base, "expected an object, found %s", ns_json_type_name(o));
    if (ctl_doc_get_str(d, o, base, "brokerName", true, false, (const char **)&g->broker_name) ||
        ctl_doc_get_str(d, o, base, "cluster", true, false, (const char **)&g->cluster) ||
        ctl_doc_get_str(d, o, base, "zoneName", false, true, &zone) ||
        ctl_doc_get_bool(d, o, base, "enableActingMaster", &g->enable_acting_master) ||
        ctl_doc_get_container(d, o, base, "addrs", true, false, &addrs, path, sizeof path) ||
        ctl_doc_unique_keys(d, addrs, path))
        return CTL_INVALID;
    g->zone_name = (char *)zone;
    g->addrs = calloc((size_t)cJSON_GetArraySize(addrs) + 1, sizeof *g->addrs);
    if (g->addrs == NULL)
        return ctl_doc_bad(d, path, "out of memory");
    for (const cJSON *a = addrs->child; a; a = a->next) {
        ns_json_path_key(ap, sizeof ap, path, a->string);
        ns_broker_addr_t *e = &g->addrs[g->n_addrs];
        if (ns_parse_i64(a->string, strlen(a->string), &e->id) != NS_OK || e->id < 0)
            return ctl_doc_bad(d, ap, "broker id '%s' is not a non-negative integer", a->string);
        if (!cJSON_IsString(a) || a->valuestring[0] == 0)
            return ctl_doc_bad(d, ap, "expected an address \"ip:port\"");
        for (size_t k = 0; k < g->n_addrs; k++)
            if (strcmp(g->addrs[k].addr, a->valuestring) == 0)
                return ctl_doc_bad(d, ap, "address %s appears under two broker ids",
                                   a->valuestring);
        e->addr = a->valuestring;
        g->n_addrs++;
    }
    qsort(g->addrs, g->n_addrs, sizeof *g->addrs, cmp_addr);
    return CTL_OK;
}

static int parse_brokers(ctl_doc_t *d, const cJSON *brokers)
{
    char path[512];
    d->groups = calloc((size_t)cJSON_GetArraySize(brokers) + 1, sizeof *d->groups);
    if (d->groups == NULL)
        return ctl_doc_bad(d, "$.brokers", "out of memory");
    for (const cJSON *o = brokers->child; o; o = o->next) {
        ctl_doc_path_idx(path, sizeof path, "$.brokers", d->n_groups);
        ns_group_rec_t *g = &d->groups[d->n_groups++];
        if (parse_broker(d, o, path, g) != CTL_OK)
            return CTL_INVALID;
        if (ns_strmap_get(&d->group_idx, g->broker_name))
            return ctl_doc_bad(d, path, "duplicate broker '%s'", g->broker_name);
        if (ns_strmap_put(&d->group_idx, g->broker_name, (void *)(uintptr_t)d->n_groups) != NS_OK)
            return ctl_doc_bad(d, path, "out of memory");
    }
    return CTL_OK;
}

static int parse_registration(ctl_doc_t *d, const cJSON *o, const char *base, ns_live_rec_t *r)
{
    char path[512], fp[600], key[1024];
    cJSON *dv, *fs;
    if (!cJSON_IsObject(o))
        return ctl_doc_bad(d, base, "expected an object, found %s", ns_json_type_name(o));
    if (ctl_doc_get_str(d, o, base, "cluster", true, false, (const char **)&r->cluster) ||
        ctl_doc_get_str(d, o, base, "brokerAddr", true, false, (const char **)&r->addr) ||
        ctl_doc_get_str(d, o, base, "brokerName", true, false, (const char **)&r->broker_name) ||
        ctl_doc_get_i64(d, o, base, "brokerId", true, 0, 0, INT64_MAX, &r->broker_id) ||
        ctl_doc_get_str(d, o, base, "haServerAddr", false, true, (const char **)&r->ha_addr) ||
        ctl_doc_get_container(d, o, base, "dataVersion", true, false, &dv, path, sizeof path) ||
        ctl_doc_get_i64(d, dv, path, "counter", true, 0, INT64_MIN, INT64_MAX, &r->dv.counter) ||
        ctl_doc_get_i64(d, dv, path, "stateVersion", false, 0, INT64_MIN, INT64_MAX,
                        &r->dv.state_version) ||
        ctl_doc_get_i64(d, dv, path, "timestamp", true, 0, INT64_MIN, INT64_MAX,
                        &r->dv.timestamp) ||
        ctl_doc_get_i64(d, o, base, "heartbeatTimeoutMillis", false,
                        NS_DEFAULT_HEARTBEAT_TIMEOUT_MS, 1, INT64_C(365) * 86400 * 1000,
                        &r->heartbeat_timeout_ms) ||
        ctl_doc_get_container(d, o, base, "filterServers", false, true, &fs, path, sizeof path))
        return CTL_INVALID;
    if (fs) {
        r->filter_servers = calloc((size_t)cJSON_GetArraySize(fs) + 1, sizeof(char *));
        if (r->filter_servers == NULL)
            return ctl_doc_bad(d, path, "out of memory");
        for (const cJSON *f = fs->child; f; f = f->next) {
            ctl_doc_path_idx(fp, sizeof fp, path, r->n_filter_servers);
            if (!cJSON_IsString(f) || f->valuestring[0] == 0)
                return ctl_doc_bad(d, fp, "expected an address \"ip:port\"");
            r->filter_servers[r->n_filter_servers++] = f->valuestring;
        }
    }
    if (pair_key(key, sizeof key, r->cluster, r->addr) != 0)
        return ctl_doc_bad(d, base, "name too long");
    if (ns_strmap_get(&d->reg_set, key))
        return ctl_doc_bad(d, base, "duplicate registration of %s in cluster '%s'", r->addr,
                           r->cluster);
    if (ns_strmap_put(&d->reg_set, key, r) != NS_OK)
        return ctl_doc_bad(d, base, "out of memory");
    return CTL_OK;
}

static int parse_registrations(ctl_doc_t *d, const cJSON *regs)
{
    char path[512];
    d->regs = calloc((size_t)cJSON_GetArraySize(regs) + 1, sizeof *d->regs);
    if (d->regs == NULL)
        return ctl_doc_bad(d, "$.registrations", "out of memory");
    for (const cJSON *o = regs->child; o; o = o->next) {
        ctl_doc_path_idx(path, sizeof path, "$.registrations", d->n_regs);
        if (parse_registration(d, o, path, &d->regs[d->n_regs++]) != CTL_OK)
            return CTL_INVALID;
    }
    return CTL_OK;
}

static int parse_topics(ctl_doc_t *d, const cJSON *topics)
{
    char path[512], qp[600];
    if (ctl_doc_unique_keys(d, topics, "$.topics") != CTL_OK)
        return CTL_INVALID;
    for (const cJSON *t = topics->child; t; t = t->next, d->n_topics++) {
        ns_json_path_key(path, sizeof path, "$.topics", t->string);
        if (t->string[0] == 0)
            return ctl_doc_bad(d, path, "empty topic name");
        const char *why = ns_name_problem_stored(t->string, strlen(t->string));
        if (why != NULL)
            return ctl_doc_bad(d, path, "not a valid topic name: %s", why);
        if (!cJSON_IsArray(t) || t->child == NULL)
            return ctl_doc_bad(d, path, "expected a non-empty array of queue data");
        size_t first = d->n_queues, i = 0;
        for (const cJSON *o = t->child; o; o = o->next, i++) {
            ctl_doc_path_idx(qp, sizeof qp, path, i);
            void *m = grow(d->queues, d->n_queues, sizeof *d->queues);
            if (m == NULL)
                return ctl_doc_bad(d, qp, "out of memory");
            d->queues = m;
            ctl_queue_t *q = &d->queues[d->n_queues++];
            q->topic = t->string;
            if (!cJSON_IsObject(o))
                return ctl_doc_bad(d, qp, "expected an object, found %s", ns_json_type_name(o));
            if (ctl_doc_get_str(d, o, qp, "brokerName", true, false, &q->q.broker_name) ||
                ctl_doc_get_i32_in(d, o, qp, "perm", true, 0, 15, &q->q.perm) ||
                ctl_doc_get_i32_in(d, o, qp, "readQueueNums", true, 0, 65535,
                                   &q->q.read_queue_nums) ||
                ctl_doc_get_i32_in(d, o, qp, "writeQueueNums", true, 0, 65535,
                                   &q->q.write_queue_nums) ||
                ctl_doc_get_i32_in(d, o, qp, "topicSysFlag", false, 0, INT32_MAX,
                                   &q->q.topic_sys_flag))
                return CTL_INVALID;
            for (size_t k = first; k + 1 < d->n_queues; k++)
                if (strcmp(d->queues[k].q.broker_name, q->q.broker_name) == 0)
                    return ctl_doc_bad(d, qp, "broker '%s' appears twice in this topic",
                                       q->q.broker_name);
        }
    }
    return CTL_OK;
}

static int parse_mapping(ctl_doc_t *d, const cJSON *o, const char *base, ns_mapping_info_t *m)
{
    char path[512], ip[600];
    cJSON *ids;
    if (!cJSON_IsObject(o))
        return ctl_doc_bad(d, base, "expected an object, found %s", ns_json_type_name(o));
    if (ctl_doc_get_str(d, o, base, "topic", true, false, &m->topic) ||
        ctl_doc_get_str(d, o, base, "bname", true, false, &m->bname) ||
        ctl_doc_get_str(d, o, base, "scope", false, true, &m->scope) ||
        ctl_doc_get_i32(d, o, base, "totalQueues", true, &m->total_queues) ||
        ctl_doc_get_i64(d, o, base, "epoch", true, 0, INT64_MIN, INT64_MAX, &m->epoch) ||
        ctl_doc_get_bool(d, o, base, "dirty", &m->dirty) ||
        ctl_doc_get_container(d, o, base, "currIdMap", false, false, &ids, path, sizeof path) ||
        (ids && ctl_doc_unique_keys(d, ids, path)))
        return CTL_INVALID;
    ns_id_pair_t *pairs = calloc((size_t)(ids ? cJSON_GetArraySize(ids) : 0) + 1, sizeof *pairs);
    if (pairs == NULL)
        return ctl_doc_bad(d, base, "out of memory");
    m->curr_id_map = pairs;
    for (const cJSON *p = ids ? ids->child : NULL; p; p = p->next) {
        int64_t logical, physical;
        ns_json_path_key(ip, sizeof ip, path, p->string);
        if (ns_parse_i64(p->string, strlen(p->string), &logical) != NS_OK || logical < INT32_MIN ||
            logical > INT32_MAX)
            return ctl_doc_bad(d, ip, "queue id '%s' is not an integer", p->string);
        if (ctl_doc_value_i64(d, p, ip, INT32_MIN, INT32_MAX, &physical) != CTL_OK)
            return CTL_INVALID;
        pairs[m->n_curr_id_map++] = (ns_id_pair_t){(int32_t)logical, (int32_t)physical};
    }
    return CTL_OK;
}

static int parse_mappings(ctl_doc_t *d, const cJSON *maps)
{
    char path[512], key[1024];
    ns_strmap_t seen = NS_STRMAP_INIT;
    int rc = CTL_OK;
    d->maps = calloc((size_t)cJSON_GetArraySize(maps) + 1, sizeof *d->maps);
    if (d->maps == NULL)
        return ctl_doc_bad(d, "$.mappings", "out of memory");
    for (const cJSON *o = maps->child; o && rc == CTL_OK; o = o->next) {
        ctl_doc_path_idx(path, sizeof path, "$.mappings", d->n_maps);
        ns_mapping_info_t *m = &d->maps[d->n_maps++];
        rc = parse_mapping(d, o, path, m);
        if (rc == CTL_OK && pair_key(key, sizeof key, m->topic, m->bname) != 0)
            rc = ctl_doc_bad(d, path, "name too long");
        else if (rc == CTL_OK && ns_strmap_get(&seen, key))
            rc =
                ctl_doc_bad(d, path, "duplicate mapping of topic '%s' on '%s'", m->topic, m->bname);
        else if (rc == CTL_OK && ns_strmap_put(&seen, key, m) != NS_OK)
            rc = ctl_doc_bad(d, path, "out of memory");
    }
    ns_strmap_clear(&seen);
    return rc;
}

/* {namespace: {key: "value"}}; counts namespaces and keys. */
static int parse_kv(ctl_doc_t *d, const cJSON *kv, const char *base, size_t *n_ns, size_t *n_keys,
                    size_t *n_null)
{
    ns_kvconfig_counts_t c = {0};
    if (ns_kvconfig_check(kv, base, n_null != NULL, &c, d->err, sizeof d->err) != NS_OK)
        return CTL_INVALID;
    *n_ns += c.namespaces;
    *n_keys += c.keys;
    if (n_null)
        *n_null += c.nulls;
    return CTL_OK;
}

/* ---- cross references (store/keys.h invariants) ---- */

static ns_group_rec_t *group_of(ctl_doc_t *d, const char *name)
{
    uintptr_t i = (uintptr_t)ns_strmap_get(&d->group_idx, name);
    return i ? &d->groups[i - 1] : NULL;
}

static bool lists(ctl_doc_t *d, const char *cluster, const char *broker)
{
    char key[1024];
    return pair_key(key, sizeof key, cluster, broker) == 0 && ns_strmap_get(&d->member_set, key);
}

static int cross_check(ctl_doc_t *d)
{
    char path[512], p2[600], key[1024];
    for (size_t i = 0; i < d->n_members; i++) { /* I2 */
        if (group_of(d, d->members[i].broker) == NULL) {
            ns_json_path_key(p2, sizeof p2, "$.clusters", d->members[i].cluster);
            ctl_doc_path_idx(path, sizeof path, p2, d->members[i].idx);
            return ctl_doc_bad(d, path, "unknown broker '%s'", d->members[i].broker);
        }
    }
    for (size_t i = 0; i < d->n_groups; i++) { /* I3, I5 */
        ns_group_rec_t *g = &d->groups[i];
        ctl_doc_path_idx(path, sizeof path, "$.brokers", i);
        if (!lists(d, g->cluster, g->broker_name)) {
            ns_json_path_key(p2, sizeof p2, path, "cluster");
            return ctl_doc_bad(d, p2, "$.clusters.%s does not list broker '%s'", g->cluster,
                               g->broker_name);
        }
        for (size_t k = 0; k < g->n_addrs; k++) {
            if (pair_key(key, sizeof key, g->cluster, g->addrs[k].addr) != 0 ||
                ns_strmap_get(&d->reg_set, key) == NULL) {
                snprintf(p2, sizeof p2, "%s.addrs.%lld", path, (long long)g->addrs[k].id);
                return ctl_doc_bad(d, p2, "no registration of %s in cluster '%s'", g->addrs[k].addr,
                                   g->cluster);
            }
        }
    }
    for (size_t i = 0; i < d->n_regs; i++) { /* I4 */
        ns_live_rec_t *r = &d->regs[i];
        ns_group_rec_t *g = group_of(d, r->broker_name);
        const char *mine = g ? ns_group_addr_of(g, r->broker_id) : NULL;
        ctl_doc_path_idx(path, sizeof path, "$.registrations", i);
        if (g == NULL) {
            ns_json_path_key(p2, sizeof p2, path, "brokerName");
            return ctl_doc_bad(d, p2, "unknown broker '%s'", r->broker_name);
        }
        if (mine == NULL || strcmp(mine, r->addr) != 0) {
            ns_json_path_key(p2, sizeof p2, path, "brokerId");
            return ctl_doc_bad(d, p2, "broker '%s' does not map id %lld to %s", r->broker_name,
                               (long long)r->broker_id, r->addr);
        }
        if (!lists(d, r->cluster, r->broker_name)) {
            ns_json_path_key(p2, sizeof p2, path, "cluster");
            return ctl_doc_bad(d, p2, "$.clusters.%s does not list broker '%s'", r->cluster,
                               r->broker_name);
        }
    }
    const char *topic = NULL;
    for (size_t i = 0, j = 0; i < d->n_queues; i++, j++) { /* queue data names a group */
        if (topic == NULL || strcmp(topic, d->queues[i].topic) != 0)
            j = 0;
        topic = d->queues[i].topic;
        if (group_of(d, d->queues[i].q.broker_name) == NULL) {
            ns_json_path_key(p2, sizeof p2, "$.topics", topic);
            ctl_doc_path_idx(path, sizeof path, p2, j);
            ns_json_path_key(p2, sizeof p2, path, "brokerName");
            return ctl_doc_bad(d, p2, "unknown broker '%s'", d->queues[i].q.broker_name);
        }
    }
    return CTL_OK;
}

/* Parses text (len bytes) into d->root, which must be an object; a syntax
 * error is reported with its line and column. */
static int parse_json(ctl_doc_t *d, const char *text, size_t len)
{
    return ns_json_parse_object(text, len, &d->root, d->err, sizeof d->err) == NS_OK ? CTL_OK
                                                                                     : CTL_INVALID;
}

/* Parses and validates the whole document; CTL_OK or CTL_INVALID (d->err). */
int ctl_doc_load(ctl_doc_t *d, const char *text, size_t len)
{
    char path[512];
    cJSON *v, *sect;
    if (parse_json(d, text, len) != CTL_OK)
        return CTL_INVALID;
    ctl_doc_member(d, d->root, "$", "format", false, &v, path, sizeof path);
    if (v == NULL)
        return ctl_doc_bad(d, path, "missing: not a namesrv dump document");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, CTL_DUMP_FORMAT) != 0)
        return ctl_doc_bad(d, path, "expected \"%s\": not a namesrv dump document",
                           CTL_DUMP_FORMAT);
    int64_t ver = 0;
    if (ctl_doc_get_i64(d, d->root, "$", "formatVersion", true, 0, INT64_MIN, INT64_MAX, &ver))
        return CTL_INVALID;
    if (ver != CTL_DUMP_FORMAT_VERSION)
        return ctl_doc_bad(d, "$.formatVersion",
                           "unsupported version %lld (this namesrvctl reads %d)", (long long)ver,
                           CTL_DUMP_FORMAT_VERSION);
    /* a store schema this binary does not know is refused (0 = not given) */
    if (ctl_doc_get_i64(d, d->root, "$", "schemaVersion", false, 0, 0, ns_store_latest_schema(),
                        &ver) ||
        ctl_doc_get_i64(d, d->root, "$", "createdAt", false, 0, INT64_MIN, INT64_MAX, &ver))
        return CTL_INVALID;
    if (ctl_doc_get_container(d, d->root, "$", "clusters", true, false, &sect, path, sizeof path) ||
        parse_clusters(d, sect) ||
        ctl_doc_get_container(d, d->root, "$", "brokers", true, true, &sect, path, sizeof path) ||
        parse_brokers(d, sect) ||
        ctl_doc_get_container(d, d->root, "$", "registrations", true, true, &sect, path,
                              sizeof path) ||
        parse_registrations(d, sect) ||
        ctl_doc_get_container(d, d->root, "$", "topics", true, false, &sect, path, sizeof path) ||
        parse_topics(d, sect) ||
        ctl_doc_get_container(d, d->root, "$", "mappings", false, true, &sect, path, sizeof path) ||
        (sect && parse_mappings(d, sect)) ||
        ctl_doc_get_container(d, d->root, "$", "kv", true, false, &d->kv, path, sizeof path) ||
        parse_kv(d, d->kv, "$.kv", &d->n_kv_ns, &d->n_kv_keys, NULL) ||
        ctl_doc_get_container(d, d->root, "$", "audit", false, true, &d->audit, path, sizeof path))
        return CTL_INVALID;
    size_t i = 0;
    for (const cJSON *a = d->audit ? d->audit->child : NULL; a; a = a->next, i++) {
        ctl_doc_path_idx(path, sizeof path, "$.audit", i);
        if (!cJSON_IsObject(a))
            return ctl_doc_bad(d, path, "expected an object, found %s", ns_json_type_name(a));
    }
    if (ctl_doc_users_load(d) != CTL_OK)
        return CTL_INVALID;
    return cross_check(d);
}

int ctl_kvconfig_load(ctl_doc_t *d, const char *text, size_t len, const cJSON **table, size_t *n_ns,
                      size_t *n_keys, size_t *n_null)
{
    ns_kvconfig_counts_t c = {0};
    if (ns_kvconfig_parse(text, len, &d->root, table, &c, d->err, sizeof d->err) != NS_OK)
        return CTL_INVALID;
    *n_ns = c.namespaces;
    *n_keys = c.keys;
    *n_null = c.nulls;
    return CTL_OK;
}
