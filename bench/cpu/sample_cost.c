/* sample_cost: nanoseconds per stack walk for cprof's two unwinders, at
 * stack depths 10 and 100.
 *
 *   sample_cost [--depth D] [--only CASE] [--batches B] [--scale S]
 *
 * A recursion of depth D (recurse(), one frame per level, frame pointers
 * on) ends in bench_bottom(), which captures a ucontext_t with getcontext()
 * and then, while those frames are still live, times each case in batches;
 * it prints the median ns per operation, and the fastest batch:
 *
 *   direct-fp      cprof__unwind_fp_sigsafe on the captured context
 *   direct-dwarf   cprof__unwind_dwarf_sigsafe on it (libunwind, warmed)
 *   signal-none    tgkill() of this thread with SIGPROF, empty handler: what
 *                  the kernel's signal delivery and return alone cost
 *   signal-fp      the same, the handler walking the interrupted context
 *   signal-dwarf   with frame pointers / libunwind, as a profiler's does
 *
 * The signal cases are the sampling path a CPU profiler runs per sample,
 * minus cprof's own recording of the stack (a copy into a preallocated
 * buffer); signal-X minus signal-none is the walk from a real signal frame.
 * --only runs one case (for `strace -c`, to count system calls per walk).
 * --scale multiplies the operations per batch. */
#include "symbol/maps.h"
#include "unwind/unwind.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define BENCH_FN __attribute__((noipa))

enum how { DIRECT_FP, DIRECT_DWARF, SIGNAL_NONE, SIGNAL_FP, SIGNAL_DWARF, NCASES };
static const char *case_names[NCASES] = {"direct-fp", "direct-dwarf", "signal-none", "signal-fp",
                                         "signal-dwarf"};
/* Operations per batch: about 5-20 ms each on a current core. */
static const long base_ops[NCASES] = {20000, 2000, 5000, 5000, 2000};

static cprof__maps_t maps;
static uintptr_t pcs[CPROF_MAX_DEPTH];
static volatile int handler_how = SIGNAL_NONE;
static volatile int handler_depth;
static int batches = 11;
static double scale = 1;
static int only = -1;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Async-signal-safe: the unwinders are, and the result goes to statics. */
static void on_sigprof(int sig, siginfo_t *si, void *ucv) {
  (void)sig, (void)si;
  int saved = errno;
  const ucontext_t *uc = ucv;
  if (handler_how == SIGNAL_FP)
    handler_depth = cprof__unwind_fp_sigsafe(uc, &maps, pcs, CPROF_MAX_DEPTH);
  else if (handler_how == SIGNAL_DWARF)
    handler_depth = cprof__unwind_dwarf_sigsafe(uc, pcs, CPROF_MAX_DEPTH);
  errno = saved;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

BENCH_FN void bench_bottom(int depth) {
  ucontext_t uc;
  if (getcontext(&uc) != 0) {
    perror("getcontext");
    exit(1);
  }
  pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
  for (int c = 0; c < NCASES; c++) {
    if (only >= 0 && c != only)
      continue;
    long ops = (long)(base_ops[c] * scale);
    if (ops < 1)
      ops = 1;
    handler_how = c;
    double ns[64];
    int got = 0;
    for (int b = 0; b < batches + 1; b++) { /* batch 0 warms up and is not counted */
      int64_t t0 = now_ns();
      for (long i = 0; i < ops; i++) {
        if (c == DIRECT_FP)
          got = cprof__unwind_fp_sigsafe(&uc, &maps, pcs, CPROF_MAX_DEPTH);
        else if (c == DIRECT_DWARF)
          got = cprof__unwind_dwarf_sigsafe(&uc, pcs, CPROF_MAX_DEPTH);
        else
          syscall(SYS_tgkill, pid, tid, SIGPROF);
      }
      if (b > 0)
        ns[b - 1] = (double)(now_ns() - t0) / (double)ops;
    }
    if (c >= SIGNAL_NONE)
      got = c == SIGNAL_NONE ? 0 : handler_depth;
    qsort(ns, (size_t)batches, sizeof ns[0], cmp_double);
    printf("depth=%d case=%s frames=%d ns_median=%.1f ns_min=%.1f batches=%d ops=%ld\n", depth,
           case_names[c], got, ns[batches / 2], ns[0], batches, ops);
    fflush(stdout);
  }
}

/* One frame per level. The volatile local is read after the call, so the
 * compiler can turn the recursion neither into a tail call nor into a loop:
 * every level stays on the stack. */
BENCH_FN int recurse(int level, int depth) {
  volatile int mine = level;
  if (level >= depth) {
    bench_bottom(depth);
    return mine;
  }
  return recurse(level + 1, depth) + mine;
}

static void usage(void) {
  fprintf(stderr, "usage: sample_cost [--depth D] [--only CASE] [--batches B] [--scale S]\n"
                  "CASE: direct-fp direct-dwarf signal-none signal-fp signal-dwarf\n");
  exit(2);
}

int main(int argc, char **argv) {
  int depths[2] = {10, 100}, ndepths = 2;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc)
      usage();
    if (strcmp(argv[i], "--depth") == 0) {
      depths[0] = atoi(argv[++i]);
      ndepths = 1;
      if (depths[0] < 1 || depths[0] > CPROF_MAX_DEPTH - 8)
        usage();
    } else if (strcmp(argv[i], "--batches") == 0) {
      batches = atoi(argv[++i]);
      if (batches < 1 || batches > 64)
        usage();
    } else if (strcmp(argv[i], "--scale") == 0) {
      scale = atof(argv[++i]);
      if (!(scale > 0))
        usage();
    } else if (strcmp(argv[i], "--only") == 0) {
      const char *name = argv[++i];
      for (int c = 0; c < NCASES; c++)
        if (strcmp(name, case_names[c]) == 0)
          only = c;
      if (only < 0)
        usage();
    } else {
      usage();
    }
  }

  /* What a profiler prepares before sending signals: the address-space
   * snapshot for the frame-pointer walker, libunwind loaded and warm. */
  int err = cprof__maps_read(&maps);
  if (err != 0) {
    fprintf(stderr, "cprof__maps_read: %s\n", strerror(-err));
    return 1;
  }
  err = cprof__unwind_dwarf_init();
  if (err != 0) {
    fprintf(stderr, "cprof__unwind_dwarf_init: %s\n", strerror(-err));
    return 1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, NULL);

  for (int d = 0; d < ndepths; d++)
    recurse(0, depths[d]);
  cprof__maps_free(&maps);
  return 0;
}
