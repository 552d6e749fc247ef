/* recover.c - `namesrvctl recover`: back to a good store without a Java-style
 * cold start (an empty store that every broker must fill again).
 *
 *   namesrvctl recover --data-dir D [--backup-dir B] [--force]
 *
 * With namesrvd stopped. It only recovers: a store that checks good
 * (ns_store_check_dir, no violations) is refused, exit 1, unless --force,
 * which still keeps it aside. Otherwise it builds the new store beside D, in
 * D.recover-new: a copy of the newest backup of B (default D.backups) that
 * checks good, whatever its name (ns_backup_list: newest by sequence, never
 * by name or clock), with the backup's settings file; or, with none, a new
 * empty store holding the KV config read out of the damaged one (in a child
 * process: what was read before a crash is kept). Then it swaps the two
 * directories and moves the old store to D.damaged-N (D.replaced-N with
 * --force), never deleted. Routes come back as brokers re-register (every
 * 30 s by default). Exit 0 on success, 1 refused, 3 while a process holds
 * D, 5 on I/O errors or when there is nothing to recover from.
 *
 * Crash safety. The steps are journaled in D.recover (written atomically:
 * NS_RECOVER_JOURNAL_SUFFIX; namesrvd refuses to start while it exists;
 * tmp, fsync, rename, fsync of the directory):
 *   phase build   D untouched; D.recover-new being built
 *   phase swap    D.recover-new complete and synced (its inode recorded);
 *                 the swap and the move aside are under way
 * A run that finds a journal finishes the previous one first: in "build" it
 * removes the half-built D.recover-new and starts over (undo: D was never
 * touched); in "swap" it completes the swap, telling which directory is
 * which by the recorded inode (a rename keeps it). D is never missing: the
 * swap is one renameat2(RENAME_EXCHANGE); only on a file system without it
 * are there two renames, with D missing between them, and the journal then
 * tells the next run to complete them. Killed at any point
 * (tests/crash/test_recover_crash.c kills it at every file system call),
 * the next run ends with the recovered store in D and the old one aside. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "ns/clock.h"
#include "ns/err.h"
#include "ns/fsutil.h"

#define PATH_MAX_LEN 4200

typedef struct {
    char dir[4000];              /* D (a longer one is refused) */
    char journal[PATH_MAX_LEN];  /* D.recover */
    char staging[PATH_MAX_LEN];  /* D.recover-new */
    char aside[PATH_MAX_LEN];    /* where the old store goes */
    char phase[16];              /* "build", "swap" */
    unsigned long long dev, ino; /* of the staging directory, in phase swap */
} recover_t;

/* ---- the journal ---- */

static int journal_write(const recover_t *r)
{
    char text[3 * PATH_MAX_LEN];
    int n = snprintf(text, sizeof text,
                     "namesrv-recover 1\nphase %s\ndir %s\nstaging %s\naside %s\nid %llu %llu\n",
                     r->phase, r->dir, r->staging, r->aside, r->dev, r->ino);
    if (n < 0 || (size_t)n >= sizeof text)
        return NS_EINVAL;
    int rc = ns_fs_write_atomic(r->journal, text, (size_t)n, 0600);
    if (rc != NS_OK)
        ctl_err("cannot write the journal %s: %s", r->journal, strerror(errno));
    return rc;
}

static int journal_remove(const recover_t *r)
{
    if (unlink(r->journal) != 0 && errno != ENOENT) {
        ctl_err("cannot remove the journal %s: %s", r->journal, strerror(errno));
        return NS_EIO;
    }
    return ns_fs_sync_parent(r->journal);
}

/* Reads the journal into r. NS_ENOTFOUND when there is none. */
static int journal_read(recover_t *r)
{
    char line[PATH_MAX_LEN + 32];
    FILE *f = fopen(r->journal, "re");
    bool magic = false;
    if (f == NULL)
        return errno == ENOENT ? NS_ENOTFOUND : NS_EIO;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (strcmp(line, "namesrv-recover 1") == 0)
            magic = true;
        else if (strncmp(line, "phase ", 6) == 0)
            snprintf(r->phase, sizeof r->phase, "%.15s", line + 6);
        else if (strncmp(line, "aside ", 6) == 0)
            snprintf(r->aside, sizeof r->aside, "%.4190s", line + 6);
        else if (sscanf(line, "id %llu %llu", &r->dev, &r->ino) == 2)
            continue;
    }
    fclose(f);
    if (!magic || r->aside[0] == 0) {
        ctl_err("%s is not a recover journal; look at it, remove it and run again", r->journal);
        return NS_EINVAL;
    }
    return NS_OK;
}

