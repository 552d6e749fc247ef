/* nspowercut.c - an LD_PRELOAD shim that records what a power cut would take
 * away from a process, for the power-cut harness (tests/powercut). The files
 * of one directory (the store: data.mdb, lock.mdb, LOCK) are watched; for
 * each write to them the shim appends to a side journal, before the write,
 * an undo record (offset, length, the file's size and the bytes the write
 * replaces), and after each completed sync a record saying which writes it
 * made durable. After the process dies, the harness picks one of the disk
 * states those records allow (tests/powercut/pc_disk.c).
 *
 * What counts as durable, per file (Linux, POSIX):
 *   - fsync/fdatasync of a descriptor of the file: every write to the file
 *     completed before the call (the size too: fdatasync writes what reading
 *     the data back needs);
 *   - sync()/syncfs(): every write to every file;
 *   - a write through a descriptor opened with O_DSYNC or O_SYNC: that write,
 *     once the call returns (LMDB writes its meta page so);
 *   - a new name in the directory: only fsync of the directory;
 *   - a file mapped shared and writable: nothing the map holds is known to
 *     the shim; the journal says so (lock.mdb; data.mdb only with
 *     MDB_WRITEMAP, which the harness then refuses to simulate).
 * The journal is written with plain write(2) to a file outside the
 * directory: a SIGKILL loses nothing of it.
 *
 * Environment:
 *   NSPC_DIR=d        the directory whose files are watched (absolute)
 *   NSPC_JOURNAL=p    the journal (appended; created if missing)
 *   NSPC_CUT_AT=n     SIGKILL the process at the n-th watched write or
 *                     sync counted from the moment NSPC_ARM exists: after a
 *                     write, before a sync (0 or unset: never)
 *   NSPC_ARM=p        a file whose existence starts the count (unset: the
 *                     count starts at process start)
 *   NSPC_IGNORE_SYNC=1  syncs and O_DSYNC are not recorded as making
 *                     anything durable: a disk whose write cache lies about
 *                     flushes (the harness must then report losses)
 *
 * Only the process itself is journaled, not its children (the store's
 * checks read it from a child; none writes it).
 *
 * Writes are serialised by one mutex, held across the read of the old bytes,
 * the journal record and the real write, so that a sync's record covers
 * exactly the writes completed before it (LMDB has one writer anyway). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nspowercut.h"

#define MAX_FDS 4096

typedef struct {
    int8_t file; /* index into g_names; PC_NO_FILE: not watched; PC_DIR_FILE: the directory */
    bool dsync;  /* opened with O_DSYNC or O_SYNC */
    dev_t dev;
    ino_t ino;
} fd_slot_t;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static fd_slot_t g_fds[MAX_FDS];
static char g_names[PC_MAX_FILES][PC_NAME_MAX];
static int g_n_names;
static uint64_t g_seq; /* last record's sequence number (under g_mu) */
static long g_events;  /* watched writes and syncs since armed */
static int g_journal = -1;
static bool g_ready, g_ignore_sync;
static long g_cut_at;
static char g_dir[PATH_MAX];
static const char *g_arm;

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef ssize_t (*pwritev_fn)(int, const struct iovec *, int, off_t);
typedef int (*int_fd_fn)(int);
typedef int (*ftruncate_fn)(int, off_t);
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef void (*sync_fn)(void);
typedef int (*open_fn)(const char *, int, ...);
typedef int (*open2_fn)(const char *, int);
typedef int (*openat_fn)(int, const char *, int, ...);

static struct {
    write_fn write;
    pwrite_fn pwrite;
    writev_fn writev;
    pwritev_fn pwritev;
    int_fd_fn fsync, fdatasync, syncfs, close;
    ftruncate_fn ftruncate;
    mmap_fn mmap;
    sync_fn sync;
    open_fn open;
    open2_fn open_2, open64_2;
    openat_fn openat, openat64;
} real;

#define REAL(name, sym)                                                                            \
    do {                                                                                           \
        if (real.name == NULL)                                                                     \
            *(void **)&real.name = dlsym(RTLD_NEXT, sym);                                          \
    } while (0)

/* A child of the watched process (the store's read-only checks run in
 * one) is not journaled: its file indexes would clash with the parent's in
 * the one journal. */
