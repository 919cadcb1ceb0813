/* stacks: malloc and free from many distinct stacks and sizes, keeping
 * nothing, for the heap profiler's own memory.
 *
 *   stacks [--seconds S] [--depths D] [--paths P] [--seed X]
 *
 * Each step picks a depth below D and recurses that deep, then mallocs a
 * block of a size drawn log-uniformly from 16 B to 64 KiB, writes its
 * first byte and frees it. With --paths P, each of the first P levels
 * calls one of two functions, chosen at random, so the stacks number up to
 * D x 2^P; with P = 0 (the default) there are D of them, each a recursion
 * of its own depth. The program itself holds almost nothing, so what its
 * resident size gains under a profiler is the profiler's.
 *
 * Once a second, and at the end, it prints
 *   stacks: t=SECONDS steps=N rss_kb=RSS
 * Defaults: S=25, D=120, P=0. */
#include "heap.h"

static const char usage[] = "stacks [--seconds S] [--depths D] [--paths P] [--seed X]";

BENCH_FN void step_alloc(size_t n) {
  char *p = malloc(n);
  if (!p) {
    fprintf(stderr, "stacks: malloc(%zu) failed\n", n);
    exit(1);
  }
  p[0] = 1;
  __asm__ volatile("" : : "r"(p) : "memory");
  free(p);
}

BENCH_FN void descend(long depth, uint64_t path, long paths, size_t n);
BENCH_FN void left(long depth, uint64_t path, long paths, size_t n) {
  descend(depth, path, paths, n);
  __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
}
BENCH_FN void right(long depth, uint64_t path, long paths, size_t n) {
  descend(depth, path, paths, n);
  __asm__ volatile("" ::: "memory");
}
BENCH_FN void descend(long depth, uint64_t path, long paths, size_t n) {
  if (depth <= 0)
    step_alloc(n);
  else if (paths > 0 && (path & 1))
    left(depth - 1, path >> 1, paths - 1, n);
  else if (paths > 0)
    right(depth - 1, path >> 1, paths - 1, n);
  else
    descend(depth - 1, path, 0, n);
  __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv) {
  double seconds = 25;
  long depths = 120, paths = 0;
  uint64_t seed = 1;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc)
      return number_arg(NULL, usage), 2;
    double v = number_arg(argv[i + 1], usage);
    if (strcmp(argv[i], "--seconds") == 0 && v > 0)
      seconds = v;
    else if (strcmp(argv[i], "--depths") == 0 && v >= 1)
      depths = (long)v;
    else if (strcmp(argv[i], "--paths") == 0 && v >= 0 && v <= 60)
      paths = (long)v;
    else if (strcmp(argv[i], "--seed") == 0)
      seed = (uint64_t)v;
    else
      return number_arg(NULL, usage), 2;
    i++;
  }
  rng_t r;
  rng_seed(&r, seed);
  int64_t t0 = clock_ns(CLOCK_MONOTONIC), next = t0 + 1000000000;
  long steps = 0;
  for (;;) {
    for (int k = 0; k < 1000; k++, steps++) {
      long depth = (long)rng_below(&r, (uint64_t)depths);
      double u = rng_unit(&r);
      size_t n = (size_t)(16.0 * __builtin_exp2(12 * u)); /* 16 B .. 64 KiB */
      descend(depth, rng_next(&r), paths < depth ? paths : depth, n);
    }
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    if (now >= next || now - t0 >= (int64_t)(seconds * 1e9)) {
      printf("stacks: t=%.0f steps=%ld rss_kb=%ld\n", (double)(now - t0) / 1e9, steps, status_kb("VmRSS"));
      fflush(stdout);
      next += 1000000000;
      if (now - t0 >= (int64_t)(seconds * 1e9))
        break;
    }
  }
  return 0;
}
