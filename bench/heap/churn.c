/* churn: malloc/free-heavy work, for the cost of heap profiling.
 *
 *   churn [--threads T] [--slots N] [--ops M] [--depth D] [--seed S]
 *
 * Each of T threads (the main thread is the first) owns N slots, filled
 * with blocks before the timing starts. Then each does M steps of: pick a
 * random slot, free its block, malloc a new one of a random size, write
 * its first byte. Sizes: 31 in 32 uniform in 16-1024 B, 1 in 32
 * log-uniform in 1-32 KiB (about 790 B a step on average). The steps run
 * D frames deep (a noinline recursion), so a sampling profiler's unwinder
 * has a stack of about D + 5 frames to walk. Defaults: T=1, N=10000,
 * M=2e7, D=10.
 *
 * The threads start together (a barrier); what is timed is from there to
 * the last one's end. At exit it prints
 *   churn: threads=T ops=M_TOTAL wall_ns=W ns_per_op=X thread_cpu_ns=C
 *          process_cpu_ns=P bytes=B checksum=K
 * ns_per_op is W x T / M_TOTAL: a thread's wall time per step (the steps
 * run in parallel); thread_cpu_ns is the threads' own CPU over the steps,
 * summed (it includes whatever a profiler does inside malloc and free on
 * them); process_cpu_ns is the whole process's CPU over the same span
 * (adding any thread a profiler runs). bytes is the bytes allocated in the
 * timed steps. */
#include "heap.h"

#include <pthread.h>

static const char usage[] = "churn [--threads T] [--slots N] [--ops M] [--depth D] [--seed S]";

typedef struct worker {
  pthread_t tid;
  int index;
  long slots, ops, depth;
  uint64_t seed;
  void **slot;
  int64_t t0, t1, cpu;
  uint64_t bytes, checksum;
} worker_t;

static pthread_barrier_t ready;

static inline size_t pick_size(rng_t *r) {
  uint64_t x = rng_next(r);
  if ((x & 31) != 0)
    return 16 + (size_t)((x >> 5) % 1009); /* 16..1024 */
  /* log-uniform in [1024, 32768): 2^(10 + 5u) */
  double u = (double)(x >> 11) * 0x1.0p-53;
  return (size_t)(1024.0 * __builtin_exp2(5 * u));
}

/* The steps; noipa so every unwinder sees churn_loop under the recursion. */
BENCH_FN void churn_loop(worker_t *w) {
  rng_t r;
  rng_seed(&r, w->seed);
  void **slot = w->slot;
  uint64_t bytes = 0, sum = 0;
  for (long k = 0; k < w->ops; k++) {
    size_t i = rng_below(&r, (uint64_t)w->slots);
    size_t n = pick_size(&r);
    free(slot[i]);
    char *p = malloc(n);
    if (!p) {
      fprintf(stderr, "churn: malloc(%zu) failed\n", n);
      exit(1);
    }
    p[0] = (char)k;
    slot[i] = p;
    bytes += n;
    sum += (uintptr_t)p >> 4;
  }
  w->bytes = bytes;
  w->checksum = sum;
}

/* D frames of recursion above the loop. */
BENCH_FN void descend(worker_t *w, long d) {
  if (d <= 0) {
    churn_loop(w);
    return;
  }
  descend(w, d - 1);
  __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
}

/* Fills the slots (before the timing). */
static void fill(worker_t *w) {
  rng_t r;
  rng_seed(&r, w->seed ^ 0x5bd1e995);
  w->slot = bench_map((size_t)w->slots * sizeof *w->slot);
  for (long i = 0; i < w->slots; i++)
    w->slot[i] = malloc(pick_size(&r));
}

/* The timed steps. */
static void run(worker_t *w) {
  w->t0 = clock_ns(CLOCK_MONOTONIC);
  int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  descend(w, w->depth);
  w->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
  w->t1 = clock_ns(CLOCK_MONOTONIC);
}

BENCH_FN void *churn_worker(void *arg) {
  worker_t *w = arg;
  fill(w);
  pthread_barrier_wait(&ready);
  run(w);
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 1, slots = 10000, ops = 20000000, depth = 10;
  uint64_t seed = 1;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc)
      return number_arg(NULL, usage), 2;
    double v = number_arg(argv[i + 1], usage);
    if (strcmp(argv[i], "--threads") == 0 && v >= 1)
      threads = (long)v;
    else if (strcmp(argv[i], "--slots") == 0 && v >= 1)
      slots = (long)v;
    else if (strcmp(argv[i], "--ops") == 0 && v >= 1)
      ops = (long)v;
    else if (strcmp(argv[i], "--depth") == 0)
      depth = (long)v;
    else if (strcmp(argv[i], "--seed") == 0)
      seed = (uint64_t)v;
    else
      return number_arg(NULL, usage), 2;
    i++;
  }
  worker_t *w = bench_map((size_t)threads * sizeof *w);
  pthread_barrier_init(&ready, NULL, (unsigned)threads);
  for (long t = 0; t < threads; t++) {
    w[t].index = (int)t;
    w[t].slots = slots, w[t].ops = ops, w[t].depth = depth;
    w[t].seed = seed * 1000003 + (uint64_t)t;
  }
  for (long t = 1; t < threads; t++)
    if (pthread_create(&w[t].tid, NULL, churn_worker, &w[t]) != 0) {
      fprintf(stderr, "churn: pthread_create failed\n");
      return 1;
    }
  /* The main thread is worker 0; the process CPU is read around the same
   * span (after the barrier, after the joins). */
  fill(&w[0]);
  pthread_barrier_wait(&ready);
  int64_t p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  run(&w[0]);
  for (long t = 1; t < threads; t++)
    pthread_join(w[t].tid, NULL);
  int64_t p1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  int64_t t0 = w[0].t0, t1 = w[0].t1, cpu = 0;
  uint64_t bytes = 0, sum = 0;
  for (long t = 0; t < threads; t++) {
    if (w[t].t0 < t0)
      t0 = w[t].t0;
    if (w[t].t1 > t1)
      t1 = w[t].t1;
    cpu += w[t].cpu;
    bytes += w[t].bytes;
    sum += w[t].checksum;
  }
  long total = ops * threads;
  printf("churn: threads=%ld ops=%ld wall_ns=%lld ns_per_op=%.2f thread_cpu_ns=%lld process_cpu_ns=%lld "
         "bytes=%llu checksum=%llx\n",
         threads, total, (long long)(t1 - t0), (double)(t1 - t0) * threads / (double)total,
         (long long)cpu, (long long)(p1 - p0), (unsigned long long)bytes, (unsigned long long)sum);
  return 0;
}
