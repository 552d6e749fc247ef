/* file.c - what the store file says about itself before LMDB maps it, and
 * the backup sets (include/ns/store.h, "the store file" and "backups").
 *
 * LMDB maps data.mdb whole and trusts that every page its newest meta page
 * names is in the file: a file cut short (a copy that stopped, a full disk,
 * a hand-made truncate) makes the first read past its end a SIGBUS. The two
 * meta pages are read here with pread, the way mdb_env_read_header reads
 * them, so every opening (namesrvd, every namesrvctl command, the check's
 * child) refuses such a file with one message instead of dying.
 *
 * Meta page layout (LMDB 0.9, the only data format 0.9 writes): page header
 * 16 bytes (pgno 8, pad 2, flags 2 with P_META 0x08, lower 2, upper 2), then
 * magic 4 (0xBEEFC0DE), version 4 (1), address 8, mapsize 8, dbs[2] of 48
 * (the free DB's first 4 bytes are the page size), last_pg 8, txnid 8. The
 * page in use is the one with the larger txnid (mdb_env_pick_meta). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "ns/clock.h"
#include "ns/fsutil.h"

#define META_OFF 16
#define META_MAGIC 0xBEEFC0DEu

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* host order, as LMDB writes it */
    return v;
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* One meta page at off: true with its fields when it is one. */
static bool read_meta(int fd, off_t off, uint32_t *psize, uint64_t *last, uint64_t *txnid,
                      uint64_t *mapsize)
{
    uint8_t pg[META_OFF + 152];
    if (pread(fd, pg, sizeof pg, off) != (ssize_t)sizeof pg)
        return false;
    const uint8_t *m = pg + META_OFF;
    uint16_t flags = (uint16_t)(pg[10] | pg[11] << 8);
    if (!(flags & 0x08) || rd32(m) != META_MAGIC || rd32(m + 4) != 1)
        return false;
    *psize = rd32(m + 24);
    *mapsize = rd64(m + 16);
    *last = rd64(m + 24 + 96);
    *txnid = rd64(m + 24 + 96 + 8);
    return true;
}

int ns_store_file_check(const char *dir, ns_store_file_t *out, char *err, size_t errlen)
{
    char path[4200];
    struct stat sb;
    memset(out, 0, sizeof *out);
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (stat(path, &sb) != 0) {
        snprintf(err, errlen, "%s holds no store (no data.mdb: %s)", dir, strerror(errno));
        return errno == ENOENT ? NS_ENOTFOUND : NS_EIO;
    }
    /* a usage problem (a wrong path, a directory made by hand), not damage */
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s is %s, not a store file: is %s the data directory?", path,
                 S_ISDIR(sb.st_mode) ? "a directory" : "not a regular file", dir);
        return NS_EINVAL;
    }
    out->file_size = (uint64_t)sb.st_size;
    if (sb.st_size == 0) /* created, never committed: LMDB initialises it */
        return NS_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return NS_EIO;
    }
    uint32_t ps0 = 0, ps1 = 0;
    uint64_t l0 = 0, l1 = 0, t0 = 0, t1 = 0, m0 = 0, m1 = 0;
    bool ok0 = read_meta(fd, 0, &ps0, &l0, &t0, &m0);
    bool ok1 = ok0 && ps0 >= 512 && read_meta(fd, ps0, &ps1, &l1, &t1, &m1);
    close(fd);
    if (!ok0 || !ok1) {
        /* not LMDB's, or its first pages are gone: LMDB refuses it without
         * mapping anything (MDB_INVALID), with its own words */
        out->meta_ok = false;
        return NS_OK;
    }
    bool second = t1 > t0;
    out->meta_ok = true;
    out->page_size = ps0;
    out->last_pgno = second ? l1 : l0;
    out->txnid = second ? t1 : t0;
    out->map_size = second ? m1 : m0;
    uint64_t need = (out->last_pgno + 1) * (uint64_t)ps0;
    if (out->file_size < need) {
        snprintf(err, errlen,
                 "data.mdb is %" PRIu64 " bytes but its meta page (transaction %" PRIu64
                 ") uses pages up to %" PRIu64 ", %" PRIu64 " bytes: the file was cut short",
                 out->file_size, out->txnid, out->last_pgno, need);
        return NS_ECORRUPT;
    }
    return NS_OK;
}

/* ---- backups ---- */