/* ---- the old store's place ---- */

static bool exists(const char *path, struct stat *sb)
{
    struct stat tmp;
    return lstat(path, sb ? sb : &tmp) == 0;
}

/* D.<what>-N for the smallest N not taken: a counter, not the clock, so
 * two recovers in one second or a clock set back never collide. */
static void pick_aside(recover_t *r, const char *what)
{
    for (unsigned i = 1; i < 100000; i++) {
        snprintf(r->aside, sizeof r->aside, "%s.%s-%u", r->dir, what, i);
        if (!exists(r->aside, NULL))
            return;
    }
}

/* ---- building the new store ---- */

/* Copies the settings file a backup holds (namesrvctl backup puts it
 * there) into the new store's directory: a restore brings back the users, and authMode and
 * the other settings they were written under come along with them. */
static void copy_settings(const char *from_dir, const char *to_dir)
{
    char from[PATH_MAX_LEN + 64], to[PATH_MAX_LEN + 64];
    snprintf(from, sizeof from, "%s/namesrv.properties", from_dir);
    snprintf(to, sizeof to, "%s/namesrv.properties", to_dir);
    if (!exists(from, NULL))
        return;
    if (ns_fs_copy_file(from, to, 0600) == NS_OK)
        printf("settings file of the backup copied to %s: start namesrvd with it (-c), or "
               "compare it with yours (authMode above all)\n",
               to);
    else
        ctl_err("cannot copy the backup's settings %s: %s", from, strerror(errno));
}

/* Copies the newest backup of bdir that checks good into staging (absent).
 * NS_OK, NS_ENOTFOUND when none does, NS_EIO. */