static void forked_child(void)
{
    g_ready = false;
}

static void init_body(void)
{
    pthread_atfork(NULL, NULL, forked_child);
    REAL(write, "write");
    REAL(open, "open");
    for (int i = 0; i < MAX_FDS; i++)
        g_fds[i].file = PC_NO_FILE;
    const char *dir = getenv("NSPC_DIR");
    const char *journal = getenv("NSPC_JOURNAL");
    if (dir == NULL || *dir == 0 || journal == NULL || *journal == 0 || strlen(dir) >= sizeof g_dir)
        return;
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    size_t n = strlen(g_dir);
    while (n > 1 && g_dir[n - 1] == '/')
        g_dir[--n] = 0;
    g_journal = real.open(journal, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const char *cut = getenv("NSPC_CUT_AT");
    g_cut_at = cut && *cut ? strtol(cut, NULL, 10) : 0;
    const char *arm = getenv("NSPC_ARM");
    g_arm = arm && *arm ? arm : NULL;
    const char *ign = getenv("NSPC_IGNORE_SYNC");
    g_ignore_sync = ign && *ign == '1';
    g_ready = g_journal >= 0;
}

extern char **environ;

/* Reads the environment, once it can be read: a sanitizer's runtime maps
 * memory (through this mmap) before libc has set environ, and a call made
 * while the shim initialises itself (dlsym, open) passes straight through. */
static void init_once(void)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static atomic_bool done;
    static __thread bool in_init;
    if (atomic_load_explicit(&done, memory_order_acquire) || in_init || environ == NULL)
        return;
    in_init = true;
    pthread_mutex_lock(&mu);
    if (!atomic_load_explicit(&done, memory_order_relaxed)) {
        init_body();
        atomic_store_explicit(&done, true, memory_order_release);
    }
    pthread_mutex_unlock(&mu);
    in_init = false;
}

/* Appends n bytes to the journal; a short journal would make the harness
 * simulate too little, so a failing journal kills the process (the harness
 * sees the record count short and the death unplanned). */
static void journal_put(const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = real.write(g_journal, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            abort();
        c += w;
        n -= (size_t)w;
    }
}

static void journal_rec(uint8_t type, int file, uint64_t seq, uint64_t off, uint64_t len,
                        uint64_t old_size, const void *old, size_t old_len)
{
    pc_rec_t r = {PC_MAGIC, type, (uint8_t)(file < 0 ? 255 : file), 0, seq, off, len, old_size};
    journal_put(&r, sizeof r);
    if (old_len)
        journal_put(old, old_len);
}

/* Counts a watched write or sync; kills the process when it is the chosen
 * one: after a write (its undo record pending), before a sync. Under g_mu. */
static void count_event(void)
{
    if (g_cut_at <= 0)
        return;
    if (g_arm && g_events == 0 && access(g_arm, F_OK) != 0)
        return;
    if (++g_events == g_cut_at) {
        journal_rec(PC_REC_CUT, PC_NO_FILE, g_seq, 0, 0, 0, NULL, 0);
        kill(getpid(), SIGKILL);
        for (;;)
            pause();
    }
}

/* The file index of name in the watched directory (registered with a name
 * record the first time), or PC_NO_FILE. Under g_mu. */
static int file_index(const char *base)
{
    for (int i = 0; i < g_n_names; i++)
        if (strcmp(g_names[i], base) == 0)
            return i;
    if (g_n_names == PC_MAX_FILES || strlen(base) >= PC_NAME_MAX)
        return PC_NO_FILE;
    snprintf(g_names[g_n_names], PC_NAME_MAX, "%s", base);
    pc_rec_t r = {PC_MAGIC, PC_REC_NAME, (uint8_t)g_n_names, 0, 0, 0, strlen(base), 0};
    journal_put(&r, sizeof r);
    journal_put(base, strlen(base));
    return g_n_names++;
}

/* Which watched thing path names: a file of the directory (its index), the
 * directory itself (PC_DIR_FILE), or nothing (PC_NO_FILE). Relative paths
 * and symlinks are not resolved: the harness gives absolute paths. */
