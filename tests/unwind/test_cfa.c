/* The cached DWARF unwinder against libgcc's _Unwind_Backtrace, the judge:
 * from the same frame, both must give the same return addresses, all the
 * way to the end of the stack. Stacks through frames with and without frame
 * pointers, alloca (a CFA on %rbp in code that otherwise has no frame
 * pointer), glibc's qsort (code built without frame pointers), a thread, and
 * a second walk from the cache; from a signal handler, whose trampoline's
 * rules are beyond the walker, it must say so (-1) rather than guess. */
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include "check.h"
#include "unwind/cfa.h"

#define MAX 128

typedef struct stack {
  uintptr_t pcs[MAX];
  int n;
} stack_t_;

typedef struct walk {
  stack_t_ *s;
  uintptr_t from;
  int started;
} walk_t;

static _Unwind_Reason_Code collect(struct _Unwind_Context *ctx, void *arg) {
  walk_t *w = arg;
  uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
  w->started |= ip == w->from;
  if (!w->started)
    return _URC_NO_REASON;
  if (w->s->n >= MAX || ip == 0)
    return _URC_END_OF_STACK;
  w->s->pcs[w->s->n++] = ip;
  return _URC_NO_REASON;
}

static uintptr_t stack_top(void) {
  pthread_attr_t a;
  void *addr;
  size_t size;
  uintptr_t hi = 0;
  if (pthread_getattr_np(pthread_self(), &a) == 0) {
    if (pthread_attr_getstack(&a, &addr, &size) == 0)
      hi = (uintptr_t)addr + size;
    pthread_attr_destroy(&a);
  }
  return hi;
}

static int walks, unsupported;
static __thread cprof__cfa_memo_t memo; /* the last walk's rules, per thread */

/* Both walks from here, from this function's return address on; then the
 * same walk again, answered from the cache, and from this thread's memo
 * (filled by the walk before, or by another stack). */
__attribute__((noinline)) static void compare_here(const char *where) {
  uintptr_t from = (uintptr_t)__builtin_return_address(0);
  stack_t_ ours = {.n = 0}, again = {.n = 0}, memoed = {.n = 0}, judge = {.n = 0};
  ours.n = cprof__unwind_cfa_here(ours.pcs, MAX, from, stack_top(), NULL);
  again.n = cprof__unwind_cfa_here(again.pcs, MAX, from, stack_top(), &memo);
  memoed.n = cprof__unwind_cfa_here(memoed.pcs, MAX, from, stack_top(), &memo);
  walk_t w = {&judge, from, 0};
  _Unwind_Backtrace(collect, &w);
  walks++;
  if (ours.n < 0) {
    unsupported++;
    return;
  }
  int same = ours.n == judge.n && memcmp(ours.pcs, judge.pcs, ours.n * sizeof *ours.pcs) == 0;
  if (!same) {
    fprintf(stderr, "%s: ours %d frames, libgcc %d\n", where, ours.n, judge.n);
    for (int i = 0; i < ours.n || i < judge.n; i++)
      fprintf(stderr, "  %2d %#lx %#lx\n", i, i < ours.n ? ours.pcs[i] : 0,
              i < judge.n ? judge.pcs[i] : 0);
  }
  CHECK(same);
  CHECK(judge.n >= 3);
  CHECK(again.n == ours.n && memcmp(again.pcs, ours.pcs, ours.n * sizeof *ours.pcs) == 0);
  CHECK(memoed.n == ours.n && memcmp(memoed.pcs, ours.pcs, ours.n * sizeof *ours.pcs) == 0);
}

/* Frames of each kind, nested: the walk crosses all of them. */
__attribute__((noinline)) static void with_fp(int depth, void (*leaf)(void));
__attribute__((noinline, optimize("omit-frame-pointer"))) static void without_fp(int depth,
                                                                              void (*leaf)(void)) {
  volatile char pad[40];
  pad[0] = (char)depth;
  if (depth <= 0)
    leaf();
  else
    with_fp(depth - 1, leaf);
  __asm__ volatile("" ::"m"(pad) : "memory"); /* no tail call */
}

__attribute__((noinline, optimize("omit-frame-pointer"))) static void with_alloca(int depth,
                                                                               void (*leaf)(void)) {
  volatile char *buf = alloca(16 + (size_t)depth * 24);
  buf[0] = (char)depth;
  without_fp(depth - 1, leaf);
  __asm__ volatile("" ::"r"(buf) : "memory");
}

__attribute__((noinline)) static void with_fp(int depth, void (*leaf)(void)) {
  if (depth <= 0)
    leaf();
  else if (depth % 3 == 0)
    with_alloca(depth - 1, leaf);
  else
    without_fp(depth - 1, leaf);
  __asm__ volatile("" ::: "memory");
}

static void leaf_nested(void) { compare_here("nested"); }

/* Through glibc: the comparator walks, under qsort's own frames. */
static int compared;
static int by_value(const void *a, const void *b) {
  if (!compared++)
    compare_here("qsort");
  return *(const int *)a - *(const int *)b;
}
static void leaf_qsort(void) {
  int v[64];
  for (int i = 0; i < 64; i++)
    v[i] = (i * 37) % 64;
  compared = 0;
  qsort(v, 64, sizeof *v, by_value);
  CHECK(v[0] == 0 && v[63] == 63);
}

static void *thread_main(void *arg) {
  with_fp(7, leaf_nested);
  return arg;
}

/* From a signal handler: the trampoline's frame is a signal frame. */
static int in_handler = -2;
static uintptr_t main_top; /* found before: pthread_getattr_np allocates */
static void on_signal(int sig) {
  uintptr_t pcs[MAX];
  in_handler = cprof__unwind_cfa_here(pcs, MAX, 0, main_top, NULL);
  (void)sig;
}

int main(void) {
  with_fp(0, leaf_nested);
  with_fp(10, leaf_nested);
  with_fp(12, leaf_qsort);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, thread_main, NULL) == 0);
  pthread_join(t, NULL);
  CHECK_EQ_INT(unsupported, 0);
  CHECK_EQ_INT(walks, 4);

  /* `from` not on the stack: nothing kept. */
  uintptr_t pcs[MAX];
  CHECK_EQ_INT(cprof__unwind_cfa_here(pcs, MAX, 1, stack_top(), NULL), 0);
  /* A bounded walk. */
  CHECK_EQ_INT(cprof__unwind_cfa_here(pcs, 2, 0, stack_top(), NULL), 2);
  /* No stack above us: no frame read. */
  CHECK_EQ_INT(cprof__unwind_cfa_here(pcs, MAX, 0, 0, NULL), 0);

  main_top = stack_top();
  signal(SIGUSR1, on_signal);
  raise(SIGUSR1);
  CHECK_EQ_INT(in_handler, -1);
  return check_result("test_cfa");
}
