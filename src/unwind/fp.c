/* The frame-pointer unwinder.
 *
 * On x86-64 code built with -fno-omit-frame-pointer, each frame starts with
 * the caller's %rbp saved at [rbp] and the return address at [rbp+8]; on
 * aarch64 the frame record that x29 points at is the same pair, {saved x29,
 * saved x30} (AAPCS64, 6.2.3), its return address maybe signed (PAC bits,
 * stripped: arch.h). We
 * follow that chain from the interrupted registers, checking every frame
 * pointer before reading through it: it must be 8-byte aligned, lie
 * between the interrupted stack pointer and the top of its stack
 * (bounds.h), and move strictly up the stack. Code without frame pointers
 * (much of libc) leaves %rbp as a general register, which the checks catch:
 * the walk ends early instead of faulting. That is the trade: fast and
 * safe, but shallower stacks than the DWARF walker (cfa.c) gives through
 * such code.
 *
 * One case is common enough to handle: a leaf function with no frame of
 * its own (GCC gives leaves none even with -fno-omit-frame-pointer, and
 * glibc's system-call wrappers have none), where %rbp still holds the
 * caller's frame and following it would skip the caller. There the return
 * address is the word at %rsp. We take that word only when it points just
 * after a call instruction in a function the unwind tables of a module
 * loaded now describe (cfa.h), the same test that keeps a stray code
 * pointer on the stack from being taken for a frame. That test reads code,
 * so it is skipped while a dlclose unmaps a module (unload.h); the chain
 * itself reads only the stack. It once tested the word against a snapshot
 * of /proc/self/maps up to a second old, and read the code of a library
 * closed since: a fault.
 *
 * On aarch64 the leaf's return address is in x30 (lr), not on the stack,
 * and x29 is still the caller's frame until the prologue's stp: lr is taken
 * by the same test, and only when it is not in the interrupted function
 * itself (after a call returns, lr points into the function that made it,
 * which is no caller). */
#include "unwind/unwind.h"

#include <stddef.h>
#include <string.h>

#include "arch/arch.h"
#include "unwind/bounds.h"
#include "unwind/cfa.h"
#include "unwind/frames.h"
#include "unwind/modules.h"
#include "unwind/unload.h"

CPROF_READS_STACK static int walk_sigsafe(const ucontext_t *uc, const cprof__maps_t *stacks,
                                          uintptr_t *pcs, int max, int read_code) {
  uintptr_t pc = cprof__arch_pc(uc);
  uintptr_t sp = cprof__arch_sp(uc);
  uintptr_t fp = cprof__arch_fp(uc);
  if (max <= 0)
    return 0;
  cprof__frames_t f;
  cprof__frames_init(&f, pcs, max);
  cprof__frames_add(&f, pc);

  uintptr_t lo = sp, hi = cprof__stack_top_sigsafe(sp, &uc->uc_stack, stacks);
  if (hi < 2 * sizeof(uintptr_t))
    return cprof__frames_end(&f, 1);

  /* The leaf without a frame, described above. */
#if CPROF_ARCH_LINK_REGISTER
  if (read_code) {
    uintptr_t lr = cprof__arch_strip_ra(cprof__arch_lr(uc));
    int chain_ok = fp >= sp && fp <= hi - 2 * sizeof(uintptr_t) && (fp & 7) == 0;
    uintptr_t first = chain_ok ? cprof__arch_strip_ra(((const uintptr_t *)fp)[1]) : 0;
    if (lr != first && cprof__cfa_is_return_address_sigsafe(lr) &&
        cprof__cfa_function_start_sigsafe(lr - 1) != cprof__cfa_function_start_sigsafe(pc))
      cprof__frames_add(&f, lr);
  }
#else
  if (read_code && sp <= hi - sizeof(uintptr_t) && (sp & (sizeof(uintptr_t) - 1)) == 0) {
    uintptr_t top = *(const uintptr_t *)sp;
    int chain_ok = fp >= sp && fp <= hi - 2 * sizeof(uintptr_t);
    uintptr_t first = chain_ok ? ((const uintptr_t *)fp)[1] : 0;
    if (top != first && cprof__cfa_is_return_address_sigsafe(top))
      cprof__frames_add(&f, top);
  }
#endif

  /* The chain ends where a frame pointer fails the checks: the outermost
   * frame's is 0 (_start and clone clear %rbp). */
  int whole = 1;
  while ((whole = cprof__frames_room(&f))) {
    if (fp < lo || fp > hi - 2 * sizeof(uintptr_t) || (fp & (sizeof(uintptr_t) - 1)) != 0)
      break;
    const uintptr_t *frame = (const uintptr_t *)fp;
    uintptr_t next = frame[0], ret = cprof__arch_strip_ra(frame[1]);
    if (ret == 0)
      break;
    cprof__frames_put(&f, ret);
    if (next <= fp) /* frames must move up the stack, or we would loop */
      break;
    lo = fp + 2 * sizeof(uintptr_t);
    fp = next;
  }
  return cprof__frames_end(&f, whole);
}

