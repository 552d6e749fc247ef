/* fsutil.c - durable file and directory operations (include/ns/fsutil.h). */
#define _GNU_SOURCE
#include "ns/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns/err.h"

int ns_fs_sync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NS_EIO;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc == 0 ? NS_OK : NS_EIO;
}

int ns_fs_sync_parent(const char *path)
{
    char *copy = strdup(path);
    if (copy == NULL)
        return NS_ENOMEM;
    int rc = ns_fs_sync_path(dirname(copy));
    free(copy);
    return rc;
}

int ns_fs_sync_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = NS_OK;
    if (d == NULL)
        return NS_EIO;
    while (rc == NS_OK && (e = readdir(d)) != NULL) {
        char p[4352];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (lstat(p, &sb) == 0 && S_ISREG(sb.st_mode))
            rc = ns_fs_sync_path(p);
    }
    closedir(d);
    return rc ? rc : ns_fs_sync_path(dir);
}

int ns_fs_rename_durable(const char *from, const char *to)
{
    if (rename(from, to) != 0)
        return NS_EIO;
    int rc = ns_fs_sync_parent(to);
    return rc ? rc : ns_fs_sync_parent(from);
}

int ns_fs_exchange(const char *a, const char *b)
{
    if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0)
        return errno == EINVAL || errno == ENOSYS ? NS_EINVAL : NS_EIO;
    int rc = ns_fs_sync_parent(a);
    return rc ? rc : ns_fs_sync_parent(b);
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int ns_fs_copy_file(const char *from, const char *to, mode_t mode)
{
    char buf[1 << 16];
    int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = NS_EIO, saved = 0;
    if (in < 0)
        return NS_EIO;
    out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (out < 0)
        goto done;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            goto done;
        if (n == 0)
            break;
        if (write_all(out, buf, (size_t)n) != 0)
            goto done;
    }
    if (fsync(out) == 0)
        rc = NS_OK;
done:
    saved = errno;
    if (out >= 0 && close(out) != 0 && rc == NS_OK) {
        saved = errno;
        rc = NS_EIO;
    }
    close(in);
    errno = saved;
    return rc;
}

int ns_fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
    char *tmp = NULL;
    int fd = -1, rc = NS_EIO, saved = 0;
    if (asprintf(&tmp, "%s.tmp", path) < 0)
        return NS_ENOMEM;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0 || write_all(fd, data, len) != 0 || fsync(fd) != 0)
        goto out;
    int crc = close(fd);
    fd = -1;
    if (crc != 0 || rename(tmp, path) != 0)
        goto out;
    rc = ns_fs_sync_parent(path);
out:
    saved = errno;
    if (fd >= 0)
        close(fd);
    if (rc != NS_OK)
        unlink(tmp);
    free(tmp);
    errno = saved;
    return rc;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return (flag == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

int ns_fs_rmtree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT ? NS_OK : NS_EIO;
    /* depth first, never following links: a link is removed, not its target */
    return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? NS_OK : NS_EIO;
}
