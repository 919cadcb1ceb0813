/* How the capture gets each thread's stack, or why it does not: a thread
 * asleep in the kernel is unwound from outside, from the registers
 * /proc/self/task/TID/syscall shows; a running one is asked (threads.c's
 * comment says which is which, and why); the capturing thread unwinds
 * itself. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "core/clock.h"
#include "sample/altstack.h"
#include "sample/threads_internal.h"
#include "symbol/symbolize.h"
#include "unwind/modules.h"

/* Whether our signal is blocked or already pending for this thread: 1 if
 * so, 0 if not, or a negative errno. */
static int blocked_or_pending(pid_t tid) {
  uint64_t blocked, pending, bit = 1ULL << (cprof__threads_signo - 1);
  int err = cprof__thread_signal_masks(tid, &blocked, &pending);
  return err < 0 ? err : ((blocked | pending) & bit) != 0;
}

static int same_place(const cprof__in_kernel_t *a, const cprof__in_kernel_t *b) {
  return a->nr == b->nr && a->sp == b->sp && a->pc == b->pc;
}

/* Walks a thread in the kernel from outside into t. Returns 1 when it
 * stayed where *k says throughout (the registers are read again after the
 * walk); otherwise 0, with *where (and *k) saying where it is now. */
static int walk_outside(pid_t tid, cprof__in_kernel_t *k, int *where, cprof__thread_stack_t *t,
                        int max, cprof__symbolizer_t **sym, int *fd) {
  if (!*sym) {
    /* In a tree's member, without libdw (symbol/symbolize.h). */
    cprof__symbolizer_bare(1);
    *sym = cprof__symbolizer_acquire();
    cprof__symbolizer_bare(0);
  }
  t->depth = cprof__symbolizer_unwind_blocked(*sym, tid, k->sp, k->pc, t->pcs, max);
  cprof__in_kernel_t after;
  *where = cprof__threads_where_is(tid, &after, t, fd);
  if (*where == CPROF__WHERE_IN_KERNEL && same_place(&after, k))
    return 1;
  if (*where == CPROF__WHERE_IN_KERNEL)
    *k = after;
  return 0;
}

/* Decides how to get one thread's stack, and gets it when that means
 * unwinding from outside. A thread that moves on while we look is looked
 * at afresh, a few times at most; after that, a thread last seen in the
 * kernel keeps the exact pc it was seen at. Returns ASK when the thread
 * may be signalled now. *sym is the symbolizer, acquired on first need and
 * released by the caller. */
int cprof__threads_classify(pid_t tid, int can_signal, cprof__thread_stack_t *t, int max,
                            cprof__symbolizer_t **sym, const cprof__threads_cached_t *prev,
                            cprof__in_kernel_t *place, int *fd, int64_t *mask_ok) {
  cprof__in_kernel_t k = {-1, 0, 0};
  int where = cprof__threads_where_is(tid, &k, t, fd);
  *place = (cprof__in_kernel_t){-1, 0, 0};
  for (int look = 0;; look++) {
    switch (where) {
    case CPROF__WHERE_EXITED:
      return CPROF__HOW_GONE;
    case CPROF__WHERE_NO_USER:
      return CPROF__HOW_KERNEL;
    case CPROF__WHERE_UNREADABLE:
      return CPROF__HOW_UNKNOWN;
    case CPROF__WHERE_IN_KERNEL:
      t->syscall_nr = k.nr;
      if (look == 0 && prev && prev->depth > 0 && same_place(&k, &prev->place)) {
        t->depth = prev->depth;
        memcpy(t->pcs, prev->pcs, (size_t)prev->depth * sizeof t->pcs[0]);
        t->reused = 1;
        *place = k;
        return CPROF__HOW_OUTSIDE;
      }
      if (walk_outside(tid, &k, &where, t, max, sym, fd)) {
        *place = k; /* an exact stack, there: worth keeping */
        return CPROF__HOW_OUTSIDE;
      }
      if (look >= 2 && where == CPROF__WHERE_IN_KERNEL) {
        t->pcs[0] = k.pc;
        t->depth = cprof__modules_mark_sigsafe(t->pcs, 1, cprof__modules_generation_sigsafe());
        return CPROF__HOW_OUTSIDE;
      }
      break;
    default: { /* RUNNING */
      /* Nor one without an alternate stack for our signal (one cprof did
       * not see start: sample/altstack.h), which would take it on a stack
       * the program sized for itself. */
      if (!can_signal)
        return CPROF__HOW_NO_SIGNAL;
      if (!cprof__altstack_ready(tid))
        return CPROF__HOW_NO_STACK;
      /* Its signal mask is read from /proc (a page of text) at most once a
       * second for a thread a cache knows: a thread that blocks our signal
       * meanwhile collects at most a second of requests, which the next
       * look sees pending. */
      int64_t now = mask_ok ? cprof__now_ns(CLOCK_MONOTONIC) : 0;
      int fresh = mask_ok && *mask_ok && now - *mask_ok < 1000000000LL;
      int m = fresh ? 0 : blocked_or_pending(tid);
      if (mask_ok && m == 0 && !fresh)
        *mask_ok = now;
      if (m == -ENOENT || m == -ESRCH)
        return CPROF__HOW_GONE;
      if (m < 0) {
        t->unreadable = "status";
        t->err = -m;
        return CPROF__HOW_UNKNOWN;
      }
      if (m > 0)
        return CPROF__HOW_BLOCKED;
      /* The mask believed from before: the look above was microseconds
       * ago, as close to the signal as a second look would be. */
      if (fresh)
        return CPROF__HOW_ASK;
      /* The last look, just before the signal goes: reading the mask took
       * a while. */
      where = cprof__threads_where_is(tid, &k, t, fd);
      if (where == CPROF__WHERE_RUNNING)
        return CPROF__HOW_ASK;
      if (look >= 2 && where == CPROF__WHERE_IN_KERNEL) {
        t->pcs[0] = k.pc;
        t->depth = cprof__modules_mark_sigsafe(t->pcs, 1, cprof__modules_generation_sigsafe());
        return CPROF__HOW_OUTSIDE;
      }
    }
    }
  }
}

/* The capturing thread's own stack, from here, by the walk the handlers
 * use. getcontext fills the registers but not uc_stack, which the walk
 * reads to bound the stack: this thread is on its own stack, not an
 * alternate signal stack. */
__attribute__((noinline)) void cprof__threads_unwind_self(cprof__unwinder_t how,
                                                          const cprof__maps_t *maps,
                                                          cprof__thread_stack_t *t, int max) {
  ucontext_t uc;
  memset(&uc, 0, sizeof uc);
  t->depth = 0;
  if (getcontext(&uc) != 0)
    return;
  uc.uc_stack.ss_sp = NULL;
  uc.uc_stack.ss_size = 0;
  uc.uc_stack.ss_flags = SS_DISABLE;
  t->depth = cprof__unwind_sigsafe(how, &uc, maps, t->pcs, max);
}
