/* env.c - opening the LMDB environment, the directory lock, migrations,
 * transactions, map growth, backup, and the translation of LMDB errors. */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "internal.h"
#include "route_index.h"
#include "route_memo.h"
#include "migrations/migrations.h"
#include "ns/fsutil.h"
#include "ns/log.h"

const char *const ns_db_names[NS_DB_COUNT] = {
    "meta",   "kvns",          "kv",          "clusters", "groups", "live",
    "queues", "broker_topics", "routes",      "mappings", "audit",  "admin_audit",
    "users",  "digest",        "kv_versions",
};

/* LMDB's code -> ours; NS_EINTERNAL for one we do not know. */
static int translate(int rc)
{
    switch (rc) {
    case 0:
        return NS_OK;
    case MDB_NOTFOUND:
        return NS_ENOTFOUND;
    case MDB_MAP_FULL:
        return NS_EMAPFULL;
    case MDB_KEYEXIST:
        return NS_EEXIST;
    case MDB_CORRUPTED:
    case MDB_INVALID:
    case MDB_VERSION_MISMATCH:
    case MDB_PAGE_NOTFOUND:
    case MDB_INCOMPATIBLE:
        return NS_ECORRUPT;
    case ENOMEM:
        return NS_ENOMEM;
    case EINVAL:
        return NS_EINVAL;
    case EAGAIN:
        return NS_ELOCKED;
    case ENOSPC:
        NS_LOG_ERROR("store: write failed: %s (ENOSPC)", strerror(rc));
        return NS_ENOSPC;
    case EIO:
        NS_LOG_ERROR("store: I/O failed: %s (EIO)", strerror(rc));
        return NS_EIO;
    case EACCES:
    case EROFS:
    case ENOENT:
        return NS_EIO;
    default:
        return NS_EINTERNAL;
    }
}

int ns_lmdb_error(int rc)
{
    int ns = translate(rc);
    /* the answers callers expect are not trouble; the rest is logged with
     * LMDB's own code and words, which ours would otherwise lose */
    if (ns != NS_OK && ns != NS_ENOTFOUND && ns != NS_EEXIST && ns != NS_EMAPFULL)
        NS_LOG_ERROR("lmdb: %s (%d) -> %s", mdb_strerror(rc), rc, ns_errname(ns));
    return ns;
}

uint32_t ns_store_latest_schema(void)
{
    return ns_migrations[ns_migrations_count - 1].version;
}

uint32_t ns_store_schema_version(const ns_store_t *s)
{
    return s->schema;
}

static int lock_path(const char *dir, char *buf, size_t n)
{
    return snprintf(buf, n, "%s/LOCK", dir) < (int)n ? NS_OK : NS_EINVAL;
}

long ns_store_lock_holder(const char *dir)
{
    char path[4096], pid[32] = {0};
    if (lock_path(dir, path, sizeof path) != NS_OK)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    long holder = 0;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0) {
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        holder = n > 0 ? strtol(pid, NULL, 10) : -1;
        if (holder == 0)
            holder = -1;
    } else {
        flock(fd, LOCK_UN);
    }
    close(fd);
    return holder;
}

/* Takes the exclusive lock on dir/LOCK and records our pid in it. */
static int take_dir_lock(ns_store_t *s, char *err, size_t errlen)
{
    char path[4096];
    if (lock_path(s->dir, path, sizeof path) != NS_OK)
        return NS_EINVAL;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NS_EIO;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = {0};
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        close(fd);
        snprintf(err, errlen, "data directory %s is locked by another namesrv process (pid %s)",
                 s->dir, n > 0 ? strtok(pid, "\n") : "unknown");
        return NS_ELOCKED;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        close(fd);
        return NS_EIO;
    }
    s->lock_fd = fd;
    return NS_OK;
}

/* Reads meta/schema_version inside txn; 0 for a brand-new environment.
 * NS_ECORRUPT for an LMDB file that is not ours. */
