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
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

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
