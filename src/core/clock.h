/* The time now on a clock, in one unit, for the few places that measure
 * (deadlines, durations, profile timestamps). */
#ifndef CPROF_CORE_CLOCK_H
#define CPROF_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t cprof__now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t cprof__now_ms(clockid_t clock) { return cprof__now_ns(clock) / 1000000; }

#endif