static int build_from_backup(const char *staging, const char *bdir)
{
    ns_backup_entry_t *v = NULL;
    size_t n = 0;
    int rc = ns_backup_list(bdir, &v, &n);
    if (rc != NS_OK) {
        ctl_err("cannot read the backup directory %s: %s", bdir, strerror(errno));
        return rc;
    }
    rc = NS_ENOTFOUND;
    for (size_t i = 0; i < n && rc == NS_ENOTFOUND; i++) {
        char from[PATH_MAX_LEN + 16], to[PATH_MAX_LEN + 16];
        ns_check_result_t res;
        memset(&res, 0, sizeof res);
        if (ns_store_check_dir(v[i].path, &res) != NS_OK || res.violations > 0) {
            ctl_err("backup %s does not check good (table %s: %s); trying an older one", v[i].path,
                    res.table, res.detail[0] ? res.detail : "violations");
            continue;
        }
        snprintf(from, sizeof from, "%s/data.mdb", v[i].path);
        snprintf(to, sizeof to, "%s/data.mdb", staging);
        if (mkdir(staging, 0700) != 0 || ns_fs_copy_file(from, to, 0600) != NS_OK) {
            ctl_err("cannot copy %s to %s: %s", from, to, strerror(errno));
            rc = NS_EIO;
            break;
        }
        memset(&res, 0, sizeof res);
        if (ns_store_check_dir(staging, &res) != NS_OK || res.violations > 0) {
            ctl_err("the copy of %s does not check good; trying an older one", v[i].path);
            ns_fs_rmtree(staging);
            continue;
        }
        copy_settings(v[i].path, staging);
        printf("new store from backup %s (sequence %" PRIu64 ", transaction %" PRIu64
               ", %llu records, checked)\n",
               v[i].path, v[i].seq, v[i].txnid, (unsigned long long)res.records);
        rc = NS_OK;
    }
    ns_backup_list_free(v, n);
    return rc;
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

/* A new empty store in staging with the KV config salvaged from old (which
 * may be absent or damaged). */
static int build_fresh(const char *staging, const char *old)
{
    ns_store_t *st = NULL;
    ns_txn_t *t = NULL;
    size_t n = 0;
    if (ctl_store_open_rw(staging, 0, &st) != CTL_OK)
        return NS_EIO;
    int nrc = ns_txn_begin(st, true, &t);
    kv_put_t p = {t, NS_OK};
    if (nrc == NS_OK && exists(old, NULL))
        nrc = ns_store_salvage_kv(old, put_cb, &p, &n);
    if (nrc == NS_OK) /* seedFromPeers may still seed its topology */
        nrc = ns_meta_put_u64(t, NS_META_RECOVERED_FRESH, (uint64_t)ns_clock_wall_ms());
    if (nrc == NS_OK) {
        nrc = ns_txn_commit(t);
        t = NULL;
    }
    ns_txn_abort(t);
    ns_store_close(st);
    if (nrc != NS_OK) {
        ctl_err("cannot write the salvaged KV config into %s: %s", staging, ns_strerror(nrc));
        return NS_EIO;
    }
    printf("no good backup: the new store is empty but for the KV config of the damaged one "
           "(%zu key(s)); brokers re-register within 30 s\n",
           n);
    return NS_OK;
}

/* ---- the swap ---- */

/* Completes phase swap from wherever the previous run stopped. The new
 * store is the directory whose inode the journal recorded. */
static int finish_swap(recover_t *r)
{
    struct stat d, s;
    bool have_d = exists(r->dir, &d), have_s = exists(r->staging, &s);
    bool d_is_new = have_d && d.st_dev == r->dev && d.st_ino == r->ino;
    bool s_is_new = have_s && s.st_dev == r->dev && s.st_ino == r->ino;
    if (!d_is_new && !s_is_new) {
        ctl_err("neither %s nor %s is the store recover built (journal %s); nothing was moved",
                r->dir, r->staging, r->journal);
        return NS_EIO;
    }
    if (s_is_new && have_d) {
        int x = ns_fs_exchange(r->staging, r->dir);
        if (x == NS_EINVAL) { /* no RENAME_EXCHANGE here: two renames, journaled */
            if (ns_fs_rename_durable(r->dir, r->aside) != NS_OK ||
                ns_fs_rename_durable(r->staging, r->dir) != NS_OK)
                goto io;
            have_s = false;
        } else if (x != NS_OK) {
            goto io;
        }
    } else if (s_is_new) { /* D missing: it was never there, or moved aside already */
        if (ns_fs_rename_durable(r->staging, r->dir) != NS_OK)
            goto io;
        have_s = false;
    }
    /* D is the new store now; what is left in staging is the old one */
    if (have_s && exists(r->staging, NULL)) {
        if (ns_fs_rename_durable(r->staging, r->aside) != NS_OK)
            goto io;
        printf("old store moved aside to %s (kept, never deleted)\n", r->aside);
    } else if (exists(r->aside, NULL)) {
        printf("old store moved aside to %s (kept, never deleted)\n", r->aside);
    }
    return journal_remove(r);
io:
    ctl_err("cannot swap %s and %s: %s; run recover again to complete it", r->staging, r->dir,
            strerror(errno));
    return NS_EIO;
}

/* Builds the new store under the journal (phase build), then swaps. */
static int run(recover_t *r, const char *bdir, bool good, bool present)
{
    snprintf(r->phase, sizeof r->phase, "build");
    int rc = ns_fs_rmtree(r->staging); /* left by a run killed before its journal */
    rc = rc ? rc : journal_write(r);
    if (rc != NS_OK)
        return rc;
    rc = build_from_backup(r->staging, bdir);
    if (rc == NS_ENOTFOUND) {
        if (good) { /* --force on a good store: replacing it by an empty one loses data */
            ctl_err("no backup in %s checks good: %s is kept as it is", bdir, r->dir);
            rc = NS_EINVAL;
        } else if (!present) {
            ctl_err("%s holds no store and no backup in %s checks good: nothing to recover from",
                    r->dir, bdir);
            rc = NS_EINVAL;
        } else {
            rc = build_fresh(r->staging, r->dir);
        }
    }
    struct stat sb;
    if (rc == NS_OK && (ns_fs_sync_tree(r->staging) != NS_OK || lstat(r->staging, &sb) != 0)) {
        ctl_err("cannot sync %s: %s", r->staging, strerror(errno));
        rc = NS_EIO;
    }
    if (rc != NS_OK) { /* undo: D was not touched */
        ns_fs_rmtree(r->staging);
        journal_remove(r);
        return rc;
    }
    snprintf(r->phase, sizeof r->phase, "swap");
    r->dev = (unsigned long long)sb.st_dev;
    r->ino = (unsigned long long)sb.st_ino;
    if ((rc = journal_write(r)) != NS_OK)
        return rc;
    return finish_swap(r);
}

/* Whether D checks good: 1 good, 0 damaged (or absent: *present false),
 * -1 when it cannot be told (message printed). */
static int check_current(const char *dir, bool *present)
{
    char file[PATH_MAX_LEN + 16];
    ns_check_result_t res;
    memset(&res, 0, sizeof res);
    snprintf(file, sizeof file, "%s/data.mdb", dir);
    *present = exists(dir, NULL);
    if (!*present || !exists(file, NULL))
        return 0;
    int rc = ns_store_check_dir(dir, &res);
    if (rc == NS_OK && res.violations == 0) {
        printf("store %s checks good (%llu records)\n", dir, (unsigned long long)res.records);
        return 1;
    }
    if (rc == NS_OK) {
        printf("store %s: %d invariant violation(s)\n", dir, res.violations);
        return 0;
    }
    if (rc == NS_ECORRUPT) {
        printf("store %s: damaged in table %s: %s\n", dir, res.table, res.detail);
        return 0;
    }
    ctl_err("cannot check %s: %s", dir, res.detail[0] ? res.detail : ns_strerror(rc));
    return -1;
}

int ctl_cmd_recover(int argc, char **argv)
{
    const char *dir = NULL, *bdir_opt = NULL;
    bool force = false, present = false;
    ctl_opt_t opts[] = {{"--data-dir", &dir, NULL},
                        {"-d", &dir, NULL},
                        {"--backup-dir", &bdir_opt, NULL},
                        {"--force", NULL, &force},
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
    recover_t r;
    memset(&r, 0, sizeof r);
    char bdir[PATH_MAX_LEN];
    size_t len = strlen(dir);
    if (len >= sizeof r.dir) {
        ctl_err("recover: --data-dir is too long");
        return CTL_USAGE;
    }
    while (len > 1 && dir[len - 1] == '/') /* "D/" and "D" are one directory */
        len--;
    memcpy(r.dir, dir, len);
    snprintf(r.journal, sizeof r.journal, "%s" NS_RECOVER_JOURNAL_SUFFIX, r.dir);
    snprintf(r.staging, sizeof r.staging, "%s.recover-new", r.dir);
    if (bdir_opt)
        snprintf(bdir, sizeof bdir, "%s", bdir_opt);
    else
        snprintf(bdir, sizeof bdir, "%s.backups", r.dir);

    int jrc = journal_read(&r);
    if (jrc == NS_OK && strcmp(r.phase, "swap") == 0) {
        printf("a previous recover of %s was interrupted while swapping in the new store: "
               "completing it\n",
               r.dir);
        return finish_swap(&r) == NS_OK ? CTL_OK : CTL_IO;
    }
    if (jrc == NS_OK) { /* phase build: D untouched; the half-built store goes */
        printf("a previous recover of %s was interrupted while building the new store: "
               "undoing it (%s was not touched)\n",
               r.dir, r.dir);
        if (ns_fs_rmtree(r.staging) != NS_OK || journal_remove(&r) != NS_OK) {
            ctl_err("cannot remove %s: %s", r.staging, strerror(errno));
            return CTL_IO;
        }
    } else if (jrc != NS_ENOTFOUND) {
        return CTL_IO;
    }
    memset(r.aside, 0, sizeof r.aside);

    int good = check_current(r.dir, &present);
    if (good < 0)
        return CTL_IO;
    if (good && !force) {
        ctl_err("%s checks good: nothing to recover (--force replaces it with the newest good "
                "backup and keeps it aside)",
                r.dir);
        return CTL_FAILED;
    }
    pick_aside(&r, good ? "replaced" : "damaged");
    if (run(&r, bdir, good == 1, present) != NS_OK)
        return CTL_IO;
    printf("recovered %s\n", r.dir);
    return CTL_OK;
}
