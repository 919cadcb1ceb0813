/* sweep: one cell of the heap sweep (heap/sweep.sh): a known live set of
 * blocks of one size from one allocation call, inside churn, freed with the
 * call's matching deallocation.
 *
 *   sweep CALL SIZE LIVE_OBJECTS [--churn C] [--seed S]
 *
 * SIZE is a number of bytes or "mix" (log-uniform 16 B-64 KiB, as live.c).
 * LIVE_OBJECTS blocks are kept; each block is kept with probability 1/(1+C)
 * (C defaults to 3) and otherwise replaces a random one of the temporaries
 * (min(4096, LIVE_OBJECTS) slots), which is freed. The temporaries left at
 * the end are freed, the kept blocks stay allocated until exit, so a heap
 * profile written at exit (CPROF_OUTPUT) shows exactly them in use.
 *
 * CALL, and what frees its blocks:
 *   malloc calloc           free
 *   realloc                 malloc(max(1, SIZE/2)) grown by realloc to SIZE;
 *                           free (two allocations in the truth, as live.c)
 *   posix_memalign aligned_alloc memalign   alignment 64; free
 *   valloc                  free
 *   new                     operator new(SIZE); operator delete(p)
 *   new-sized               operator new(SIZE); operator delete(p, SIZE)
 *   new[]                   operator new[](SIZE); operator delete[](p)
 *   new-aligned             operator new(SIZE, align_val_t(64));
 *                           operator delete(p, SIZE, align_val_t(64)): what
 *                           `new T` and `delete` compile to for an alignas(64) T,
 *                           whose sizeof is a multiple of 64: SIZE is rounded
 *                           up to one (in the truth too)
 *   mallocx mallocx-a64     jemalloc's mallocx(SIZE, 0) and with
 *                           MALLOCX_LG_ALIGN(6); sdallocx(p, SIZE, flags)
 *                           and dallocx(p, flags) on alternate blocks
 *   sdallocx                malloc; jemalloc's sdallocx(p, SIZE, 0)
 *   free_sized              malloc; free_sized(p, SIZE) (C23)
 * The C++ operators are called directly (a new-expression may be elided);
 * they are the functions a new-expression calls. The jemalloc functions and
 * free_sized are looked up with dlsym(RTLD_DEFAULT), where a program linked
 * against them would bind: when absent, sweep prints "unavailable" and
 * exits 3.
 *
 * The truth is the sizes asked for. It prints one line
 *   sweep: call=.. size=.. live_bytes=.. live_objects=.. alloc_bytes=..
 *          alloc_objects=.. rate=R expected_samples=.. se_live_bytes=..%
 *          se_alloc_bytes=..% se_live_objects=..% se_alloc_objects=..%
 *          misaligned=.. corrupt=.. usable_min=.. usable_max=.. elapsed_ms=..
 * with R and the standard errors as live.c computes them (CPROF_HEAP_RATE,
 * 524288 if unset). What the program itself sees: misaligned counts blocks
 * not aligned as the call promises, corrupt blocks whose first and last
 * bytes did not keep what was written (or calloc's not zero), usable_min
 * and usable_max the range of the kept blocks' usable sizes
 * (malloc_usable_size, or sallocx for mallocx's). Bookkeeping is mmap()ed
 * and the line is written with write(2), so every block the heap sees from
 * sweep_alloc is counted. */
#include "heap.h"

#include <dlfcn.h>
#include <malloc.h>
#include <math.h>
#include <new>

static const char usage[] = "sweep CALL SIZE LIVE_OBJECTS [--churn C] [--seed S]";

enum call {
  C_MALLOC, C_CALLOC, C_REALLOC, C_POSIX_MEMALIGN, C_ALIGNED_ALLOC, C_MEMALIGN, C_VALLOC,
  C_NEW, C_NEW_SIZED, C_NEW_ARRAY, C_NEW_ALIGNED, C_MALLOCX, C_MALLOCX_A64, C_SDALLOCX,
  C_FREE_SIZED, C_N
};
static const char *const call_names[C_N] = {
  "malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign", "valloc",
  "new", "new-sized", "new[]", "new-aligned", "mallocx", "mallocx-a64", "sdallocx", "free_sized",
};

