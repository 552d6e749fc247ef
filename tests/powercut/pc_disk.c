/* pc_disk.c - the disk a power cut leaves (pc_disk.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nspowercut.h"
#include "pc_disk.h"

typedef struct {
    pc_rec_t r;
    const uint8_t *old; /* the bytes the write replaces, in the journal */
    size_t old_len;
} entry_t;

typedef struct {
    uint8_t *buf;
    size_t len;
    char names[PC_MAX_FILES][PC_NAME_MAX];
    bool named[PC_MAX_FILES];
    entry_t *e;
    size_t n;
    bool cut;
} journal_t;

/* One sector's history in a cut: m versions since the last durable state
 * (floor: the version a durable write left), the one chosen (k) and the
 * countdown of the reverse pass (c). key: sector index + 1, 0 = free. */
typedef struct {
    uint64_t key;
    uint32_t m, floor, kept, k, c;
} sector_t;

typedef struct {
    sector_t *v;
    size_t cap, n;
} sectors_t;

uint64_t pc_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

const char *pc_strategy_name(pc_strategy_t s)
{
    static const char *const names[PC_STRATEGIES] = {"lose-all", "keep-all", "by-write",
                                                     "by-sector", "prefix"};
    return s < PC_STRATEGIES ? names[s] : "?";
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int read_all(const char *path, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1; /* no journal: the process wrote nothing */
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    uint8_t *b = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (b && got < (size_t)st.st_size) {
        ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (b == NULL || got != (size_t)st.st_size) {
        free(b);
        return -1;
    }
    *out = b;
    *len = got;
    return 0;
}

/* Splits the journal into records. A record cut short at the end is
 * dropped: the shim writes a record before the write it announces, so the
 * process died before that write began. */
static int parse(journal_t *j, char *err, size_t errlen)
{
    size_t p = 0, cap = 0;
    while (j->len - p >= sizeof(pc_rec_t)) {
        pc_rec_t r;
        memcpy(&r, j->buf + p, sizeof r);
        if (r.magic != PC_MAGIC)
            return fail(err, errlen, "journal: bad record at byte %zu", p);
        size_t extra = 0;
        if (r.type == PC_REC_NAME)
            extra = (size_t)r.len;
        else if ((r.type == PC_REC_WRITE || r.type == PC_REC_TRUNC) && r.old_size > r.off)
            extra = (size_t)((r.off + r.len < r.old_size ? r.off + r.len : r.old_size) - r.off);
        if (j->len - p - sizeof r < extra)
            break;
        p += sizeof r;
        if (r.type == PC_REC_NAME) {
            if (r.file >= PC_MAX_FILES || extra >= PC_NAME_MAX)
                return fail(err, errlen, "journal: bad name record");
            memcpy(j->names[r.file], j->buf + p, extra);
            j->names[r.file][extra] = 0;
            j->named[r.file] = true;
        } else {
            if (r.type == PC_REC_CUT)
                j->cut = true;
            if (j->n == cap) {
                cap = cap ? cap * 2 : 256;
                entry_t *e = realloc(j->e, cap * sizeof *e);
                if (e == NULL)
                    return fail(err, errlen, "out of memory");
                j->e = e;
            }
            j->e[j->n++] = (entry_t){r, j->buf + p, extra};
        }
        p += extra;
    }
    return 0;
}

static sector_t *sector_get(sectors_t *t, uint64_t idx)
{
    if (t->n * 2 >= t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        sector_t *v = calloc(cap, sizeof *v);
        if (v == NULL)
            return NULL;
        for (size_t i = 0; i < t->cap; i++) {
            if (t->v[i].key == 0)
                continue;
            size_t h = (size_t)(t->v[i].key * UINT64_C(0x9E3779B97F4A7C15)) & (cap - 1);
            while (v[h].key != 0)
                h = (h + 1) & (cap - 1);
            v[h] = t->v[i];
        }
        free(t->v);
        t->v = v;
        t->cap = cap;
    }
    uint64_t key = idx + 1;
    size_t h = (size_t)(key * UINT64_C(0x9E3779B97F4A7C15)) & (t->cap - 1);
    while (t->v[h].key != 0 && t->v[h].key != key)
        h = (h + 1) & (t->cap - 1);
    if (t->v[h].key == 0) {
        t->v[h].key = key;
        t->n++;
    }
    return &t->v[h];
}

/* The byte range whose content the record changes, [*lo, *hi). */
static void covered(const pc_rec_t *r, uint64_t *lo, uint64_t *hi)
{
    if (r->type == PC_REC_WRITE) {
        *lo = r->off;
        *hi = r->off + r->len;
    } else { /* a truncate: the bytes it removes or adds */
        *lo = r->off < r->old_size ? r->off : r->old_size;
        *hi = r->off < r->old_size ? r->old_size : r->off;
    }
}

static uint64_t size_after(const pc_rec_t *r)
{
    if (r->type == PC_REC_TRUNC)
        return r->off;
    return r->off + r->len > r->old_size ? r->off + r->len : r->old_size;
}

/* Sets the part of sector s that entry e covers back to what it held
 * before e: e's old bytes below its old size, zeros above. */
static int revert(int fd, const entry_t *e, uint64_t s)
{
    uint64_t lo, hi;
    covered(&e->r, &lo, &hi);
    uint64_t a = s * PC_SECTOR > lo ? s * PC_SECTOR : lo;
    uint64_t b = (s + 1) * PC_SECTOR < hi ? (s + 1) * PC_SECTOR : hi;
    uint8_t bytes[PC_SECTOR];
    for (uint64_t x = a; x < b; x++) {
        uint64_t rel = x - e->r.off; /* old bytes start at off for both kinds */
        bytes[x - a] = x < e->r.old_size && x >= e->r.off && rel < e->old_len ? e->old[rel] : 0;
    }
    return pwrite(fd, bytes, (size_t)(b - a), (off_t)a) == (ssize_t)(b - a) ? 0 : -1;
}

typedef struct {
    uint64_t sync_upto, create_seq, dirsync_upto;
    bool mapped;
} file_facts_t;

static void file_facts(const journal_t *j, int f, file_facts_t *ff)
{
    memset(ff, 0, sizeof *ff);
    for (size_t i = 0; i < j->n; i++) {
        const pc_rec_t *r = &j->e[i].r;
        if ((r->type == PC_REC_SYNC && r->file == f) || r->type == PC_REC_SYNCALL)
            ff->sync_upto = r->seq > ff->sync_upto ? r->seq : ff->sync_upto;
        if (r->type == PC_REC_DIRSYNC || r->type == PC_REC_SYNCALL)
            ff->dirsync_upto = r->seq > ff->dirsync_upto ? r->seq : ff->dirsync_upto;
        if (r->type == PC_REC_CREATE && r->file == f)
            ff->create_seq = r->seq;
        if (r->type == PC_REC_MAP && r->file == f)
            ff->mapped = true;
    }
}

static bool is_durable(const journal_t *j, uint64_t seq)
{
    for (size_t i = 0; i < j->n; i++)
        if (j->e[i].r.type == PC_REC_DURABLE && j->e[i].r.seq == seq)
            return true;
    return false;
}

/* The records of file f that a power cut may undo (after its last sync),
 * in order; caller frees. */
static size_t window(const journal_t *j, int f, uint64_t sync_upto, const entry_t ***out)
{
    size_t n = 0;
    const entry_t **w = malloc((j->n ? j->n : 1) * sizeof *w);
    for (size_t i = 0; w && i < j->n; i++) {
        const pc_rec_t *r = &j->e[i].r;
        if ((r->type == PC_REC_WRITE || r->type == PC_REC_TRUNC) && r->file == f &&
            r->seq > sync_upto)
            w[n++] = &j->e[i];
    }
    *out = w;
    return w ? n : 0;
}

/* Turns one file into its post-cut state. */
static int cut_file(const journal_t *j, int f, const char *path, pc_strategy_t strat, uint64_t *rng,
                    pc_stats_t *st, char *err, size_t errlen)
{
    file_facts_t ff;
    file_facts(j, f, &ff);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return 0; /* not there (never created, or removed by the process) */
    if (ff.create_seq > ff.dirsync_upto) {
        bool lose = strat == PC_LOSE_ALL || (strat != PC_KEEP_ALL && pc_rand(rng) % 4 == 0);
        if (lose) {
            st->removed++;
            return unlink(path) == 0 ? 0
                                     : fail(err, errlen, "unlink %s: %s", path, strerror(errno));
        }
    }
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t blen = strlen(base);
    bool lock_file = strcmp(base, "lock.mdb") == 0 || /* or a MDB_NOSUBDIR one */
                     (blen > 5 && strcmp(base + blen - 5, "-lock") == 0);
    if (ff.mapped && !lock_file)
        return fail(err, errlen,
                    "%s was mapped shared and writable (MDB_WRITEMAP?): its writes bypass the "
                    "shim and cannot be simulated",
                    path);
    const entry_t **w = NULL;
    size_t n = window(j, f, ff.sync_upto, &w);
    sectors_t secs = {0};
    uint64_t *sizes = malloc((n + 1) * sizeof *sizes);
    bool *dur = malloc((n ? n : 1) * sizeof *dur);
    int fd = -1, rc = -1;
    if (w == NULL || sizes == NULL || dur == NULL) {
        fail(err, errlen, "out of memory");
        goto out;
    }
    uint64_t prefix_seq = n ? w[0]->r.seq + pc_rand(rng) % (w[n - 1]->r.seq - w[0]->r.seq + 2) : 0;
    sizes[0] = n ? w[0]->r.old_size : (uint64_t)sb.st_size;
    size_t size_floor = 0;
    uint64_t max_size = (uint64_t)sb.st_size;
    for (size_t i = 0; i < n; i++) {
        const pc_rec_t *r = &w[i]->r;
        dur[i] = is_durable(j, r->seq);
        bool kept = dur[i];
        if (strat == PC_KEEP_ALL)
            kept = true;
        else if (strat == PC_BY_WRITE)
            kept = kept || (pc_rand(rng) & 1);
        else if (strat == PC_PREFIX)
            kept = kept || r->seq < prefix_seq;
        sizes[i + 1] = size_after(r);
        if (dur[i])
            size_floor = i + 1;
        max_size = sizes[i] > max_size ? sizes[i] : max_size;
        st->durable += dur[i];
        st->pending += !dur[i];
        uint64_t lo, hi;
        covered(r, &lo, &hi);
        for (uint64_t s = lo / PC_SECTOR; hi > lo && s <= (hi - 1) / PC_SECTOR; s++) {
            sector_t *sec = sector_get(&secs, s);
            if (sec == NULL) {
                fail(err, errlen, "out of memory");
                goto out;
            }
            uint32_t h = ++sec->m;
            if (dur[i])
                sec->floor = h;
            if (kept)
                sec->kept = h;
        }
    }
    for (size_t i = 0; i < secs.cap; i++) {
        sector_t *sec = &secs.v[i];
        if (sec->key == 0)
            continue;
        st->sectors++;
        if (strat == PC_BY_SECTOR)
            sec->k = sec->floor + (uint32_t)(pc_rand(rng) % (sec->m - sec->floor + 1));
        else
            sec->k = sec->kept > sec->floor ? sec->kept : sec->floor;
        sec->c = sec->m;
    }
    size_t pick = strat == PC_LOSE_ALL ? size_floor
                  : strat == PC_KEEP_ALL
                      ? n
                      : size_floor + (size_t)(pc_rand(rng) % (n - size_floor + 1));
    if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
        fail(err, errlen, "open %s: %s", path, strerror(errno));
        goto out;
    }
    if (n > 0 && max_size > (uint64_t)sb.st_size && ftruncate(fd, (off_t)max_size) != 0) {
        fail(err, errlen, "grow %s: %s", path, strerror(errno));
        goto out;
    }
    for (size_t i = n; i-- > 0;) {
        uint64_t lo, hi;
        covered(&w[i]->r, &lo, &hi);
        for (uint64_t s = lo / PC_SECTOR; hi > lo && s <= (hi - 1) / PC_SECTOR; s++) {
            sector_t *sec = sector_get(&secs, s);
            uint32_t h = sec->c--;
            if (sec->k >= h)
                continue;
            if (revert(fd, w[i], s) != 0) {
                fail(err, errlen, "write %s: %s", path, strerror(errno));
                goto out;
            }
            st->reverted++;
        }
    }
    if (n > 0) {
        if (sizes[pick] < (uint64_t)sb.st_size)
            st->resized++;
        if (ftruncate(fd, (off_t)sizes[pick]) != 0) {
            fail(err, errlen, "truncate %s: %s", path, strerror(errno));
            goto out;
        }
    }
    if (ff.mapped) { /* what the map held never went through the shim */
        st->lock_mode = (unsigned)(pc_rand(rng) % 4);
        struct stat now;
        if (st->lock_mode == 1 && fstat(fd, &now) == 0) {
            char zeros[4096] = {0};
            for (off_t o = 0; o < now.st_size; o += (off_t)sizeof zeros) {
                size_t len = (size_t)(now.st_size - o) < sizeof zeros ? (size_t)(now.st_size - o)
                                                                      : sizeof zeros;
                if (pwrite(fd, zeros, len, o) != (ssize_t)len) {
                    fail(err, errlen, "zero %s: %s", path, strerror(errno));
                    goto out;
                }
            }
        } else if (st->lock_mode == 2 && ftruncate(fd, 0) != 0) {
            fail(err, errlen, "empty %s: %s", path, strerror(errno));
            goto out;
        } else if (st->lock_mode == 3 && unlink(path) != 0) {
            fail(err, errlen, "unlink %s: %s", path, strerror(errno));
            goto out;
        }
    }
    if (fsync(fd) != 0) {
        fail(err, errlen, "fsync %s: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    free(secs.v);
    free(sizes);
    free(dur);
    free(w);
    return rc;
}

int pc_power_cut(const char *journal_path, const char *dir, uint64_t seed, pc_stats_t *st,
                 char *err, size_t errlen)
{
    journal_t j;
    memset(&j, 0, sizeof j);
    memset(st, 0, sizeof *st);
    uint64_t rng = seed;
    st->strategy = (pc_strategy_t)(pc_rand(&rng) % PC_STRATEGIES);
    int rc = -1;
    if (read_all(journal_path, &j.buf, &j.len) != 0) {
        fail(err, errlen, "cannot read journal %s: %s", journal_path, strerror(errno));
        goto out;
    }
    if (parse(&j, err, errlen) != 0)
        goto out;
    st->cut_by_shim = j.cut;
    for (int f = 0; f < PC_MAX_FILES; f++) {
        if (!j.named[f])
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, j.names[f]);
        if (cut_file(&j, f, path, st->strategy, &rng, st, err, errlen) != 0)
            goto out;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0) {
        fail(err, errlen, "fsync %s: %s", dir, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        goto out;
    }
    close(dfd);
    rc = 0;
out:
    free(j.e);
    free(j.buf);
    return rc;
}
