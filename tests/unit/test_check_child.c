/* test_check_child.c - the store check's child (store/check.c) does not
 * outlive the process that forked it, and keeps none of its descriptors.
 *
 * A namesrvd killed while its start check walks a large store left the
 * walk running: it held a reader of the store and every descriptor
 * namesrvd had (the data directory's LOCK, listening sockets). Here the
 * child is held in its open of the store (this process holds the write
 * lock of lock.mdb that LMDB's opener waits on), its parent is killed, and
 * the child must be gone within 5 s; before that, its descriptors are
 * read from /proc. This process is a subreaper, so the child, reparented to
 * it, is reaped here. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_store.h"
#include "ns/err.h"
#include "ns/store.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* The parent: opens marker (a descriptor the child must not keep), forks
 * the check child, tells its pid on fd out and waits to be killed. */
static void parent_main(const char *dir, const char *marker, int out)
{
    int keep = open(marker, O_RDONLY | O_CLOEXEC);
    ns_check_proc_t p;
    ns_check_result_t res;
    memset(&res, 0, sizeof res);
    int pid = keep >= 0 && ns_store_check_spawn(dir, &p, &res) == NS_OK ? p.pid : -1;
    if (write(out, &pid, sizeof pid) != (ssize_t)sizeof pid)
        _exit(1);
    for (;;)
        pause();
}

/* Whether pid has a descriptor open on path. */
static bool holds(pid_t pid, const char *path)
{
    char fds[64], link[PATH_MAX + 64], target[PATH_MAX];
    snprintf(fds, sizeof fds, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(fds);
    assert_non_null(d);
    bool found = false;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        snprintf(link, sizeof link, "%s/%s", fds, e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0) {
            target[n] = 0;
            found = found || strcmp(target, path) == 0;
        }
    }
    closedir(d);
    return found;
}

static void test_child_dies_with_its_parent(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("checkchild");
    assert_non_null(dir);
    char store[PATH_MAX], lockmdb[PATH_MAX + 16], marker[PATH_MAX + 16];
    snprintf(store, sizeof store, "%s/data", dir);
    snprintf(lockmdb, sizeof lockmdb, "%s/lock.mdb", store);
    snprintf(marker, sizeof marker, "%s/marker", dir);
    ns_store_t *s = NULL;
    assert_int_equal(nstest_store_open(store, 0, 0, &s), NS_OK);
    ns_store_close(s);
    FILE *m = fopen(marker, "w");
    assert_non_null(m);
    fclose(m);
    char *real = realpath(marker, NULL);
    assert_non_null(real);

    /* the child's mdb_env_open waits for this lock (F_SETLKW, read) */
    int lfd = open(lockmdb, O_RDWR | O_CLOEXEC);
    assert_true(lfd >= 0);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    assert_int_equal(fcntl(lfd, F_SETLK, &fl), 0);
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);

    int pp[2];
    assert_int_equal(pipe(pp), 0);
    pid_t parent = fork();
    assert_true(parent >= 0);
    if (parent == 0) {
        close(pp[0]);
        parent_main(store, real, pp[1]);
    }
    close(pp[1]);
    int child = -1;
    assert_int_equal(read(pp[0], &child, sizeof child), (ssize_t)sizeof child);
    close(pp[0]);
    assert_true(child > 0);

    usleep(200 * 1000); /* the child is in its open of the store */
    bool kept_marker = holds(child, real);
    assert_int_equal(kill(parent, SIGKILL), 0);
    int status = 0;
    assert_int_equal(waitpid(parent, &status, 0), parent);

    double deadline = now_ms() + 5000;
    pid_t got = 0;
    while ((got = waitpid(child, &status, WNOHANG)) == 0 && now_ms() < deadline)
        usleep(1000);
    if (got == 0) { /* still there: the failure below; do not leave it */
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    close(lfd);
    assert_false(kept_marker);
    assert_int_equal(got, child);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    free(real);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_child_dies_with_its_parent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