#define LG_ALIGN_64 6 /* MALLOCX_LG_ALIGN(6) is 6 */
static void *(*je_mallocx)(size_t, int);
static void (*je_sdallocx)(void *, size_t, int);
static void (*je_dallocx)(void *, int);
static size_t (*je_sallocx)(const void *, int);
static void (*c_free_sized)(void *, size_t);

typedef struct truth {
  double rate;
  uint64_t alloc_bytes, alloc_objects, live_bytes, live_objects;
  double exp_samples, var_alloc_bytes, var_alloc_objects, var_live_bytes, var_live_objects;
} truth_t;

static void var_terms(double rate, size_t n, double *p, double *vb, double *vo) {
  *p = -expm1(-(double)n / rate);
  *vb = (double)n * n * (1 - *p) / *p;
  *vo = (1 - *p) / *p;
}

static void count_alloc(truth_t *t, size_t n) {
  double p, vb, vo;
  t->alloc_bytes += n;
  t->alloc_objects++;
  var_terms(t->rate, n, &p, &vb, &vo);
  t->exp_samples += p;
  t->var_alloc_bytes += vb;
  t->var_alloc_objects += vo;
}

static void count_live(truth_t *t, size_t n) {
  double p, vb, vo;
  t->live_bytes += n;
  t->live_objects++;
  var_terms(t->rate, n, &p, &vb, &vo);
  t->var_live_bytes += vb;
  t->var_live_objects += vo;
}

static enum call call;
static uint64_t misaligned, corrupt;

/* The alignment the call promises a block of n bytes. */
static size_t align_of(size_t n) {
  switch (call) {
  case C_POSIX_MEMALIGN: case C_ALIGNED_ALLOC: case C_MEMALIGN: case C_NEW_ALIGNED: case C_MALLOCX_A64:
    return 64;
  case C_VALLOC:
    return (size_t)sysconf(_SC_PAGESIZE);
  default: /* malloc's: any type that fits (16 on x86-64; 8 for 8 bytes, as jemalloc and tcmalloc give) */
    return n >= 16 ? 16 : n >= 8 ? 8 : n >= 4 ? 4 : n >= 2 ? 2 : 1;
  }
}

/* The tag written at both ends of block i. */
static unsigned char tag(uint64_t i) { return (unsigned char)(0x5a ^ (i * 0x9d)); }

/* One block of n bytes from the call; the truth counts what was asked for. */
BENCH_FN void *sweep_alloc(truth_t *t, size_t n, uint64_t i) {
  void *p = NULL;
  switch (call) {
  case C_MALLOC: case C_SDALLOCX: case C_FREE_SIZED:
    p = malloc(n);
    break;
  case C_CALLOC:
    p = calloc(n, 1);
    if (p && (((unsigned char *)p)[0] || ((unsigned char *)p)[n - 1]))
      corrupt++;
    break;
  case C_REALLOC: {
    size_t small = n / 2 ? n / 2 : 1;
    void *q = malloc(small);
    if (!q)
      break;
    ((volatile char *)q)[0] = 1;
    count_alloc(t, small);
    p = realloc(q, n);
    break;
  }
  case C_POSIX_MEMALIGN:
    if (posix_memalign(&p, 64, n) != 0)
      p = NULL;
    break;
  case C_ALIGNED_ALLOC:
    p = aligned_alloc(64, n);
    break;
  case C_MEMALIGN:
    p = memalign(64, n);
    break;
  case C_VALLOC:
    p = valloc(n);
    break;
  case C_NEW: case C_NEW_SIZED:
    p = ::operator new(n);
    break;
  case C_NEW_ARRAY:
    p = ::operator new[](n);
    break;
  case C_NEW_ALIGNED:
    p = ::operator new(n, std::align_val_t(64));
    break;
  case C_MALLOCX:
    p = je_mallocx(n, 0);
    break;
  case C_MALLOCX_A64:
    p = je_mallocx(n, LG_ALIGN_64);
    break;
  default:
    break;
  }
  if (!p) {
    char b[128];
    int len = snprintf(b, sizeof b, "sweep: allocation of %zu bytes failed\n", n);
    if (write(2, b, (size_t)len) < 0) {}
    exit(1);
  }
  count_alloc(t, n);
  if ((uintptr_t)p % align_of(n))
    misaligned++;
  unsigned char *c = (unsigned char *)p;
  c[0] = tag(i);
  c[n - 1] = tag(i);
  return p;
}

