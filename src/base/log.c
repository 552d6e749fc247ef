/* log.c - leveled, timestamped logging to stderr (include/ns/log.h). */
#include "ns/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

ns_log_level_t ns_log_level = NS_LOG_LEVEL_INFO;

void ns_log_set_level(ns_log_level_t level)
{
    __atomic_store_n(&ns_log_level, level, __ATOMIC_RELAXED);
}

static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

/* Log lines often carry a peer's text (names, remarks, setting values): a
 * control character in it must not start a forged line or hide one, so
 * every byte below 0x20 and 0x7f is written as \n, \r, \t or \xHH. out
 * has room for 4 bytes per byte of in. */
static void escape_controls(const char *in, char *out, size_t out_size)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 5 < out_size; p++) {
        if (*p >= 0x20 && *p != 0x7f) {
            out[o++] = (char)*p;
        } else if (*p == '\n' || *p == '\r' || *p == '\t') {
            out[o++] = '\\';
            out[o++] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = 0;
}

int ns_log_level_parse(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (strcasecmp(name, level_names[i]) == 0)
            return i;
    if (strcasecmp(name, "warning") == 0)
        return NS_LOG_LEVEL_WARN;
    return -1;
}

void ns_log_write(ns_log_level_t level, const char *file, int line, const char *fmt, ...)
{
    char raw[1024], msg[1024 * 4];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    escape_controls(raw, msg, sizeof msg);

    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    int lv = (int)level;
    if (lv < 0 || lv > 3)
        lv = 3;
    /* One fprintf per line so concurrent threads do not interleave. */
    fprintf(stderr, "%s.%03ldZ %-5s %s:%d %s\n", ts, (long)(tv.tv_usec / 1000), level_names[lv],
            base, line, msg);
}