static int read_schema(MDB_txn *txn, uint32_t *out)
{
    MDB_dbi main_dbi, meta;
    int rc = mdb_dbi_open(txn, NULL, 0, &main_dbi);
    if (rc != 0)
        return ns_lmdb_error(rc);
    MDB_stat st;
    rc = mdb_stat(txn, main_dbi, &st);
    if (rc != 0)
        return ns_lmdb_error(rc);
    if (st.ms_entries == 0) {
        *out = 0;
        return NS_OK;
    }
    rc = mdb_dbi_open(txn, "meta", 0, &meta);
    if (rc != 0)
        return NS_ECORRUPT;
    MDB_val k = ns_val("schema_version", 14), v;
    rc = mdb_get(txn, meta, &k, &v);
    if (rc != 0 || v.mv_size != 8)
        return NS_ECORRUPT;
    uint64_t ver;
    memcpy(&ver, v.mv_data, 8);
    *out = (uint32_t)ver;
    return NS_OK;
}

/* Runs the pending migration steps and the version bump in one txn. */
static int migrate_once(ns_store_t *s, uint32_t target, char *err, size_t errlen)
{
    MDB_txn *txn = NULL;
    uint32_t cur = 0;
    int rc = mdb_txn_begin(s->env, NULL, s->read_only ? MDB_RDONLY : 0, &txn);
    if (rc != 0) {
        snprintf(err, errlen, "cannot begin transaction: %s", mdb_strerror(rc));
        rc = ns_lmdb_error(rc);
        goto out;
    }
    rc = read_schema(txn, &cur);
    if (rc != NS_OK) {
        snprintf(err, errlen,
                 "%s does not hold a namesrv store (no schema version): refusing "
                 "to touch it",
                 s->dir);
        goto out;
    }
    if (cur > ns_store_latest_schema()) {
        snprintf(err, errlen,
                 "store schema version %u is newer than this binary supports (%u); "
                 "upgrade namesrvd",
                 cur, ns_store_latest_schema());
        rc = NS_ESCHEMA;
        goto out;
    }
    s->schema = cur;
    if (cur >= target) {
        rc = NS_OK;
        goto out;
    }
    if (s->read_only) {
        snprintf(err, errlen,
                 "store schema version %u is older than %u; start namesrvd once to "
                 "migrate it",
                 cur, target);
        rc = NS_ESCHEMA;
        goto out;
    }
    for (size_t i = 0; i < ns_migrations_count; i++) {
        const ns_migration_t *m = &ns_migrations[i];
        if (m->version <= cur || m->version > target)
            continue;
        int mrc = m->apply(txn);
        if (mrc == MDB_MAP_FULL) {
            rc = NS_EMAPFULL; /* migrate() grows the map and runs it again */
            s->schema = cur;
            goto out;
        }
        if (mrc != 0) {
            snprintf(err, errlen, "migration %u (%s) failed: %s", m->version, m->name,
                     mdb_strerror(mrc));
            rc = ns_lmdb_error(mrc);
            goto out;
        }
        NS_LOG_INFO("store %s: migrated schema to version %u (%s)", s->dir, m->version, m->name);
        s->schema = m->version;
    }
    MDB_dbi meta;
    uint64_t ver = s->schema;
    MDB_val k = ns_val("schema_version", 14), v = ns_val(&ver, 8);
    int prc = mdb_dbi_open(txn, "meta", 0, &meta);
    if (prc == 0)
        prc = mdb_put(txn, meta, &k, &v, 0);
    if (prc == 0) {
        prc = mdb_txn_commit(txn); /* frees txn, committed or not */
        txn = NULL;
    }
    if (prc == MDB_MAP_FULL) {
        rc = NS_EMAPFULL;
        s->schema = cur;
        goto out;
    }
    if (prc != 0) {
        snprintf(err, errlen, "cannot record schema version: %s", mdb_strerror(prc));
        rc = ns_lmdb_error(prc);
        goto out;
    }
    rc = NS_OK;
out:
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

/* The migrations, in one transaction that is run again on a map twice as
 * large (up to map_max) each time it fills it: a migration rewrites whole
 * tables, and a store that fits its map today may need more while the old
 * and the new pages both live in the transaction. No other transaction is
 * open here, so mdb_env_set_mapsize may run. */
static int migrate(ns_store_t *s, uint32_t target, char *err, size_t errlen)
{
    int rc;
    while ((rc = migrate_once(s, target, err, errlen)) == NS_EMAPFULL) {
        if (s->map_size >= s->map_max) {
            snprintf(err, errlen,
                     "migration of %s needs a map larger than mapMaxBytes (%zu bytes): raise it",
                     s->dir, s->map_max);
            return NS_EMAPFULL;
        }
        size_t next = s->map_size > s->map_max / 2 ? s->map_max : s->map_size * 2;
        int mrc = mdb_env_set_mapsize(s->env, next);
        if (mrc != 0) {
            snprintf(err, errlen, "cannot grow the map of %s to %zu bytes: %s", s->dir, next,
                     mdb_strerror(mrc));
            return ns_lmdb_error(mrc);
        }
        NS_LOG_INFO("store %s: map grown from %zu to %zu bytes for the migrations", s->dir,
                    s->map_size, next);
        s->map_size = next;
    }
    return rc;
}

/* Opens the handles of every table the schema has. */
static int open_dbis(ns_store_t *s)
{
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (rc != 0)
        return ns_lmdb_error(rc);
    for (int i = 0; i < NS_DB_COUNT; i++) {
        rc = mdb_dbi_open(txn, ns_db_names[i], 0, &s->dbi[i]);
        s->have_db[i] = rc == 0;
        if (rc != 0 && rc != MDB_NOTFOUND) {
            mdb_txn_abort(txn);
            return ns_lmdb_error(rc);
        }
    }
    rc = mdb_txn_commit(txn); /* keeps the handles open for the env */
    return ns_lmdb_error(rc);
}

/* Computes the digest a migration left stale (meta "digest_stale"), in one
 * write transaction that also clears the mark; a crash before the commit
 * leaves the mark for the next open. Grows the map as the writer would. */
static int digest_catch_up(ns_store_t *s)
{
    uint64_t stale = 0;
    ns_txn_t *t = NULL;
    int rc;
    for (;;) {
        if ((rc = ns_txn_begin(s, true, &t)) != NS_OK)
            return rc;
        rc = ns_meta_get_u64(t, "digest_stale", &stale);
        if (rc == NS_ENOTFOUND) {
            ns_txn_abort(t);
            return NS_OK;
        }
        rc = rc ? rc : ns_digest_rebuild(t);
        rc = rc ? rc : ns_meta_del(t, "digest_stale");
        if (rc == NS_OK)
            rc = ns_txn_commit(t);
        else
            ns_txn_abort(t);
        t = NULL;
        if (rc != NS_EMAPFULL || (rc = ns_store_grow(s)) != NS_OK)
            break;
    }
    if (rc == NS_OK)
        NS_LOG_INFO("store %s: fleet digest computed from the data", s->dir);
    return rc;
}

/* Makes the names in directory dir durable (fsync(2): a file's own fsync
 * does not make its directory entry durable) and, with_parent, dir's own
 * name in its parent. A file system that cannot sync a directory (EINVAL)
 * is not an error. */
static int sync_dir(const char *dir, bool with_parent, char *err, size_t errlen)
{
    int rc = ns_fs_sync_path(dir);
    if (rc == NS_OK && with_parent)
        rc = ns_fs_sync_parent(dir);
    if (rc == NS_ENOMEM)
        return rc;
    if (rc == NS_OK || errno == EINVAL)
        return NS_OK;
    snprintf(err, errlen, "cannot sync directory %s%s: %s", dir,
             with_parent ? " or its parent" : "", strerror(errno));
    return NS_EIO;
}

/* Creates an empty store in s->dir whose data.mdb is never seen half
 * written: LMDB writes a new file's meta pages without syncing them, and a
 * power cut before the first commit's fdatasync left a data.mdb (empty, or
 * with torn meta pages) that every later open refuses as damaged. So the
 * environment is made as data.mdb.new (and its lock file), synced, then
 * renamed to data.mdb and the directory synced: after a cut, data.mdb is
 * either whole or absent (made again at the next start). */
static int create_store(const ns_store_t *s, char *err, size_t errlen)
{
    char tmp[4096], lock[4200], final[4096];
    snprintf(tmp, sizeof tmp, "%s/data.mdb.new", s->dir);
    snprintf(lock, sizeof lock, "%s-lock", tmp);
    snprintf(final, sizeof final, "%s/data.mdb", s->dir);
    unlink(tmp); /* what a cut left of an earlier try */
    unlink(lock);
    MDB_env *env = NULL;
    int rc = mdb_env_create(&env);
    if (rc == 0)
        rc = mdb_env_set_mapsize(env, s->map_size);
    if (rc == 0)
        rc = mdb_env_open(env, tmp, MDB_NOSUBDIR | MDB_NOTLS, 0600);
    if (rc == 0)
        rc = mdb_env_sync(env, 1);
    if (env)
        mdb_env_close(env);
    unlink(lock);
    if (rc != 0) {
        snprintf(err, errlen, "cannot create store in %s: %s", s->dir, mdb_strerror(rc));
        unlink(tmp);
        return ns_lmdb_error(rc);
    }
    if (rename(tmp, final) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", final, strerror(errno));
        unlink(tmp);
        return NS_EIO;
    }
    return sync_dir(s->dir, false, err, errlen);
}

/* Creates and opens s->env with flags; a map size already recorded in the
 * file wins over a smaller configured one. */
static int env_open(ns_store_t *s, unsigned flags, char *err, size_t errlen)
{
    int rc;
    if ((rc = mdb_env_create(&s->env)) != 0 || (rc = mdb_env_set_maxdbs(s->env, 32)) != 0 ||
        (rc = mdb_env_set_maxreaders(s->env, 256)) != 0 ||
        (rc = mdb_env_set_mapsize(s->env, s->map_size)) != 0) {
        snprintf(err, errlen, "cannot create LMDB environment: %s", mdb_strerror(rc));
        return ns_lmdb_error(rc);
    }
    /* 0600 and a 0700 directory: the store holds the users' secrets (v6) */
    rc = mdb_env_open(s->env, s->dir, flags, 0600);
    if (rc != 0) {
        snprintf(err, errlen, "cannot open store in %s: %s", s->dir, mdb_strerror(rc));
        rc = ns_lmdb_error(rc);
        return rc == NS_EINTERNAL ? NS_ECORRUPT : rc;
    }
    MDB_envinfo info;
    mdb_env_info(s->env, &info);
    if (info.me_mapsize > s->map_size)
        s->map_size = info.me_mapsize;
    return NS_OK;
}

static int store_open(const ns_store_opts_t *opts, bool file_check, ns_store_t **out, char *err,
                      size_t errlen)
{
    ns_store_t *s = NULL;
    int rc;
    char dummy[8];
    if (err == NULL) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = 0;
    *out = NULL;
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return NS_ENOMEM;
    s->lock_fd = -1;
    s->grow_percent = NS_STORE_GROW_AT_PERCENT;
    s->route_memo_slots = opts->route_memo_slots;
    s->read_only = opts->read_only;
    s->map_size = opts->map_size_bytes ? opts->map_size_bytes : 64u << 20;
    s->map_max = opts->map_max_bytes ? opts->map_max_bytes : (size_t)16 << 30;
    if (s->map_max < s->map_size)
        s->map_max = s->map_size;
    s->dir = strdup(opts->dir);
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&s->resize_lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    if (s->dir == NULL) {
        rc = NS_ENOMEM;
        goto fail;
    }
    bool created_dir = !opts->read_only && mkdir(s->dir, 0700) == 0;
    if (!opts->read_only && !created_dir && errno != EEXIST) {
        snprintf(err, errlen, "cannot create data directory %s: %s", s->dir, strerror(errno));
        rc = NS_EIO;
        goto fail;
    }
    if (opts->lock && (rc = take_dir_lock(s, err, errlen)) != NS_OK)
        goto fail;
    char datafile[4096];
    snprintf(datafile, sizeof datafile, "%s/data.mdb", s->dir);
    if (opts->read_only && access(datafile, R_OK) != 0) {
        snprintf(err, errlen, "%s: no store here (%s)", s->dir, strerror(errno));
        rc = NS_EIO;
        goto fail;
    }
    /* before LMDB maps the file: a file cut short is damage reported here,
     * not a SIGBUS later (store/file.c) */
    ns_store_file_t fi;
    memset(&fi, 0, sizeof fi);
    rc = file_check ? ns_store_file_check(s->dir, &fi, err, errlen) : NS_OK;
    if (rc == NS_ENOTFOUND) /* a new store: LMDB creates the file */
        err[0] = 0;
    else if (rc != NS_OK)
        goto fail;
    /* The map the file was last written with wins over a smaller configured
     * one: LMDB itself takes the configured size (raised only to the pages
     * in use), so a store grown to 128 MiB and reopened with the default
     * 64 MiB came back at 100 % of its map, and its first write filled it. */
    if (fi.meta_ok && fi.map_size > s->map_size)
        s->map_size = fi.map_size > s->map_max ? s->map_max : (size_t)fi.map_size;
    unsigned flags = MDB_NOTLS | MDB_NORDAHEAD;
    if (opts->read_only)
        flags |= MDB_RDONLY;
    if (opts->sync_mode == NS_SYNC_NOMETASYNC)
        flags |= MDB_NOMETASYNC;
    else if (opts->sync_mode == NS_SYNC_NOSYNC)
        flags |= MDB_NOSYNC;
    /* No MDB_WRITEMAP: measured, it halved registration commit speed (page
     * faults and msync of the whole mapping) for a gain in heap that small
     * write batches (writerBatchMax) give anyway; it would also resize a
     * file that turns out not to be a store. */
    if (!opts->read_only && access(datafile, F_OK) != 0 &&
        (rc = create_store(s, err, errlen)) != NS_OK)
        goto fail;
    if ((rc = env_open(s, flags, err, errlen)) != NS_OK)
        goto fail;
    /* lock.mdb and LOCK in s->dir (data.mdb is synced when the store is
     * made) and, when this open created s->dir, its name: before the first
     * commit that is acknowledged, or a power cut may take away the whole
     * store LMDB had fdatasync'ed (the simulated cuts of tests/powercut
     * found it so). */
    if (!opts->read_only && (rc = sync_dir(s->dir, created_dir, err, errlen)) != NS_OK)
        goto fail;
    int dead = 0;
    mdb_reader_check(s->env, &dead);
    if (dead > 0)
        NS_LOG_INFO("store %s: cleared %d stale reader slot(s)", s->dir, dead);
    uint32_t target = opts->target_schema ? opts->target_schema : ns_store_latest_schema();
    if ((rc = migrate(s, target, err, errlen)) != NS_OK)
        goto fail;
    if ((rc = open_dbis(s)) != NS_OK) {
        snprintf(err, errlen, "cannot open tables in %s: %s", s->dir, ns_strerror(rc));
        goto fail;
    }
    if (!s->read_only && (rc = digest_catch_up(s)) != NS_OK) {
        snprintf(err, errlen, "cannot compute the fleet digest of %s: %s", s->dir, ns_strerror(rc));
        goto fail;
    }
    /* headroom from the start: a store that comes (or migrated) near the
     * end of its map does not wait for its first write to fill it */
    if (!s->read_only && (rc = ns_store_keep_headroom(s)) != NS_OK && rc != NS_EMAPFULL) {
        snprintf(err, errlen, "cannot grow the map of %s: %s", s->dir, ns_strerror(rc));
        goto fail;
    }
    *out = s;
    return NS_OK;
fail:
    ns_store_close(s);
    return rc;
}

int ns_store_open(const ns_store_opts_t *opts, ns_store_t **out, char *err, size_t errlen)
{
    return store_open(opts, true, out, err, errlen);
}

int ns_store_open_unchecked(const ns_store_opts_t *opts, ns_store_t **out, char *err, size_t errlen)
{
    return store_open(opts, false, out, err, errlen);
}

void ns_store_close(ns_store_t *s)
{
    if (s == NULL)
        return;
    ns_route_index_free(s->route_index); /* its snapshot before the environment */
    if (s->env)
        mdb_env_close(s->env);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the flock */
    pthread_rwlock_destroy(&s->resize_lock);
    free(s->dir);
    free(s);
}

void ns_store_map_usage(ns_store_t *s, size_t *map_size, size_t *used_bytes)
{
    MDB_envinfo info;
    MDB_stat st;
    mdb_env_info(s->env, &info);
    mdb_env_stat(s->env, &st);
    *map_size = info.me_mapsize;
    *used_bytes = (info.me_last_pgno + 1) * (size_t)st.ms_psize;
}

void ns_store_readers(ns_store_t *s, unsigned *used, unsigned *max)
{
    MDB_envinfo info;
    mdb_env_info(s->env, &info);
    *used = info.me_numreaders;
    *max = info.me_maxreaders;
}

int ns_store_backup(ns_store_t *s, const char *dir, char *err, size_t errlen)
{
    uint64_t txnid = 0;
    return ns_store_copy(s, dir, &txnid, err, errlen);
}

int ns_store_copy(ns_store_t *s, const char *dir, uint64_t *txnid, char *err, size_t errlen)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return NS_EIO;
    }
    /* a hot copy runs a read transaction: no map resize meanwhile */
    pthread_rwlock_rdlock(&s->resize_lock);
    MDB_envinfo info;
    mdb_env_info(s->env, &info);
    *txnid = (uint64_t)info.me_last_txnid;
    int rc = mdb_env_copy2(s->env, dir, MDB_CP_COMPACT);
    pthread_rwlock_unlock(&s->resize_lock);
    if (rc != 0) {
        snprintf(err, errlen, "backup to %s failed: %s", dir, mdb_strerror(rc));
        return ns_lmdb_error(rc);
    }
    /* the copy holds the users' secrets too (v6): owner only */
    char path[4096];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    chmod(path, 0600);
    return NS_OK;
}

