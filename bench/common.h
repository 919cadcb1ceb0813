/* What every benchmark workload shares (cpu/work.h, heap/heap.h and
 * locks/lock.h include it): clocks, a sleep, the attribute that keeps a
 * function's name as written, a random number generator and argument
 * parsing. */
#ifndef CPROF_BENCH_COMMON_H
#define CPROF_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* xorshift64*: a few cycles per number (next to a malloc/free pair of
 * ~20-50 ns), and random enough to pick sizes and slots. */
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

/* Uniform in [0, n). */
static inline uint64_t rng_below(rng_t *r, uint64_t n) {
  return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

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

#endif
