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
