/* kvimport.c - kvConfigPath imported into an empty store at first start
 * (kvimport.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kvimport.h"
#include "ns/buf.h"
#include "ns/clock.h"
#include "ns/err.h"
#include "ns/jsondoc.h"
#include "ns/log.h"

typedef struct {
    const ns_config_t *cfg;
    const cJSON *table;
    ns_kvconfig_counts_t counts;
    size_t replaced;
} import_job_t;

/* The whole file into *text (NUL-terminated, the caller frees). */
static int read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    int rc = NS_EINVAL;
    *text = NULL;
    if (f == NULL || fstat(fileno(f), &st) != 0) {
        snprintf(err, errlen, "kvConfigPath %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > NS_KVIMPORT_MAX_BYTES) {
        snprintf(err, errlen, "kvConfigPath %s: %s", path,
                 S_ISREG(st.st_mode) ? "larger than 1 GiB" : "not a regular file");
        goto out;
    }
    *len = (size_t)st.st_size;
    if ((*text = malloc(*len + 1)) == NULL) {
        snprintf(err, errlen, "kvConfigPath %s: out of memory", path);
        rc = NS_ENOMEM;
        goto out;
    }
    if (fread(*text, 1, *len, f) != *len) {
        snprintf(err, errlen, "kvConfigPath %s: read failed", path);
        free(*text);
        *text = NULL;
        goto out;
    }
    (*text)[*len] = 0;
    rc = NS_OK;
out:
    if (f)
        fclose(f);
    return rc;
}

/* The admin-trail record of the import, in the shape of a request's. */
static int trail(ns_txn_t *t, const import_job_t *j, int64_t now)
{
    ns_buf_t rec = NS_BUF_INIT;
    const char *path = j->cfg->kv_config_path;
    int rc = ns_buf_printf(&rec,
                           "{\"time\":%lld,\"peer\":\"namesrvd@local\",\"code\":-1,"
                           "\"request\":\"import-kvconfig\",\"fields\":{\"kvConfigPath\":",
                           (long long)now);
    rc = rc ? rc : ns_buf_append_json_str(&rec, path, strlen(path), false);
    rc = rc ? rc
            : ns_buf_printf(&rec,
                            "},\"result\":\"ok\",\"responseCode\":0,\"detail\":{\"namespaces\":%zu,"
                            "\"keys\":%zu,\"nulls\":%zu}}",
                            j->counts.namespaces, j->counts.keys, j->counts.nulls);
    rc = rc ? rc
            : ns_admin_audit_append(t, (const char *)rec.data, rec.len,
                                    j->cfg->admin_audit_retention, NULL);
    ns_buf_free(&rec);
    return rc;
}

static int import_txn(ns_txn_t *t, void *ctx)
{
    import_job_t *j = ctx;
    int64_t now = ns_clock_wall_ms();
    int rc = ns_kv_import(t, j->table, &j->replaced);
    rc = rc ? rc : ns_meta_put_u64(t, NS_KVIMPORT_META, (uint64_t)now);
    return rc ? rc : trail(t, j, now);
}

/* Whether the store may take the file: no KV entry, no earlier import. */
static int store_qualifies(ns_store_t *store, bool *yes, size_t *n_kv, uint64_t *when)
{
    ns_txn_t *t = NULL;
    int rc = ns_txn_begin(store, false, &t);
    *when = 0;
    *n_kv = 0;
    if (rc != NS_OK)
        return rc;
    rc = ns_kv_count(t, n_kv);
    if (rc == NS_OK) {
        int m = ns_meta_get_u64(t, NS_KVIMPORT_META, when);
        rc = m == NS_ENOTFOUND ? NS_OK : m;
    }
    ns_txn_abort(t);
    *yes = rc == NS_OK && *n_kv == 0 && *when == 0;
    return rc;
}

int ns_kvimport_at_start(ns_store_t *store, const ns_config_t *cfg, char *err, size_t errlen)
{
    const char *path = cfg->kv_config_path;
    struct stat st;
    char *text = NULL;
    size_t len = 0, n_kv = 0;
    uint64_t when = 0;
    bool yes = false;
    cJSON *root = NULL;
    import_job_t job = {cfg, NULL, {0}, 0};
    if (path == NULL || *path == 0 || stat(path, &st) != 0)
        return NS_OK; /* no Java file: nothing to take in */
    int rc = store_qualifies(store, &yes, &n_kv, &when);
    if (rc != NS_OK) {
        snprintf(err, errlen, "cannot read the store's KV config: %s", ns_strerror(rc));
        return rc;
    }
    if (!yes) {
        NS_LOG_INFO("kvConfigPath %s not imported: %s (namesrvctl import-kvconfig merges a file "
                    "by hand)",
                    path, when ? "it was imported once already" : "the store holds KV config");
        return NS_OK;
    }
    if ((rc = read_file(path, &text, &len, err, errlen)) != NS_OK)
        goto out;
    char why[1024];
    if ((rc = ns_kvconfig_parse(text, len, &root, &job.table, &job.counts, why, sizeof why)) !=
        NS_OK) {
        snprintf(err, errlen,
                 "kvConfigPath %s is not a kvConfig.json namesrvd can import: %s; nothing was "
                 "imported (fix the file, or point kvConfigPath at a file that does not exist)",
                 path, why);
        goto out;
    }
    if ((rc = ns_store_write(store, import_txn, &job)) != NS_OK) {
        snprintf(err, errlen, "kvConfigPath %s: import failed: %s; nothing was written", path,
                 ns_strerror(rc));
        goto out;
    }
    NS_LOG_INFO("kvConfigPath %s imported into the empty store: %zu namespaces, %zu keys (%zu null "
                "values skipped); later starts leave the store's KV config as it is",
                path, job.counts.namespaces, job.counts.keys, job.counts.nulls);
out:
    cJSON_Delete(root);
    free(text);
    return rc;
}
