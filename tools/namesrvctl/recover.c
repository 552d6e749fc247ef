/* recover.c - `namesrvctl recover`: back to a good store without a Java-style
 * cold start (an empty store that every broker must fill again).
 *
 *   namesrvctl recover --data-dir D [--backup-dir B]
 *
 * With namesrvd stopped: moves D aside to D.damaged-<UTC time>, then restores
 * the newest backup of B (default D.backups, where namesrvd writes them) that
 * still reads and checks good (ns_store_check_dir); when none does, D becomes
 * a new empty store holding only the KV config read out of the damaged one
 * (in a child process: what was read before a crash is kept). Routes come
 * back as brokers re-register (every 30 s by default). Never deletes the
 * damaged store. Exit 0 on success, 3 while a process holds D, 5 on I/O
 * errors. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "ns/err.h"

static int copy_file(const char *from, const char *to)
{
    char buf[1 << 16];
    int in = open(from, O_RDONLY), out = -1, rc = -1;
    if (in < 0)
        return -1;
    out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0)
        goto done;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0)
            goto done;
        if (n == 0)
            break;
        if (write(out, buf, (size_t)n) != n)
            goto done;
    }
    rc = fsync(out);
done:
    if (out >= 0)
        close(out);
    close(in);
    return rc;
}

static int cmp_desc(const void *a, const void *b)
{
    return strcmp(*(char *const *)b, *(char *const *)a);
}

/* Verified backups of dir (names without ".tmp"), newest first; caller
 * frees every string and the array. */
static char **list_backups(const char *dir, size_t *n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **v = NULL;
    size_t cap = 0;
    *n = 0;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "backup-", 7) != 0 ||
            (len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **p = realloc(v, cap * sizeof *p);
            if (p == NULL)
                break;
            v = p;
        }
        if ((v[*n] = strdup(e->d_name)) != NULL)
            (*n)++;
    }
    if (d)
        closedir(d);
    if (*n)
        qsort(v, *n, sizeof *v, cmp_desc);
    return v;
}

/* Restores the newest good backup into dir (absent); true on success. */
static bool restore_backup(const char *dir, const char *bdir)
{
    size_t n = 0;
    char **names = list_backups(bdir, &n);
    bool ok = false;
    for (size_t i = 0; i < n && !ok; i++) {
        char src[4200], from[4300], to[4300];
        snprintf(src, sizeof src, "%.3000s/%.1000s", bdir, names[i]);
        ns_check_result_t res;
        memset(&res, 0, sizeof res);
        if (ns_store_check_dir(src, &res) != NS_OK) {
            ctl_err("backup %s does not check good (table %s: %s); trying an older one", src,
                    res.table, res.detail);
            continue;
        }
        snprintf(from, sizeof from, "%s/data.mdb", src);
        snprintf(to, sizeof to, "%s/data.mdb", dir);
        if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || copy_file(from, to) != 0) {
            ctl_err("cannot copy %s to %s: %s", from, to, strerror(errno));
            continue;
        }
        memset(&res, 0, sizeof res);
        if (ns_store_check_dir(dir, &res) != NS_OK) {
            ctl_err("the copy of %s does not check good; trying an older one", src);
            unlink(to);
            continue;
        }
        printf("restored %s from backup %s (%llu records, checked)\n", dir, src,
               (unsigned long long)res.records);
        ok = true;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return ok;
}

typedef struct {
    ns_txn_t *t;
    int rc;
} kv_put_t;

static int put_cb(const char *ns, const char *key, const char *val, void *ctx)
{
    kv_put_t *p = ctx;
    if (!ns_kv_ns_exists(p->t, ns) && (p->rc = ns_kv_ns_create(p->t, ns)) != NS_OK)
        return p->rc;
    return p->rc = ns_kv_put(p->t, ns, key, val);
}

/* A new empty store in dir with the KV config salvaged from aside. */
static int fresh_store(const char *dir, const char *aside)
{
    ns_store_t *st = NULL;
    ns_txn_t *t = NULL;
    int rc = ctl_store_open_rw(dir, 0, &st);
    if (rc != CTL_OK)
        return rc;
    size_t n = 0;
    int nrc = ns_txn_begin(st, true, &t);
    kv_put_t p = {t, NS_OK};
    if (nrc == NS_OK)
        nrc = ns_store_salvage_kv(aside, put_cb, &p, &n);
    if (nrc == NS_OK) {
        nrc = ns_txn_commit(t);
        t = NULL;
    }
    ns_txn_abort(t);
    ns_store_close(st);
    if (nrc != NS_OK) {
        ctl_err("cannot write the salvaged KV config into %s: %s", dir, ns_strerror(nrc));
        return CTL_IO;
    }
    printf("no good backup: %s is a new empty store holding the KV config of the damaged one "
           "(%zu key(s)); brokers re-register within 30 s\n",
           dir, n);
    return CTL_OK;
}

int ctl_cmd_recover(int argc, char **argv)
{
    const char *dir = NULL, *bdir_opt = NULL;
    ctl_opt_t opts[] = {{"--data-dir", &dir, NULL},
                        {"-d", &dir, NULL},
                        {"--backup-dir", &bdir_opt, NULL},
                        {NULL, NULL, NULL}};
    int rc = ctl_parse("recover", argc, argv, opts, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    if (dir == NULL)
        return ctl_missing("recover", "--data-dir");
    long holder = ns_store_lock_holder(dir);
    if (holder != 0) {
        ctl_err("data directory %s is held by process %ld (a running namesrvd?); stop it first",
                dir, holder);
        return CTL_LOCKED;
    }
    char bdir[4200], aside[4200], stamp[32];
    if (bdir_opt)
        snprintf(bdir, sizeof bdir, "%s", bdir_opt);
    else
        snprintf(bdir, sizeof bdir, "%s.backups", dir);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    struct stat sb;
    snprintf(aside, sizeof aside, "%s.damaged-%s", dir, stamp);
    for (int i = 2; stat(aside, &sb) == 0 && i < 1000; i++) /* recovered twice a second */
        snprintf(aside, sizeof aside, "%s.damaged-%s-%d", dir, stamp, i);
    if (rename(dir, aside) != 0) {
        ctl_err("cannot move %s aside to %s: %s", dir, aside, strerror(errno));
        return CTL_IO;
    }
    printf("moved %s aside to %s (kept, never deleted)\n", dir, aside);
    if (restore_backup(dir, bdir))
        return CTL_OK;
    return fresh_store(dir, aside);
}
