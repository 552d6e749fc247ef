/* nsfault.c - an LD_PRELOAD shim that makes the disk misbehave for the
 * fault-injection tests (tests/integration/test_faults.c). Set in the
 * environment of the process under test:
 *   NSFAULT_FSYNC_DELAY_MS=n     every fsync/fdatasync first sleeps n ms
 *                                (a slow disk: the writer falls behind)
 *   NSFAULT_FSYNC_DELAY_IF=p     ... but only while the file p exists
 *   NSFAULT_FSYNC_MARK=p         every fsync/fdatasync first creates the
 *                                file p (a commit is under way)
 *   NSFAULT_FSYNC_FAIL_FILE=p    while the file p exists, fsync/fdatasync
 *                                fail with EIO (a disk that stops writing)
 *   NSFAULT_NO_SPARE_FD=1        open("/dev/null") and open("/") fail with
 *                                EMFILE: the spare descriptor an event loop
 *                                keeps for EMFILE is never there (as when
 *                                another thread took its slot)
 *   NSFAULT_KILL_AT=n            the n-th call that changes the file system
 *                                (rename, renameat2, mkdir, rmdir, unlink,
 *                                fsync, fdatasync) of the process the shim
 *                                was loaded into (not of its forked
 *                                children) kills it with SIGKILL instead,
 *                                after naming the call on stderr: a crash
 *                                between any two steps of a tool
 *   NSFAULT_NO_RENAME_EXCHANGE=1 renameat2 with RENAME_EXCHANGE fails with
 *                                EINVAL, as on a file system without it
 * Everything else goes to the real functions. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int (*sync_fn)(int);

static pid_t loaded_into; /* the process the shim was loaded into */
static long fs_calls;

__attribute__((constructor)) static void nsfault_init(void)
{
    loaded_into = getpid();
}

/* Counts one file system change of the loaded process; dies at the n-th. */
static void maybe_kill(const char *call)
{
    const char *at = getenv("NSFAULT_KILL_AT");
    if (at == NULL || *at == 0 || getpid() != loaded_into)
        return;
    if (++fs_calls == strtol(at, NULL, 10)) {
        fprintf(stderr, "nsfault: killed at file system call %ld (%s)\n", fs_calls, call);
        fflush(stderr);
        kill(getpid(), SIGKILL);
    }
}

static int fault(void)
{
    const char *mark = getenv("NSFAULT_FSYNC_MARK");
    if (mark && *mark) {
        int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
            close(fd);
    }
    const char *d = getenv("NSFAULT_FSYNC_DELAY_MS");
    const char *only_if = getenv("NSFAULT_FSYNC_DELAY_IF");
    if (only_if && *only_if && access(only_if, F_OK) != 0)
        d = NULL;
    if (d && *d) {
        long ms = strtol(d, NULL, 10);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    const char *f = getenv("NSFAULT_FSYNC_FAIL_FILE");
    if (f && *f && access(f, F_OK) == 0) {
        errno = EIO;
        return -1;
    }
    return 0;
}

/* The sync call `name` through its next definition (looked up once into
 * *real), failed instead when the fault is due. */
static int sync_call(sync_fn *real, const char *name, int fd)
{
    if (*real == NULL)
        *real = (sync_fn)dlsym(RTLD_NEXT, name);
    maybe_kill(name);
    if (fault() != 0)
        return -1;
    return (*real)(fd);
}

int fsync(int fd)
{
    static sync_fn real;
    return sync_call(&real, "fsync", fd);
}

int fdatasync(int fd)
{
    static sync_fn real;
    return sync_call(&real, "fdatasync", fd);
}

typedef int (*open_fn)(const char *, int, ...);

static bool spare_refused(const char *path)
{
    const char *e = getenv("NSFAULT_NO_SPARE_FD");
    return e && *e == '1' && path && (strcmp(path, "/dev/null") == 0 || strcmp(path, "/") == 0);
}

static int open_with(const char *name, open_fn *real, const char *path, int flags, va_list ap)
{
    if (*real == NULL)
        *real = (open_fn)dlsym(RTLD_NEXT, name);
    if (spare_refused(path)) {
        errno = EMFILE;
        return -1;
    }
    if (flags & (O_CREAT | O_TMPFILE))
        return (*real)(path, flags, va_arg(ap, mode_t));
    return (*real)(path, flags);
}

int open(const char *path, int flags, ...)
{
    static open_fn real;
    va_list ap;
    va_start(ap, flags);
    int fd = open_with("open", &real, path, flags, ap);
    va_end(ap);
    return fd;
}

/* Where off_t is 64 bits, open64 is open (glibc makes one an alias of the
 * other), so the shim is too. */
_Static_assert(sizeof(off_t) == 8, "open64 differs from open here");
int open64(const char *path, int flags, ...) __attribute__((alias("open")));

/* the fortified two-argument forms (_FORTIFY_SOURCE: what libuv calls) */
typedef int (*open2_fn)(const char *, int);

static int open2_with(const char *name, open2_fn *real, const char *path, int flags)
{
    if (*real == NULL)
        *real = (open2_fn)dlsym(RTLD_NEXT, name);
    if (spare_refused(path)) {
        errno = EMFILE;
        return -1;
    }
    return (*real)(path, flags);
}

int __open_2(const char *path, int flags)
{
    static open2_fn real;
    return open2_with("__open_2", &real, path, flags);
}

int __open64_2(const char *path, int flags)
{
    static open2_fn real;
    return open2_with("__open64_2", &real, path, flags);
}

/* ---- the calls NSFAULT_KILL_AT counts besides the syncs ---- */

#define NEXT(name, type)                                                                           \
    static type real_##name;                                                                       \
    if (real_##name == NULL)                                                                       \
    real_##name = (type)dlsym(RTLD_NEXT, #name)

int rename(const char *from, const char *to)
{
    typedef int (*fn)(const char *, const char *);
    NEXT(rename, fn);
    maybe_kill("rename");
    return real_rename(from, to);
}

int renameat2(int fd1, const char *from, int fd2, const char *to, unsigned int flags)
{
    typedef int (*fn)(int, const char *, int, const char *, unsigned int);
    NEXT(renameat2, fn);
    maybe_kill("renameat2");
    const char *no_x = getenv("NSFAULT_NO_RENAME_EXCHANGE");
    if (no_x && *no_x == '1' && (flags & RENAME_EXCHANGE)) {
        errno = EINVAL;
        return -1;
    }
    return real_renameat2(fd1, from, fd2, to, flags);
}

int mkdir(const char *path, mode_t mode)
{
    typedef int (*fn)(const char *, mode_t);
    NEXT(mkdir, fn);
    maybe_kill("mkdir");
    return real_mkdir(path, mode);
}

int rmdir(const char *path)
{
    typedef int (*fn)(const char *);
    NEXT(rmdir, fn);
    maybe_kill("rmdir");
    return real_rmdir(path);
}

int unlink(const char *path)
{
    typedef int (*fn)(const char *);
    NEXT(unlink, fn);
    maybe_kill("unlink");
    return real_unlink(path);
}
