/* backup.c - periodic hot backups (backup.h). */
#include "ops/backup.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/server.h"
#include "ns/err.h"
#include "ns/log.h"
#include "net/ioloop.h"
#include "ns/fsutil.h"
#include "ops/http.h"

struct ns_backup {
    uv_timer_t timer;
    ns_server_t *srv;
    pthread_t thread;
    bool running; /* a backup thread exists (loop thread reads; joined before reuse) */
    int done;     /* set by the thread when it ends (atomic) */
    char dir[4096];
};

void ns_backup_dir(const ns_config_t *cfg, char *buf, size_t n)
{
    if (cfg->backup_dir && cfg->backup_dir[0])
        snprintf(buf, n, "%s", cfg->backup_dir);
    else
        snprintf(buf, n, "%s.backups", cfg->data_dir);
}

/* Removes the oldest backups beyond keep, oldest by sequence (then txnid):
 * never by name, which holds the sequence anyway, and never by wall time,
 * which a clock set a day ahead and back again made lie (every new backup
 * sorted before the three written while the clock was ahead, and was the
 * one removed). A backup of the directory without BACKUP-INFO (left by an
 * older binary or copied in by hand) counts as sequence 0, the oldest. */
static void prune(const char *dir, int64_t keep)
{
    ns_backup_entry_t *v = NULL;
    size_t n = 0;
    if (ns_backup_list(dir, &v, &n) != NS_OK) {
        NS_LOG_ERROR("backup: cannot list %s to prune it: %s", dir, strerror(errno));
        return;
    }
    for (size_t i = (size_t)keep; i < n; i++) { /* newest first */
        if (ns_fs_rmtree(v[i].path) != NS_OK)
            NS_LOG_ERROR("backup: cannot remove %s: %s", v[i].path, strerror(errno));
        else
            NS_LOG_INFO("backup: removed %s (sequence %llu; backupKeep %lld)", v[i].path,
                        (unsigned long long)v[i].seq, (long long)keep);
    }
    if (n > (size_t)keep)
        ns_fs_sync_path(dir); /* the removals too: a power cut brings none back */
    ns_backup_list_free(v, n);
}

/* One backup: backupDir/backup-<sequence>.tmp is written (copy and
 * BACKUP-INFO fsynced, ns_store_backup_stage), checked whole in a child
 * process, then renamed to backup-<sequence>-t<txnid> and the directory
 * fsynced: a name without ".tmp" is a complete, verified, durable backup,
 * with the settings file (configStorePath) beside the copy.
 * The sequence is one more than the largest in the directory, so it goes
 * on across restarts and recovers. */
/* The settings file beside the copy, as namesrvctl backup puts it there:
 * recover brings it back with the store, so the users a restore brings
 * back come with the authMode they were written under. Its absence is
 * fine (a server started with flags only has none). */
static int copy_settings(const char *settings, const char *tmp)
{
    char to[4400];
    struct stat sb;
    if (settings == NULL || settings[0] == 0 || stat(settings, &sb) != 0)
        return NS_OK;
    snprintf(to, sizeof to, "%s/namesrv.properties", tmp);
    int rc = ns_fs_copy_file(settings, to, 0600);
    if (rc != NS_OK)
        NS_LOG_ERROR("backup: cannot copy the settings file %s into %s: %s", settings, tmp,
                     strerror(errno));
    return rc;
}

int ns_backup_run(ns_store_t *store, const char *backup_dir, int64_t keep, const char *settings)
{
    char tmp[4300], final[4300], err[512] = "";
    uint64_t seq = 0, txnid = 0;
    if (mkdir(backup_dir, 0700) != 0 && errno != EEXIST) {
        NS_LOG_ERROR("backup: cannot create backupDir %s: %s", backup_dir, strerror(errno));
        return NS_EIO;
    }
    if (ns_backup_next_seq(backup_dir, &seq) != NS_OK) {
        NS_LOG_ERROR("backup: cannot read backupDir %s: %s", backup_dir, strerror(errno));
        return NS_EIO;
    }
    snprintf(tmp, sizeof tmp, "%s/backup-%06llu.tmp", backup_dir, (unsigned long long)seq);
    uint64_t t0 = uv_hrtime();
    int rc = ns_store_backup_stage(store, tmp, seq, &txnid, err, sizeof err);
    if (rc != NS_OK) {
        NS_LOG_ERROR("backup: %s", err[0] ? err : ns_strerror(rc));
        ns_fs_rmtree(tmp);
        return rc;
    }
    if ((rc = copy_settings(settings, tmp)) != NS_OK || (rc = ns_fs_sync_tree(tmp)) != NS_OK) {
        ns_fs_rmtree(tmp);
        return rc;
    }
    ns_check_result_t res;
    memset(&res, 0, sizeof res);
    rc = ns_store_check_dir(tmp, &res);
    if (rc != NS_OK) {
        NS_LOG_ERROR("backup: the copy in %s does not check good (table %s: %s); removed", tmp,
                     res.table, res.detail);
        ns_fs_rmtree(tmp);
        return rc;
    }
    snprintf(final, sizeof final, "%s/backup-%06llu-t%llu", backup_dir, (unsigned long long)seq,
             (unsigned long long)txnid);
    if (ns_fs_rename_durable(tmp, final) != NS_OK) {
        NS_LOG_ERROR("backup: cannot rename %s to %s: %s", tmp, final, strerror(errno));
        ns_fs_rmtree(tmp);
        return NS_EIO;
    }
    NS_LOG_INFO("backup: %s written and verified (%llu records, sequence %llu, transaction %llu) "
                "in %llu ms",
                final, (unsigned long long)res.records, (unsigned long long)seq,
                (unsigned long long)txnid, (unsigned long long)((uv_hrtime() - t0) / 1000000));
    prune(backup_dir, keep);
    return NS_OK;
}

