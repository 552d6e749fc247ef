/* offline.c - `namesrvctl verify`, `backup` and `stat`: read-only looks at
 * a data directory, safe while namesrvd runs (no lock; each command reads
 * one consistent snapshot).
 *
 *   namesrvctl verify --data-dir D
 *   namesrvctl backup --data-dir D -o DIR [--config FILE]
 *   namesrvctl stat   --data-dir D [--json]
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "ns/err.h"
#include "ns/fsutil.h"

/* Reads every page and record of the store in dir, decodes every value and
 * checks the invariants, in a child process (ns_store_check_dir), so that
 * damage that crashes LMDB is reported, not suffered. Prints the violations.
 * CTL_OK when consistent, CTL_FAILED with violations, CTL_INVALID (4) when
 * the store is damaged, CTL_IO when it cannot be read at all. */
static int verify_dir(const char *dir, const char *label)
{
    ns_buf_t report = NS_BUF_INIT;
    ns_check_result_t res;
    memset(&res, 0, sizeof res);
    res.report = &report;
    int64_t t0 = ctl_mono_ms();
    int n = ns_store_check_dir(dir, &res);
    int rc = CTL_OK;
    if (n == NS_ECORRUPT) {
        ctl_report_damage(label, dir, res.table, res.detail);
        rc = CTL_INVALID;
    } else if (n != NS_OK) {
        ctl_err("verify of %s failed: %s", dir, res.detail[0] ? res.detail : ns_strerror(n));
        rc = CTL_IO;
    } else if (res.violations > 0) {
        ctl_print_lines(stdout, (const char *)report.data, report.len);
        printf("%s %s: %d violation(s)\n", label, dir, res.violations);
        rc = CTL_FAILED;
    } else {
        printf("%s %s: consistent (%llu records in every table read and decoded in %lld ms)\n",
               label, dir, (unsigned long long)res.records, (long long)(ctl_mono_ms() - t0));
    }
    ns_buf_free(&report);
    return rc;
}