/* ---- transactions ---- */

static int txn_begin(ns_store_t *s, ns_txn_t *parent, bool write, ns_txn_t **out)
{
    ns_txn_t *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NS_ENOMEM;
    t->s = s;
    t->write = write;
    t->parent = parent;
    if (!write) {
        pthread_rwlock_rdlock(&s->resize_lock);
        t->holds_resize_lock = true;
    }
    int rc = mdb_txn_begin(s->env, parent ? parent->txn : NULL, write ? 0 : MDB_RDONLY, &t->txn);
    if (rc == MDB_MAP_RESIZED) { /* another process grew the map */
        mdb_env_set_mapsize(s->env, 0);
        rc = mdb_txn_begin(s->env, parent ? parent->txn : NULL, write ? 0 : MDB_RDONLY, &t->txn);
    }
    if (rc != 0) {
        if (t->holds_resize_lock)
            pthread_rwlock_unlock(&s->resize_lock);
        free(t);
        return ns_lmdb_error(rc);
    }
    *out = t;
    return NS_OK;
}

int ns_txn_begin(ns_store_t *s, bool write, ns_txn_t **out)
{
    if (write && s->read_only)
        return NS_EINVAL;
    return txn_begin(s, NULL, write, out);
}

static void txn_release(ns_txn_t *t)
{
    ns_digest_acc_free(t->digest);
    ns_route_memo_free(t->memo);
    if (t->holds_resize_lock)
        pthread_rwlock_unlock(&t->s->resize_lock);
    free(t);
}