static void *backup_main(void *arg)
{
    ns_backup_t *b = arg;
    int rc = ns_backup_run(b->srv->loop.store, b->dir, b->srv->loop.cfg->backup_keep,
                           b->srv->loop.cfg->config_store_path);
    /* /metrics and the backup alerts see each one (http stays until
     * ns_backup_stop has joined this thread) */
    ns_http_note_backup(b->srv, rc == NS_OK);
    __atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void timer_cb(uv_timer_t *t)
{
    ns_backup_t *b = t->data;
    if (b->running) {
        if (!__atomic_load_n(&b->done, __ATOMIC_ACQUIRE)) {
            NS_LOG_WARN("backup: the previous backup is still running; this one is skipped");
            return;
        }
        pthread_join(b->thread, NULL);
        b->running = false;
    }
    __atomic_store_n(&b->done, 0, __ATOMIC_RELEASE);
    if (pthread_create(&b->thread, NULL, backup_main, b) == 0)
        b->running = true;
    else
        NS_LOG_ERROR("backup: cannot start its thread");
}

/* Says at start, not an interval later, when backupDir cannot be written:
 * the directory if it exists, else the one that would hold it (nothing is
 * created here). The server still starts: routes matter more than backups,
 * and the failed backups are counted (namesrv_backups_total{result=
 * "failed"}) and alerted on. */
static void check_dir(const char *dir)
{
    struct stat sb;
    char parent[4096];
    const char *what = dir;
    if (stat(dir, &sb) != 0) {
        snprintf(parent, sizeof parent, "%s", dir);
        char *slash = strrchr(parent, '/');
        if (slash == parent)
            parent[1] = 0;
        else if (slash)
            *slash = 0;
        else
            snprintf(parent, sizeof parent, ".");
        what = parent;
    }
    if (access(what, W_OK | X_OK) != 0 || (stat(what, &sb) == 0 && !S_ISDIR(sb.st_mode)))
        NS_LOG_ERROR("backupDir %s cannot be %s (%s: %s): no backup will be written until it "
                     "can; set backupDir to a directory this user may write (the package's: "
                     "/var/lib/namesrv.backups) or backupIntervalSeconds=0",
                     dir, what == dir ? "written" : "created", what,
                     errno ? strerror(errno) : "not a directory");
}

int ns_backup_start(ns_server_t *srv)
{
    if (srv->loop.cfg->backup_interval_s <= 0)
        return NS_OK;
    ns_backup_t *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NS_ENOMEM;
    b->srv = srv;
    ns_backup_dir(srv->loop.cfg, b->dir, sizeof b->dir);
    uv_timer_init(srv->loop.uv, &b->timer);
    b->timer.data = b;
    uint64_t ms = (uint64_t)srv->loop.cfg->backup_interval_s * 1000;
    uv_timer_start(&b->timer, timer_cb, ms, ms);
    srv->backup = b;
    NS_LOG_INFO("backups every %lld s into %s, %lld kept",
                (long long)srv->loop.cfg->backup_interval_s, b->dir,
                (long long)srv->loop.cfg->backup_keep);
    check_dir(b->dir);
    return NS_OK;
}

static void close_cb(uv_handle_t *h)
{
    free(h->data);
}

void ns_backup_stop(ns_server_t *srv)
{
    ns_backup_t *b = srv->backup;
    if (b == NULL)
        return;
    srv->backup = NULL;
    uv_timer_stop(&b->timer);
    if (b->running)
        pthread_join(b->thread, NULL); /* the store must outlive its copy */
    uv_close((uv_handle_t *)&b->timer, close_cb);
}
