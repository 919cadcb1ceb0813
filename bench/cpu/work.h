/* What the CPU benchmark workloads share: one unit of work, clocks, and a
 * calibration that turns "about S seconds" into a fixed amount of work.
 *
 * The unit is a noipa function (no inlining, cloning or other
 * interprocedural changes), so every caller runs the very same machine code
 * and a unit costs the same wherever it is called from: the time a function
 * spends is proportional to the units it runs. The truth the benchmarks
 * compare against is nevertheless measured (CLOCK_THREAD_CPUTIME_ID), not
 * derived from the unit counts. */
#ifndef CPROF_BENCH_WORK_H
#define CPROF_BENCH_WORK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common.h"

/* Iterations of the dependency chain in one unit: about 0.3-1 ms on a
 * current x86-64 core, long enough that clock reads around a call cost
 * nothing, short enough that rounds interleave the functions finely. */
#define UNIT_ITERS (1u << 18)

/* One unit: a serial multiply/xorshift chain that the compiler can neither
 * vectorise nor fold. */
BENCH_FN uint64_t unit_kernel(uint64_t x) {
  for (uint32_t i = 0; i < UNIT_ITERS; i++) {
    x ^= x >> 29;
    x = x * 0x9e3779b97f4a7c15ULL + i;
  }
  return x;
}

/* CPU ns one unit takes on this thread: the fastest of a few batches,
 * after a warm-up, so a preempted batch does not inflate it. A function of
 * its own, so profiles show calibration as unit_ns -> unit_kernel. */
BENCH_FN double unit_ns(void) {
  uint64_t x = 1;
  double best = 1e18;
  for (int b = 0; b < 6; b++) {
    int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int k = 0; k < 20; k++)
      x = unit_kernel(x);
    double ns = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / 20;
    if (b > 0 && ns < best)
      best = ns;
  }
  if (x == 42)
    puts("");
  return best;
}

/* Parses a positive number argument or exits with usage. */
static inline double positive_arg(const char *s, const char *usage) {
  char *end;
  double v = s ? strtod(s, &end) : 0;
  if (!s || *end || !(v > 0)) {
    fprintf(stderr, "usage: %s\n", usage);
    exit(2);
  }
  return v;
}

/* The arguments split and threads share:
 *   SECONDS | -r ROUNDS  [--wait-ms A] [--until-ms B]
 * --wait-ms sleeps A ms at the start of main, before any work (even the
 * calibration), so that a profile requested meanwhile sees every CPU
 * nanosecond the work spends; --until-ms sleeps after the work until B ms
 * after main began, so that the profile ends while the program is still
 * there. */
typedef struct bench_args {
  double seconds; /* 0 when rounds is given */
  long rounds;
  long wait_ms, until_ms;
  int64_t start_ns;  /* CLOCK_MONOTONIC at main */
  int64_t start_cpu; /* the main thread's CPU time at main (a preloaded library's constructors) */
} bench_args_t;

static inline void bench_parse(int argc, char **argv, const char *usage, bench_args_t *a) {
  a->start_ns = clock_ns(CLOCK_MONOTONIC);
  a->start_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  a->seconds = 0, a->rounds = 0, a->wait_ms = 0, a->until_ms = 0;
  int i = 1;
  if (argc > 2 && strcmp(argv[1], "-r") == 0)
    a->rounds = (long)positive_arg(argv[2], usage), i = 3;
  else if (argc > 1)
    a->seconds = positive_arg(argv[1], usage), i = 2;
  else
    positive_arg(NULL, usage);
  for (; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--wait-ms") == 0)
      a->wait_ms = (long)positive_arg(argv[++i], usage);
    else if (i + 1 < argc && strcmp(argv[i], "--until-ms") == 0)
      a->until_ms = (long)positive_arg(argv[++i], usage);
    else
      positive_arg(NULL, usage);
  }
  if (a->wait_ms)
    sleep_ms(a->wait_ms);
}

/* Milliseconds since main began. */
static inline long bench_elapsed_ms(const bench_args_t *a) {
  return (long)((clock_ns(CLOCK_MONOTONIC) - a->start_ns) / 1000000);
}

static inline void bench_linger(const bench_args_t *a) {
  fflush(stdout);
  long left = a->until_ms - bench_elapsed_ms(a);
  if (left > 0)
    sleep_ms(left);
}

#endif
