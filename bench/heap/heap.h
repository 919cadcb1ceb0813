/* What the heap benchmark workloads share (besides ../clock.h): a fast random number
 * generator, argument parsing, and the program's own memory figures.
 *
 * The workloads' bookkeeping (arrays of pointers, per-thread state) lives
 * in mmap()ed memory, never in malloc()ed memory, so that every byte a
 * heap profiler sees was allocated by the workload's measured code and the
 * truth the workloads print is exact. */
#ifndef CPROF_BENCH_HEAP_H
#define CPROF_BENCH_HEAP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../clock.h"


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

/* Zeroed memory from mmap, outside the malloc heap; exits on failure. */
static inline void *bench_map(size_t bytes) {
  void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  return p;
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

/* The value in kB of a "Name:   N kB" line of /proc/self/status, or -1.
 * read() into a stack buffer: stdio would malloc one. */
static inline long status_kb(const char *name) {
  char buf[8192];
  int fd = open("/proc/self/status", O_RDONLY);
  if (fd < 0)
    return -1;
  ssize_t len = 0, r;
  while (len < (ssize_t)sizeof buf - 1 && (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
    len += r;
  close(fd);
  buf[len] = 0;
  size_t nl = strlen(name);
  for (char *p = buf; *p;) {
    if (strncmp(p, name, nl) == 0 && p[nl] == ':')
      return strtol(p + nl + 1, NULL, 10);
    char *next = strchr(p, '\n');
    if (!next)
      break;
    p = next + 1;
  }
  return -1;
}

#endif
