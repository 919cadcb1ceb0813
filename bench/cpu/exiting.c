/* exiting: CPU work (or allocations) through many distinct stacks for a
 * while, then it says when it calls exit, for bench/cpu/exit.sh.
 *
 *   exiting SECONDS [--threads N] [--alloc]
 *
 * N threads (default 2) each run until SECONDS of wall time have passed
 * since main began. Each round walks a pseudo-random chain of 4 to 20 calls
 * through 32 functions (step_00 .. step_31, one call site each, with an
 * inlined helper at every level), so a profile of a few seconds holds
 * hundreds of distinct stacks and addresses spread over the program, and
 * one round in eight sorts a small array with libc's qsort, so that libc's
 * code (and its debug information, when installed) is in the profile too:
 * what a profiler has to symbolize at exit looks like a real program's.
 *
 * With --alloc, the innermost call of each round mallocs a block of 16 B to
 * 64 KiB instead and keeps the last 1024 of them alive (freeing the one it
 * replaces), so a heap profiler sees allocations at as many stacks: about
 * 1.5 GB/s at 2 threads here, which at cprof's default rate is 3,000
 * samples a second, nearly every one from a stack of its own.
 *
 * Once the threads are joined, main prints
 *   exiting: exit_ns=T rounds=R
 * with T the CLOCK_MONOTONIC time at which it calls exit(0); everything
 * after that (atexit handlers, the kernel's teardown) is what the reaper
 * (bench/cpu/reap.c) measures as the delay at exit. */
#include "work.h"

#include <pthread.h>

static const char usage[] = "exiting SECONDS [--threads N] [--alloc]";

#define NSTEPS 32
#define KEEP 1024

typedef struct walker {
  rng_t rng;
  uint64_t state;
  int64_t deadline;
  long rounds;
  int alloc;
  void *kept[KEEP];
  unsigned next_kept;
} walker_t;

typedef uint64_t (*step_fn)(walker_t *w, uint64_t x, int depth);
static step_fn steps[NSTEPS];

/* Inlined into every step: a few dependent multiplies, so that samples
 * land on inlined code whose frames a symbolizer must expand. */
static inline __attribute__((always_inline)) uint64_t mix(uint64_t x, int n) {
  for (int i = 0; i < n; i++) {
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ULL;
  }
  return x;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

BENCH_FN uint64_t leaf(walker_t *w, uint64_t x) {
  if (w->alloc) {
    /* Log-uniform sizes from 16 B to 64 KiB. */
    size_t size = (size_t)16 << rng_below(&w->rng, 13);
    size += rng_below(&w->rng, size);
    void *p = malloc(size);
    if (p)
      memset(p, (int)x, 16);
    unsigned k = w->next_kept++ % KEEP;
    free(w->kept[k]);
    w->kept[k] = p;
    return mix(x, 12000);
  }
  if ((x & 7) == 0) {
    uint64_t a[64];
    for (int i = 0; i < 64; i++)
      a[i] = x = mix(x + (uint64_t)i, 2);
    qsort(a, 64, sizeof a[0], cmp_u64);
    return x ^ a[31];
  }
  return mix(x, 20000);
}

/* Eight functions a line: clang-format would put each on lines of its own. */
// clang-format off
#define STEP(k)                                                                                    \
  BENCH_FN uint64_t step_##k(walker_t *w, uint64_t x, int depth) {                                 \
    x = mix(x + 1##k - 100, 200);                                                                  \
    if (depth == 0)                                                                                \
      return leaf(w, x);                                                                           \
    return steps[rng_below(&w->rng, NSTEPS)](w, x, depth - 1) + 1##k;                              \
  }
STEP(00) STEP(01) STEP(02) STEP(03) STEP(04) STEP(05) STEP(06) STEP(07)
STEP(08) STEP(09) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15)
STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23)
STEP(24) STEP(25) STEP(26) STEP(27) STEP(28) STEP(29) STEP(30) STEP(31)

static step_fn steps[NSTEPS] = {
    step_00, step_01, step_02, step_03, step_04, step_05, step_06, step_07,
    step_08, step_09, step_10, step_11, step_12, step_13, step_14, step_15,
    step_16, step_17, step_18, step_19, step_20, step_21, step_22, step_23,
    step_24, step_25, step_26, step_27, step_28, step_29, step_30, step_31,
};
// clang-format on

BENCH_FN void *walk(void *arg) {
  walker_t *w = arg;
  do {
    int depth = 4 + (int)rng_below(&w->rng, 17);
    w->state = steps[rng_below(&w->rng, NSTEPS)](w, w->state, depth);
    w->rounds++;
  } while (clock_ns(CLOCK_MONOTONIC) < w->deadline);
  for (int k = 0; k < KEEP; k++)
    free(w->kept[k]);
  return NULL;
}

int main(int argc, char **argv) {
  int64_t start = clock_ns(CLOCK_MONOTONIC);
  double seconds = positive_arg(argc > 1 ? argv[1] : NULL, usage);
  int threads = 2, alloc = 0;
  for (int i = 2; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--threads") == 0)
      threads = (int)positive_arg(argv[++i], usage);
    else if (strcmp(argv[i], "--alloc") == 0)
      alloc = 1;
    else
      positive_arg(NULL, usage);
  }
  if (threads > 64)
    threads = 64;
  static walker_t walkers[64];
  pthread_t tids[64];
  for (int t = 0; t < threads; t++) {
    rng_seed(&walkers[t].rng, (uint64_t)t + 1);
    walkers[t].deadline = start + (int64_t)(seconds * 1e9);
    walkers[t].alloc = alloc;
    if (pthread_create(&tids[t], NULL, walk, &walkers[t]) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  long rounds = 0;
  uint64_t sum = 0;
  for (int t = 0; t < threads; t++) {
    pthread_join(tids[t], NULL);
    rounds += walkers[t].rounds;
    sum ^= walkers[t].state;
  }
  printf("exiting: exit_ns=%lld rounds=%ld checksum=%llx\n", (long long)clock_ns(CLOCK_MONOTONIC),
         rounds, (unsigned long long)sum);
  fflush(stdout);
  exit(0);
}
