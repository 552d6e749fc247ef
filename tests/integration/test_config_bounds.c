/* test_config_bounds.c - UPDATE_NAMESRV_CONFIG has a size bound. Before,
 * 100,000 repeats of productEnvName (2.2 MB) held the loop 1.2 s while
 * every pair was validated, applied and logged (27 MB of log), and the
 * admin trail took the whole body. Now a body over 64 KiB, more than 256
 * keys or a value over 4 KiB is refused at once with INVALID_PARAMETER and
 * a remark that says which, nothing is applied, the log gets one line, and
 * an update within the bounds still works. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "nstest_auth.h"
#include "ns/client.h"
#include "ns/codes.h"

/* n lines "key=value" (value: vlen x's) as one NUL-terminated body. */
static char *pairs(const char *key, size_t n, size_t vlen)
{
    size_t line = strlen(key) + 1 + vlen + 1;
    char *b = malloc(n * line + 1), *p = b;
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) {
        p += sprintf(p, "%s=", key);
        memset(p, 'x', vlen);
        p += vlen;
        *p++ = '\n';
    }
    *p = 0;
    return b;
}

static long log_size(const nstest_fx_t *fx)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/namesrvd.log", fx->dir);
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void expect_refused(ns_client_t *c, const char *body, const char *why)
{
    char remark[256] = "";
    int64_t t0 = nstest_mono_ms();
    int code = nstest_call_on(c, NS_REQ_UPDATE_NAMESRV_CONFIG, NULL, body, remark, sizeof remark);
    int64_t ms = nstest_mono_ms() - t0;
    print_message("# %zu-byte update: code %d in %lld ms: %s\n", strlen(body), code, (long long)ms,
                  remark);
    assert_int_equal(code, NS_RSP_INVALID_PARAMETER);
    assert_non_null(strstr(remark, "config update too large"));
    assert_non_null(strstr(remark, why));
}

static void test_huge_updates_refused(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    long log0 = log_size(fx);
    char *flood = pairs("productEnvName", 100000, 8); /* 2.3 MB, as in the attack */
    expect_refused(c, flood, "at most 65536");
    free(flood);
    char *keys = pairs("productEnvName", 300, 2); /* 5 KB but 300 keys */
    expect_refused(c, keys, "more than 256 keys");
    free(keys);
    char *big = pairs("productEnvName", 1, 5000);
    expect_refused(c, big, "a value over 4096 bytes");
    free(big);
    /* nothing was applied, the log got a line or two, the server serves */
    ns_client_t *c2 = nstest_connect(&fx->srv);
    assert_int_equal(nstest_route_code(&fx->srv, "NoSuchTopic"), NS_RSP_TOPIC_NOT_EXIST);
    long grown = log_size(fx) - log0;
    print_message("# log grew %ld bytes\n", grown);
    assert_true(grown < 4096);
    assert_int_equal(nstest_log_count(&fx->srv, "config changed: productEnvName"), 0);
    /* within the bounds: 256 keys, values of 4096 bytes, applied */
    char *ok = pairs("productEnvName", 2, 4096);
    assert_int_equal(nstest_config_update(c2, ok), NS_RSP_SUCCESS);
    free(ok);
    char *most = pairs("productEnvName", 256, 1);
    assert_int_equal(nstest_config_update(c2, most), NS_RSP_SUCCESS);
    free(most);
    assert_true(nstest_log_count(&fx->srv, "config changed: productEnvName") > 0);
    ns_client_close(c2);
    ns_client_close(c);
}

static int setup(void **state)
{
    return nstest_fx_setup(state, "cfgbound", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_huge_updates_refused, setup, nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
