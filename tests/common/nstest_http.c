/* nstest_http.c - a test server with its HTTP endpoint, and reading its
 * /metrics (nstest.h), so that a test waits for what the server counted
 * instead of sleeping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/buf.h"
#include "ns/err.h"
#include "ns/httpget.h"

int nstest_server_start_http(nstest_server_t *s, const char *dir, const char *const *extra_args,
                             int *http_port)
{
    char a_listen[] = "--httpListen=127.0.0.1:0", a_file[4200], file[4096];
    const char *argv[64] = {a_listen, a_file};
    int argc = 2;
    snprintf(file, sizeof file, "%s/http.port", dir);
    snprintf(a_file, sizeof a_file, "--httpPortFile=%s", file);
    unlink(file);
    for (int i = 0; extra_args && extra_args[i] && argc < 62; i++)
        argv[argc++] = extra_args[i];
    argv[argc] = NULL;
    *http_port = 0;
    if (nstest_server_start(s, dir, argv) != 0)
        return -1;
    int64_t end = nstest_mono_ms() + 10000;
    while (*http_port <= 0 && nstest_mono_ms() < end) {
        uint8_t *p = NULL;
        size_t n = 0;
        if (nstest_read_file(file, &p, &n) == 0) {
            *http_port = atoi((const char *)p);
            free(p);
        } else {
            nstest_sleep_ms(10);
        }
    }
    return *http_port > 0 ? 0 : -1;
}

int nstest_fx_setup_http(void **state, const char *tag, const char *const *extra_args)
{
    if (nstest_fx_setup_sized(state, sizeof(nstest_fx_http_t), tag) != 0)
        return -1;
    nstest_fx_http_t *f = *state;
    return nstest_server_start_http(&f->fx.srv, f->fx.dir, extra_args, &f->http_port);
}

#define PROMTOOL "/usr/bin/promtool"

int nstest_http_get(int http_port, const char *path, char **out)
{
    ns_buf_t body = NS_BUF_INIT;
    int status = 0;
    int rc = ns_http_get("127.0.0.1", http_port, path, 10000, &status, &body);
    if (rc != NS_OK)
        fail_msg("GET %s: %s", path, ns_strerror(rc));
    ns_buf_append_u8(&body, 0);
    *out = (char *)ns_buf_steal(&body, NULL);
    return status;
}

char *nstest_scrape(int http_port, const char *check_dir)
{
    char *text = NULL;
    assert_int_equal(nstest_http_get(http_port, "/metrics", &text), 200);
    if (check_dir == NULL)
        return text;
    char path[4096], out[4200], cmd[8400];
    snprintf(path, sizeof path, "%s/scrape.txt", check_dir);
    snprintf(out, sizeof out, "%s.out", path);
    nstest_write_text(path, text);
    snprintf(cmd, sizeof cmd, "%s check metrics < '%s' > '%s' 2>&1", PROMTOOL, path, out);
    int rc = system(cmd);
    if (rc != 0) {
        char *msg = nstest_read_text(out);
        fail_msg("promtool check metrics failed (%d):\n%s", rc, msg ? msg : "");
    }
    return text;
}

double nstest_series(const char *text, const char *series, double absent)
{
    size_t len = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, series, len) == 0 && p[len] == ' ')
            return strtod(p + len + 1, NULL);
    return absent;
}

double nstest_metric(int http_port, const char *series)
{
    ns_buf_t body = NS_BUF_INIT;
    int status = 0;
    double v = -1;
    if (ns_http_get("127.0.0.1", http_port, "/metrics", 10000, &status, &body) == NS_OK &&
        status == 200 && ns_buf_append_u8(&body, 0) == NS_OK)
        v = nstest_series((const char *)body.data, series, 0);
    ns_buf_free(&body);
    return v;
}

bool nstest_metric_wait_ge(int http_port, const char *series, double want, int timeout_ms)
{
    int64_t end = nstest_mono_ms() + timeout_ms;
    for (;;) {
        if (nstest_metric(http_port, series) >= want)
            return true;
        if (nstest_mono_ms() > end)
            return false;
        nstest_sleep_ms(20);
    }
}
