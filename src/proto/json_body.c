/* json_body.c - fastjson-shaped JSON writers for response bodies
 * (include/ns/body.h, docs/protocol.md §4). The readers of Java-produced bodies
 * are in json_body_read.c.
 *
 * Writers emit members in name order, compact, nulls omitted (§4.1). Map
 * order is the caller's, except in the "standard" form (§4.2) where every
 * map is sorted by key like fastjson's MapSortField (numeric keys
 * numerically) and numeric keys are quoted.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/body.h"
#include "ns/buf.h"
#include "ns/err.h"

/* Largest integer a JavaScript number holds exactly; BrowserCompatible
 * writes longs beyond it as strings. */
#define JS_SAFE_INT 9007199254740991LL

/* ---- writer ------------------------------------------------------------ */

/* A JSON writer over an ns_buf_t with a sticky error: after the first
 * failure every call is a no-op and err keeps the code. */
typedef struct {
    ns_buf_t *b;
    bool std; /* standard (BrowserCompatible) form: \uXXXX, quoted keys */
    int err;
} jw_t;

static void jw_init(jw_t *w, ns_buf_t *b, bool standard)
{
    w->b = b;
    w->std = standard;
    w->err = NS_OK;
}

/* Returns the writer's status; on failure truncates the buffer back to
 * start so the caller sees its previous contents. */
static int jw_finish(jw_t *w, size_t start)
{
    if (w->err != NS_OK && w->b->data != NULL) {
        w->b->len = start;
        w->b->data[start] = 0;
    }
    return w->err;
}

static void raw_n(jw_t *w, const char *s, size_t n)
{
    if (w->err == NS_OK)
        w->err = ns_buf_append(w->b, s, n);
}

/* Appends a string literal; its length is known at compile time (the "" makes
 * anything but a literal a compile error). */
#define RAW(w, lit) raw_n((w), "" lit, sizeof(lit) - 1)

static void str(jw_t *w, const char *s)
{
    if (w->err != NS_OK)
        return;
    if (s == NULL)
        w->err = ns_buf_append_str(w->b, "null");
    else
        w->err = ns_buf_append_json_str(w->b, s, strlen(s), w->std);
}

static void num(jw_t *w, int64_t v)
{
    if (w->err == NS_OK)
        w->err = ns_buf_append_i64_dec(w->b, v);
}

/* A long: in the standard form, values a browser cannot hold are strings. */
static void lng(jw_t *w, int64_t v)
{
    bool quote = w->std && (v > JS_SAFE_INT || v < -JS_SAFE_INT);
    if (quote)
        RAW(w, "\"");
    num(w, v);
    if (quote)
        RAW(w, "\"");
}

static void boolean(jw_t *w, bool v)
{
    if (v)
        RAW(w, "true");
    else
        RAW(w, "false");
}

/* Starts a member of an object: sep is `,"name":` (name an ASCII identifier),
 * written without its comma when *first. */
static void member_n(jw_t *w, bool *first, const char *sep, size_t n)
{
    size_t skip = *first ? 1 : 0;
    *first = false;
    raw_n(w, sep + skip, n - skip);
}

#define MEMBER(w, first, name)                                                                     \
    member_n((w), (first), ",\"" name "\":", sizeof(",\"" name "\":") - 1)

/* Starts a map entry with a string key. */
static void str_key(jw_t *w, bool *first, const char *key)
{
    if (!*first)
        RAW(w, ",");
    *first = false;
    str(w, key);
    RAW(w, ":");
}

/* Starts a map entry with a numeric key: bare (legacy) or quoted (standard). */
static void num_key(jw_t *w, bool *first, int64_t key)
{
    if (!*first)
        RAW(w, ",");
    *first = false;
    if (w->std)
        RAW(w, "\"");
    num(w, key);
    if (w->std)
        RAW(w, "\":");
    else
        RAW(w, ":");
}

/* ---- sorting helpers for the standard form ------------------------------ */

static int cmp_addr(const void *a, const void *b)
{
    const ns_broker_addr_t *x = *(const ns_broker_addr_t *const *)a;
    const ns_broker_addr_t *y = *(const ns_broker_addr_t *const *)b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x < y ? -1 : x > y; /* keep input order among equal keys */
}