static void check(void *p, size_t n, uint64_t i) {
  const unsigned char *c = (const unsigned char *)p;
  if (c[0] != tag(i) || c[n - 1] != tag(i))
    corrupt++;
}

/* Frees block i (n bytes) with the call's matching deallocation. */
BENCH_FN void sweep_free(void *p, size_t n, uint64_t i) {
  check(p, n, i);
  switch (call) {
  case C_NEW:
    ::operator delete(p);
    break;
  case C_NEW_SIZED:
    ::operator delete(p, n);
    break;
  case C_NEW_ARRAY:
    ::operator delete[](p);
    break;
  case C_NEW_ALIGNED:
    ::operator delete(p, n, std::align_val_t(64));
    break;
  case C_MALLOCX: case C_MALLOCX_A64: {
    int flags = call == C_MALLOCX_A64 ? LG_ALIGN_64 : 0;
    if (i & 1)
      je_dallocx(p, flags);
    else
      je_sdallocx(p, n, flags);
    break;
  }
  case C_SDALLOCX:
    je_sdallocx(p, n, 0);
    break;
  case C_FREE_SIZED:
    c_free_sized(p, n);
    break;
  default:
    free(p);
    break;
  }
}

static size_t usable(void *p) {
  if (call == C_MALLOCX || call == C_MALLOCX_A64)
    return je_sallocx(p, call == C_MALLOCX_A64 ? LG_ALIGN_64 : 0);
  return malloc_usable_size(p);
}

#define MIN_SIZE 16.0
#define MAX_SIZE 65536.0

