/* metrics.c - histograms, label names and the backup hook (metrics.h). */
#include "net/metrics.h"

#include <stdio.h>

_Static_assert(NS_HIST_LATENCY_BOUNDS < NS_M_HIST_MAX, "too many latency buckets");

/* Bound i of a histogram, in its raw unit. */
static uint64_t bound_of(ns_hist_kind_t kind, size_t i)
{
    return (kind == NS_HIST_LATENCY ? UINT64_C(1000) : UINT64_C(1)) << i;
}

int ns_metrics_rsp_index_slow(int code)
{
    switch (code) {
#define NS_M_RSP_CASE(name, value)                                                                 \
    case value:                                                                                    \
        return NS_M_RSP_##name;
        NS_RESPONSE_CODE_MAP(NS_M_RSP_CASE)
#undef NS_M_RSP_CASE
    default:
        return NS_M_RSP_OTHER;
    }
}

const char *ns_metrics_rsp_name(int idx)
{
    static const char *const names[] = {
#define NS_M_RSP_NAME(name, value) #name,
        NS_RESPONSE_CODE_MAP(NS_M_RSP_NAME)
#undef NS_M_RSP_NAME
            "OTHER",
    };
    return idx >= 0 && idx < NS_M_RSP_N ? names[idx] : "OTHER";
}

const char *ns_metrics_refusal_name(int idx)
{
    static const char *const names[] = {
#define NS_M_REF_NAME(name, label) label,
        NS_M_REFUSAL_MAP(NS_M_REF_NAME)
#undef NS_M_REF_NAME
    };
    return idx >= 0 && idx < NS_M_REFUSE_N ? names[idx] : "other";
}

const char *ns_metrics_auth_reason_name(int idx)
{
    static const char *const names[] = {
#define NS_M_AUTH_NAME(name, label) label,
        NS_M_AUTH_REFUSAL_MAP(NS_M_AUTH_NAME)
#undef NS_M_AUTH_NAME
    };
    return idx >= 0 && idx < NS_M_AUTH_N ? names[idx] : "other";
}

void ns_metrics_backup_done(ns_metrics_backup_t *b, bool ok, int64_t wall_ms)
{
    if (ok) {
        atomic_fetch_add_explicit(&b->ok, 1, memory_order_relaxed);
        atomic_store_explicit(&b->last_ok_wall_ms, wall_ms, memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(&b->failed, 1, memory_order_relaxed);
    }
}

static void bound_text(char *out, size_t len, uint64_t v, double scale)
{
    snprintf(out, len, "%.9g", (double)v * scale);
}

void ns_metrics_hist_render(ns_buf_t *out, const char *name, const char *labels,
                            ns_hist_kind_t kind, double scale, ns_hist_t *const *hs, size_t n)
{
    size_t nb = kind == NS_HIST_LATENCY ? NS_HIST_LATENCY_BOUNDS : NS_HIST_BATCH_BOUNDS;
    const char *sep = labels[0] ? "," : "";
    uint64_t cum = 0, count = 0, sum = 0;
    char le[32];
    for (size_t i = 0; i <= nb; i++) {
        for (size_t k = 0; k < n; k++)
            cum += NS_M_GET(hs[k]->bucket[i]);
        if (i < nb)
            bound_text(le, sizeof le, bound_of(kind, i), scale);
        else
            snprintf(le, sizeof le, "+Inf");
        ns_buf_printf(out, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels, sep, le,
                      (unsigned long long)cum);
    }
    for (size_t k = 0; k < n; k++) {
        count += NS_M_GET(hs[k]->count);
        sum += NS_M_GET(hs[k]->sum);
    }
    /* buckets and count are read at slightly different moments: keep the
     * exposition consistent (count == the +Inf bucket) */
    if (count != cum)
        count = cum;
    const char *open = labels[0] ? "{" : "", *close = labels[0] ? "}" : "";
    ns_buf_printf(out, "%s_sum%s%s%s %.15g\n", name, open, labels, close, (double)sum * scale);
    ns_buf_printf(out, "%s_count%s%s%s %llu\n", name, open, labels, close,
                  (unsigned long long)count);
}
