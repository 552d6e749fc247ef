/* restore.c - `namesrvctl restore` (a dump document back into a store) and
 * `namesrvctl import-kvconfig` (a Java kvConfig.json into a store).
 *
 *   namesrvctl restore --data-dir D -i FILE [--replace]
 *   namesrvctl import-kvconfig --data-dir D FILE
 *
 * Both are all or nothing:
 *   1. the WHOLE input is parsed and validated first (doc.c) - types, required
 *      members, duplicates and every cross reference the store's invariants
 *      need (store/keys.h I2-I5, I8). The first problem is reported with its
 *      JSON path ("$.topics.T[0].brokerName: unknown broker 'x'") and
 *      nothing is opened for writing (exit 4);
 *   2. the store is opened WITH the directory lock, so a running namesrvd
 *      makes us refuse (exit 3, naming its pid);
 *   3. everything is written in ONE write transaction: restore refuses a
 *      non-empty store unless --replace (which empties the tables first, in
 *      the same transaction), re-materialises every topic's route
 *      (ns_registry_mark_all + ns_registry_before_commit), runs the
 *      invariant checker and commits only if it finds nothing. When the map
 *      fills up the transaction is retried after growing the map.
 * Restored brokers get the liveness grace window from namesrvd itself: it
 * seeds liveness from the stored registrations when it starts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "ctl.h"
#include "doc.h"
#include "ns/err.h"

/* ---- writing ---- */

static int stop_cb(const char *a, void *ctx)
{
    return 1;
}

static int stop_pair_cb(const char *a, const char *b, void *ctx)
{
    return 1;
}

static int stop_group_cb(ns_group_rec_t *g, void *ctx)
{
    return 1;
}

static int stop_live_cb(const ns_live_rec_t *r, void *ctx)
{
    return 1;
}

static int stop_queue_cb(const char *t, const ns_queue_data_t *q, void *ctx)
{
    return 1;
}

static int stop_map_cb(const ns_mapping_info_t *m, void *ctx)
{
    return 1;
}

static int stop_audit_cb(uint64_t seq, const char *j, size_t l, void *ctx)
{
    return 1;
}

/* Name of the first non-empty table, or NULL when the store is empty. */
static int stop_user_cb(const ns_user_rec_t *u, void *ctx)
{
    return 1;
}

static const char *first_nonempty(ns_txn_t *t)
{
    if (ns_cluster_iter(t, stop_pair_cb, NULL) == 1)
        return "clusters";
    if (ns_group_iter(t, stop_group_cb, NULL) == 1)
        return "brokers";
    if (ns_live_iter(t, stop_live_cb, NULL) == 1)
        return "registrations";
    size_t routes = 0;
    if (ns_topic_iter(t, stop_queue_cb, NULL) == 1 || ns_route_count(t, &routes) != NS_OK ||
        routes > 0)
        return "topics";
    if (ns_mapping_iter(t, stop_map_cb, NULL) == 1)
        return "mappings";
    if (ns_kv_ns_iter(t, stop_cb, NULL) == 1)
        return "kv";
    if (ns_audit_iter(t, stop_audit_cb, NULL) == 1)
        return "audit";
    if (ns_user_iter(t, stop_user_cb, NULL) == 1)
        return "users";
    return NULL;
}

static int put_kv(ns_txn_t *t, const cJSON *kv, ctl_progress_t *p)
{
    int rc = NS_OK;
    for (const cJSON *ns = kv ? kv->child : NULL; ns && rc == NS_OK; ns = ns->next) {
        rc = ns_kv_ns_create(t, ns->string); /* an empty namespace still exists */
        for (const cJSON *v = ns->child; v && rc == NS_OK; v = v->next)
            if (cJSON_IsString(v))
                rc = ns_kv_put(t, ns->string, v->string, v->valuestring);
        ctl_progress_step(p, 1);
    }
    return rc;
}

/* Writes the document into t. NS_EEXIST when the store is not empty and
 * replace is false (*what names a non-empty table). */