/* LMDB reports a short page write as EIO, which is what a full disk gives
 * (the first write that does not fit is cut short): a commit failing with EIO
 * on a file system with no room left is named ENOSPC. */
static int commit_error(const ns_store_t *s, int rc)
{
    struct statvfs vfs;
    if (rc == EIO && s != NULL && s->dir != NULL && statvfs(s->dir, &vfs) == 0 &&
        (uint64_t)vfs.f_bavail * vfs.f_frsize < 1024u * 1024) {
        NS_LOG_ERROR("store %s: commit failed: %llu bytes left on its file system", s->dir,
                     (unsigned long long)vfs.f_bavail * vfs.f_frsize);
        rc = ENOSPC;
    }
    return ns_lmdb_error(rc);
}

int ns_txn_commit(ns_txn_t *t)
{
    ns_store_t *s = t->s;
    /* the digest's nodes are written last, once each (store/digest.c) */
    int drc = t->write ? ns_digest_flush(t) : NS_OK;
    if (drc != NS_OK) {
        ns_txn_abort(t);
        return drc;
    }
    ns_db_cursors_close(t);
    int rc = t->txn ? mdb_txn_commit(t->txn) : 0;
    if (rc == 0 && t->write && t->parent == NULL) /* visible to new readers now */
        atomic_fetch_add_explicit(&s->read_epoch, 2, memory_order_release);
    txn_release(t);
    return commit_error(s, rc);
}

