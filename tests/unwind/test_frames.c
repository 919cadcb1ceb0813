/* Stacks deeper than the array they are walked into (src/unwind/frames.h):
 * the innermost frames, CPROF_PC_ELIDED(n) with n the frames left out, and
 * the outermost quarter of the array, in order.
 *
 * First the ring alone, against a plain copy, for every array length up to
 * 40 and every depth up to four times it; then each walker on a recursion
 * 600 frames deep: the walk into a short array must be, frame for frame,
 * the same walker's whole walk with the middle replaced by the marker and
 * its count. The walkers: the heap sampler's from here (cfa.h), the signal
 * handlers' from a context with either unwinder (unwind.h), and the walk
 * of the caller of an interposed function (caller.h). Last, an endless
 * recursion stops at CPROF_UNWIND_MAX_FRAMES with the marker "how many
 * not known". */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "check.h"
#include "unwind/bounds.h"
#include "unwind/caller.h"
#include "unwind/cfa.h"
#include "unwind/frames.h"
#include "unwind/pc.h"
#include "unwind/unwind.h"

#define DEEP 600
#define WHOLE 4096

/* What a walk of `seen` frames f[0..seen) into an array of max keeps. */
static int expected(const uintptr_t *f, int seen, int max, uintptr_t *out) {
  if (seen <= max) {
    memcpy(out, f, (size_t)seen * sizeof *f);
    return seen;
  }
  if (max < 2) {
    memcpy(out, f, (size_t)max * sizeof *f);
    return max;
  }
  int outer = max / 4, inner = max - 1 - outer;
  memcpy(out, f, (size_t)inner * sizeof *f);
  out[inner] = CPROF_PC_ELIDED(seen - inner - outer);
  memcpy(out + inner + 1, f + seen - outer, (size_t)outer * sizeof *f);
  return max;
}

static void test_ring(void) {
  uintptr_t f[160], got[40], want[40];
  for (int i = 0; i < 160; i++)
    f[i] = 0x1000 + (uintptr_t)i;
  int wrong = 0;
  for (int max = 1; max <= 40; max++) {
    for (int seen = 0; seen <= 4 * max; seen++) {
      cprof__frames_t fr;
      cprof__frames_init(&fr, got, max);
      for (int i = 0; i < seen; i++)
        cprof__frames_add(&fr, f[i]);
      int n = cprof__frames_end(&fr, 1), m = expected(f, seen, max, want);
      if (n != m || memcmp(got, want, (size_t)n * sizeof *got) != 0) {
        if (!wrong++)
          fprintf(stderr, "max %d, %d frames: %d kept, want %d\n", max, seen, n, m);
      }
    }
  }
  CHECK_EQ_INT(wrong, 0);

  /* A walk stopped at its bound: the innermost frames and "how many not
   * known"; before the array is full, every frame found and the marker. */
  cprof__frames_t fr;
  cprof__frames_init(&fr, got, 8);
  for (int i = 0; i < 30; i++)
    cprof__frames_add(&fr, f[i]);
  CHECK_EQ_INT(cprof__frames_end(&fr, 0), 6);
  CHECK(memcmp(got, f, 5 * sizeof *f) == 0 && got[5] == CPROF_PC_ELIDED(0));
  cprof__frames_init(&fr, got, 8);
  for (int i = 0; i < 3; i++)
    cprof__frames_add(&fr, f[i]);
  CHECK_EQ_INT(cprof__frames_end(&fr, 0), 4);
  CHECK(got[3] == CPROF_PC_ELIDED(0));
  /* The marker's number is the frames left out, and says so. */
  CHECK(cprof__pc_is_elided(CPROF_PC_ELIDED(473)) &&
        cprof__pc_mark_number(CPROF_PC_ELIDED(473)) == 473);
}

/* ---- the walkers, on a deep recursion ---- */

typedef int (*walker_fn)(uintptr_t *pcs, int max);

static const char *walker_name;
static int (*walker)(uintptr_t *pcs, int max);
static int walker_checked;

/* The walk into arrays of several lengths, each against the whole walk
 * (the first), all from one call site, so that the walks have the same
 * frames. */
static const int maxes[] = {WHOLE, 16, 64, 128, 129, 500, 1024};
static uintptr_t whole[WHOLE], got[CPROF_DEPTH_LIMIT], want[CPROF_DEPTH_LIMIT];
static int whole_n;

