/* clock.c - the wall and monotonic clocks (include/ns/clock.h). */
#include "ns/clock.h"

#include <time.h>

static int64_t ms_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t ns_clock_wall_ms(void)
{
    return ms_of(CLOCK_REALTIME);
}

int64_t ns_clock_mono_ms(void)
{
    return ms_of(CLOCK_MONOTONIC);
}

uint64_t ns_clock_stall(uint64_t *last_ms, uint64_t now_ms, uint64_t period_ms)
{
    uint64_t prev = *last_ms;
    *last_ms = now_ms;
    if (prev == 0 || now_ms <= prev || now_ms - prev <= period_ms + NS_CLOCK_STALL_MS)
        return 0;
    return now_ms - prev - period_ms;
}