size_t ns_txn_written(const ns_txn_t *t)
{
    while (t->parent)
        t = t->parent;
    return t->written;
}

void ns_txn_abort(ns_txn_t *t)
{
    if (t == NULL)
        return;
    ns_db_cursors_close(t);
    if (t->txn)
        mdb_txn_abort(t->txn);
    txn_release(t);
}

/* Under the resize lock, which map_moves is written under. */
static void memo_renewed(ns_txn_t *t)
{
    ns_route_memo_renewed(t->memo, (uint64_t)mdb_txn_id(t->txn), t->s->map_moves);
}

int ns_txn_read_renew(ns_store_t *s, ns_txn_t **slot)
{
    if (*slot == NULL) {
        int rc = txn_begin(s, NULL, false, slot);
        /* without the memo (out of memory) lookups only cost more */
        if (rc == NS_OK && s->route_memo_slots)
            (*slot)->memo = ns_route_memo_new(s->route_memo_slots);
        if (rc == NS_OK && (*slot)->memo)
            memo_renewed(*slot);
        return rc;
    }
    ns_txn_t *t = *slot;
    pthread_rwlock_rdlock(&s->resize_lock);
    t->holds_resize_lock = true;
    int rc = mdb_txn_renew(t->txn);
    if (rc != 0) {
        pthread_rwlock_unlock(&s->resize_lock);
        t->holds_resize_lock = false;
        return ns_lmdb_error(rc);
    }
    if (t->memo)
        memo_renewed(t);
    return NS_OK;
}