__attribute__((noinline)) static void one_walk(size_t i) {
  uintptr_t *into[2] = {whole, got};
  int max = maxes[i];
  int k = walker(into[i != 0], max);
  if (i == 0) {
    whole_n = k;
    if (k <= DEEP)
      fprintf(stderr, "%s: the whole walk has %d frames\n", walker_name, k);
    CHECK(k > DEEP);
    return;
  }
  int n = whole_n, m = expected(whole, n, max, want);
  int same = k == m && memcmp(got, want, (size_t)k * sizeof *got) == 0;
  if (!same) {
    int d = 0;
    while (d < k && d < m && got[d] == want[d])
      d++;
    fprintf(stderr,
            "%s, max %d: %d frames, want %d (whole walk: %d), from frame %d on: %#lx, want %#lx\n",
            walker_name, max, k, m, n, d, d < k ? got[d] : 0, d < m ? want[d] : 0);
  }
  CHECK(same);
  walker_checked++;
}

__attribute__((noinline)) static void compare_walks(void) {
  for (size_t i = 0; i < sizeof maxes / sizeof *maxes; i++)
    one_walk(i);
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static int recurse(int n) {
  int r;
  if (n == 0)
    compare_walks(), r = 0;
  else
    r = recurse(n - 1);
  __asm__ volatile("" ::: "memory"); /* no tail call */
  return r + 1;
}

static int here_walk(uintptr_t *pcs, int max) {
  return cprof__unwind_cfa_here(pcs, max, 0, cprof__stack_hi(), NULL);
}

static int context_walk(cprof__unwinder_t how, uintptr_t *pcs, int max) {
  ucontext_t uc;
  memset(&uc, 0, sizeof uc);
  getcontext(&uc);
  uc.uc_stack.ss_flags = SS_DISABLE;
  return cprof__unwind_sigsafe(how, &uc, NULL, pcs, max);
}
__attribute__((noinline)) static int dwarf_walk(uintptr_t *pcs, int max) {
  return context_walk(CPROF_UNWIND_DWARF, pcs, max);
}
__attribute__((noinline)) static int fp_walk(uintptr_t *pcs, int max) {
  return context_walk(CPROF_UNWIND_FP, pcs, max);
}

static cprof__unwinder_t caller_how;
__attribute__((noinline)) static int caller_walk(uintptr_t *pcs, int max) {
  int n = cprof__unwind_caller(caller_how, pcs, max, (uintptr_t)__builtin_return_address(0));
  __asm__ volatile("" ::: "memory");
  return n;
}

static void *deep_thread(void *arg) {
  cprof__stack_bounds_learn();
  recurse(DEEP);
  return arg;
}

static void walk_deep(const char *name, walker_fn fn) {
  walker_name = name;
  walker = fn;
  /* On a thread of its own, with a stack of known bounds and room. */
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 8 << 20);
  pthread_t t;
  CHECK(pthread_create(&t, &a, deep_thread, NULL) == 0);
  pthread_join(t, NULL);
  pthread_attr_destroy(&a);
}

/* ---- an endless recursion ---- */

static int endless_n;
static uintptr_t endless[64];

__attribute__((noinline)) static int endless_recurse(int n) {
  int r;
  if (n == 0)
    r = endless_n = dwarf_walk(endless, 64);
  else
    r = endless_recurse(n - 1);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

static void *endless_thread(void *arg) {
  cprof__stack_bounds_learn();
  endless_recurse(CPROF_UNWIND_MAX_FRAMES + 100);
  return arg;
}

int main(void) {
  test_ring();
  walk_deep("cfa here", here_walk);
  walk_deep("signal walk, dwarf", dwarf_walk);
  int walkers = 5;
#ifndef __SANITIZE_THREAD__
  walk_deep("signal walk, fp", fp_walk);
#else
  /* ThreadSanitizer runs handlers late, inside its own runtime, with the
   * saved context: a frame-pointer walk there sees a stack that has moved
   * on (doc/internals.md, "Limits"). */
  walkers--;
#endif
  caller_how = CPROF_UNWIND_DWARF;
  walk_deep("caller, dwarf", caller_walk);
  caller_how = CPROF_UNWIND_FP;
  walk_deep("caller, fp", caller_walk);
  CHECK_EQ_INT(walker_checked, walkers * 6);

  /* Deeper than any walk goes: the innermost frames, then the marker with
   * no number. */
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 16 << 20);
  pthread_t t;
  CHECK(pthread_create(&t, &a, endless_thread, NULL) == 0);
  pthread_join(t, NULL);
  pthread_attr_destroy(&a);
  CHECK_EQ_INT(endless_n, 64 - 64 / 4);
  CHECK(endless[endless_n - 1] == CPROF_PC_ELIDED(0));
  return check_result("test_frames");
}
