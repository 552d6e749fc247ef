/* maint.c - `namesrvctl export-kvconfig` and `prune-groups`.
 *
 *   namesrvctl export-kvconfig --data-dir D [-o FILE]
 *       the KV config as the Java NameServer's kvConfig.json,
 *       {"configTable":{namespace:{key:value}}} (docs/protocol.md §7.2): the file
 *       a Java NameServer loads from kvConfigPath at start, so a rollback to
 *       Java keeps the KV config. Read-only: safe while namesrvd runs.
 *   namesrvctl prune-groups --data-dir D [--dry-run]
 *       removes the broker groups that map no broker id to an address (a
 *       restored dump or an old store may keep them): their queue data, the
 *       routes that named only them, their cluster memberships. One write
 *       transaction with the directory lock (the server must be stopped);
 *       the routes of the touched topics are re-encoded and the invariant
 *       checker runs before the commit. Recorded in the admin trail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "ctl.h"
#include "doc_json.h"
#include "ns/err.h"
#include "ns/strlist.h"
#include "ns/strpairs.h"

/* ---- export-kvconfig ---- */

typedef struct {
    ns_txn_t *t;
    cJSON *table;
    cJSON *ns_obj;
    size_t n_ns, n_keys;
    ctl_progress_t progress;
} export_t;

static int export_kv_cb(const char *key, const char *val, size_t len, void *ctx)
{
    export_t *e = ctx;
    char *v = strndup(val, len);
    cJSON *s = v ? cJSON_CreateString(v) : NULL;
    free(v);
    if (s == NULL || !cJSON_AddItemToObject(e->ns_obj, key, s)) {
        cJSON_Delete(s);
        return NS_ENOMEM;
    }
    e->n_keys++;
    ctl_progress_step(&e->progress, 1);
    return 0;
}

static int export_ns_cb(const char *ns, void *ctx)
{
    export_t *e = ctx;
    e->ns_obj = cJSON_AddObjectToObject(e->table, ns);
    if (e->ns_obj == NULL)
        return NS_ENOMEM;
    e->n_ns++;
    return ns_kv_iter(e->t, ns, export_kv_cb, e);
}

