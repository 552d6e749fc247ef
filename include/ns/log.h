/* log.h - leveled logging with timestamps, to stderr or to a file.
 *
 * The level is checked before any formatting. Context goes first:
 * NS_LOG_WARN("conn %s: frame too long (%u bytes)", peer, len).
 * Bodies are never logged above DEBUG.
 */
#ifndef NS_LOG_H
#define NS_LOG_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    NS_LOG_LEVEL_DEBUG = 0,
    NS_LOG_LEVEL_INFO,
    NS_LOG_LEVEL_WARN,
    NS_LOG_LEVEL_ERROR
} ns_log_level_t;

/* Set with ns_log_set_level: it changes at run time (UPDATE_NAMESRV_CONFIG)
 * while other threads log, so it is read and written atomically. */
extern ns_log_level_t ns_log_level;
void ns_log_set_level(ns_log_level_t level);

/* Parses "debug", "info", "warn", "error"; returns -1 when unknown. */
int ns_log_level_parse(const char *name);
void ns_log_write(ns_log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Logs to the file at path from now on (append, created 0640), rotated
 * when it grows past max_bytes (0 = never): path -> path.1 -> ... ->
 * path.<keep>, the oldest dropped (keep 0: the file is truncated instead).
 * Lines are written whole under a lock, so every thread may log. NS_OK, or
 * NS_EIO with a reason in err (logging then stays where it was). Until
 * this is called (or after ns_log_close_file) lines go to stderr. */
int ns_log_open_file(const char *path, int64_t max_bytes, int keep, char *err, size_t errlen);
/* Closes and opens the file again by its name (SIGHUP after an external
 * logrotate moved it). NS_OK, or NS_EIO (lines then go to stderr). */
int ns_log_reopen(void);
void ns_log_close_file(void);
/* Bytes written to the current file since it was opened. */
int64_t ns_log_file_bytes(void);
/* The descriptor log lines go to: the file's, or 2 (stderr). A forked
 * child that closes what it inherited keeps this one. */
int ns_log_fd(void);
/* Wall-clock ms since the epoch as "2026-12-01T14:41:47.123Z" (n >= 32). */
void ns_format_wall_time(int64_t ms, char *buf, size_t n);

#define NS_LOG(level, ...)                                                                         \
    do {                                                                                           \
        if ((level) >= __atomic_load_n(&ns_log_level, __ATOMIC_RELAXED))                           \
            ns_log_write((level), __FILE__, __LINE__, __VA_ARGS__);                                \
    } while (0)
#define NS_LOG_DEBUG(...) NS_LOG(NS_LOG_LEVEL_DEBUG, __VA_ARGS__)
#define NS_LOG_INFO(...) NS_LOG(NS_LOG_LEVEL_INFO, __VA_ARGS__)
#define NS_LOG_WARN(...) NS_LOG(NS_LOG_LEVEL_WARN, __VA_ARGS__)
#define NS_LOG_ERROR(...) NS_LOG(NS_LOG_LEVEL_ERROR, __VA_ARGS__)

/* Recoverable assertion (after Knot's kr_fails_assert): logs file:line and
 * evaluates to true when the condition FAILS, so callers can bail out:
 *   if (NS_FAILS_ASSERT(p != NULL)) { rc = NS_EINTERNAL; goto out; } */
#define NS_FAILS_ASSERT(cond)                                                                      \
    (!(cond)                                                                                       \
         ? (ns_log_write(NS_LOG_LEVEL_ERROR, __FILE__, __LINE__, "assertion failed: %s", #cond),   \
            1)                                                                                     \
         : 0)

#endif
