/* test_metrics.c - the counter primitives of src/daemon/net/metrics.c:
 * histogram buckets, the exposition of a histogram, response-code indexes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ns/codes.h"
#include "src/daemon/net/metrics.h"
#include "nstest.h"

static void test_latency_buckets(void **state)
{
    ns_hist_t h = {0};
    ns_hist_observe(&h, NS_HIST_LATENCY, 1);          /* 1 ns: first bucket (<= 1 us) */
    ns_hist_observe(&h, NS_HIST_LATENCY, 1000);       /* on the bound: still the first */
    ns_hist_observe(&h, NS_HIST_LATENCY, 1001);       /* the next one (<= 2 us) */
    ns_hist_observe(&h, NS_HIST_LATENCY, 3000);       /* <= 4 us */
    ns_hist_observe(&h, NS_HIST_LATENCY, 9000000000); /* 9 s: +Inf */
    assert_int_equal(NS_M_GET(h.bucket[0]), 2);
    assert_int_equal(NS_M_GET(h.bucket[1]), 1);
    assert_int_equal(NS_M_GET(h.bucket[2]), 1);
    assert_int_equal(NS_M_GET(h.bucket[NS_HIST_LATENCY_BOUNDS]), 1);
    assert_int_equal(NS_M_GET(h.count), 5);
    assert_int_equal(NS_M_GET(h.sum), 1 + 1000 + 1001 + 3000 + 9000000000ull);
    ns_hist_t *hs[2] = {&h, &h};
    ns_buf_t out = NS_BUF_INIT;
    ns_metrics_hist_render(&out, "x_seconds", "kind=\"read\"", NS_HIST_LATENCY, 1e-9, hs, 2);
    ns_buf_append_u8(&out, 0);
    const char *t = (const char *)out.data;
    static const char *const want[] = {"x_seconds_bucket{kind=\"read\",le=\"1e-06\"} 4\n",
                                       "x_seconds_bucket{kind=\"read\",le=\"2e-06\"} 6\n",
                                       "x_seconds_bucket{kind=\"read\",le=\"4e-06\"} 8\n",
                                       "x_seconds_bucket{kind=\"read\",le=\"4.194304\"} 8\n",
                                       "x_seconds_bucket{kind=\"read\",le=\"+Inf\"} 10\n",
                                       "x_seconds_count{kind=\"read\"} 10\n",
                                       "x_seconds_sum{kind=\"read\"} 18.000010004",
                                       NULL};
    nstest_expect_all(t, want);
    ns_buf_free(&out);
}

static void test_batch_buckets_without_labels(void **state)
{
    ns_hist_t h = {0};
    ns_hist_observe(&h, NS_HIST_BATCH, 3);
    ns_hist_observe(&h, NS_HIST_BATCH, 64);
    ns_hist_t *hs[1] = {&h};
    ns_buf_t out = NS_BUF_INIT;
    ns_metrics_hist_render(&out, "b", "", NS_HIST_BATCH, 1, hs, 1);
    ns_buf_append_u8(&out, 0);
    const char *t = (const char *)out.data;
    static const char *const want[] = {"b_bucket{le=\"2\"} 0\n",
                                       "b_bucket{le=\"4\"} 1\n",
                                       "b_bucket{le=\"64\"} 2\n",
                                       "b_sum 67\n",
                                       "b_count 2\n",
                                       NULL};
    nstest_expect_all(t, want);
    ns_buf_free(&out);
}

static void test_response_codes(void **state)
{
    assert_string_equal(ns_metrics_rsp_name(ns_metrics_rsp_index(NS_RSP_SUCCESS)), "SUCCESS");
    assert_string_equal(ns_metrics_rsp_name(ns_metrics_rsp_index(NS_RSP_TOPIC_NOT_EXIST)),
                        "TOPIC_NOT_EXIST");
    assert_string_equal(ns_metrics_rsp_name(ns_metrics_rsp_index(12345)), "OTHER");
    assert_string_equal(ns_metrics_refusal_name(NS_M_REFUSE_OVERSIZED_FRAME), "oversized_frame");
}

static void test_backup_hook(void **state)
{
    ns_metrics_backup_t b = {0};
    ns_metrics_backup_done(&b, false, 5);
    ns_metrics_backup_done(&b, true, 7);
    assert_int_equal(atomic_load(&b.ok), 1);
    assert_int_equal(atomic_load(&b.failed), 1);
    assert_int_equal(atomic_load(&b.last_ok_wall_ms), 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latency_buckets),
        cmocka_unit_test(test_batch_buckets_without_labels),
        cmocka_unit_test(test_response_codes),
        cmocka_unit_test(test_backup_hook),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