#define INFO_NAME "BACKUP-INFO"

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* Parses dir/BACKUP-INFO into e; false when there is none or it is not one. */
static bool read_info(const char *dir, ns_backup_entry_t *e)
{
    char path[4400], line[256];
    snprintf(path, sizeof path, "%s/" INFO_NAME, dir);
    FILE *f = fopen(path, "re");
    bool magic = false;
    if (f == NULL)
        return false;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v = 0;
        long long w = 0;
        if (strncmp(line, "namesrv-backup 1", 16) == 0)
            magic = true;
        else if (sscanf(line, "sequence %llu", &v) == 1)
            e->seq = v;
        else if (sscanf(line, "txnid %llu", &v) == 1)
            e->txnid = v;
        else if (sscanf(line, "created_ms %lld", &w) == 1)
            e->created_ms = w;
    }
    fclose(f);
    return magic;
}

static int cmp_newest_first(const void *a, const void *b)
{
    const ns_backup_entry_t *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq > y->seq ? -1 : 1;
    if (x->txnid != y->txnid)
        return x->txnid > y->txnid ? -1 : 1;
    return strcmp(y->name, x->name);
}

int ns_backup_list(const char *bdir, ns_backup_entry_t **out, size_t *n_out)
{
    DIR *d = opendir(bdir);
    struct dirent *e;
    ns_backup_entry_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc = NS_OK;
    *out = NULL;
    *n_out = 0;
    if (d == NULL)
        return errno == ENOENT ? NS_OK : NS_EIO;
    while ((e = readdir(d)) != NULL) {
        char path[4300];
        ns_store_file_t fi;
        char err[256];
        if (e->d_name[0] == '.' || ends_with(e->d_name, ".tmp"))
            continue; /* a ".tmp" was never renamed: not a finished backup */
        snprintf(path, sizeof path, "%s/%s", bdir, e->d_name);
        if (ns_store_file_check(path, &fi, err, sizeof err) == NS_ENOTFOUND)
            continue; /* not a store at all (the settings file, a note) */
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            ns_backup_entry_t *p = realloc(v, cap * sizeof *p);
            if (p == NULL) {
                rc = NS_ENOMEM;
                break;
            }
            v = p;
        }
        ns_backup_entry_t *b = &v[n];
        memset(b, 0, sizeof *b);
        b->name = strdup(e->d_name);
        b->path = strdup(path);
        if (b->name == NULL || b->path == NULL) {
            free(b->name);
            free(b->path);
            rc = NS_ENOMEM;
            break;
        }
        b->has_info = read_info(path, b);
        if (!b->has_info) /* a copy made by hand: its own meta page's txnid */
            b->txnid = fi.txnid;
        n++;
    }
    closedir(d);
    if (rc != NS_OK) {
        ns_backup_list_free(v, n);
        return rc;
    }
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_newest_first);
    *out = v;
    *n_out = n;
    return NS_OK;
}

void ns_backup_list_free(ns_backup_entry_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].path);
    }
    free(v);
}

int ns_backup_next_seq(const char *bdir, uint64_t *out)
{
    ns_backup_entry_t *v = NULL;
    size_t n = 0;
    int rc = ns_backup_list(bdir, &v, &n);
    uint64_t max = 0;
    for (size_t i = 0; rc == NS_OK && i < n; i++)
        if (v[i].seq > max)
            max = v[i].seq;
    ns_backup_list_free(v, n);
    *out = max + 1;
    return rc;
}

int ns_store_backup_stage(ns_store_t *s, const char *tmp, uint64_t seq, uint64_t *txnid_out,
                          char *err, size_t errlen)
{
    char info[256], path[4300];
    ns_fs_rmtree(tmp); /* what a killed run left under this name */
    uint64_t txnid = 0;
    int rc = ns_store_copy(s, tmp, &txnid, err, errlen);
    if (rc != NS_OK)
        return rc;
    int n = snprintf(
        info, sizeof info, "namesrv-backup 1\nsequence %llu\ntxnid %llu\ncreated_ms %lld\n",
        (unsigned long long)seq, (unsigned long long)txnid, (long long)ns_clock_wall_ms());
    snprintf(path, sizeof path, "%s/" INFO_NAME, tmp);
    /* the copy, the info file and the directory's names reach the disk
     * before the caller renames it to its final name */
    if (ns_fs_write_atomic(path, info, (size_t)n, 0600) != NS_OK || ns_fs_sync_tree(tmp) != NS_OK) {
        snprintf(err, errlen, "cannot sync the backup in %s: %s", tmp, strerror(errno));
        return NS_EIO;
    }
    if (txnid_out)
        *txnid_out = txnid;
    return NS_OK;
}
