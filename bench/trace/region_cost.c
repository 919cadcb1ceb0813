/* ns per cprof_region_begin + cprof_region_end pair (issue 18), with nobody
 * listening (the goal: under 2 ns), with only a wall-clock profile
 * listening (the thread's stack of open regions is kept), with a trace
 * recording (each call also appends an event to the thread's buffer), and
 * with a trace whose buffer is full (events dropped and counted); and the
 * other calls with nobody listening. The cases alternate, batch by batch,
 * so that a change of the machine's speed touches all of them alike; the
 * table gives each case's median, min and max over the batches.
 *
 * Built twice (bench/Makefile): region_cost links the static library and
 * its internals (it switches the listeners itself); region_cost_so links
 * libcprof.so as a program does, calls through the PLT, and measures only
 * what needs no internals (nobody listening).
 *
 * A trace's buffer is fresh memory, so a recording batch also pays the
 * kernel's first touch of each page (a fault per 4 KiB: about 50 pairs).
 * --warm keeps freed buffers in malloc's heap instead of unmapping them
 * (mallopt), so that each batch's buffer reuses pages touched before: the
 * append alone. The buffer must then stay under malloc's largest mmap
 * threshold (32 MiB): --pairs at most 400000.
 *
 *   region_cost [--batches N] [--pairs N] [--warm] */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "cprof.h"
#ifdef SHARED
#define LINK "libcprof.so"
#else
#include "sample/trace.h"
#define LINK "libcprof.a"
#endif

#define MAX_BATCHES 101

typedef struct bench_case {
  const char *name;
  void (*setup)(long pairs);
  long (*run)(long pairs);
  void (*teardown)(void);
  double ns[MAX_BATCHES];
} bench_case_t;

/* The baseline: a loop calling two empty functions of another file would
 * cost; here two noipa functions, so that the call itself is counted. */
BENCH_FN static void empty_begin(const char *name) { (void)name; }
BENCH_FN static void empty_end(void) {}

BENCH_FN static long run_empty(long pairs) {
  for (long i = 0; i < pairs; i++) {
    empty_begin("region");
    empty_end();
  }
  return pairs;
}

BENCH_FN static long run_regions(long pairs) {
  for (long i = 0; i < pairs; i++) {
    cprof_region_begin("region");
    cprof_region_end();
  }
  return pairs;
}

BENCH_FN static long run_tasks(long pairs) {
  for (long i = 0; i < pairs; i++)
    cprof_task_end(cprof_task_begin("task"));
  return pairs;
}

BENCH_FN static long run_log(long pairs) {
  for (long i = 0; i < pairs; i++)
    cprof_trace_log("category", "message");
  return pairs;
}

BENCH_FN static long run_enabled(long pairs) {
  long n = 0;
  for (long i = 0; i < pairs; i++)
    n += cprof_trace_enabled();
  return pairs + n;
}

static void nothing(long pairs) { (void)pairs; }
static void nothing_after(void) {}

#ifndef SHARED
static void wall_on(long pairs) {
  (void)pairs;
  cprof__trace_listen(CPROF__LISTEN_WALL, 1);
}

static void wall_off(void) { cprof__trace_listen(CPROF__LISTEN_WALL, 0); }

/* A buffer that holds every event of the batch: appends, no drops. */
static void trace_on(long pairs) {
  size_t bytes = (size_t)pairs * 2 * CPROF__TRACE_REC_BYTES(strlen("region"), 0) + 4096;
  if (cprof__trace_begin(bytes) != 0) {
    fprintf(stderr, "region_cost: cprof__trace_begin(%zu) failed\n", bytes);
    exit(1);
  }
}

/* A buffer of one event: every other event is dropped. */
static void trace_full_on(long pairs) {
  (void)pairs;
  if (cprof__trace_begin(64) != 0) {
    fprintf(stderr, "region_cost: cprof__trace_begin(64) failed\n");
    exit(1);
  }
}

static void trace_off(void) { cprof__trace_end(NULL, NULL, NULL); }

static void trace_off_expect_none(void) {
  uint64_t dropped;
  cprof__trace_end(NULL, NULL, &dropped);
  if (dropped) {
    fprintf(stderr, "region_cost: %llu events dropped from a buffer meant to hold them all\n",
            (unsigned long long)dropped);
    exit(1);
  }
}
#endif

static bench_case_t cases[] = {
    {"baseline: two empty calls", nothing, run_empty, nothing_after, {0}},
    {"region pair, nobody listening", nothing, run_regions, nothing_after, {0}},
#ifndef SHARED
    {"region pair, wall profile listening", wall_on, run_regions, wall_off, {0}},
    {"region pair, trace recording", trace_on, run_regions, trace_off_expect_none, {0}},
    {"region pair, trace buffer full", trace_full_on, run_regions, trace_off, {0}},
#endif
    {"task begin+end, nobody listening", nothing, run_tasks, nothing_after, {0}},
    {"trace_log, nobody listening", nothing, run_log, nothing_after, {0}},
    {"trace_enabled, nobody listening", nothing, run_enabled, nothing_after, {0}},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int batches = 11;
  long pairs = 2000000;
  int warm = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--warm") == 0)
      warm = 1;
    else if (strcmp(argv[i], "--batches") == 0 && i + 1 < argc)
      batches = atoi(argv[++i]);
    else if (strcmp(argv[i], "--pairs") == 0 && i + 1 < argc)
      pairs = atol(argv[++i]);
  }
  if (warm && (!mallopt(M_MMAP_THRESHOLD, 32 << 20) || !mallopt(M_TRIM_THRESHOLD, 1 << 30))) {
    fprintf(stderr, "region_cost: mallopt refused --warm's thresholds\n");
    return 2;
  }
  if (batches < 1 || batches > MAX_BATCHES || pairs < 1) {
    fprintf(stderr, "region_cost: --batches 1..%d, --pairs at least 1\n", MAX_BATCHES);
    return 2;
  }
  /* One untimed round warms the caches, the branch predictors and the
   * thread's region block. */
  for (size_t c = 0; c < N_CASES; c++) {
    cases[c].setup(pairs / 10 + 1);
    cases[c].run(pairs / 10 + 1);
    cases[c].teardown();
  }
  for (int b = 0; b < batches; b++) {
    for (size_t c = 0; c < N_CASES; c++) {
      cases[c].setup(pairs);
      int64_t t0 = clock_ns(CLOCK_MONOTONIC);
      cases[c].run(pairs);
      int64_t t1 = clock_ns(CLOCK_MONOTONIC);
      cases[c].teardown();
      cases[c].ns[b] = (double)(t1 - t0) / (double)pairs;
    }
  }
  printf("%-40s %10s %8s %8s\n", warm ? "case (" LINK ", warm)" : "case (" LINK ")", "median ns",
         "min", "max");
  for (size_t c = 0; c < N_CASES; c++) {
    qsort(cases[c].ns, (size_t)batches, sizeof(double), by_value);
    printf("%-40s %10.2f %8.2f %8.2f\n", cases[c].name, cases[c].ns[batches / 2], cases[c].ns[0],
           cases[c].ns[batches - 1]);
  }
  return 0;
}
