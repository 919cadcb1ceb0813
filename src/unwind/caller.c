/* The caller's stack (see caller.h): the frame-pointer chain, or the
 * cached DWARF walker, and where its walk from here gives up, the same
 * walker's walk from a context: both without locks, allocation or, warm,
 * system calls. libgcc's _Unwind_Backtrace, which this used to fall back
 * on, takes libgcc's object mutex when a program registers unwind tables
 * (a JIT's __register_frame), through the lock wrappers; a thread that
 * waited for that very mutex in a wrapper, and then recorded the wait,
 * would wait for itself (doc/internals.md). */
#include "unwind/caller.h"

#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "arch/arch.h"
#include "unwind/bounds.h"
#include "unwind/cfa.h"
#include "unwind/frames.h"
#include "unwind/modules.h"

/* The DWARF walker's rules for this thread's last stack, per thread,
 * initial-exec: one %fs-relative access, never an allocation. Written only
 * here, outside signal context; the signal handlers' walk never reads it
 * (see cfa.c). */
static __thread cprof__cfa_memo_t memo __attribute__((tls_model("initial-exec")));

/* Walks the frame-pointer chain from here, keeping the frames from the
 * allocating call's return address `ret` on. Every frame must lie above the
 * last one and below the stack's top, so a frame pointer used as a general
 * register by code built without them ends the walk instead of faulting. */
CPROF_READS_STACK __attribute__((noinline)) static int unwind_fp(uintptr_t *pcs, int max,
                                                                 uintptr_t ret, uintptr_t hi) {
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  int started = 0;
  /* From cprof's alternate stack (a handler of the program's runs there),
   * the chain goes on through the signal frame, whose %rbp is the
   * interrupted code's, to the thread's own stack. */
  uintptr_t own_lo = 0, own_hi = 0;
  cprof__stack_beyond_signal_stack(fp, &own_lo, &own_hi);
  cprof__frames_t f;
  cprof__frames_init(&f, pcs, max);
  while (cprof__frames_room(&f)) {
    if (own_hi && fp >= own_lo && fp + 16 <= own_hi)
      hi = own_hi, own_hi = 0;
    if ((fp & 7) != 0 || fp + 16 > hi)
      return cprof__frames_end(&f, 1);
    const uintptr_t *frame = (const uintptr_t *)fp;
    uintptr_t next = frame[0], r = cprof__arch_strip_ra(frame[1]);
    if (r == 0)
      break;
    started |= r == ret;
    if (started)
      cprof__frames_put(&f, r);
    /* Frames move up the stack, but for the one step from cprof's
     * alternate stack to the thread's own, which may lie below it (under
     * qemu-user the guest's stacks are below its mappings). */
    if (next <= fp && !(own_hi && next >= own_lo && next + 16 <= own_hi))
      break;
    fp = next;
  }
  return cprof__frames_end(&f, 1);
}

/* Where the walk from here gave up (a signal frame: the program's handler
 * allocates or locks; a rule the cached walker does not keep): the walk
 * the signal handlers use, from a context made here, which steps over
 * signal frames and takes checked steps where the rules cannot go. Its
 * reads stay below the stack's top as the handlers' do: the alternate
 * signal stack (asked for here, one system call on this rare path), this
 * thread's bounds, or [sp, hi) given as a one-entry map. Our own frames
 * come first: they are dropped, and the frames from `ret` on are kept. */
