/* live: a known live heap inside heavy churn, for heap profile accuracy.
 *
 *   live LIVE_MIB [--churn C] [--seed S] [--mix] [--hold-ms MS]
 *
 * Allocates blocks of log-uniform sizes from 16 B to 64 KiB until LIVE_MIB
 * MiB are kept. Each block is kept with probability 1/(1+C) and otherwise
 * is a temporary: it replaces a random one of 4096 temporaries, which is
 * freed. So about (1+C) x LIVE_MIB are allocated in all, C x LIVE_MIB of it
 * freed again (C defaults to 4); the temporaries left at the end are freed
 * too. The kept blocks stay allocated until the program exits, so a heap
 * profile written at exit (CPROF_OUTPUT) shows exactly them as in use.
 *
 * With --mix the blocks come from every allocation function a heap profiler
 * has to interpose (malloc, calloc, realloc, reallocarray, posix_memalign,
 * aligned_alloc, memalign, valloc), not only malloc. A realloc or
 * reallocarray grows a fresh 16-64 B block to the wanted size: two
 * allocations in the truth (the small one, freed by the realloc, and the
 * large one), as Go's accounting of a copy would count them.
 *
 * The truth is the sizes the program asked for. At the end it prints
 *   live: live_bytes=.. live_objects=.. alloc_bytes=.. alloc_objects=..
 *         rate=R expected_samples=.. expected_live_samples=..
 *         se_live_bytes=..% se_alloc_bytes=..% se_live_objects=..% se_alloc_objects=..%
 *         elapsed_ms=.. rss_kb=..
 * where R is CPROF_HEAP_RATE (524288 if unset) and the expected sample
 * counts and relative standard errors are what a sampler that takes an
 * allocation of s bytes with probability 1-exp(-s/R) and weighs it by the
 * inverse of that probability (Go's MemProfileRate scaling) would give:
 * the noise to expect, against which an error is bias or not. Its own
 * bookkeeping is mmap()ed, so the truth is every malloc the program's
 * code makes (stdio's stdout buffer aside: a few KiB).
 *
 * --hold-ms sleeps after printing, with everything still allocated. */
#include "heap.h"

#include <math.h>
#include <malloc.h>

static const char usage[] = "live LIVE_MIB [--churn C] [--seed S] [--mix] [--hold-ms MS]";

#define MIN_SIZE 16.0
#define MAX_SIZE 65536.0
#define TEMPS 4096

typedef struct truth {
  double rate;
  uint64_t alloc_bytes, alloc_objects, live_bytes, live_objects;
  double exp_samples;                 /* expected samples over all allocations */
  double var_alloc_bytes, var_alloc_objects;
} truth_t;

/* Counts one allocation of n bytes in the truth (for alloc_*). */
static void count_alloc(truth_t *t, size_t n) {
  t->alloc_bytes += n;
  t->alloc_objects++;
  if (t->rate > 0) {
    double p = -expm1(-(double)n / t->rate);
    t->exp_samples += p;
    t->var_alloc_bytes += (double)n * n * (1 - p) / p;
    t->var_alloc_objects += (1 - p) / p;
  }
}

static size_t pick_size(rng_t *r) {
  return (size_t)exp(log(MIN_SIZE) + rng_unit(r) * (log(MAX_SIZE) - log(MIN_SIZE)));
}

/* One block of n bytes, from malloc or (with mix) one of the others. */
BENCH_FN void *alloc_block(rng_t *r, truth_t *t, size_t n, int mix) {
  void *p = NULL;
  int how = mix ? (int)rng_below(r, 10) : 0;
  switch (how) {
  case 0:
  case 1:
  case 2:
    p = malloc(n);
    break;
  case 3:
    p = calloc(n, 1);
    break;
  case 4:
  case 5: {
    size_t small = 16 + rng_below(r, 49);
    void *q = malloc(small);
    if (!q)
      break;
    count_alloc(t, small);
    p = how == 4 ? realloc(q, n) : reallocarray(q, n, 1);
    break;
  }
  case 6:
    if (posix_memalign(&p, 64, n) != 0)
      p = NULL;
    break;
  case 7:
    p = aligned_alloc(64, n);
    break;
  case 8:
    p = memalign(64, n);
    break;
  case 9:
    p = valloc(n);
    break;
  }
  if (!p) {
    fprintf(stderr, "live: allocation of %zu bytes failed\n", n);
    exit(1);
  }
  count_alloc(t, n);
  ((volatile char *)p)[0] = 1;
  return p;
}

