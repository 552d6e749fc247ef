/* test_reply_size.c - a reply larger than a frame may be is refused with a
 * remark, not sent. Before, GET_KVLIST_BY_NAMESPACE over 100,000 keys
 * answered one 21.5 MB frame, over maxFrameBytes and over Java clients'
 * frameMaxLength (16 MiB), which drop it and close the connection. Here
 * maxFrameBytes is 64 KiB and the namespace's list is larger: SYSTEM_ERROR
 * "reply too large", the connection still serves, and a list that fits is
 * answered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "nstest_auth.h"
#include "ns/client.h"
#include "ns/codes.h"

static int list(ns_client_t *c, const char *ns, char *remark, size_t n)
{
    const char *kv[] = {"namespace", ns, NULL};
    return nstest_call_on(c, NS_REQ_GET_KVLIST_BY_NAMESPACE, kv, NULL, remark, n);
}

static void test_reply_over_max_frame_refused(void **state)
{
    nstest_fx_t *fx = *state;
    ns_client_t *c = nstest_connect(&fx->srv);
    char value[101];
    memset(value, 'v', 100);
    value[100] = 0;
    nstest_put_keys(c, "BIG", "key-", 5, 1000, value); /* ~120 KB as a KVTable */
    nstest_put_keys(c, "SMALL", "key-", 5, 10, value);
    char remark[512] = "";
    assert_int_equal(list(c, "BIG", remark, sizeof remark), NS_RSP_SYSTEM_ERROR);
    print_message("# %s\n", remark);
    assert_non_null(strstr(remark, "reply too large"));
    assert_non_null(strstr(remark, "maxFrameBytes (65536)"));
    assert_true(nstest_log_wait(&fx->srv, "not sent: over maxFrameBytes", 2000));
    /* the same connection goes on */
    assert_int_equal(list(c, "SMALL", remark, sizeof remark), NS_RSP_SUCCESS);
    ns_client_close(c);
}

static int setup(void **state)
{
    static const char *const args[] = {"--maxFrameBytes=65536", NULL};
    return nstest_fx_setup(state, "replysize", args);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reply_over_max_frame_refused, setup,
                                        nstest_fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