static int cmp_str(const char *x, const char *y)
{
    if (x == NULL || y == NULL)
        return (x != NULL) - (y != NULL);
    return strcmp(x, y);
}

static int cmp_filter(const void *a, const void *b)
{
    const ns_filter_entry_t *x = *(const ns_filter_entry_t *const *)a;
    const ns_filter_entry_t *y = *(const ns_filter_entry_t *const *)b;
    int c = cmp_str(x->broker_addr, y->broker_addr);
    return c != 0 ? c : (x < y ? -1 : x > y);
}

static int cmp_mapping(const void *a, const void *b)
{
    const ns_mapping_info_t *x = *(const ns_mapping_info_t *const *)a;
    const ns_mapping_info_t *y = *(const ns_mapping_info_t *const *)b;
    int c = cmp_str(x->bname, y->bname);
    return c != 0 ? c : (x < y ? -1 : x > y);
}

static int cmp_id_pair(const void *a, const void *b)
{
    const ns_id_pair_t *x = *(const ns_id_pair_t *const *)a;
    const ns_id_pair_t *y = *(const ns_id_pair_t *const *)b;
    if (x->logical != y->logical)
        return x->logical < y->logical ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Returns a heap array of pointers to the n elements of base (element size
 * size), sorted with cmp when sort is true; caller frees. NULL (and w->err
 * set) on allocation failure; never called with n == 0. */
static const void **ordered(jw_t *w, const void *base, size_t n, size_t size,
                            int (*cmp)(const void *, const void *), bool sort)
{
    const void **v = NULL;
    if (n > SIZE_MAX / sizeof *v || (v = malloc(n * sizeof *v)) == NULL) {
        w->err = NS_ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (const char *)base + i * size;
    if (sort)
        qsort(v, n, sizeof *v, cmp);
    return v;
}

/* ---- shapes --------------------------------------------------------------- */

/* brokerAddrs / BrokerMemberGroup.brokerAddrs: id -> address. */
static void addr_map(jw_t *w, const ns_broker_addr_t *addrs, size_t n)
{
    const void **v = NULL;
    bool first = true;
    RAW(w, "{");
    if (n > 0 && w->err == NS_OK &&
        (v = ordered(w, addrs, n, sizeof *addrs, cmp_addr, w->std)) != NULL) {
        for (size_t i = 0; i < n; i++) {
            const ns_broker_addr_t *a = v[i];
            if (a->addr == NULL)
                continue; /* null map values are omitted */
            num_key(w, &first, a->id);
            str(w, a->addr);
        }
    }
    RAW(w, "}");
    free(v);
}

static void broker_data(jw_t *w, const ns_broker_data_t *b)
{
    bool first = true;
    RAW(w, "{");
    MEMBER(w, &first, "brokerAddrs");
    addr_map(w, b->addrs, b->n_addrs);
    if (b->broker_name != NULL) {
        MEMBER(w, &first, "brokerName");
        str(w, b->broker_name);
    }
    if (b->cluster != NULL) {
        MEMBER(w, &first, "cluster");
        str(w, b->cluster);
    }
    MEMBER(w, &first, "enableActingMaster");
    boolean(w, b->enable_acting_master);
    if (b->zone_name != NULL) {
        MEMBER(w, &first, "zoneName");
        str(w, b->zone_name);
    }
    RAW(w, "}");
}

static void queue_data(jw_t *w, const ns_queue_data_t *q)
{
    bool first = true;
    RAW(w, "{");
    if (q->broker_name != NULL) {
        MEMBER(w, &first, "brokerName");
        str(w, q->broker_name);
    }
    MEMBER(w, &first, "perm");
    num(w, q->perm);
    MEMBER(w, &first, "readQueueNums");
    num(w, q->read_queue_nums);
    MEMBER(w, &first, "topicSysFlag");
    num(w, q->topic_sys_flag);
    MEMBER(w, &first, "writeQueueNums");
    num(w, q->write_queue_nums);
    RAW(w, "}");
}

static void string_array(jw_t *w, const char *const *s, size_t n)
{
    RAW(w, "[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            RAW(w, ",");
        str(w, s[i]);
    }
    RAW(w, "]");
}

static void filter_table(jw_t *w, const ns_filter_entry_t *f, size_t n)
{
    const void **v = NULL;
    bool first = true;
    RAW(w, "{");
    if (n > 0 && w->err == NS_OK && (v = ordered(w, f, n, sizeof *f, cmp_filter, w->std)) != NULL) {
        for (size_t i = 0; i < n; i++) {
            const ns_filter_entry_t *e = v[i];
            if (e->broker_addr == NULL)
                continue;
            str_key(w, &first, e->broker_addr);
            string_array(w, e->servers, e->n_servers);
        }
    }
    RAW(w, "}");
    free(v);
}

/* TopicQueueMappingInfo (§4.3.11). */
static void mapping_info(jw_t *w, const ns_mapping_info_t *m)
{
    const void **v = NULL;
    bool first = true, kfirst = true;
    RAW(w, "{");
    if (m->bname != NULL) {
        MEMBER(w, &first, "bname");
        str(w, m->bname);
    }
    MEMBER(w, &first, "currIdMap");
    RAW(w, "{");
    if (m->n_curr_id_map > 0 && w->err == NS_OK &&
        (v = ordered(w, m->curr_id_map, m->n_curr_id_map, sizeof *m->curr_id_map, cmp_id_pair,
                     w->std)) != NULL) {
        for (size_t i = 0; i < m->n_curr_id_map; i++) {
            const ns_id_pair_t *p = v[i];
            num_key(w, &kfirst, p->logical);
            num(w, p->physical);
        }
    }
    RAW(w, "}");
    MEMBER(w, &first, "dirty");
    boolean(w, m->dirty);
    MEMBER(w, &first, "epoch");
    lng(w, m->epoch);
    MEMBER(w, &first, "scope");
    str(w, m->scope != NULL ? m->scope : "__global__");
    if (m->topic != NULL) {
        MEMBER(w, &first, "topic");
        str(w, m->topic);
    }
    MEMBER(w, &first, "totalQueues");
    num(w, m->total_queues);
    RAW(w, "}");
    free(v);
}

static void mapping_table(jw_t *w, const ns_mapping_info_t *m, size_t n)
{
    const void **v = NULL;
    bool first = true;
    RAW(w, "{");
    if (n > 0 && w->err == NS_OK &&
        (v = ordered(w, m, n, sizeof *m, cmp_mapping, w->std)) != NULL) {
        for (size_t i = 0; i < n; i++) {
            const ns_mapping_info_t *e = v[i];
            if (e->bname == NULL)
                continue;
            str_key(w, &first, e->bname);
            mapping_info(w, e);
        }
    }
    RAW(w, "}");
    free(v);
}

/* ---- public writers ------------------------------------------------------- */

int ns_json_dataversion_encode(ns_buf_t *out, const ns_dataversion_t *dv)
{
    jw_t w;
    size_t start = out->len;
    jw_init(&w, out, false);
    RAW(&w, "{\"counter\":");
    num(&w, dv->counter);
    RAW(&w, ",\"stateVersion\":");
    num(&w, dv->state_version);
    RAW(&w, ",\"timestamp\":");
    num(&w, dv->timestamp);
    RAW(&w, "}");
    return jw_finish(&w, start);
}

int ns_json_broker_data_encode(ns_buf_t *out, const ns_broker_data_t *b, bool standard)
{
    jw_t w;
    size_t start = out->len;
    jw_init(&w, out, standard);
    broker_data(&w, b);
    return jw_finish(&w, start);
}

int ns_json_order_conf_member(ns_buf_t *out, const char *conf, bool standard)
{
    jw_t w;
    size_t start = out->len;
    jw_init(&w, out, standard);
    RAW(&w, "\"orderTopicConf\":");
    str(&w, conf);
    RAW(&w, ",");
    return jw_finish(&w, start);
}

int ns_json_route_encode(ns_buf_t *out, const ns_route_t *r, bool standard, size_t *insert_at)
{
    jw_t w;
    size_t start = out->len;
    size_t at = 0;
    jw_init(&w, out, standard);
    RAW(&w, "{\"brokerDatas\":[");
    for (size_t i = 0; i < r->n_brokers; i++) {
        if (i > 0)
            RAW(&w, ",");
        if (r->broker_json != NULL)
            raw_n(&w, (const char *)r->broker_json[i].ptr, r->broker_json[i].len);
        else
            broker_data(&w, &r->brokers[i]);
    }
    RAW(&w, "],\"filterServerTable\":");
    filter_table(&w, r->filters, r->n_filters);
    RAW(&w, ",");
    if (r->order_topic_conf != NULL) {
        RAW(&w, "\"orderTopicConf\":");
        str(&w, r->order_topic_conf);
        RAW(&w, ",");
    }
    at = out->len;
    RAW(&w, "\"queueDatas\":[");
    for (size_t i = 0; i < r->n_queues; i++) {
        if (i > 0)
            RAW(&w, ",");
        queue_data(&w, &r->queues[i]);
    }
    RAW(&w, "]");
    if (r->n_mappings > 0) {
        RAW(&w, ",\"topicQueueMappingByBroker\":");
        mapping_table(&w, r->mappings, r->n_mappings);
    }
    RAW(&w, "}");
    if (w.err == NS_OK && insert_at != NULL)
        *insert_at = at;
    return jw_finish(&w, start);
}

int ns_json_cluster_info_encode(ns_buf_t *out, const ns_broker_data_t *brokers, size_t n_brokers,
                                const ns_cluster_entry_t *clusters, size_t n_clusters)
{
    jw_t w;
    size_t start = out->len;
    bool first = true;
    jw_init(&w, out, false);
    RAW(&w, "{\"brokerAddrTable\":{");
    for (size_t i = 0; i < n_brokers; i++) {
        if (brokers[i].broker_name == NULL)
            continue;
        str_key(&w, &first, brokers[i].broker_name);
        broker_data(&w, &brokers[i]);
    }
    RAW(&w, "},\"clusterAddrTable\":{");
    first = true;
    for (size_t i = 0; i < n_clusters; i++) {
        if (clusters[i].name == NULL)
            continue;
        str_key(&w, &first, clusters[i].name);
        string_array(&w, clusters[i].broker_names, clusters[i].n_broker_names);
    }
    RAW(&w, "}}");
    return jw_finish(&w, start);
}

int ns_json_topic_list_encode(ns_buf_t *out, const char *const *topics, size_t n,
                              const char *broker_addr)
{
    jw_t w;
    size_t start = out->len;
    jw_init(&w, out, false);
    RAW(&w, "{");
    if (broker_addr != NULL) {
        RAW(&w, "\"brokerAddr\":");
        str(&w, broker_addr);
        RAW(&w, ",");
    }
    RAW(&w, "\"topicList\":");
    string_array(&w, topics, n);
    RAW(&w, "}");
    return jw_finish(&w, start);
}

int ns_json_kvtable_encode(ns_buf_t *out, const char *const *keys, const char *const *vals,
                           size_t n)
{
    jw_t w;
    size_t start = out->len;
    bool first = true;
    jw_init(&w, out, false);
    RAW(&w, "{\"table\":{");
    for (size_t i = 0; i < n; i++) {
        if (keys[i] == NULL || vals[i] == NULL)
            continue;
        str_key(&w, &first, keys[i]);
        str(&w, vals[i]);
    }
    RAW(&w, "}}");
    return jw_finish(&w, start);
}

int ns_json_member_group_encode(ns_buf_t *out, const char *cluster, const char *broker_name,
                                const ns_broker_addr_t *addrs, size_t n_addrs)
{
    jw_t w;
    size_t start = out->len;
    jw_init(&w, out, false);
    RAW(&w, "{\"brokerMemberGroup\":{\"brokerAddrs\":");
    addr_map(&w, addrs, n_addrs);
    if (broker_name != NULL) {
        RAW(&w, ",\"brokerName\":");
        str(&w, broker_name);
    }
    if (cluster != NULL) {
        RAW(&w, ",\"cluster\":");
        str(&w, cluster);
    }
    RAW(&w, "}}");
    return jw_finish(&w, start);
}
