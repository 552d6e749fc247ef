/* dump.c - `namesrvctl dump`: the whole store as one versioned JSON document.
 *
 *   namesrvctl dump --data-dir D [-o FILE] [--with-audit] [--no-timestamp] [--compact]
 *
 * Everything is read in ONE read-only transaction, so the document is a
 * consistent snapshot even while namesrvd keeps writing. The document
 * (docs/namesrvctl.md has an example) is, member order as written:
 *
 *   format "namesrv-dump", formatVersion 1, schemaVersion, createdAt (ms),
 *   clusters      {cluster: [brokerName...]}
 *   brokers       [{brokerName, cluster, zoneName?, enableActingMaster, addrs {"id": "ip:port"}}]
 *   registrations [{cluster, brokerAddr, brokerName, brokerId, haServerAddr,
 *                   dataVersion {counter, stateVersion, timestamp},
 *                   heartbeatTimeoutMillis, filterServers [...]}]
 *   topics        {topic: [{brokerName, perm, readQueueNums, writeQueueNums, topicSysFlag}]}
 *   mappings      [{topic, bname, scope?, totalQueues, epoch, dirty, currIdMap {"l": p}}]
 *   kv            {namespace: {key: value}}
 *   audit         [record...]  (only with --with-audit)
 *   users         [{accessKey, secretKey, role, enabled, allow, brokers,
 *                   createdMs, updatedMs}]  (doc_users.c; secrets as stored,
 *                   sealed or plain: a dump file is created mode 0600)
 *
 * Every list and map comes out in store key order (sorted), so the same
 * store always gives the same bytes; --no-timestamp leaves out createdAt so
 * that dump -> restore -> dump can be compared byte for byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "ctl.h"
#include "doc.h"
#include "doc_json.h"
#include "ns/err.h"

typedef struct {
    ns_txn_t *t;
    bool oom;
    ctl_progress_t prog;
    cJSON *cur_cluster; /* clusters: the array being filled */
    char *cur_cluster_name;
    size_t n_clusters, n_brokers, n_regs, n_topics, n_mappings, n_kv, n_audit, n_users;
} dump_t;

/* Attaches item to parent (object member when key != NULL, else array
 * element). Returns item, or NULL after an allocation failure (then the
 * item is freed and d->oom set; later calls with a NULL parent are no-ops). */
static cJSON *add(dump_t *d, cJSON *parent, const char *key, cJSON *item)
{
    if (item == NULL || parent == NULL) {
        cJSON_Delete(item);
        d->oom = true;
        return NULL;
    }
    if (!(key ? cJSON_AddItemToObject(parent, key, item) : cJSON_AddItemToArray(parent, item))) {
        cJSON_Delete(item);
        d->oom = true;
        return NULL;
    }
    return item;
}

/* Exact integers: a raw number within +-(2^53-1), else a decimal string. */
static cJSON *i64_item(int64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    if (v > CTL_JSON_MAX_SAFE_INT || v < -CTL_JSON_MAX_SAFE_INT)
        return cJSON_CreateString(num);
    return cJSON_CreateRaw(num);
}

