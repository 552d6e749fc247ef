/* test_restore_checks.c - `namesrvctl restore` validates every field it
 * writes, since a dump is text anyone may have edited: a dump of a real
 * store restores; the same dump with a negative queue count, a store schema
 * newer than this binary, an invalid broker name or a zero heartbeat timeout
 * is refused with exit 4, the member's JSON path named, and nothing
 * written. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/model.h"

static char *replace_once(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    assert_non_null(at);
    size_t n = strlen(text) - strlen(from) + strlen(to);
    char *out = malloc(n + 1);
    assert_non_null(out);
    size_t head = (size_t)(at - text);
    memcpy(out, text, head);
    strcpy(out + head, to);
    strcat(out, at + strlen(from));
    return out;
}

static void test_restore_validates(void **state)
{
    (void)state;
    nstest_server_t srv;
    char *dir = nstest_tmpdir("restore-checks");
    char data[4200], dump[4200], bad[4200], target[4200], *out = NULL;
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(dump, sizeof dump, "%s/dump.json", dir);
    snprintf(bad, sizeof bad, "%s/bad.json", dir);
    assert_int_equal(nstest_server_start(&srv, dir, NULL), 0);
    ns_client_t *c = nstest_connect(&srv);
    ns_topic_config_t t[2] = {{(char *)"ChkA", 4, 4, 6, 0}, {(char *)"ChkB", 8, 8, 6, 0}};
    nstest_register_topics(c, "Chk", "chk-b", "10.0.3.1:10911", "10.0.3.1:10912", t, 2);
    nstest_server_stop(&srv, SIGKILL);
    ns_client_close(c);
    int rc = nstest_ctl(30000, &out, "dump", "--data-dir", data, "-o", dump, "--compact", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);
    uint8_t *text = NULL;
    size_t len = 0;
    assert_int_equal(nstest_read_file(dump, &text, &len), 0);

    /* the dump as it is restores */
    snprintf(target, sizeof target, "%s/ok", dir);
    rc = nstest_ctl(30000, &out, "restore", "--data-dir", target, "-i", dump, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    free(out);

    static const char *const edits[][3] = {
        {"\"readQueueNums\":4", "\"readQueueNums\":-4", "readQueueNums"},
        {"\"writeQueueNums\":8", "\"writeQueueNums\":-1", "writeQueueNums"},
        {"\"perm\":6", "\"perm\":-6", "perm"},
        {"\"schemaVersion\":", "\"schemaVersion\":999,\"x\":", "schemaVersion"},
        {"\"brokerName\":\"chk-b\"", "\"brokerName\":\"chk\\tb\"", "not a valid name"},
        {"\"heartbeatTimeoutMillis\":", "\"heartbeatTimeoutMillis\":0,\"y\":",
         "heartbeatTimeoutMillis"},
        {"\"ChkA\":", "\"Chk\\u0001A\":", "not a valid topic name"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        if (strstr((char *)text, edits[i][0]) == NULL)
            fail_msg("the dump has no %s:\n%s", edits[i][0], (char *)text);
        char *mod = replace_once((char *)text, edits[i][0], edits[i][1]);
        nstest_write_text(bad, mod);
        free(mod);
        snprintf(target, sizeof target, "%s/bad%zu", dir, i);
        rc = nstest_ctl(30000, &out, "restore", "--data-dir", target, "-i", bad, NULL);
        printf("# restore with %s: exit %d: %s", edits[i][1], rc, out);
        NSTEST_EXPECT_RC(rc, 4, out);
        NSTEST_EXPECT_IN(out, edits[i][2]);
        free(out);
    }
    free(text);
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restore_validates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
