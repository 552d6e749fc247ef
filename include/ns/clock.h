/* clock.h - the two clocks (base floor): the wall clock for what is stored
 * or shown (audit history, registration times), the monotonic clock for
 * timeouts and durations. An event loop uses libuv's cached loop time
 * (uv_now) for its timers instead; tests that need a virtual clock pass
 * "now" into the code under test (liveness takes it as a parameter). */
#ifndef NS_CLOCK_H
#define NS_CLOCK_H

#include <stdint.h>

/* Milliseconds since the epoch (CLOCK_REALTIME). */
int64_t ns_clock_wall_ms(void);
/* Milliseconds on CLOCK_MONOTONIC (never goes back; unrelated to the epoch). */
int64_t ns_clock_mono_ms(void);

#endif
