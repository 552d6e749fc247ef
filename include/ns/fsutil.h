/* fsutil.h - durable file and directory operations (base floor).
 *
 * What "written" means here: the data reached the disk (fsync of the file),
 * and so did the name that leads to it (fsync of the directory that holds
 * the name). A rename is durable once the parent directories of both names
 * are synced. Every function returns NS_OK or NS_EIO (errno kept for the
 * caller's message); none of them prints. Hand-written on POSIX calls: no
 * Debian library offers durable renames of directories, and these are a
 * few lines each. */
#ifndef NS_FSUTIL_H
#define NS_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

/* fsync of the file or directory at path (opened read-only). */
int ns_fs_sync_path(const char *path);
/* fsync of the directory that holds path's last component. */
int ns_fs_sync_parent(const char *path);
/* fsync of every regular file directly in dir, then of dir itself. */
int ns_fs_sync_tree(const char *dir);
/* rename(from, to), then fsync of both parents. */
int ns_fs_rename_durable(const char *from, const char *to);
/* Swaps the two paths in one step (renameat2 RENAME_EXCHANGE): at no
 * moment is either name missing. NS_EINVAL when the file system cannot
 * (errno EINVAL/ENOSYS): the caller then falls back to two renames. Both
 * parents are synced after the swap. */
int ns_fs_exchange(const char *a, const char *b);
/* Copies the regular file from to to (created with mode, truncated),
 * fsynced before it returns. */
int ns_fs_copy_file(const char *from, const char *to, mode_t mode);
/* Writes data as the whole file path: path.tmp, fsync, rename, fsync of
 * the parent. The temp file is removed on failure. */
int ns_fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* Removes path and everything below it (files, directories, links: links
 * are removed, never followed). NS_OK when path did not exist. */
int ns_fs_rmtree(const char *path);

#endif