int cprof__unwind_fp_sigsafe(const ucontext_t *uc, const cprof__maps_t *stacks, uintptr_t *pcs,
                             int max) {
  unsigned e = cprof__unload_enter_sigsafe();
  int n = walk_sigsafe(uc, stacks, pcs, max, !cprof__unload_busy_sigsafe());
  cprof__unload_leave_sigsafe(e);
  return n;
}

/* How many bytes of the stack that holds `here` lie below it, on the
 * calling thread: from the alternate signal stack the kernel recorded, the
 * thread's own stack (learnt), or the mapping a snapshot places it in.
 * UINTPTR_MAX when none of them knows. */
static uintptr_t room_below_sigsafe(uintptr_t here, const stack_t *alt,
                                    const cprof__maps_t *maps) {
  if (alt && !(alt->ss_flags & SS_DISABLE) && alt->ss_size > 0) {
    uintptr_t lo = (uintptr_t)alt->ss_sp;
    if (here >= lo && here - lo < alt->ss_size)
      return here - lo;
  }
  const cprof__stack_bounds_t *mine = &cprof__stack_bounds;
  uintptr_t hi = __atomic_load_n(&mine->hi, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_ACQUIRE);
  if (hi > 1 && here >= mine->lo && here < hi)
    return here - mine->lo;
  const cprof__map_entry_t *m = maps ? cprof__maps_find_sigsafe(maps, here) : NULL;
  return m ? here - m->start : UINTPTR_MAX;
}

static int walk_with_sigsafe(cprof__unwinder_t how, const ucontext_t *uc, const cprof__maps_t *stacks,
                             uintptr_t *pcs, int max) {
  /* The walkers run on the interrupted thread's stack, below the kernel's
   * signal frame. Where what is left is less than they may use, the sample
   * keeps its exact pc and says the stack was cut, rather than overflow a
   * small stack (a PTHREAD_STACK_MIN thread, a coroutine's). */
  uintptr_t here = (uintptr_t)__builtin_frame_address(0);
  /* And where the thread was on its alternate stack already, in a handler
   * that runs there (one the program installed past our sigaction, which
   * could not add our signals to its mask: interpose/sigaction.c), the
   * kernel has put its frame below that handler's: the walk would take
   * more of what the program left there for its own handler. */
  const stack_t *alt = &uc->uc_stack;
  int nested = (alt->ss_flags & SS_ONSTACK) && !(alt->ss_flags & SS_DISABLE) &&
               here - (uintptr_t)alt->ss_sp < alt->ss_size;
  if (nested || room_below_sigsafe(here, alt, stacks) < CPROF_UNWIND_STACK_USE) {
    pcs[0] = cprof__arch_pc(uc);
    if (max < 2)
      return 1;
    pcs[1] = CPROF_PC_STACK_CUT;
    return 2;
  }
  if (how == CPROF_UNWIND_DWARF)
    return cprof__unwind_cfa_sigsafe(uc, stacks, pcs, max);
  return cprof__unwind_fp_sigsafe(uc, stacks, pcs, max);
}

int cprof__unwind_sigsafe(cprof__unwinder_t how, const ucontext_t *uc, const cprof__maps_t *stacks,
                          uintptr_t *pcs, int max) {
  if (max <= 0)
    return 0;
  /* Read before the walk: its addresses mean what they meant then. */
  uint32_t g = max > 1 ? cprof__modules_generation_sigsafe() : 0;
  int n = walk_with_sigsafe(how, uc, stacks, pcs, g ? max - 1 : max);
  return cprof__modules_mark_sigsafe(pcs, n, g);
}

void cprof__unwind_bind_now(void) {
  ucontext_t uc;
  memset(&uc, 0, sizeof uc);
  uc.uc_stack.ss_flags = SS_DISABLE;
  cprof__arch_context_here(&uc);
  uintptr_t pcs[4];
  cprof__unwind_sigsafe(CPROF_UNWIND_DWARF, &uc, NULL, pcs, 4);
  cprof__unwind_sigsafe(CPROF_UNWIND_FP, &uc, NULL, pcs, 4);
}
