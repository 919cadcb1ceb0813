/* What the lock benchmark workloads share (besides ../clock.h): a cheap
 * random number generator, argument parsing, busy waiting and a unit of
 * work that the compiler cannot fold. */
#ifndef CPROF_BENCH_LOCK_H
#define CPROF_BENCH_LOCK_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../clock.h"

/* xorshift64*, as heap/heap.h. */
typedef struct rng {
  uint64_t s;
} rng_t;

static inline void rng_seed(rng_t *r, uint64_t seed) {
  r->s = seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL;
  if (!r->s)
    r->s = 1;
}

static inline uint64_t rng_next(rng_t *r) {
  uint64_t x = r->s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 0x2545f4914f6cdd1dULL;
}

/* Uniform in [0, 1). */
static inline double rng_unit(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Parses a non-negative number or exits with usage. */
static inline double number_arg(const char *s, const char *usage) {
  char *end;
  double v = s ? strtod(s, &end) : -1;
  if (!s || *end || !(v >= 0)) {
    fprintf(stderr, "usage: %s\n", usage);
    exit(2);
  }
  return v;
}

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
