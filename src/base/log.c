/* log.c - leveled, timestamped logging to stderr or a rotated file
 * (include/ns/log.h).
 *
 * File mode: one mutex guards the FILE, its size and the rotation, so a
 * line is never split and rotation never races a writer. Rotation happens
 * before a line that would take the file past max_bytes: path.<keep-1> ->
 * path.<keep>, ..., path -> path.1, then path is opened anew.
 *
 * Stderr mode under systemd: when stderr is the journal stream systemd
 * handed us ($JOURNAL_STREAM names its device and inode), each line starts
 * with its syslog priority ("<6>") instead of a timestamp, so journalctl -p
 * filters by level and the journal's own timestamps are not doubled. */
#include "ns/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "ns/err.h"
#include "ns/utf8.h"

ns_log_level_t ns_log_level = NS_LOG_LEVEL_INFO;

static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_file; /* NULL: stderr */
static char *log_path; /* heap */
static int64_t log_max_bytes;
static int log_keep;
static int64_t log_bytes;   /* size of the current file */
static int to_journal = -1; /* stderr is systemd's journal stream: 1, no: 0, unknown: -1 */

/* True when stderr is the stream $JOURNAL_STREAM ("dev:ino") describes. */
static bool stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev = 0, ino = 0;
    struct stat st;
    if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st) != 0)
        return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void ns_log_set_level(ns_log_level_t level)
{
    __atomic_store_n(&ns_log_level, level, __ATOMIC_RELAXED);
}

static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

int ns_log_level_parse(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (strcasecmp(name, level_names[i]) == 0)
            return i;
    if (strcasecmp(name, "warning") == 0)
        return NS_LOG_LEVEL_WARN;
    return -1;
}

void ns_format_wall_time(int64_t ms, char *buf, size_t n)
{
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    char ts[32];
    gmtime_r(&sec, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, n, "%s.%03dZ", ts, (int)(ms % 1000));
}

/* Opens path for appending; the caller holds file_lock. */
static FILE *open_append(const char *path, int64_t *size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    struct stat st;
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "a");
    if (f == NULL) {
        close(fd);
        return NULL;
    }
    setvbuf(f, NULL, _IOLBF, 0);
    *size = fstat(fd, &st) == 0 ? (int64_t)st.st_size : 0;
    return f;
}

/* Shifts path.N and path out of the way; the caller holds file_lock. */
static void rotate_locked(void)
{
    size_t n = strlen(log_path) + 16;
    char *from = malloc(n), *to = malloc(n);
    if (from && to) {
        for (int i = log_keep - 1; i >= 1; i--) {
            snprintf(from, n, "%s.%d", log_path, i);
            snprintf(to, n, "%s.%d", log_path, i + 1);
            rename(from, to); /* a missing one is fine */
        }
        snprintf(to, n, "%s.1", log_path);
        if (log_keep > 0)
            rename(log_path, to);
        else
            unlink(log_path);
    }
    free(from);
    free(to);
    fclose(log_file);
    log_file = open_append(log_path, &log_bytes);
}

int ns_log_open_file(const char *path, int64_t max_bytes, int keep, char *err, size_t errlen)
{
    int64_t size = 0;
    char *copy = strdup(path);
    FILE *f = copy ? open_append(path, &size) : NULL;
    if (f == NULL) {
        if (err)
            snprintf(err, errlen, "logFile %s: %s", path, copy ? strerror(errno) : "out of memory");
        free(copy);
        return NS_EIO;
    }
    pthread_mutex_lock(&file_lock);
    if (log_file)
        fclose(log_file);
    free(log_path);
    log_file = f;
    log_path = copy;
    log_bytes = size;
    log_max_bytes = max_bytes;
    log_keep = keep;
    pthread_mutex_unlock(&file_lock);
    return NS_OK;
}

int ns_log_reopen(void)
{
    int rc = NS_OK;
    pthread_mutex_lock(&file_lock);
    if (log_path) {
        if (log_file)
            fclose(log_file);
        log_file = open_append(log_path, &log_bytes);
        rc = log_file ? NS_OK : NS_EIO;
    }
    pthread_mutex_unlock(&file_lock);
    return rc;
}

void ns_log_close_file(void)
{
    pthread_mutex_lock(&file_lock);
    if (log_file)
        fclose(log_file);
    log_file = NULL;
    free(log_path);
    log_path = NULL;
    pthread_mutex_unlock(&file_lock);
}

int64_t ns_log_file_bytes(void)
{
    pthread_mutex_lock(&file_lock);
    int64_t n = log_bytes;
    pthread_mutex_unlock(&file_lock);
    return n;
}

int ns_log_fd(void)
{
    pthread_mutex_lock(&file_lock);
    int fd = log_file ? fileno(log_file) : 2;
    pthread_mutex_unlock(&file_lock);
    return fd;
}

void ns_log_write(ns_log_level_t level, const char *file, int line, const char *fmt, ...)
{
    char raw[1024], msg[1024 * 4], when[40];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* Log lines often carry a peer's text (names, remarks, setting values):
     * nothing in it may start a forged line, drive the terminal or reorder
     * what a reader sees (ns/utf8.h); msg has room for 4 bytes per byte. */
    ns_escape(raw, strlen(raw), 0, msg, sizeof msg);

    struct timeval tv;
    gettimeofday(&tv, NULL);
    ns_format_wall_time((int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000, when, sizeof when);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    int lv = (int)level;
    if (lv < 0 || lv > 3)
        lv = 3;
    bool written = false;
    pthread_mutex_lock(&file_lock);
    if (log_file) {
        int n = fprintf(log_file, "%s %-5s %s:%d %s\n", when, level_names[lv], base, line, msg);
        written = n > 0;
        if (n > 0)
            log_bytes += n;
        if (log_max_bytes > 0 && log_bytes >= log_max_bytes)
            rotate_locked();
    }
    if (!written) { /* no file, or it could not be reopened or rotated */
        if (to_journal < 0)
            to_journal = stderr_is_journal();
        if (to_journal) {
            static const int prio[] = {7, 6, 4, 3}; /* debug, info, warning, err */
            fprintf(stderr, "<%d>%-5s %s:%d %s\n", prio[lv], level_names[lv], base, line, msg);
        } else {
            fprintf(stderr, "%s %-5s %s:%d %s\n", when, level_names[lv], base, line, msg);
        }
    }
    pthread_mutex_unlock(&file_lock);
}