static int apply(ns_txn_t *t, ctl_doc_t *d, bool replace, ns_registry_t *reg, const char **what)
{
    ctl_progress_t p;
    int64_t now = ctl_now_ms();
    int rc = NS_OK;
    if (replace)
        rc = ns_store_clear(t);
    else if ((*what = first_nonempty(t)) != NULL)
        return NS_EEXIST;
    ctl_progress_init(&p, "restore",
                      d->n_members + d->n_groups + d->n_regs + d->n_queues + d->n_maps +
                          d->n_kv_ns);
    for (size_t i = 0; rc == NS_OK && i < d->n_members; i++, ctl_progress_step(&p, 1))
        rc = ns_cluster_add(t, d->members[i].cluster, d->members[i].broker);
    for (size_t i = 0; rc == NS_OK && i < d->n_groups; i++, ctl_progress_step(&p, 1))
        rc = ns_group_put(t, &d->groups[i]);
    for (size_t i = 0; rc == NS_OK && i < d->n_regs; i++, ctl_progress_step(&p, 1)) {
        d->regs[i].registered_ms = now;
        rc = ns_live_put(t, &d->regs[i]);
    }
    for (size_t i = 0; rc == NS_OK && i < d->n_queues; i++, ctl_progress_step(&p, 1))
        rc = ns_queue_put(t, d->queues[i].topic, &d->queues[i].q);
    for (size_t i = 0; rc == NS_OK && i < d->n_maps; i++, ctl_progress_step(&p, 1))
        rc = ns_mapping_put(t, &d->maps[i]);
    rc = rc ? rc : put_kv(t, d->kv, &p);
    for (const cJSON *a = d->audit ? d->audit->child : NULL; rc == NS_OK && a; a = a->next) {
        char *text = cJSON_PrintUnformatted(a);
        rc = text ? ns_audit_append(t, text, strlen(text), NULL) : NS_ENOMEM;
        free(text);
    }
    rc = rc ? rc : ctl_doc_users_put(t, d);
    ctl_progress_done(&p);
    rc = rc ? rc : ns_registry_mark_all(reg, t);
    rc = rc ? rc : ns_registry_before_commit(reg, t);
    ns_registry_batch_reset(reg);
    return rc;
}

/* Runs the invariant checker on the transaction about to commit; *bad
 * tells whether it found violations (printed). */
static int verify_before_commit(ns_txn_t *t, bool *violated)
{
    ns_buf_t report = NS_BUF_INIT;
    int n = ns_store_verify(t, &report);
    *violated = n > 0;
    if (n > 0) {
        ctl_err("the restored store would violate %d invariant(s); nothing was written:", n);
        ctl_print_lines(stderr, (const char *)report.data, report.len);
    }
    ns_buf_free(&report);
    return n < 0 ? n : NS_OK;
}

typedef struct {
    ctl_doc_t *d;
    bool replace, violated;
    ns_registry_t *reg;
    const char *what;
} restore_job_t;

/* The whole restore in one write transaction (ns_store_write runs it again
 * on a larger map when it fills it). NS_EREFUSED: violations, no commit. */
static int restore_txn(ns_txn_t *t, void *ctx)
{
    restore_job_t *j = ctx;
    ns_registry_batch_reset(j->reg);
    j->violated = false;
    int nrc = apply(t, j->d, j->replace, j->reg, &j->what);
    nrc = nrc ? nrc
              : ctl_trail_record(t, "restore",
                                 j->replace ? "{\"replace\":true}" : "{\"replace\":false}");
    nrc = nrc ? nrc : verify_before_commit(t, &j->violated);
    return nrc == NS_OK && j->violated ? NS_EREFUSED : nrc;
}

