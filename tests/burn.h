/* burn(ms): spends about ms of the calling thread's CPU time (its own
 * clock, CLOCK_THREAD_CPUTIME_ID), in a loop the compiler cannot drop:
 * for tests whose CPU profiles need samples. */
#ifndef CPROF_TESTS_BURN_H
#define CPROF_TESTS_BURN_H

#include <time.h>

static volatile unsigned long burn_sink;

static inline void burn(long ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  do {
    for (int i = 0; i < 100000; i++)
      burn_sink += (unsigned long)i * 2654435761u;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

#endif