int main(int argc, char **argv) {
  if (argc < 4)
    return number_arg(NULL, usage), 2;
  int c;
  for (c = 0; c < C_N && strcmp(argv[1], call_names[c]) != 0; c++)
    ;
  if (c == C_N)
    return number_arg(NULL, usage), 2;
  call = (enum call)c;
  int mix = strcmp(argv[2], "mix") == 0;
  size_t fixed = mix ? 0 : (size_t)number_arg(argv[2], usage);
  uint64_t nlive = (uint64_t)number_arg(argv[3], usage), seed = 1;
  double churn = 3;
  for (int i = 4; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--churn") == 0)
      churn = number_arg(argv[++i], usage);
    else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0)
      seed = (uint64_t)number_arg(argv[++i], usage);
    else
      return number_arg(NULL, usage), 2;
  }
  if ((!mix && fixed == 0) || nlive == 0)
    return number_arg(NULL, usage), 2;

  je_mallocx = (void *(*)(size_t, int))dlsym(RTLD_DEFAULT, "mallocx");
  je_sdallocx = (void (*)(void *, size_t, int))dlsym(RTLD_DEFAULT, "sdallocx");
  je_dallocx = (void (*)(void *, int))dlsym(RTLD_DEFAULT, "dallocx");
  je_sallocx = (size_t(*)(const void *, int))dlsym(RTLD_DEFAULT, "sallocx");
  c_free_sized = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
  int jem = je_mallocx && je_sdallocx && je_dallocx && je_sallocx;
  if (((call == C_MALLOCX || call == C_MALLOCX_A64 || call == C_SDALLOCX) && !jem) ||
      (call == C_FREE_SIZED && !c_free_sized)) {
    static const char na[] = "sweep: unavailable\n";
    if (write(1, na, sizeof na - 1) < 0) {}
    return 3;
  }

  truth_t t;
  memset(&t, 0, sizeof t);
  const char *rate = getenv("CPROF_HEAP_RATE");
  t.rate = rate && *rate ? strtod(rate, NULL) : 524288;

  rng_t r;
  rng_seed(&r, seed);
  size_t ntemp = nlive < 4096 ? (size_t)nlive : 4096;
  void **kept = (void **)bench_map(nlive * sizeof *kept);
  size_t *kept_size = (size_t *)bench_map(nlive * sizeof *kept_size);
  void **temp = (void **)bench_map(ntemp * sizeof *temp);
  size_t *temp_size = (size_t *)bench_map(ntemp * sizeof *temp_size);
  uint64_t *temp_id = (uint64_t *)bench_map(ntemp * sizeof *temp_id);
  double keep = 1 / (1 + churn);
  uint64_t n = 0, id = 0;

  int64_t t0 = clock_ns(CLOCK_MONOTONIC);
  while (n < nlive) {
    size_t s = mix ? (size_t)exp(log(MIN_SIZE) + rng_unit(&r) * (log(MAX_SIZE) - log(MIN_SIZE))) : fixed;
    if (call == C_NEW_ALIGNED)
      s = (s + 63) & ~(size_t)63; /* sizeof an alignas(64) type */
    uint64_t i = id++;
    if (rng_unit(&r) < keep) {
      kept_size[n] = s;
      kept[n++] = sweep_alloc(&t, s, i);
      count_live(&t, s);
    } else {
      size_t j = rng_below(&r, ntemp);
      if (temp[j])
        sweep_free(temp[j], temp_size[j], temp_id[j]);
      temp[j] = sweep_alloc(&t, s, i);
      temp_size[j] = s;
      temp_id[j] = i;
    }
  }
  for (size_t j = 0; j < ntemp; j++)
    if (temp[j])
      sweep_free(temp[j], temp_size[j], temp_id[j]);
  int64_t t1 = clock_ns(CLOCK_MONOTONIC);

  /* The kept blocks' ids are not stored: their tags are rewritten with
   * their index in kept (a second pass), then checked. */
  size_t umin = SIZE_MAX, umax = 0;
  for (uint64_t k = 0; k < n; k++) {
    unsigned char *b = (unsigned char *)kept[k];
    b[0] = b[kept_size[k] - 1] = tag(k);
    size_t u = usable(kept[k]);
    if (u < umin)
      umin = u;
    if (u > umax)
      umax = u;
  }
  for (uint64_t k = 0; k < n; k++)
    check(kept[k], kept_size[k], k);

  char line[1024];
  int len = snprintf(line, sizeof line,
                     "sweep: call=%s size=%s live_bytes=%llu live_objects=%llu alloc_bytes=%llu "
                     "alloc_objects=%llu rate=%.0f expected_samples=%.0f se_live_bytes=%.3f%% "
                     "se_alloc_bytes=%.3f%% se_live_objects=%.3f%% se_alloc_objects=%.3f%% "
                     "misaligned=%llu corrupt=%llu usable_min=%zu usable_max=%zu elapsed_ms=%lld\n",
                     argv[1], argv[2], (unsigned long long)t.live_bytes, (unsigned long long)t.live_objects,
                     (unsigned long long)t.alloc_bytes, (unsigned long long)t.alloc_objects, t.rate,
                     t.exp_samples, 100 * sqrt(t.var_live_bytes) / (double)t.live_bytes,
                     100 * sqrt(t.var_alloc_bytes) / (double)t.alloc_bytes,
                     100 * sqrt(t.var_live_objects) / (double)t.live_objects,
                     100 * sqrt(t.var_alloc_objects) / (double)t.alloc_objects,
                     (unsigned long long)misaligned, (unsigned long long)corrupt, umin, umax,
                     (long long)((t1 - t0) / 1000000));
  if (write(1, line, (size_t)len) < 0)
    return 1;
  return 0; /* kept stays allocated: the exit-time profile shows it in use */
}
