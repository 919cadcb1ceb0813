/* The time now on a clock, in one unit, for the few places that measure
 * (deadlines, durations, profile timestamps). */
#ifndef CPROF_CORE_CLOCK_H
#define CPROF_CORE_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static inline int64_t cprof__now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t cprof__now_ms(clockid_t clock) { return cprof__now_ns(clock) / 1000000; }

/* Initializes c so that its timed waits run on CLOCK_MONOTONIC: a change
 * of the wall clock neither stretches nor cuts them. (Deadlines for it come
 * from cprof__now_ns(CLOCK_MONOTONIC).) */
static inline void cprof__cond_init_monotonic(pthread_cond_t *c) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(c, &attr);
  pthread_condattr_destroy(&attr);
}

#endif