static int classify(const char *path)
{
    if (!g_ready || path == NULL)
        return PC_NO_FILE;
    size_t n = strlen(g_dir);
    if (strncmp(path, g_dir, n) != 0)
        return PC_NO_FILE;
    const char *rest = path + n;
    while (*rest == '/')
        rest++;
    if (*rest == 0)
        return PC_DIR_FILE;
    if (rest == path + n || strchr(rest, '/') != NULL)
        return PC_NO_FILE;
    pthread_mutex_lock(&g_mu);
    int i = file_index(rest);
    pthread_mutex_unlock(&g_mu);
    return i;
}

/* Records the descriptor fd just opened on path with flags. existed: the
 * name was there before the call (else a create record: the new entry is
 * not durable before the directory is synced). */
static int opened(int fd, int flags, int kind, bool existed)
{
    if (fd < 0 || fd >= MAX_FDS || kind == PC_NO_FILE)
        return fd;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return fd;
    pthread_mutex_lock(&g_mu);
    g_fds[fd] = (fd_slot_t){(int8_t)kind, (flags & O_DSYNC) != 0, st.st_dev, st.st_ino};
    if (kind >= 0 && !existed)
        journal_rec(PC_REC_CREATE, kind, ++g_seq, 0, 0, 0, NULL, 0);
    pthread_mutex_unlock(&g_mu);
    return fd;
}

/* The watched file fd writes to (PC_NO_FILE if none): the slot, checked
 * against the inode so a descriptor number reused behind the shim's back
 * is never taken for the store. */
static int watched(int fd, bool *dsync)
{
    if (!g_ready || fd < 0 || fd >= MAX_FDS || g_fds[fd].file == PC_NO_FILE)
        return PC_NO_FILE;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_dev != g_fds[fd].dev || st.st_ino != g_fds[fd].ino) {
        g_fds[fd].file = PC_NO_FILE;
        return PC_NO_FILE;
    }
    if (dsync)
        *dsync = g_fds[fd].dsync;
    return g_fds[fd].file;
}

/* A descriptor to read file's old bytes through (the writer's own may be
 * write-only: LMDB's meta descriptor is), kept per file while it names the
 * same inode. Under g_mu. */
static int reader_fd(int file, const struct stat *st)
{
    static int fds[PC_MAX_FILES] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    static ino_t inos[PC_MAX_FILES];
    if (fds[file] >= 0 && inos[file] == st->st_ino)
        return fds[file];
    if (fds[file] >= 0) {
        REAL(close, "close");
        real.close(fds[file]);
    }
    char path[PATH_MAX + PC_NAME_MAX + 2];
    snprintf(path, sizeof path, "%s/%s", g_dir, g_names[file]);
    fds[file] = real.open(path, O_RDONLY | O_CLOEXEC);
    inos[file] = st->st_ino;
    return fds[file];
}

/* The undo record of a write of len bytes at off to file (fd): the size
 * before and the bytes it replaces. Under g_mu. Returns its sequence. */
static uint64_t undo_record(int fd, int file, uint8_t type, uint64_t off, uint64_t len)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        abort();
    uint64_t size = (uint64_t)st.st_size;
    uint64_t end = off + len < size ? off + len : size;
    size_t old_len = end > off ? (size_t)(end - off) : 0;
    char *old = old_len ? malloc(old_len) : NULL;
    if (old_len && old == NULL)
        abort();
    size_t got = 0;
    int rfd = old_len ? reader_fd(file, &st) : -1;
    while (got < old_len) {
        ssize_t r = pread(rfd, old + got, old_len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            abort(); /* cannot know what the write replaces */
        got += (size_t)r;
    }
    uint64_t seq = ++g_seq;
    journal_rec(type, file, seq, off, len, size, old, old_len);
    free(old);
    return seq;
}

/* After a completed write: durable at once on an O_DSYNC descriptor. */
static void write_done(int file, bool dsync, uint64_t seq, ssize_t rc)
{
    if (rc >= 0 && dsync && !g_ignore_sync)
        journal_rec(PC_REC_DURABLE, file, seq, 0, 0, 0, NULL, 0);
}

static size_t iov_len(const struct iovec *iov, int n)
{
    size_t t = 0;
    for (int i = 0; i < n; i++)
        t += iov[i].iov_len;
    return t;
}

