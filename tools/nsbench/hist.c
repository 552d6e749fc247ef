/* hist.c - log-linear latency histogram (nsbench.h).
 *
 * Index of a value v:
 *   v < 2^(S+1)            idx = v                       (exact)
 *   otherwise, k = msb(v) - S, m = v >> k  (m in [2^S, 2^(S+1)))
 *                          idx = k * 2^S + m
 * which is contiguous: shift k covers [k*2^S + 2^S, k*2^S + 2^(S+1)).
 * With S = 7 every bucket spans at most 1/128 of its values. */
#include <string.h>

#include "nsbench.h"

void hist_reset(hist_t *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

size_t hist_index(uint64_t v)
{
    if (v < (2u * HIST_SUB))
        return (size_t)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned k = msb - HIST_SUB_BITS;
    return (size_t)k * HIST_SUB + (size_t)(v >> k);
}

uint64_t hist_bucket_low(size_t idx)
{
    if (idx < 2u * HIST_SUB)
        return idx;
    size_t k = idx / HIST_SUB - 1;
    uint64_t m = idx - k * HIST_SUB;
    return m << k;
}

uint64_t hist_bucket_high(size_t idx)
{
    if (idx < 2u * HIST_SUB)
        return idx;
    size_t k = idx / HIST_SUB - 1;
    return hist_bucket_low(idx) + ((uint64_t)1 << k) - 1;
}

void hist_record(hist_t *h, uint64_t v)
{
    size_t i = hist_index(v);
    if (i >= HIST_BUCKETS)
        i = HIST_BUCKETS - 1;
    h->counts[i]++;
    h->total++;
    h->sum += (double)v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

uint64_t hist_quantile(const hist_t *h, double q)
{
    if (h->total == 0)
        return 0;
    if (q <= 0)
        return h->min;
    if (q >= 1)
        return h->max;
    /* the smallest value with at least ceil(q * total) samples at or below it */
    uint64_t want = (uint64_t)(q * (double)h->total + 0.999999999);
    if (want == 0)
        want = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= want) {
            uint64_t lo = hist_bucket_low(i), hi = hist_bucket_high(i);
            uint64_t mid = lo + (hi - lo) / 2;
            if (mid < h->min)
                mid = h->min;
            if (mid > h->max)
                mid = h->max;
            return mid;
        }
    }
    return h->max;
}

double hist_mean(const hist_t *h)
{
    return h->total ? h->sum / (double)h->total : 0.0;
}

void hist_merge(hist_t *into, const hist_t *from)
{
    for (size_t i = 0; i < HIST_BUCKETS; i++)
        into->counts[i] += from->counts[i];
    into->total += from->total;
    into->sum += from->sum;
    if (from->total) {
        if (from->min < into->min)
            into->min = from->min;
        if (from->max > into->max)
            into->max = from->max;
    }
}
