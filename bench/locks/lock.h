/* What the lock benchmark workloads share (besides ../common.h): busy
 * waiting, sleeping, and a unit of work that the compiler cannot fold. */
#ifndef CPROF_BENCH_LOCK_H
#define CPROF_BENCH_LOCK_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common.h"

/* Busy-waits until CLOCK_MONOTONIC reaches DEADLINE (ns): time that passes
 * whether or not the thread keeps its CPU, unlike a count of iterations. */
static inline void spin_until(int64_t deadline) {
  while (clock_ns(CLOCK_MONOTONIC) < deadline)
    __asm__ volatile("pause");
}

/* Sleeps NS nanoseconds (nothing for 0 or less). */
static inline void sleep_ns(int64_t ns) {
  if (ns <= 0)
    return;
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

/* K steps of a serial multiply-add chain (4 cycles a step, about 1.5 ns
 * here): work whose cost does not depend on time, for the overhead loop. */
static inline uint64_t chain(uint64_t x, long k) {
  for (long i = 0; i < k; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    __asm__ volatile("" : "+r"(x));
  }
  return x;
}

/* Keeps a call from being compiled as a tail call (a jump), so that the
 * caller's frame is still on the stack when the callee looks at it. */
#define NOT_A_TAIL_CALL() __asm__ volatile("" ::: "memory")

#endif