static cJSON *str_item(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static int cluster_cb(const char *cluster, const char *broker, void *ctx)
{
    cJSON *clusters = ((cJSON **)ctx)[0];
    dump_t *d = (dump_t *)((cJSON **)ctx)[1];
    if (d->cur_cluster_name == NULL || strcmp(d->cur_cluster_name, cluster) != 0) {
        free(d->cur_cluster_name);
        d->cur_cluster_name = strdup(cluster);
        d->cur_cluster = add(d, clusters, cluster, cJSON_CreateArray());
        d->n_clusters++;
    }
    add(d, d->cur_cluster, NULL, cJSON_CreateString(broker));
    return d->oom ? NS_ENOMEM : 0;
}

struct sect {
    dump_t *d;
    cJSON *out;
};

static int group_cb(ns_group_rec_t *g, void *ctx)
{
    struct sect *s = ctx;
    dump_t *d = s->d;
    cJSON *o = add(d, s->out, NULL, cJSON_CreateObject());
    add(d, o, "brokerName", cJSON_CreateString(g->broker_name));
    add(d, o, "cluster", cJSON_CreateString(g->cluster));
    if (g->zone_name)
        add(d, o, "zoneName", cJSON_CreateString(g->zone_name));
    add(d, o, "enableActingMaster", cJSON_CreateBool(g->enable_acting_master));
    cJSON *addrs = add(d, o, "addrs", cJSON_CreateObject());
    for (size_t i = 0; i < g->n_addrs; i++) {
        char id[32];
        snprintf(id, sizeof id, "%lld", (long long)g->addrs[i].id);
        add(d, addrs, id, cJSON_CreateString(g->addrs[i].addr));
    }
    d->n_brokers++;
    return d->oom ? NS_ENOMEM : 0;
}

static int live_cb(const ns_live_rec_t *r, void *ctx)
{
    struct sect *s = ctx;
    dump_t *d = s->d;
    cJSON *o = add(d, s->out, NULL, cJSON_CreateObject());
    add(d, o, "cluster", cJSON_CreateString(r->cluster));
    add(d, o, "brokerAddr", cJSON_CreateString(r->addr));
    add(d, o, "brokerName", cJSON_CreateString(r->broker_name));
    add(d, o, "brokerId", i64_item(r->broker_id));
    add(d, o, "haServerAddr", str_item(r->ha_addr));
    cJSON *dv = add(d, o, "dataVersion", cJSON_CreateObject());
    add(d, dv, "counter", i64_item(r->dv.counter));
    add(d, dv, "stateVersion", i64_item(r->dv.state_version));
    add(d, dv, "timestamp", i64_item(r->dv.timestamp));
    add(d, o, "heartbeatTimeoutMillis", i64_item(r->heartbeat_timeout_ms));
    cJSON *fs = add(d, o, "filterServers", cJSON_CreateArray());
    for (size_t i = 0; i < r->n_filter_servers; i++)
        add(d, fs, NULL, cJSON_CreateString(r->filter_servers[i]));
    d->n_regs++;
    return d->oom ? NS_ENOMEM : 0;
}

static int queue_cb(const char *topic, const ns_queue_data_t *q, void *ctx)
{
    struct sect *s = ctx; /* s->out is the topic's array */
    dump_t *d = s->d;
    cJSON *o = add(d, s->out, NULL, cJSON_CreateObject());
    add(d, o, "brokerName", cJSON_CreateString(q->broker_name));
    add(d, o, "perm", i64_item(q->perm));
    add(d, o, "readQueueNums", i64_item(q->read_queue_nums));
    add(d, o, "writeQueueNums", i64_item(q->write_queue_nums));
    add(d, o, "topicSysFlag", i64_item(q->topic_sys_flag));
    return d->oom ? NS_ENOMEM : 0;
}

static int topic_cb(const char *topic, const ns_queue_data_t *first, void *ctx)
{
    struct sect *s = ctx;
    dump_t *d = s->d;
    struct sect qs = {d, add(d, s->out, topic, cJSON_CreateArray())};
    if (d->oom)
        return NS_ENOMEM;
    int rc = ns_queue_iter_topic(d->t, topic, queue_cb, &qs);
    d->n_topics++;
    ctl_progress_step(&d->prog, 1);
    return rc;
}

static int mapping_cb(const ns_mapping_info_t *m, void *ctx)
{
    struct sect *s = ctx;
    dump_t *d = s->d;
    cJSON *o = add(d, s->out, NULL, cJSON_CreateObject());
    add(d, o, "topic", cJSON_CreateString(m->topic));
    add(d, o, "bname", cJSON_CreateString(m->bname));
    if (m->scope)
        add(d, o, "scope", cJSON_CreateString(m->scope));
    add(d, o, "totalQueues", i64_item(m->total_queues));
    add(d, o, "epoch", i64_item(m->epoch));
    add(d, o, "dirty", cJSON_CreateBool(m->dirty));
    cJSON *ids = add(d, o, "currIdMap", cJSON_CreateObject());
    for (size_t i = 0; i < m->n_curr_id_map; i++) { /* stored order, kept as is */
        char id[16];
        snprintf(id, sizeof id, "%d", (int)m->curr_id_map[i].logical);
        add(d, ids, id, i64_item(m->curr_id_map[i].physical));
    }
    d->n_mappings++;
    return d->oom ? NS_ENOMEM : 0;
}

static int kv_cb(const char *key, const char *val, size_t len, void *ctx)
{
    struct sect *s = ctx;
    if (strlen(val) != len)
        ctl_err("warning: a kv value of key '%s' holds a NUL byte; dumped up to it", key);
    add(s->d, s->out, key, cJSON_CreateString(val));
    s->d->n_kv++;
    return s->d->oom ? NS_ENOMEM : 0;
}

static int kvns_cb(const char *ns, void *ctx)
{
    struct sect *s = ctx;
    struct sect ks = {s->d, add(s->d, s->out, ns, cJSON_CreateObject())};
    if (s->d->oom)
        return NS_ENOMEM;
    return ns_kv_iter(s->d->t, ns, kv_cb, &ks);
}

static int audit_cb(uint64_t seq, const char *json, size_t len, void *ctx)
{
    struct sect *s = ctx;
    cJSON *rec = cJSON_ParseWithLength(json, len);
    if (rec == NULL || !cJSON_IsObject(rec)) {
        ctl_err("warning: audit record %llu is not a JSON object; left out",
                (unsigned long long)seq);
        cJSON_Delete(rec);
        return 0;
    }
    add(s->d, s->out, NULL, rec);
    s->d->n_audit++;
    return s->d->oom ? NS_ENOMEM : 0;
}

/* Builds the document from one read transaction. */
static int build(dump_t *d, ns_store_t *st, bool with_audit, bool timestamp, cJSON **out)
{
    cJSON *doc = cJSON_CreateObject();
    struct sect s = {d, NULL};
    int rc = NS_OK;
    add(d, doc, "format", cJSON_CreateString(CTL_DUMP_FORMAT));
    add(d, doc, "formatVersion", i64_item(CTL_DUMP_FORMAT_VERSION));
    add(d, doc, "schemaVersion", i64_item(ns_store_schema_version(st)));
    if (timestamp)
        add(d, doc, "createdAt", i64_item(ctl_now_ms()));

    cJSON *clusters = add(d, doc, "clusters", cJSON_CreateObject());
    void *cctx[2] = {clusters, d};
    rc = d->oom ? NS_ENOMEM : ns_cluster_iter(d->t, cluster_cb, cctx);
    s.out = add(d, doc, "brokers", cJSON_CreateArray());
    rc = rc ? rc : d->oom ? NS_ENOMEM : ns_group_iter(d->t, group_cb, &s);
    s.out = add(d, doc, "registrations", cJSON_CreateArray());
    rc = rc ? rc : d->oom ? NS_ENOMEM : ns_live_iter(d->t, live_cb, &s);
    s.out = add(d, doc, "topics", cJSON_CreateObject());
    size_t topics = 0;
    rc = rc ? rc : ns_topic_count(d->t, &topics);
    ctl_progress_init(&d->prog, "dump: topics", topics);
    rc = rc ? rc : d->oom ? NS_ENOMEM : ns_topic_iter(d->t, topic_cb, &s);
    ctl_progress_done(&d->prog);
    s.out = add(d, doc, "mappings", cJSON_CreateArray());
    rc = rc ? rc : d->oom ? NS_ENOMEM : ns_mapping_iter(d->t, mapping_cb, &s);
    s.out = add(d, doc, "kv", cJSON_CreateObject());
    rc = rc ? rc : d->oom ? NS_ENOMEM : ns_kv_ns_iter(d->t, kvns_cb, &s);
    if (with_audit) {
        s.out = add(d, doc, "audit", cJSON_CreateArray());
        rc = rc ? rc : d->oom ? NS_ENOMEM : ns_audit_iter(d->t, audit_cb, &s);
    }
    cJSON *users = add(d, doc, "users", cJSON_CreateArray());
    rc = rc ? rc : d->oom ? NS_ENOMEM : ctl_dump_users(d->t, users, &d->n_users);
    if (rc == NS_OK && d->oom)
        rc = NS_ENOMEM;
    if (rc != NS_OK) {
        cJSON_Delete(doc);
        doc = NULL;
    }
    *out = doc;
    return rc;
}

int ctl_cmd_dump(int argc, char **argv)
{
    const char *dir = NULL, *out_path = NULL;
    bool with_audit = false, no_ts = false, compact = false;
    ctl_opt_t opts[] = {{"--data-dir", &dir, NULL},          {"-d", &dir, NULL},
                        {"--output", &out_path, NULL},       {"-o", &out_path, NULL},
                        {"--with-audit", NULL, &with_audit}, {"--no-timestamp", NULL, &no_ts},
                        {"--compact", NULL, &compact},       {NULL, NULL, NULL}};
    ns_store_t *st = NULL;
    dump_t d = {0};
    cJSON *doc = NULL;
    char *text = NULL;
    int64_t t0 = ctl_mono_ms();
    int rc = ctl_parse("dump", argc, argv, opts, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    if (dir == NULL && (dir = ctl_default_data_dir()) == NULL)
        return ctl_missing("dump", "--data-dir");
    if ((rc = ctl_store_open_ro(dir, &st)) != CTL_OK)
        goto out;
    int nrc = ns_txn_begin(st, false, &d.t);
    nrc = nrc ? nrc : build(&d, st, with_audit, !no_ts, &doc);
    ns_txn_abort(d.t); /* read-only: nothing to commit */
    if (nrc != NS_OK) {
        ctl_err("dump of %s failed: %s", dir, ns_strerror(nrc));
        rc = ctl_exit_for(nrc);
        goto out;
    }
    text = compact ? cJSON_PrintUnformatted(doc) : cJSON_Print(doc);
    if (text == NULL) {
        ctl_err("dump: out of memory");
        rc = CTL_IO;
        goto out;
    }
    size_t len = 0;
    if ((rc = ctl_write_json_text(out_path, text, &len)) != CTL_OK)
        goto out;
    if (out_path && strcmp(out_path, "-") != 0)
        fprintf(stderr,
                "dumped %zu clusters, %zu brokers, %zu registrations, %zu topics, %zu mappings, "
                "%zu kv keys, %zu audit records, %zu users to %s (%zu bytes) in %lld ms\n",
                d.n_clusters, d.n_brokers, d.n_regs, d.n_topics, d.n_mappings, d.n_kv, d.n_audit,
                d.n_users, out_path, len, (long long)(ctl_mono_ms() - t0));
out:
    free(text);
    cJSON_Delete(doc);
    free(d.cur_cluster_name);
    ns_store_close(st);
    return rc;
}
