/* churn: malloc/free-heavy work, for the cost of heap profiling.
 *
 *   churn [--shape NAME] [--threads T] [--slots N] [--ops M] [--depth D] [--seed S]
 *   churn [--shape NAME] --expect RATE [--ops M] [--seed S]
 *
 * Each of T threads (the main thread is the first) owns N slots, filled
 * with blocks before the timing starts. Then each does M steps of: pick a
 * random slot, free its block, malloc a new one of a random size, write
 * its first byte. The steps run D frames deep (a noinline recursion), so a
 * sampling profiler's unwinder has a stack of about D + 5 frames to walk.
 * Defaults: T=1, N=the shape's (below; 10000 but for wide and large),
 * M=2e7, D=10.
 *
 * The shape says what sizes are allocated, since a heap profiler's cost
 * depends on it (how many samples a second, how many distinct sizes):
 *   churn  31 in 32 uniform in 16-1024 B, 1 in 32 log-uniform in 1-32 KiB
 *          (about 790 B a step on average): the default, and the shape of
 *          every figure measured before the others existed
 *   small  12 fixed sizes from 16 to 512 B, equally often (159 B a step)
 *   wide   log-uniform from 16 B to 64 KiB (about 7.7 KiB a step and
 *          thousands of distinct sizes: at a 512 KiB rate, about one
 *          sample every 68 steps), 1000 slots (7.7 MB live a thread: with
 *          10000, glibc's steps are twice as slow, on page faults and
 *          cache misses, and the samples a second fall from about
 *          100,000 to half that)
 *   large  log-uniform from 256 KiB to 4 MiB (about 1.35 MiB a step), 64
 *          slots: each block is mmap()ed and munmap()ed by glibc, whose
 *          mmap threshold this pins at its initial 128 KiB (mallopt(3):
 *          otherwise it rises to the largest block freed and the blocks
 *          come from the heap instead)
 *   map    C++: a std::map<uint64_t, uint64_t> of N entries; a step erases
 *          a random key and inserts a new one (one 48-byte node deleted,
 *          one new'ed)
 *   list   C++: a std::list<uint64_t> of N nodes used as a queue; a step
 *          pops the front and pushes a new node at the back (24 B)
 * map and list are in nodes.cc, linked only into churn-cxx (built with
 * g++); this program built alone names that one when asked for them.
 *
 * The threads start together (a barrier); what is timed is from there to
 * the last one's end. At exit it prints
 *   churn: shape=NAME threads=T ops=M_TOTAL wall_ns=W ns_per_op=X
 *          thread_cpu_ns=C process_cpu_ns=P bytes=B checksum=K
 * ns_per_op is W x T / M_TOTAL: a thread's wall time per step (the steps
 * run in parallel); thread_cpu_ns is the threads' own CPU over the steps,
 * summed (it includes whatever a profiler does inside malloc and free on
 * them); process_cpu_ns is the whole process's CPU over the same span
 * (adding any thread a profiler runs). bytes is the bytes allocated in the
 * timed steps.
 *
 * --expect RATE allocates nothing: it draws M sizes of the shape as the
 * steps would and prints
 *   churn: shape=NAME expect_rate=RATE samples_per_op=X bytes_per_op=Y
 * the samples a step makes on average for a sampler that takes a block of
 * s bytes with probability 1 - exp(-s/RATE) (Go's and cprof's), so a
 * script can say how many samples a second a run took. */
#include "heap.h"

#include <malloc.h>
#include <math.h>
#include <pthread.h>

static const char usage[] =
    "churn [--shape churn|small|wide|large|map|list] [--threads T] [--slots N] [--ops M] [--depth D] "
    "[--seed S] [--expect RATE]";

typedef enum { SHAPE_CHURN, SHAPE_SMALL, SHAPE_WIDE, SHAPE_LARGE, SHAPE_MAP, SHAPE_LIST } shape_t;

static const struct {
  const char *name;
  long slots; /* the default N */
} shapes[] = {
    [SHAPE_CHURN] = {"churn", 10000}, [SHAPE_SMALL] = {"small", 10000}, [SHAPE_WIDE] = {"wide", 1000},
    [SHAPE_LARGE] = {"large", 64},    [SHAPE_MAP] = {"map", 10000},     [SHAPE_LIST] = {"list", 10000},
};

/* The C++ shapes (nodes.cc). Weak, so that churn links without them and
 * churn-cxx, the same file linked with nodes.o by g++, has them. kind is
 * 0 for map, 1 for list. */
extern void *nodes_fill(int kind, long n, uint64_t seed) __attribute__((weak));
extern void nodes_steps(void *state, long ops, uint64_t seed, uint64_t *bytes, uint64_t *sum)
    __attribute__((weak));
extern size_t nodes_size(int kind) __attribute__((weak));

typedef struct worker {
  pthread_t tid;
  int index;
  shape_t shape;
  long slots, ops, depth;
  uint64_t seed;
  void **slot;
  void *nodes; /* the C++ shapes' container */
  int64_t t0, t1, cpu;
  uint64_t bytes, checksum;
} worker_t;