void ns_txn_read_reset(ns_txn_t *t)
{
    if (t == NULL)
        return;
    mdb_txn_reset(t->txn);
    if (t->holds_resize_lock) {
        pthread_rwlock_unlock(&t->s->resize_lock);
        t->holds_resize_lock = false;
    }
}

const ns_store_epoch_t *ns_store_read_epoch(ns_store_t *s)
{
    return &s->read_epoch;
}

int ns_store_grow(ns_store_t *s)
{
    if (s->map_size >= s->map_max)
        return NS_EMAPFULL;
    size_t next = s->map_size > s->map_max / 2 ? s->map_max : s->map_size * 2;
    if (s->route_index) /* its snapshot would hold the resize off */
        ns_route_index_let_go(s->route_index);
    /* odd while the resize waits: readers that keep a snapshot between reads
     * let it go at the end of the current one and keep none meanwhile */
    atomic_fetch_add_explicit(&s->read_epoch, 1, memory_order_release);
    pthread_rwlock_wrlock(&s->resize_lock);
    int rc = mdb_env_set_mapsize(s->env, next);
    s->map_moves++; /* the map may lie elsewhere now (route_memo.h) */
    pthread_rwlock_unlock(&s->resize_lock);
    atomic_fetch_add_explicit(&s->read_epoch, 1, memory_order_release);
    if (rc != 0)
        return ns_lmdb_error(rc);
    NS_LOG_INFO("store %s: map grown from %zu to %zu bytes", s->dir, s->map_size, next);
    s->map_size = next;
    atomic_fetch_add_explicit(&s->grown, 1, memory_order_relaxed);
    return NS_OK;
}

