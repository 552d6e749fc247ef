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
 * Everything else goes to the real functions. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int (*sync_fn)(int);

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

int fsync(int fd)
{
    static sync_fn real;
    if (real == NULL)
        real = (sync_fn)dlsym(RTLD_NEXT, "fsync");
    if (fault() != 0)
        return -1;
    return real(fd);
}

int fdatasync(int fd)
{
    static sync_fn real;
    if (real == NULL)
        real = (sync_fn)dlsym(RTLD_NEXT, "fdatasync");
    if (fault() != 0)
        return -1;
    return real(fd);
}