int ctl_cmd_export_kvconfig(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL;
    ctl_opt_t opts[] = {{"--data-dir", &dir, NULL},
                        {"-d", &dir, NULL},
                        {"--output", &out, NULL},
                        {"-o", &out, NULL},
                        {NULL, NULL, NULL}};
    ns_store_t *st = NULL;
    cJSON *root = cJSON_CreateObject();
    export_t e = {0};
    char *text = NULL;
    int rc = ctl_parse("export-kvconfig", argc, argv, opts, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        goto out;
    rc = CTL_IO;
    if (dir == NULL && (dir = ctl_default_data_dir()) == NULL) {
        rc = ctl_missing("export-kvconfig", "--data-dir");
        goto out;
    }
    if (root == NULL || (e.table = cJSON_AddObjectToObject(root, "configTable")) == NULL)
        goto out;
    if ((rc = ctl_store_open_ro(dir, &st)) != CTL_OK)
        goto out;
    int nrc = ns_txn_begin(st, false, &e.t);
    ctl_progress_init(&e.progress, "keys exported", 0);
    nrc = nrc ? nrc : ns_kv_ns_iter(e.t, export_ns_cb, &e);
    ctl_progress_done(&e.progress);
    ns_txn_abort(e.t);
    if (nrc != NS_OK || (text = cJSON_Print(root)) == NULL) {
        ctl_err("export of the KV config of %s failed: %s", dir,
                ns_strerror(nrc ? nrc : NS_ENOMEM));
        rc = ctl_exit_for(nrc ? nrc : NS_ENOMEM);
        goto out;
    }
    rc = ctl_write_json_text(out, text, NULL);
    if (rc == CTL_OK && out && strcmp(out, "-") != 0)
        fprintf(stderr, "exported %zu namespaces, %zu keys from %s to %s\n", e.n_ns, e.n_keys, dir,
                out);
out:
    free(text);
    cJSON_Delete(root);
    ns_store_close(st);
    return rc;
}

/* ---- prune-groups ---- */

typedef ns_strpairs_t empty_groups_t; /* a: broker names, b: their clusters */

static int find_empty_cb(ns_group_rec_t *g, void *ctx)
{
    const char *cluster = g->cluster ? g->cluster : "";
    if (g->n_addrs > 0)
        return 0;
    return ns_strpairs_add(ctx, g->broker_name, cluster, strlen(cluster));
}

static int collect_topic_cb(const char *topic, void *ctx)
{
    return ns_strlist_add(ctx, topic);
}

/* Removes one group and everything that names it; *n_topics counts the
 * queue datas removed. */
static int prune_one(ns_txn_t *t, const char *name, const char *cluster, size_t *n_topics)
{
    ns_strlist_t l = NS_STRLIST_INIT;
    int rc = ns_queue_iter_broker(t, name, collect_topic_cb, &l);
    for (size_t i = 0; rc == NS_OK && i < l.n; i++) {
        rc = ns_queue_del(t, l.v[i], name);
        if (rc == NS_OK && !ns_topic_exists(t, l.v[i]))
            rc = ns_route_del(t, l.v[i]); /* I7: no queue data, no route */
        if (rc == NS_ENOTFOUND)
            rc = NS_OK;
    }
    *n_topics += l.n;
    rc = rc ? rc : ns_cluster_del(t, cluster, name);
    rc = rc == NS_ENOTFOUND ? NS_OK : rc;
    rc = rc ? rc : ns_group_del(t, name);
    ns_strlist_free(&l);
    return rc;
}

static int prune_all(ns_txn_t *t, ns_registry_t *reg, const empty_groups_t *eg, size_t *n_topics,
                     bool *violated)
{
    ns_buf_t report = NS_BUF_INIT, detail = NS_BUF_INIT;
    int rc = NS_OK;
    *n_topics = 0;
    for (size_t i = 0; rc == NS_OK && i < eg->n; i++)
        rc = prune_one(t, eg->a[i], eg->b[i], n_topics);
    rc = rc ? rc : ns_registry_mark_all(reg, t);
    rc = rc ? rc : ns_registry_before_commit(reg, t);
    ns_registry_batch_reset(reg);
    rc = rc ? rc : ns_buf_append_str(&detail, "{\"groups\":[");
    for (size_t i = 0; rc == NS_OK && i < eg->n; i++) {
        rc = ns_buf_append_str(&detail, i ? "," : "");
        rc = rc ? rc : ns_buf_append_json_str(&detail, eg->a[i], strlen(eg->a[i]), false);
    }
    rc = rc ? rc : ns_buf_printf(&detail, "],\"queueDatas\":%zu}", *n_topics);
    rc = rc ? rc : ctl_trail_record(t, "prune-groups", (const char *)detail.data);
    if (rc == NS_OK) {
        int n = ns_store_verify(t, &report);
        if (n > 0) {
            ctl_print_lines(stderr, (const char *)report.data, report.len);
            ctl_err("pruning would leave %d violation(s); nothing was written", n);
            *violated = true;
        }
        rc = n < 0 ? n : NS_OK;
    }
    ns_buf_free(&report);
    ns_buf_free(&detail);
    return rc;
}

int ctl_cmd_prune_groups(int argc, char **argv)
{
    const char *dir = NULL;
    bool dry = false, violated = false;
    ctl_opt_t opts[] = {{"--data-dir", &dir, NULL},
                        {"-d", &dir, NULL},
                        {"--dry-run", NULL, &dry},
                        {NULL, NULL, NULL}};
    ns_store_t *st = NULL;
    ns_registry_t *reg = NULL;
    ns_txn_t *t = NULL;
    empty_groups_t eg = {0};
    size_t n_topics = 0;
    int rc = ctl_parse("prune-groups", argc, argv, opts, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    if (dir == NULL)
        return ctl_missing("prune-groups", "--data-dir");
    rc = dry ? ctl_store_open_ro(dir, &st) : ctl_store_open_rw(dir, 0, &st);
    if (rc != CTL_OK)
        return rc;
    int nrc = ns_registry_new(&reg);
    nrc = nrc ? nrc : ns_txn_begin(st, !dry, &t);
    nrc = nrc ? nrc : ns_group_iter(t, find_empty_cb, &eg);
    for (size_t i = 0; nrc == NS_OK && i < eg.n; i++)
        printf("%s %s (cluster %s): no broker address\n", dry ? "would remove" : "removing",
               ctl_txt(eg.a[i]), ctl_txt(eg.b[i]));
    if (nrc == NS_OK && !dry && eg.n > 0) {
        nrc = prune_all(t, reg, &eg, &n_topics, &violated);
        if (nrc == NS_OK && !violated) {
            nrc = ns_txn_commit(t);
            t = NULL;
        }
    }
    ns_txn_abort(t);
    if (nrc != NS_OK) {
        ctl_err("prune-groups in %s failed: %s; nothing was written", dir, ns_strerror(nrc));
        rc = ctl_exit_for(nrc);
    } else if (violated) {
        rc = CTL_FAILED;
    } else if (dry || eg.n == 0) {
        printf("%zu empty broker group(s) in %s\n", eg.n, dir);
    } else {
        printf("removed %zu empty broker group(s) and %zu queue data(s) from %s\n", eg.n, n_topics,
               dir);
    }
    ns_strpairs_free(&eg);
    ns_registry_free(reg);
    ns_store_close(st);
    return rc;
}
