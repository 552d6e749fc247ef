/* nstest.c - shared helpers for the test suite (see nstest.h). */
#define _GNU_SOURCE
#include "nstest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ftw.h>

#include <cmocka.h>

int nstest_read_file(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    ns_buf_t b = NS_BUF_INIT;
    uint8_t tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
        ns_buf_append(&b, tmp, n);
    fclose(f);
    if (b.data == NULL)
        ns_buf_reserve(&b, 0);
    *out = ns_buf_steal(&b, len);
    return 0;
}

uint8_t *nstest_fixture(const char *rel, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", NS_FIXTURES_DIR, rel);
    uint8_t *p = NULL;
    if (nstest_read_file(path, &p, len) != 0)
        fail_msg("missing fixture %s", path);
    return p;
}

uint8_t *nstest_hex_decode(const char *hex, size_t *len)
{
    size_t n = strlen(hex);
    if (n % 2)
        return NULL;
    uint8_t *p = malloc(n / 2 + 1);
    if (p == NULL)
        return NULL;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = ns_hex_digit(hex[2 * i]), lo = ns_hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(p);
            return NULL;
        }
        p[i] = (uint8_t)(hi << 4 | lo);
    }
    *len = n / 2;
    return p;
}

char *nstest_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char *path = NULL;
    if (asprintf(&path, "%s/nstest-%s-XXXXXX", base ? base : "/tmp", tag) < 0)
        return NULL;
    if (mkdtemp(path) == NULL) {
        free(path);
        return NULL;
    }
    return path;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void nstest_rmtree(const char *path)
{
    if (path)
        nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

int64_t nstest_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void nstest_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void nstest_wall_tick(void)
{
    int64_t start = wall_ms();
    while (wall_ms() <= start) {
        struct timespec ts = {0, 200000L};
        nanosleep(&ts, NULL);
    }
}

static char *saved_asan_options;

void nstest_fault_env_set(const char *const *env)
{
    nstest_preload_env_set(NS_FAULT_LIB, env);
}

void nstest_preload_env_set(const char *lib, const char *const *env)
{
    const char *asan = getenv("ASAN_OPTIONS");
    char opts[1024];
    free(saved_asan_options);
    saved_asan_options = asan ? strdup(asan) : NULL;
    snprintf(opts, sizeof opts, "%s%sverify_asan_link_order=0", asan ? asan : "",
             asan && *asan ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    setenv("LD_PRELOAD", lib, 1);
    for (int i = 0; env && env[i] && env[i + 1]; i += 2)
        setenv(env[i], env[i + 1], 1);
}

void nstest_fault_env_clear(const char *const *env)
{
    unsetenv("LD_PRELOAD");
    if (saved_asan_options)
        setenv("ASAN_OPTIONS", saved_asan_options, 1);
    else
        unsetenv("ASAN_OPTIONS");
    free(saved_asan_options);
    saved_asan_options = NULL;
    for (int i = 0; env && env[i]; i += 2)
        unsetenv(env[i]);
}
