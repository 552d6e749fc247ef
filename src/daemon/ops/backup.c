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

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void rmtree(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    char p[4200];
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(path);
}

/* Removes the oldest verified backups beyond keep. */
static void prune(const char *dir, int64_t keep)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "backup-", 7) != 0 ||
            (len > 4 && !strcmp(e->d_name + len - 4, ".tmp")))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **p = realloc(names, cap * sizeof *p);
            if (p == NULL)
                break;
            names = p;
        }
        if ((names[n] = strdup(e->d_name)) != NULL)
            n++;
    }
    if (d)
        closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i + (size_t)keep < n; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        rmtree(p);
        NS_LOG_INFO("backup: removed %s (backupKeep %lld)", p, (long long)keep);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

int ns_backup_run(ns_store_t *store, const char *backup_dir, int64_t keep)
{
    char name[64], tmp[4300], final[4200], err[512] = "";
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(name, sizeof name, "backup-%Y%m%dT%H%M%S", &tm);
    snprintf(final, sizeof final, "%s/%s.%03ldZ", backup_dir, name, ts.tv_nsec / 1000000);
    snprintf(tmp, sizeof tmp, "%s.tmp", final);
    if (mkdir(backup_dir, 0755) != 0 && errno != EEXIST) {
        NS_LOG_ERROR("backup: cannot create %s: %s", backup_dir, strerror(errno));
        return NS_EIO;
    }
    uint64_t t0 = uv_hrtime();
    int rc = ns_store_backup(store, tmp, err, sizeof err);
    if (rc != NS_OK) {
        NS_LOG_ERROR("backup: %s", err[0] ? err : ns_strerror(rc));
        rmtree(tmp);
        return rc;
    }
    ns_check_result_t res;
    memset(&res, 0, sizeof res);
    rc = ns_store_check_dir(tmp, &res);
    if (rc != NS_OK) {
        NS_LOG_ERROR("backup: the copy in %s does not check good (table %s: %s); removed", tmp,
                     res.table, res.detail);
        rmtree(tmp);
        return rc;
    }
    if (rename(tmp, final) != 0) {
        NS_LOG_ERROR("backup: cannot rename %s: %s", tmp, strerror(errno));
        rmtree(tmp);
        return NS_EIO;
    }
    NS_LOG_INFO("backup: %s written and verified (%llu records) in %llu ms", final,
                (unsigned long long)res.records,
                (unsigned long long)((uv_hrtime() - t0) / 1000000));
    prune(backup_dir, keep);
    return NS_OK;
}

static void *backup_main(void *arg)
{
    ns_backup_t *b = arg;
    int rc = ns_backup_run(b->srv->loop.store, b->dir, b->srv->loop.cfg->backup_keep);
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