/* write and writev go to the descriptor's offset (or the end, O_APPEND). */
static uint64_t write_offset(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_APPEND)) {
        struct stat st;
        return fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
    off_t o = lseek(fd, 0, SEEK_CUR);
    return o < 0 ? 0 : (uint64_t)o;
}

/* One call of the write family: buf/n or iov/cnt, at off when positional. */
typedef enum { W_WRITE, W_PWRITE, W_WRITEV, W_PWRITEV } wkind_t;
typedef struct {
    wkind_t kind;
    int fd;
    const void *buf;
    size_t n;
    const struct iovec *iov;
    int cnt;
    off_t off;
} wcall_t;

static ssize_t real_write_call(const wcall_t *c)
{
    switch (c->kind) {
    case W_WRITE:
        return real.write(c->fd, c->buf, c->n);
    case W_PWRITE:
        return real.pwrite(c->fd, c->buf, c->n, c->off);
    case W_WRITEV:
        return real.writev(c->fd, c->iov, c->cnt);
    default:
        return real.pwritev(c->fd, c->iov, c->cnt, c->off);
    }
}

/* The write family: straight through for other files; for a watched one,
 * the undo record first, then the write, then its durability and the cut
 * count, all under g_mu. */
static ssize_t tracked_write(const wcall_t *c)
{
    init_once();
    REAL(write, "write");
    REAL(pwrite, "pwrite");
    REAL(writev, "writev");
    REAL(pwritev, "pwritev");
    bool dsync = false;
    int file = watched(c->fd, &dsync);
    if (file < 0)
        return real_write_call(c);
    pthread_mutex_lock(&g_mu);
    bool positional = c->kind == W_PWRITE || c->kind == W_PWRITEV;
    uint64_t off = positional ? (uint64_t)c->off : write_offset(c->fd);
    size_t len = c->iov ? iov_len(c->iov, c->cnt) : c->n;
    uint64_t seq = undo_record(c->fd, file, PC_REC_WRITE, off, len);
    ssize_t rc = real_write_call(c);
    int e = errno;
    write_done(file, dsync, seq, rc);
    count_event();
    pthread_mutex_unlock(&g_mu);
    errno = e;
    return rc;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    return tracked_write(&(wcall_t){W_PWRITE, fd, buf, n, NULL, 0, off});
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) __attribute__((alias("pwrite")));

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return tracked_write(&(wcall_t){W_PWRITEV, fd, NULL, 0, iov, cnt, off});
}
ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
    __attribute__((alias("pwritev")));

ssize_t write(int fd, const void *buf, size_t n)
{
    return tracked_write(&(wcall_t){W_WRITE, fd, buf, n, NULL, 0, 0});
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    return tracked_write(&(wcall_t){W_WRITEV, fd, NULL, 0, iov, cnt, 0});
}

int ftruncate(int fd, off_t len)
{
    init_once();
    REAL(ftruncate, "ftruncate");
    int file = watched(fd, NULL);
    if (file < 0)
        return real.ftruncate(fd, len);
    pthread_mutex_lock(&g_mu);
    struct stat st;
    uint64_t size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    /* a shrink keeps what goes like the old bytes of a write */
    undo_record(fd, file, PC_REC_TRUNC, (uint64_t)len,
                (uint64_t)len < size ? size - (uint64_t)len : 0);
    int rc = real.ftruncate(fd, len);
    int e = errno;
    count_event();
    pthread_mutex_unlock(&g_mu);
    errno = e;
    return rc;
}
int ftruncate64(int fd, off_t len) __attribute__((alias("ftruncate")));

/* A sync of the file (or, for the directory, of its entries): every record
 * up to now of it is durable once the real call returned 0. */
static int sync_with(int_fd_fn fn, int fd)
{
    int file = watched(fd, NULL);
    if (file == PC_NO_FILE)
        return fn(fd);
    pthread_mutex_lock(&g_mu);
    count_event();
    uint64_t upto = g_seq;
    int rc = fn(fd);
    int e = errno;
    if (rc == 0 && !g_ignore_sync)
        journal_rec(file == PC_DIR_FILE ? PC_REC_DIRSYNC : PC_REC_SYNC,
                    file == PC_DIR_FILE ? PC_NO_FILE : file, upto, 0, 0, 0, NULL, 0);
    pthread_mutex_unlock(&g_mu);
    errno = e;
    return rc;
}

