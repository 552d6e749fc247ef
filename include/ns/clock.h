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

/* A periodic task that comes back more than this late was not running: the
 * loop or the whole process was stalled (SIGSTOP, a VM pause, swapping).
 * Nothing on an event loop runs that long, and its idle-sweep timer wakes
 * it every second, so a loop that is 1 s behind its timer did not get the
 * CPU at all; a shorter delay is scheduling noise on a loaded host. */
#define NS_CLOCK_STALL_MS 1000

/* A task that runs every period_ms ran at now_ms (monotonic, e.g. the loop's
 * time); *last_ms holds the time of its previous run (0: none) and becomes
 * now_ms. Returns how long the task was held up beyond its period when that
 * is more than NS_CLOCK_STALL_MS (now - previous run > period +
 * NS_CLOCK_STALL_MS), else 0. A stall that time cannot account for (a clock
 * that went back) is 0. */
uint64_t ns_clock_stall(uint64_t *last_ms, uint64_t now_ms, uint64_t period_ms);

#endif
