/* What every benchmark workload shares (cpu/work.h and heap/heap.h
 * include it): clocks, a sleep, and the attribute that keeps a function's
 * name as written. */
#ifndef CPROF_BENCH_CLOCK_H
#define CPROF_BENCH_CLOCK_H

#include <stdint.h>
#include <time.h>

/* noipa keeps the symbol name as written (no inlining, no ".constprop.0"
 * clones), so `go tool pprof` shows exactly the names the scripts look for. */
#define BENCH_FN __attribute__((noipa))

static inline int64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

#endif
