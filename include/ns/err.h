/* err.h - project-wide error codes.
 *
 * Every function that can fail returns one of these (0 = NS_OK). The store
 * translates LMDB errors into them once (store/env.c); only the dispatcher
 * turns them into RocketMQ response codes (src/daemon/cmd/dispatch.c).
 */
#ifndef NS_ERR_H
#define NS_ERR_H

/* X(name, value, message) */
#define NS_ERR_MAP(X)                                                                              \
    X(NS_OK, 0, "success")                                                                         \
    X(NS_ENOMEM, -1, "out of memory")                                                              \
    X(NS_EINVAL, -2, "invalid argument or malformed input")                                        \
    X(NS_ENOTFOUND, -3, "not found")                                                               \
    X(NS_EIO, -4, "I/O error")                                                                     \
    X(NS_ECORRUPT, -5, "store is corrupt or not a namesrv store")                                  \
    X(NS_ELOCKED, -6, "data directory is locked by another process")                               \
    X(NS_ESCHEMA, -7, "store schema is newer than this binary")                                    \
    X(NS_EMAPFULL, -8, "store map size limit reached")                                             \
    X(NS_ETOOBIG, -9, "input exceeds a configured limit")                                          \
    X(NS_ECRC, -10, "crc32 mismatch")                                                              \
    X(NS_EAGAIN, -11, "need more data")                                                            \
    X(NS_ESHUTDOWN, -12, "shutting down")                                                          \
    X(NS_ECONN, -13, "connection failed")                                                          \
    X(NS_ETIMEDOUT, -14, "timed out")                                                              \
    X(NS_EEXIST, -15, "already exists")                                                            \
    X(NS_EINTERNAL, -16, "internal error")                                                         \
    X(NS_EFALLBACK, -17, "fast path declined; take the general one")                               \
    X(NS_ERETRY, -18, "run again")                                                                 \
    X(NS_EREFUSED, -19, "refused; the reply says why")                                             \
    X(NS_ENOSPC, -20, "no space left on device (ENOSPC)")                                          \
    X(NS_EPERM, -21, "not permitted")

typedef enum {
#define NS_ERR_ENUM(name, value, msg) name = value,
    NS_ERR_MAP(NS_ERR_ENUM)
#undef NS_ERR_ENUM
} ns_err_t;

/* Static message for an error code; never NULL. */
const char *ns_strerror(int err);
/* Symbolic name ("NS_ENOTFOUND"); never NULL. */
const char *ns_errname(int err);

#endif