static pthread_barrier_t ready;

/* lo x 2^(octaves u): log-uniform in [lo, lo x 2^octaves). */
static inline size_t log_uniform(double u, double lo, double octaves) {
  return (size_t)(lo * __builtin_exp2(octaves * u));
}

static inline size_t pick_size(shape_t shape, rng_t *r) {
  static const unsigned short fixed[12] = {16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 384, 512};
  uint64_t x = rng_next(r);
  double u = (double)(x >> 11) * 0x1.0p-53;
  switch (shape) {
  case SHAPE_SMALL:
    return fixed[(x >> 32) % 12];
  case SHAPE_WIDE:
    return log_uniform(u, 16, 12); /* 16 B..64 KiB */
  case SHAPE_LARGE:
    return log_uniform(u, 256 << 10, 4); /* 256 KiB..4 MiB */
  default:
    if ((x & 31) != 0)
      return 16 + (size_t)((x >> 5) % 1009); /* 16..1024 */
    return log_uniform(u, 1024, 5);          /* 1..32 KiB */
  }
}

/* The steps; noipa so every unwinder sees churn_loop under the recursion. */
BENCH_FN void churn_loop(worker_t *w) {
  if (w->nodes) {
    nodes_steps(w->nodes, w->ops, w->seed, &w->bytes, &w->checksum);
    return;
  }
  rng_t r;
  rng_seed(&r, w->seed);
  void **slot = w->slot;
  const shape_t shape = w->shape;
  uint64_t bytes = 0, sum = 0;
  for (long k = 0; k < w->ops; k++) {
    size_t i = rng_below(&r, (uint64_t)w->slots);
    size_t n = pick_size(shape, &r);
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
  if (w->shape == SHAPE_MAP || w->shape == SHAPE_LIST) {
    w->nodes = nodes_fill(w->shape == SHAPE_LIST, w->slots, w->seed ^ 0x5bd1e995);
    return;
  }
  rng_t r;
  rng_seed(&r, w->seed ^ 0x5bd1e995);
  w->slot = bench_map((size_t)w->slots * sizeof *w->slot);
  for (long i = 0; i < w->slots; i++)
    w->slot[i] = malloc(pick_size(w->shape, &r));
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

/* --expect: the samples and bytes a step of the shape averages at RATE. */
static int expect(shape_t shape, double rate, long ops, uint64_t seed) {
  rng_t r;
  rng_seed(&r, seed);
  double samples = 0, bytes = 0;
  for (long k = 0; k < ops; k++) {
    size_t n = shape >= SHAPE_MAP ? nodes_size(shape == SHAPE_LIST) : pick_size(shape, &r);
    samples += -expm1(-(double)n / rate);
    bytes += (double)n;
  }
  printf("churn: shape=%s expect_rate=%.0f samples_per_op=%.6g bytes_per_op=%.1f\n", shapes[shape].name,
         rate, samples / (double)ops, bytes / (double)ops);
  return 0;
}

int main(int argc, char **argv) {
  long threads = 1, slots = 0, ops = 20000000, depth = 10;
  uint64_t seed = 1;
  double rate = 0;
  shape_t shape = SHAPE_CHURN;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc)
      return number_arg(NULL, usage), 2;
    if (strcmp(argv[i], "--shape") == 0) {
      shape = (shape_t)-1;
      for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
        if (strcmp(argv[i + 1], shapes[k].name) == 0)
          shape = (shape_t)k;
      if (shape == (shape_t)-1)
        return number_arg(NULL, usage), 2;
      i++;
      continue;
    }
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
    else if (strcmp(argv[i], "--expect") == 0 && v > 0)
      rate = v;
    else
      return number_arg(NULL, usage), 2;
    i++;
  }
  if (shape >= SHAPE_MAP && !nodes_fill) {
    fprintf(stderr, "churn: --shape %s is C++: run churn-cxx, the same program linked with nodes.cc\n",
            shapes[shape].name);
    return 2;
  }
  if (rate > 0)
    return expect(shape, rate, ops, seed);
  if (!slots)
    slots = shapes[shape].slots;
  if (shape == SHAPE_LARGE)
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
  worker_t *w = bench_map((size_t)threads * sizeof *w);
  pthread_barrier_init(&ready, NULL, (unsigned)threads);
  for (long t = 0; t < threads; t++) {
    w[t].index = (int)t;
    w[t].shape = shape;
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
  printf("churn: shape=%s threads=%ld ops=%ld wall_ns=%lld ns_per_op=%.2f thread_cpu_ns=%lld "
         "process_cpu_ns=%lld bytes=%llu checksum=%llx\n",
         shapes[shape].name, threads, total, (long long)(t1 - t0), (double)(t1 - t0) * threads / (double)total,
         (long long)cpu, (long long)(p1 - p0), (unsigned long long)bytes, (unsigned long long)sum);
  return 0;
}
