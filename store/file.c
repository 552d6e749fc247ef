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
#include "lmdb_page.h"
#include "ns/clock.h"
#include "ns/fsutil.h"

/* One meta page at off: true with its fields when it is one. */
static bool read_meta(int fd, off_t off, uint32_t *psize, uint64_t *last, uint64_t *txnid,
                      uint64_t *mapsize, uint64_t *free_root)
{
    uint8_t pg[NS_LMDB_PAGE_HDR + 152];
    if (pread(fd, pg, sizeof pg, off) != (ssize_t)sizeof pg)
        return false;
    const uint8_t *m = pg + NS_LMDB_PAGE_HDR;
    if (!(ns_lmdb_rd16(pg + 10) & NS_LMDB_P_META) || ns_lmdb_rd32(m) != NS_LMDB_META_MAGIC ||
        ns_lmdb_rd32(m + 4) != 1)
        return false;
    *psize = ns_lmdb_rd32(m + 24);
    *mapsize = ns_lmdb_rd64(m + 16);
    *free_root = ns_lmdb_rd64(m + 24 + 40); /* dbs[0].md_root: the free pages' tree */
    *last = ns_lmdb_rd64(m + 24 + 96);
    *txnid = ns_lmdb_rd64(m + 24 + 96 + 8);
    return true;
}

/* ---- a file shorter than its meta page says ----
 *
 * Not always damage: LMDB counts in last_pg every page a transaction took,
 * but a page the transaction took and freed again before its commit (a
 * "loose" page) is never written, only listed in the free pages' tree. When
 * such pages are the highest ones, the file ends before them (seen after a
 * kill -9 in crash_kv_crash: 560 pages, last_pg 561, pages 560-561 free).
 * LMDB never reads a free page, so the file is whole when every page past
 * its end is listed free; the tree is read here with pread, every page of
 * it inside the file, the way the meta pages are (the page format:
 * lmdb_page.h; a free-tree value is an ID list: its count, then the page
 * numbers, each 8 bytes). */
#define FREE_WALK_MAX_PAGES 65536u
#define FREE_TAIL_MAX 65536u

typedef struct {
    int fd;
    uint32_t ps;
    uint64_t in_file; /* pages the file holds */
    uint64_t last;
    uint8_t *missing; /* per page past the end: 1 until listed free */
    uint64_t left;    /* pages past the end not listed yet */
} tail_t;

static void tail_list(tail_t *t, const uint8_t *idl, uint64_t len)
{
    if (len < 8)
        return;
    uint64_t n = ns_lmdb_rd64(idl);
    if (n > (len - 8) / 8)
        n = (len - 8) / 8;
    for (uint64_t i = 1; i <= n; i++) {
        uint64_t pg = ns_lmdb_rd64(idl + 8 * i);
        if (pg >= t->in_file && pg <= t->last && t->missing[pg - t->in_file]) {
            t->missing[pg - t->in_file] = 0;
            t->left--;
        }
    }
}

/* One leaf node's ID list, inline or on its overflow pages. */
static bool tail_leaf_value(tail_t *t, const uint8_t *pg, const uint8_t *node)
{
    uint64_t dsize = ns_lmdb_node_dsize(node);
    const uint8_t *data = node + NS_LMDB_NODE_HDR + ns_lmdb_node_ksize(node);
    if (!(ns_lmdb_node_flags(node) & NS_LMDB_F_BIGDATA)) {
        if (data + dsize > pg + t->ps)
            return false;
        tail_list(t, data, dsize);
        return true;
    }
    if (data + 8 > pg + t->ps)
        return false;
    uint64_t ov = ns_lmdb_rd64(data), pages = (16 + dsize + t->ps - 1) / t->ps;
    if (ov < 2 || ov + pages > t->in_file || dsize > 64u << 20)
        return false;
    uint8_t *buf = malloc(dsize ? dsize : 1);
    if (buf == NULL)
        return false;
    bool ok = pread(t->fd, buf, dsize, (off_t)(ov * t->ps + 16)) == (ssize_t)dsize;
    if (ok)
        tail_list(t, buf, dsize);
    free(buf);
    return ok;
}

static bool tail_walk(tail_t *t, uint64_t root)
{
    uint64_t *stack = malloc(FREE_WALK_MAX_PAGES * sizeof *stack);
    uint8_t *pg = malloc(t->ps);
    size_t top = 0, seen = 0;
    bool ok = stack && pg;
    if (ok)
        stack[top++] = root;
    while (ok && top > 0 && t->left > 0) {
        uint64_t no = stack[--top];
        ok = no >= 2 && no < t->in_file && ++seen <= FREE_WALK_MAX_PAGES &&
             pread(t->fd, pg, t->ps, (off_t)(no * t->ps)) == (ssize_t)t->ps &&
             ns_lmdb_rd64(pg) == no;
        uint16_t flags = ok ? ns_lmdb_rd16(pg + 10) : 0;
        size_t lower = ok ? ns_lmdb_page_lower(pg) : 0;
        ok = ok && (flags & (NS_LMDB_P_BRANCH | NS_LMDB_P_LEAF)) && lower >= NS_LMDB_PAGE_HDR &&
             lower <= t->ps;
        for (unsigned i = 0; ok && i < (unsigned)(lower - NS_LMDB_PAGE_HDR) / 2; i++) {
            size_t at = ns_lmdb_node_off(pg, i);
            ok = at >= lower && at + NS_LMDB_NODE_HDR <= t->ps;
            const uint8_t *node = pg + at;
            if (ok && (flags & NS_LMDB_P_BRANCH)) {
                ok = top < FREE_WALK_MAX_PAGES;
                if (ok)
                    stack[top++] = ns_lmdb_node_child(node);
            } else if (ok) {
                ok = tail_leaf_value(t, pg, node);
            }
        }
    }
    free(stack);
    free(pg);
    return ok;
}

/* True when every page from in_file to last is listed in the free pages'
 * tree rooted at root (all of which lies in the file). */
static bool tail_is_free(int fd, uint32_t ps, uint64_t in_file, uint64_t last, uint64_t root)
{
    if (last < in_file || last - in_file >= FREE_TAIL_MAX || root == UINT64_MAX)
        return false;
    tail_t t = {fd, ps, in_file, last, NULL, last - in_file + 1};
    t.missing = malloc(t.left);
    if (t.missing == NULL)
        return false;
    memset(t.missing, 1, t.left);
    bool ok = tail_walk(&t, root) && t.left == 0;
    free(t.missing);
    return ok;
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
    uint64_t l0 = 0, l1 = 0, t0 = 0, t1 = 0, m0 = 0, m1 = 0, f0 = 0, f1 = 0;
    bool ok0 = read_meta(fd, 0, &ps0, &l0, &t0, &m0, &f0);
    bool ok1 = ok0 && ps0 >= 512 && read_meta(fd, ps0, &ps1, &l1, &t1, &m1, &f1);
    if (!ok0 || !ok1) {
        close(fd);
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
    bool tail_free = out->file_size < need &&
                     tail_is_free(fd, ps0, out->file_size / ps0, out->last_pgno, second ? f1 : f0);
    close(fd);
    if (out->file_size < need && !tail_free) {
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