CPROF_READS_STACK __attribute__((noinline)) static int unwind_from_context(uintptr_t *pcs, int max,
                                                                           uintptr_t ret,
                                                                           uintptr_t hi) {
  ucontext_t uc;
  memset(&uc, 0, offsetof(ucontext_t, uc_mcontext) + CPROF_ARCH_MCONTEXT_READ);
  cprof__arch_context_here(&uc);
  /* The kernel's settings, not the program's view of them: sigaltstack
   * is interposed (sample/altstack.c), and cprof's stack reads as none. */
  if (syscall(SYS_sigaltstack, NULL, &uc.uc_stack) != 0)
    uc.uc_stack.ss_flags = SS_DISABLE;
  uintptr_t sp = cprof__arch_sp(&uc);
  cprof__map_entry_t here = {.start = sp, .end = hi > sp ? hi : sp, .perms = "rw-p", .path = ""};
  cprof__maps_t stack = {.v = &here, .n = 1};
  int n = cprof__unwind_cfa_sigsafe(&uc, &stack, pcs, max);
  for (int i = 1; i < n; i++) {
    if (pcs[i] != ret)
      continue;
    memmove(pcs, pcs + i, (size_t)(n - i) * sizeof *pcs);
    return n - i;
  }
  return 0;
}

int cprof__unwind_caller(cprof__unwinder_t how, uintptr_t *pcs, int max, uintptr_t ret) {
  uintptr_t hi = cprof__stack_hi();
  /* Read before the walk: its addresses mean what they meant then. */
  uint32_t g = max > 1 ? cprof__modules_generation_sigsafe() : 0;
  max -= g != 0;
  int n;
  if (how == CPROF_UNWIND_FP)
    n = unwind_fp(pcs, max, ret, hi);
  else if ((n = cprof__unwind_cfa_here(pcs, max, ret, hi, &memo)) <= 0)
    n = unwind_from_context(pcs, max, ret, hi);
  if (n <= 0) { /* our own frames could not be walked: the caller alone */
    pcs[0] = ret;
    n = 1;
  }
  pcs[0] -= 1;
  return cprof__modules_mark_sigsafe(pcs, n, g);
}

/* ---- the depth kept, and arrays for it ---- */

static int max_depth = CPROF_DEFAULT_DEPTH; /* atomic */

int cprof__max_depth(void) { return __atomic_load_n(&max_depth, __ATOMIC_RELAXED); }

void cprof__set_max_depth(int depth) {
  if (depth < CPROF_MIN_DEPTH)
    depth = CPROF_MIN_DEPTH;
  if (depth > CPROF_DEPTH_LIMIT)
    depth = CPROF_DEPTH_LIMIT;
  __atomic_store_n(&max_depth, depth, __ATOMIC_RELAXED);
}

/* Arrays deeper than the default, for the walks from here: taken by a bit
 * each, lock-free, and given back once the stack is in its table. Their
 * memory is the library's own (zero pages until used), never the program's
 * heap or the caller's stack, which may be a small one. A thread that
 * finds them all taken walks into its default-sized array instead: its
 * stack keeps fewer frames, and says so with the marker. A fork while
 * another thread holds one leaves it taken in the child. */
#define DEEP_ARRAYS 16
static uintptr_t deep[DEEP_ARRAYS][CPROF_DEPTH_LIMIT];
static unsigned deep_taken; /* atomic: bit i, deep[i] is taken */

void cprof__caller_pcs_take(cprof__caller_pcs_t *a, uintptr_t small[CPROF_DEFAULT_DEPTH]) {
  *a = (cprof__caller_pcs_t){small, CPROF_DEFAULT_DEPTH, -1};
  int want = cprof__max_depth();
  if (want <= CPROF_DEFAULT_DEPTH) {
    a->max = want;
    return;
  }
  unsigned taken = __atomic_load_n(&deep_taken, __ATOMIC_RELAXED);
  while (taken != (1u << DEEP_ARRAYS) - 1) {
    int i = __builtin_ctz(~taken);
    if (__atomic_compare_exchange_n(&deep_taken, &taken, taken | 1u << i, 1, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED)) {
      *a = (cprof__caller_pcs_t){deep[i], want, i};
      return;
    }
  }
}

void cprof__caller_pcs_give(cprof__caller_pcs_t *a) {
  if (a->slot >= 0)
    __atomic_fetch_and(&deep_taken, ~(1u << a->slot), __ATOMIC_RELEASE);
  a->slot = -1;
}