/* Builds the live set inside the churn; returns it and its sizes
 * (mmap()ed arrays). */
BENCH_FN void **build(truth_t *t, uint64_t target, double churn, uint64_t seed, int mix,
                      uint64_t *nkept, size_t **kept_size) {
  rng_t r;
  rng_seed(&r, seed);
  size_t cap = (size_t)(target / (uint64_t)MIN_SIZE) + 1;
  void **kept = bench_map(cap * sizeof *kept);
  size_t *size = bench_map(cap * sizeof *size);
  void **temp = bench_map(TEMPS * sizeof *temp);
  uint64_t n = 0;
  double keep = 1 / (1 + churn);
  while (t->live_bytes < target) {
    size_t s = pick_size(&r);
    if (rng_unit(&r) < keep) {
      size[n] = s;
      kept[n++] = alloc_block(&r, t, s, mix);
      t->live_bytes += s;
      t->live_objects++;
    } else {
      size_t j = rng_below(&r, TEMPS);
      free(temp[j]);
      temp[j] = alloc_block(&r, t, s, mix);
    }
  }
  for (size_t j = 0; j < TEMPS; j++)
    free(temp[j]);
  *nkept = n;
  *kept_size = size;
  return kept;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return number_arg(NULL, usage), 2;
  double mib = number_arg(argv[1], usage), churn = 4;
  uint64_t seed = 1;
  long hold_ms = 0;
  int mix = 0;
  for (int i = 2; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--churn") == 0)
      churn = number_arg(argv[++i], usage);
    else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0)
      seed = (uint64_t)number_arg(argv[++i], usage);
    else if (i + 1 < argc && strcmp(argv[i], "--hold-ms") == 0)
      hold_ms = (long)number_arg(argv[++i], usage);
    else if (strcmp(argv[i], "--mix") == 0)
      mix = 1;
    else
      return number_arg(NULL, usage), 2;
  }
  truth_t t = {0};
  const char *rate = getenv("CPROF_HEAP_RATE");
  t.rate = rate && *rate ? strtod(rate, NULL) : 524288;

  int64_t t0 = clock_ns(CLOCK_MONOTONIC);
  uint64_t nkept;
  size_t *kept_size;
  void **kept = build(&t, (uint64_t)(mib * 1048576), churn, seed, mix, &nkept, &kept_size);
  int64_t t1 = clock_ns(CLOCK_MONOTONIC);

  /* The live set's share of the variance: the kept blocks' own terms. */
  double exp_live = 0, var_live_bytes = 0, var_live_objects = 0;
  for (uint64_t i = 0; t.rate > 0 && i < nkept; i++) {
    double sz = (double)kept_size[i], p = -expm1(-sz / t.rate);
    exp_live += p;
    var_live_bytes += sz * sz * (1 - p) / p;
    var_live_objects += (1 - p) / p;
  }
  printf("live: live_bytes=%llu live_objects=%llu alloc_bytes=%llu alloc_objects=%llu rate=%.0f "
         "expected_samples=%.0f expected_live_samples=%.0f se_live_bytes=%.3f%% se_alloc_bytes=%.3f%% "
         "se_live_objects=%.3f%% se_alloc_objects=%.3f%% elapsed_ms=%lld rss_kb=%ld\n",
         (unsigned long long)t.live_bytes, (unsigned long long)t.live_objects,
         (unsigned long long)t.alloc_bytes, (unsigned long long)t.alloc_objects, t.rate, t.exp_samples,
         exp_live, 100 * sqrt(var_live_bytes) / (double)t.live_bytes,
         100 * sqrt(t.var_alloc_bytes) / (double)t.alloc_bytes,
         100 * sqrt(var_live_objects) / (double)t.live_objects,
         100 * sqrt(t.var_alloc_objects) / (double)t.alloc_objects, (long long)((t1 - t0) / 1000000),
         status_kb("VmRSS"));
  fflush(stdout);
  if (hold_ms)
    sleep_ms(hold_ms);
  /* kept stays allocated: the exit-time profile shows it in use. */
  if (kept[0] == (void *)1)
    puts("");
  return 0;
}