int ctl_cmd_verify(int argc, char **argv)
{
    const char *dir = NULL;
    ctl_opt_t opts[] = {{"--data-dir", &dir, NULL}, {"-d", &dir, NULL}, {NULL, NULL, NULL}};
    int rc = ctl_parse("verify", argc, argv, opts, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    if (dir == NULL && (dir = ctl_default_data_dir()) == NULL)
        return ctl_missing("verify", "--data-dir");
    return verify_dir(dir, "store");
}

/* ---- backup ---- */

typedef struct {
    ns_store_t *st;
    const char *out;
    uint64_t seq;
    char err[512];
    int rc;
    volatile bool done;
} backup_job_t;

static void *backup_thread(void *arg)
{
    backup_job_t *j = arg;
    j->rc = ns_store_backup_stage(j->st, j->out, j->seq, NULL, j->err, sizeof j->err);
    __atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
    return NULL;
}

/* Runs the copy; on a terminal a second thread copies while this one shows
 * the bytes written so far against the bytes the store uses. */
static int backup_with_progress(ns_store_t *st, const char *out, uint64_t seq, const char *datafile,
                                char *err, size_t errlen)
{
    backup_job_t j = {st, out, seq, "", NS_OK, false};
    size_t map = 0, used = 0;
    pthread_t tid;
    ctl_progress_t p;
    struct stat sb;
    ns_store_map_usage(st, &map, &used);
    ctl_progress_init(&p, "backup bytes", used);
    if (!p.on || pthread_create(&tid, NULL, backup_thread, &j) != 0) {
        backup_thread(&j);
    } else {
        while (!__atomic_load_n(&j.done, __ATOMIC_ACQUIRE)) {
            usleep(100 * 1000);
            size_t now = stat(datafile, &sb) == 0 ? (size_t)sb.st_size : 0;
            if (now > p.done && now <= used)
                ctl_progress_step(&p, now - p.done);
        }
        pthread_join(tid, NULL);
        ctl_progress_done(&p);
    }
    snprintf(err, errlen, "%s", j.err);
    return j.rc;
}

/* Copies the settings file beside the backup (the first of FILE,
 * D/namesrv.properties, /etc/namesrv/namesrv.properties that exists). */
static int backup_settings(const char *dir, const char *out, const char *config)
{
    char cand[4200], dst[8400];
    const char *src = config;
    char *text = NULL;
    size_t len = 0;
    struct stat sb;
    snprintf(cand, sizeof cand, "%s/namesrv.properties", dir);
    if (src == NULL && stat(cand, &sb) == 0)
        src = cand;
    if (src == NULL && stat("/etc/namesrv/namesrv.properties", &sb) == 0)
        src = "/etc/namesrv/namesrv.properties";
    if (src == NULL) {
        printf("no settings file found to copy (give --config FILE)\n");
        return CTL_OK;
    }
    const char *base = strrchr(src, '/');
    snprintf(dst, sizeof dst, "%s/%s", out, base ? base + 1 : src);
    int rc = ctl_read_file(src, &text, &len);
    rc = rc ? rc : ctl_write_file(dst, text, len);
    if (rc == CTL_OK)
        printf("settings %s copied to %s\n", src, dst);
    free(text);
    return rc;
}

/* Whether out may become the backup: absent, or an empty directory (which
 * the rename replaces). */
static bool backup_target_free(const char *out)
{
    DIR *d = opendir(out);
    struct dirent *e;
    bool empty = true;
    if (d == NULL)
        return errno == ENOENT;
    while (empty && (e = readdir(d)) != NULL)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    return empty;
}

/* The backup is built in OUT.tmp (the copy with its BACKUP-INFO, the
 * settings file, all fsynced), verified there, and only then renamed to
 * OUT: killed, or out of space, it leaves no OUT that looks like a store,
 * and a ".tmp" directory is never taken for a backup (ns_backup_list). Its
 * sequence is the next one of the directory OUT is in, so a backup written
 * into namesrvd's backup directory by hand sorts after the ones there. */
int ctl_cmd_backup(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL, *config = NULL;
    ctl_opt_t opts[] = {{"--data-dir", &dir, NULL},  {"-d", &dir, NULL},
                        {"--output", &out, NULL},    {"-o", &out, NULL},
                        {"--config", &config, NULL}, {"-c", &config, NULL},
                        {NULL, NULL, NULL}};
    ns_store_t *st = NULL;
    char err[512] = "", datafile[4300], tmp[4200], parent[4200];
    struct stat sb;
    uint64_t seq = 1;
    int rc = ctl_parse("backup", argc, argv, opts, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    if (dir == NULL)
        dir = ctl_default_data_dir();
    if (dir == NULL || out == NULL)
        return ctl_missing("backup", dir ? "-o DIR" : "--data-dir");
    if (!backup_target_free(out)) {
        ctl_err("%s already holds a store or other files; back up into a new or empty directory",
                out);
        return CTL_IO;
    }
    snprintf(tmp, sizeof tmp, "%.4100s.tmp", out);
    snprintf(datafile, sizeof datafile, "%s/data.mdb", tmp);
    snprintf(parent, sizeof parent, "%.4100s", out);
    char *slash = strrchr(parent, '/');
    if (slash == NULL)
        snprintf(parent, sizeof parent, ".");
    else if (slash == parent)
        parent[1] = 0;
    else
        *slash = 0;
    ns_backup_next_seq(parent, &seq);
    int64_t t0 = ctl_mono_ms();
    if ((rc = ctl_store_open_ro(dir, &st)) != CTL_OK)
        return rc;
    int nrc = backup_with_progress(st, tmp, seq, datafile, err, sizeof err);
    ns_store_close(st);
    if (nrc != NS_OK) {
        ctl_err("%s; nothing was left in %s", err[0] ? err : ns_strerror(nrc), out);
        ns_fs_rmtree(tmp);
        return ctl_exit_for(nrc);
    }
    long long size = stat(datafile, &sb) == 0 ? (long long)sb.st_size : -1;
    rc = backup_settings(dir, tmp, config);
    int vrc = rc ? rc : verify_dir(tmp, "backup");
    if (vrc == CTL_OK &&
        (ns_fs_sync_tree(tmp) != NS_OK || ns_fs_rename_durable(tmp, out) != NS_OK)) {
        ctl_err("cannot rename %s to %s: %s", tmp, out, strerror(errno));
        vrc = CTL_IO;
    }
    if (vrc != CTL_OK) {
        ns_fs_rmtree(tmp);
        ctl_err("backup failed; nothing was left in %s", out);
        return vrc;
    }
    printf("backup of %s written to %s (%lld bytes, compacted, sequence %llu) in %lld ms\n", dir,
           out, size, (unsigned long long)seq, (long long)(ctl_mono_ms() - t0));
    return CTL_OK;
}

/* ---- stat ---- */

typedef struct {
    size_t clusters, members, groups, addrs, regs, topics, queues, routes, maps, kv_ns, kv_keys,
        audit, admin;
    char *last_cluster;
} counts_t;

static int count_cluster_cb(const char *cluster, const char *broker, void *ctx)
{
    counts_t *c = ctx;
    c->members++;
    if (c->last_cluster == NULL || strcmp(c->last_cluster, cluster) != 0) {
        free(c->last_cluster);
        c->last_cluster = strdup(cluster);
        c->clusters++;
        if (c->last_cluster == NULL)
            return NS_ENOMEM;
    }
    return 0;
}

static int count_group_cb(ns_group_rec_t *g, void *ctx)
{
    counts_t *c = ctx;
    c->groups++;
    c->addrs += g->n_addrs;
    return 0;
}

static int count_live_cb(const ns_live_rec_t *r, void *ctx)
{
    ((counts_t *)ctx)->regs++;
    return 0;
}

static int count_queue_cb(const char *topic, void *ctx)
{
    ((counts_t *)ctx)->queues++;
    return 0;
}

struct group_queues {
    ns_txn_t *t;
    counts_t *c;
};

/* Queue entries, counted per group through the broker -> topic index. */
static int count_group_queues_cb(ns_group_rec_t *g, void *ctx)
{
    struct group_queues *gq = ctx;
    return ns_queue_iter_broker(gq->t, g->broker_name, count_queue_cb, gq->c);
}

static int count_map_cb(const ns_mapping_info_t *m, void *ctx)
{
    ((counts_t *)ctx)->maps++;
    return 0;
}

static int count_kv_cb(const char *key, const char *val, size_t len, void *ctx)
{
    ((counts_t *)ctx)->kv_keys++;
    return 0;
}

struct kv_count {
    ns_txn_t *t;
    counts_t *c;
};

static int count_kvns_cb(const char *ns, void *ctx)
{
    struct kv_count *k = ctx;
    k->c->kv_ns++;
    return ns_kv_iter(k->t, ns, count_kv_cb, k->c);
}

static int count_audit_cb(uint64_t seq, const char *json, size_t len, void *ctx)
{
    ((counts_t *)ctx)->audit++;
    return 0;
}

static int count_all(ns_txn_t *t, counts_t *c)
{
    struct group_queues gq = {t, c};
    struct kv_count kc = {t, c};
    int rc = ns_cluster_iter(t, count_cluster_cb, c);
    rc = rc ? rc : ns_group_iter(t, count_group_cb, c);
    rc = rc ? rc : ns_group_iter(t, count_group_queues_cb, &gq);
    rc = rc ? rc : ns_live_iter(t, count_live_cb, c);
    rc = rc ? rc : ns_mapping_iter(t, count_map_cb, c);
    rc = rc ? rc : ns_kv_ns_iter(t, count_kvns_cb, &kc);
    rc = rc ? rc : ns_audit_iter(t, count_audit_cb, c);
    rc = rc ? rc : ns_topic_count(t, &c->topics);
    rc = rc ? rc : ns_route_count(t, &c->routes);
    rc = rc ? rc : ns_admin_audit_count(t, &c->admin);
    return rc;
}

int ctl_cmd_stat(int argc, char **argv)
{
    const char *dir = NULL;
    bool json = false;
    ctl_opt_t opts[] = {{"--data-dir", &dir, NULL},
                        {"-d", &dir, NULL},
                        {"--json", NULL, &json},
                        {NULL, NULL, NULL}};
    ns_store_t *st = NULL;
    ns_txn_t *t = NULL;
    counts_t c = {0};
    size_t map_size = 0, used = 0;
    int rc = ctl_parse("stat", argc, argv, opts, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    if (dir == NULL && (dir = ctl_default_data_dir()) == NULL)
        return ctl_missing("stat", "--data-dir");
    if ((rc = ctl_store_open_ro(dir, &st)) != CTL_OK)
        return rc;
    int nrc = ns_txn_begin(st, false, &t);
    nrc = nrc ? nrc : count_all(t, &c);
    ns_txn_abort(t);
    if (nrc != NS_OK) {
        ctl_err("stat of %s failed: %s", dir, ns_strerror(nrc));
        rc = ctl_exit_for(nrc);
        goto out;
    }
    ns_store_map_usage(st, &map_size, &used);
    if (json) {
        ns_buf_t d = NS_BUF_INIT;
        ns_buf_append_json_str(&d, dir, strlen(dir), false);
        printf("{\"dataDir\":%.*s,\"schemaVersion\":%u,\"latestSchemaVersion\":%u,"
               "\"clusters\":%zu,\"clusterMemberships\":%zu,\"brokers\":%zu,\"brokerAddrs\":%zu,"
               "\"registrations\":%zu,\"topics\":%zu,\"queueDatas\":%zu,\"routes\":%zu,"
               "\"mappings\":%zu,\"kvNamespaces\":%zu,\"kvKeys\":%zu,\"auditRecords\":%zu,"
               "\"adminAuditRecords\":%zu,\"mapSizeBytes\":%zu,\"usedBytes\":%zu}\n",
               d.data ? (int)d.len : 2, d.data ? (const char *)d.data : "\"\"",
               ns_store_schema_version(st), ns_store_latest_schema(), c.clusters, c.members,
               c.groups, c.addrs, c.regs, c.topics, c.queues, c.routes, c.maps, c.kv_ns, c.kv_keys,
               c.audit, c.admin, map_size, used);
        ns_buf_free(&d);
        goto out;
    }
    printf("data directory   %s\n"
           "schema version   %u (this binary: %u)\n"
           "clusters         %zu (%zu broker memberships)\n"
           "brokers          %zu (%zu addresses)\n"
           "registrations    %zu\n"
           "topics           %zu (%zu queue datas, %zu routes)\n"
           "mappings         %zu\n"
           "kv               %zu namespaces, %zu keys\n"
           "audit records    %zu\n"
           "admin trail      %zu records\n"
           "map              %zu bytes, %zu used (%.1f%%)\n",
           dir, ns_store_schema_version(st), ns_store_latest_schema(), c.clusters, c.members,
           c.groups, c.addrs, c.regs, c.topics, c.queues, c.routes, c.maps, c.kv_ns, c.kv_keys,
           c.audit, c.admin, map_size, used,
           map_size ? 100.0 * (double)used / (double)map_size : 0.0);
out:
    free(c.last_cluster);
    ns_store_close(st);
    return rc;
}