/* LMDB writes the map size into the meta page only when a transaction
 * that changed something commits, so a map grown after the last write of a
 * run would be forgotten at close: one small write (the schema version,
 * unchanged) records it. */
static int record_map_size(ns_store_t *s)
{
    ns_txn_t *t = NULL;
    int rc = ns_txn_begin(s, true, &t);
    rc = rc ? rc : ns_meta_put_u64(t, "schema_version", s->schema);
    if (rc == NS_OK) {
        rc = ns_txn_commit(t);
        t = NULL;
    }
    ns_txn_abort(t);
    return rc;
}

void ns_store_set_grow_percent(ns_store_t *s, unsigned percent)
{
    s->grow_percent = percent;
}

int ns_store_keep_headroom(ns_store_t *s)
{
    unsigned long long percent = s->grow_percent;
    size_t map = 0, used = 0;
    int rc = NS_OK;
    if (s->read_only)
        return NS_OK;
    ns_store_map_usage(s, &map, &used);
    if ((unsigned long long)used * 100 <= (unsigned long long)map * percent)
        return NS_OK;
    if (s->map_size >= s->map_max) { /* said once, not after every batch */
        if (!s->warned_at_max)
            NS_LOG_WARN("store %s: %zu of %zu map bytes used and the map is at mapMaxBytes: "
                        "raise mapMaxBytes before it fills",
                        s->dir, used, map);
        s->warned_at_max = true;
        return NS_EMAPFULL;
    }
    NS_LOG_INFO("store %s: %zu of %zu map bytes used (over %llu %%): growing the map before it "
                "fills",
                s->dir, used, map, percent);
    while (rc == NS_OK &&
           (unsigned long long)used * 100 > (unsigned long long)s->map_size * percent)
        rc = ns_store_grow(s);
    if (s->map_size > map) { /* grown: record it, whether or not it reached the limit */
        int wrc = record_map_size(s);
        rc = wrc != NS_OK ? wrc : rc;
    }
    return rc;
}

uint64_t ns_store_map_grown(ns_store_t *s)
{
    return atomic_load_explicit(&s->grown, memory_order_relaxed);
}

int ns_store_write(ns_store_t *s, ns_write_fn fn, void *ctx)
{
    for (;;) {
        ns_txn_t *t = NULL;
        int rc = ns_txn_begin(s, true, &t);
        rc = rc ? rc : fn(t, ctx);
        if (rc == NS_OK) {
            rc = ns_txn_commit(t);
            t = NULL;
        }
        ns_txn_abort(t);
        if (rc == NS_OK) {             /* what the next writer finds: room, not a full map */
            ns_store_keep_headroom(s); /* logged; the write stands */
            return NS_OK;
        }
        if (rc != NS_EMAPFULL)
            return rc;
        /* the map is full: grow it and write everything again */
        if ((rc = ns_store_grow(s)) != NS_OK)
            return rc;
    }
}