int fsync(int fd)
{
    init_once();
    REAL(fsync, "fsync");
    return sync_with(real.fsync, fd);
}

int fdatasync(int fd)
{
    init_once();
    REAL(fdatasync, "fdatasync");
    return sync_with(real.fdatasync, fd);
}

static void sync_all_record(void)
{
    pthread_mutex_lock(&g_mu);
    if (g_ready && !g_ignore_sync)
        journal_rec(PC_REC_SYNCALL, PC_NO_FILE, g_seq, 0, 0, 0, NULL, 0);
    pthread_mutex_unlock(&g_mu);
}

void sync(void)
{
    init_once();
    REAL(sync, "sync");
    real.sync();
    sync_all_record();
}

int syncfs(int fd)
{
    init_once();
    REAL(syncfs, "syncfs");
    int rc = real.syncfs(fd);
    if (rc == 0)
        sync_all_record();
    return rc;
}

/* A writable shared map of a watched file: its writes bypass the shim. */
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    init_once();
    REAL(mmap, "mmap");
    void *p = real.mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && (prot & PROT_WRITE) && (flags & MAP_SHARED)) {
        int file = watched(fd, NULL);
        if (file >= 0) {
            pthread_mutex_lock(&g_mu);
            journal_rec(PC_REC_MAP, file, ++g_seq, (uint64_t)off, len, 0, NULL, 0);
            pthread_mutex_unlock(&g_mu);
        }
    }
    return p;
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

int close(int fd)
{
    init_once();
    REAL(close, "close");
    if (fd >= 0 && fd < MAX_FDS && g_fds[fd].file != PC_NO_FILE) {
        pthread_mutex_lock(&g_mu);
        g_fds[fd].file = PC_NO_FILE;
        pthread_mutex_unlock(&g_mu);
    }
    return real.close(fd);
}

/* ---- opens: every way glibc callers reach open(2) ---- */

/* Before an open of path: what it names (*kind) and whether it exists. */
static bool before_open(const char *path, int *kind)
{
    *kind = classify(path);
    return *kind < 0 || access(path, F_OK) == 0;
}

/* After it: records the descriptor; errno as the open left it. */
static int after_open(int fd, int flags, int kind, bool existed)
{
    int e = errno;
    opened(fd, flags, kind, existed);
    errno = e;
    return fd;
}

static mode_t open_mode(int flags, va_list ap)
{
    return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
}

int open(const char *path, int flags, ...)
{
    init_once();
    REAL(open, "open");
    va_list ap;
    va_start(ap, flags);
    mode_t mode = open_mode(flags, ap);
    va_end(ap);
    int kind;
    bool existed = before_open(path, &kind);
    return after_open(real.open(path, flags, mode), flags, kind, existed);
}

/* Where off_t is 64 bits, open64 is open (glibc makes one an alias of the
 * other), so the shim is too. */
_Static_assert(sizeof(off_t) == 8, "open64 differs from open here");
int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int __open_2(const char *path, int flags)
{
    init_once();
    REAL(open_2, "__open_2");
    int kind;
    bool existed = before_open(path, &kind);
    return after_open(real.open_2(path, flags), flags, kind, existed);
}

int __open64_2(const char *path, int flags)
{
    init_once();
    REAL(open64_2, "__open64_2");
    int kind;
    bool existed = before_open(path, &kind);
    return after_open(real.open64_2(path, flags), flags, kind, existed);
}

/* openat with an absolute path (the only form the store uses). */
int openat(int dirfd, const char *path, int flags, ...)
{
    init_once();
    REAL(openat, "openat");
    va_list ap;
    va_start(ap, flags);
    mode_t mode = open_mode(flags, ap);
    va_end(ap);
    int kind = PC_NO_FILE;
    bool existed = path[0] == '/' ? before_open(path, &kind) : true;
    return after_open(real.openat(dirfd, path, flags, mode), flags, kind, existed);
}
int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));
