/* sample_cost: nanoseconds per stack walk for cprof's two unwinders, at
 * stack depths 10 and 100, through code with and without frame pointers.
 *
 *   sample_cost [--depth D] [--code fp|nofp] [--only CASE] [--batches B] [--scale S]
 *
 * A recursion of depth D (one frame per level; built with frame pointers,
 * or without them, --code) ends in bench_bottom(), which captures a
 * ucontext_t with getcontext() and then, while those frames are still
 * live, times each case in batches; it prints the median ns per operation,
 * and the fastest batch:
 *
 *   direct-fp      cprof__unwind_sigsafe(CPROF_UNWIND_FP) on the captured context
 *   direct-dwarf   cprof__unwind_sigsafe(CPROF_UNWIND_DWARF) on it: cfa.c's
 *                  walker, its rule cache warm after the first batch
 *   signal-none    tgkill() of this thread with SIGPROF, empty handler: what
 *                  the kernel's signal delivery and return alone cost
 *   signal-fp      the same, the handler walking the interrupted context
 *   signal-dwarf   with frame pointers / the DWARF walker, as cprof's CPU
 *                  profiler does
 *
 * Both walkers get the stack's bounds from a snapshot of /proc/self/maps
 * taken before, as the CPU profiler's handler does for a thread that has
 * not learnt its own (src/unwind/bounds.h). The signal cases are the
 * sampling path a CPU profiler runs per sample, minus cprof's own recording
 * of the stack (a copy into a preallocated buffer); signal-X minus
 * signal-none is the walk from a real signal frame. --only runs one case
 * (for `strace -c`, to count system calls per walk). --scale multiplies the
 * operations per batch. With no --depth or --code, every combination. */
#include "unwind/maps.h"
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
/* Operations per batch: about 2-10 ms each on a current core. */
static const long base_ops[NCASES] = {20000, 5000, 5000, 5000, 5000};

static cprof__maps_t maps;
static uintptr_t pcs[CPROF_DEFAULT_DEPTH];
static volatile int handler_how = SIGNAL_NONE;
static volatile int handler_depth;
static int batches = 11;
static double scale = 1;
static int only = -1;
static const char *code = "fp"; /* how the recursion being walked was built */

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
    handler_depth = cprof__unwind_sigsafe(CPROF_UNWIND_FP, uc, &maps, pcs, CPROF_DEFAULT_DEPTH);
  else if (handler_how == SIGNAL_DWARF)
    handler_depth = cprof__unwind_sigsafe(CPROF_UNWIND_DWARF, uc, &maps, pcs, CPROF_DEFAULT_DEPTH);
  errno = saved;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

BENCH_FN void bench_bottom(int depth) {
  ucontext_t uc;
  memset(&uc, 0, sizeof uc); /* getcontext leaves uc_stack alone: no sigaltstack */
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
          got = cprof__unwind_sigsafe(CPROF_UNWIND_FP, &uc, &maps, pcs, CPROF_DEFAULT_DEPTH);
        else if (c == DIRECT_DWARF)
          got = cprof__unwind_sigsafe(CPROF_UNWIND_DWARF, &uc, &maps, pcs, CPROF_DEFAULT_DEPTH);
        else
          syscall(SYS_tgkill, pid, tid, SIGPROF);
      }
      if (b > 0)
        ns[b - 1] = (double)(now_ns() - t0) / (double)ops;
    }
    if (c >= SIGNAL_NONE)
      got = c == SIGNAL_NONE ? 0 : handler_depth;
    qsort(ns, (size_t)batches, sizeof ns[0], cmp_double);
    printf("depth=%d code=%s case=%s frames=%d ns_median=%.1f ns_min=%.1f batches=%d ops=%ld\n",
           depth, code, case_names[c], got, ns[batches / 2], ns[0], batches, ops);
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

/* The same without frame pointers: %rbp is a general register here, and
 * only the unwind tables say where each frame's caller is. */
__attribute__((noipa, optimize("omit-frame-pointer"))) int recurse_nofp(int level, int depth) {
  volatile int mine = level;
  if (level >= depth) {
    bench_bottom(depth);
    return mine;
  }
  return recurse_nofp(level + 1, depth) + mine;
}

static void usage(void) {
  fprintf(stderr, "usage: sample_cost [--depth D] [--code fp|nofp] [--only CASE] [--batches B] "
                  "[--scale S]\n"
                  "CASE: direct-fp direct-dwarf signal-none signal-fp signal-dwarf\n");
  exit(2);
}

int main(int argc, char **argv) {
  int depths[2] = {10, 100}, ndepths = 2;
  const char *codes[2] = {"fp", "nofp"};
  int ncodes = 2;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc)
      usage();
    if (strcmp(argv[i], "--depth") == 0) {
      depths[0] = atoi(argv[++i]);
      ndepths = 1;
      if (depths[0] < 1 || depths[0] > CPROF_DEFAULT_DEPTH - 8)
        usage();
    } else if (strcmp(argv[i], "--code") == 0) {
      codes[0] = argv[++i];
      ncodes = 1;
      if (strcmp(codes[0], "fp") != 0 && strcmp(codes[0], "nofp") != 0)
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
   * snapshot that bounds the walks. */
  int err = cprof__maps_read(&maps);
  if (err != 0) {
    fprintf(stderr, "cprof__maps_read: %s\n", strerror(-err));
    return 1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, NULL);

  for (int k = 0; k < ncodes; k++) {
    code = codes[k];
    for (int d = 0; d < ndepths; d++) {
      if (strcmp(code, "fp") == 0)
        recurse(0, depths[d]);
      else
        recurse_nofp(0, depths[d]);
    }
  }
  cprof__maps_free(&maps);
  return 0;
}