int ctl_cmd_restore(int argc, char **argv)
{
    const char *dir = NULL, *in = NULL;
    bool replace = false;
    ctl_opt_t opts[] = {{"--data-dir", &dir, NULL},    {"-d", &dir, NULL},
                        {"--input", &in, NULL},        {"-i", &in, NULL},
                        {"--replace", NULL, &replace}, {NULL, NULL, NULL}};
    ctl_doc_t d = {0};
    char *text = NULL;
    size_t len = 0;
    ns_store_t *st = NULL;
    ns_registry_t *reg = NULL;
    int64_t t0 = ctl_mono_ms();
    int rc = ctl_parse("restore", argc, argv, opts, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    if (dir == NULL || in == NULL)
        return ctl_missing("restore", dir ? "-i FILE" : "--data-dir");
    if ((rc = ctl_read_file(in, &text, &len)) != CTL_OK)
        goto out;
    if ((rc = ctl_doc_load(&d, text, len)) != CTL_OK) {
        ctl_err("%s: %s; nothing was restored", in, d.err);
        goto out;
    }
    if ((rc = ctl_store_open_rw(dir, len * 8 > (64u << 20) ? len * 8 : 0, &st)) != CTL_OK)
        goto out;
    int nrc = ns_registry_new(&reg);
    restore_job_t job = {&d, replace, false, reg, NULL};
    nrc = nrc ? nrc : ns_store_write(st, restore_txn, &job);
    if (nrc == NS_EEXIST) {
        ctl_err("the store in %s is not empty (it has %s); use --replace to overwrite it", dir,
                job.what);
        rc = CTL_FAILED;
    } else if (job.violated) {
        rc = CTL_INVALID;
    } else if (nrc != NS_OK) {
        ctl_err("restore into %s failed: %s; nothing was written", dir, ns_strerror(nrc));
        rc = ctl_exit_for(nrc);
    } else {
        printf("restored %zu brokers, %zu registrations, %zu topics, %zu mappings, %zu kv keys "
               "in %zu namespaces, %zu audit records into %s in %lld ms\n",
               d.n_groups, d.n_regs, d.n_topics, d.n_maps, d.n_kv_keys, d.n_kv_ns,
               (size_t)(d.audit ? cJSON_GetArraySize(d.audit) : 0), dir,
               (long long)(ctl_mono_ms() - t0));
    }
out:
    ns_registry_free(reg);
    ns_store_close(st);
    ctl_doc_free(&d);
    free(text);
    return rc;
}

/* ---- import-kvconfig: {"configTable":{ns:{key:value}}} (docs/protocol.md §7.2) ---- */

typedef struct {
    const cJSON *table;
    size_t n_ns, n_keys, replaced;
} import_job_t;

/* The import in one write transaction (run again on a larger map when it
 * fills it: the store may be a restored one whose map is nearly used). */
static int import_txn(ns_txn_t *t, void *ctx)
{
    import_job_t *j = ctx;
    char detail[256];
    int nrc = ns_kv_import(t, j->table, &j->replaced);
    snprintf(detail, sizeof detail, "{\"namespaces\":%zu,\"keys\":%zu,\"replaced\":%zu}", j->n_ns,
             j->n_keys, j->replaced);
    return nrc ? nrc : ctl_trail_record(t, "import-kvconfig", detail);
}

int ctl_cmd_import_kvconfig(int argc, char **argv)
{
    const char *dir = NULL, *file = NULL;
    ctl_opt_t opts[] = {{"--data-dir", &dir, NULL}, {"-d", &dir, NULL}, {NULL, NULL, NULL}};
    ctl_doc_t d = {0};
    char *text = NULL;
    size_t len = 0, n_ns = 0, n_keys = 0, n_null = 0, replaced = 0;
    ns_store_t *st = NULL;
    const cJSON *table = NULL;
    int rc = ctl_parse("import-kvconfig", argc, argv, opts, &file, 1, 1, NULL);
    if (rc != CTL_OK)
        return rc;
    if (dir == NULL)
        return ctl_missing("import-kvconfig", "--data-dir");
    if ((rc = ctl_read_file(file, &text, &len)) != CTL_OK)
        goto out;
    if ((rc = ctl_kvconfig_load(&d, text, len, &table, &n_ns, &n_keys, &n_null)) != CTL_OK) {
        ctl_err("%s: %s; nothing was imported", file, d.err);
        goto out;
    }
    if ((rc = ctl_store_open_rw(dir, 0, &st)) != CTL_OK)
        goto out;
    import_job_t job = {table, n_ns, n_keys, 0};
    int nrc = ns_store_write(st, import_txn, &job);
    replaced = job.replaced;
    if (nrc != NS_OK) {
        ctl_err("import into %s failed: %s; nothing was written", dir, ns_strerror(nrc));
        rc = ctl_exit_for(nrc);
        goto out;
    }
    printf("imported %zu namespaces, %zu keys from %s into %s (%zu replaced an existing value, "
           "%zu null values skipped)\n",
           n_ns, n_keys, file, dir, replaced, n_null);
out:
    ns_store_close(st);
    ctl_doc_free(&d);
    free(text);
    return rc;
}
