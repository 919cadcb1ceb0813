/* The frame-pointer unwinder.
 *
 * On x86-64 code built with -fno-omit-frame-pointer, each frame starts with
 * the caller's %rbp saved at [rbp] and the return address at [rbp+8]. We
 * follow that chain from the interrupted registers, checking every frame
 * pointer before reading through it: it must be 8-byte aligned, lie inside
 * the mapping that holds the interrupted stack pointer, and move strictly
 * up the stack. Code without frame pointers (much of libc) leaves %rbp as a
 * general register, which the checks catch: the walk ends early instead of
 * faulting. That is the trade: fast and safe, but shallower stacks than
 * libunwind through such code. */
#include "unwind/unwind.h"

#include <stddef.h>

int cprof__unwind_fp_sigsafe(const ucontext_t *uc, const cprof__maps_t *stacks, uintptr_t *pcs,
                             int max) {
  const greg_t *r = uc->uc_mcontext.gregs;
  uintptr_t pc = (uintptr_t)r[REG_RIP];
  uintptr_t sp = (uintptr_t)r[REG_RSP];
  uintptr_t fp = (uintptr_t)r[REG_RBP];
  int n = 0;
  if (max <= 0)
    return 0;
  pcs[n++] = pc;

  const cprof__map_entry_t *stack = stacks ? cprof__maps_find_sigsafe(stacks, sp) : NULL;
  if (!stack)
    return n;
  uintptr_t lo = sp, hi = stack->end;

  while (n < max) {
    if (fp < lo || fp > hi - 2 * sizeof(uintptr_t) || (fp & (sizeof(uintptr_t) - 1)) != 0)
      break;
    const uintptr_t *frame = (const uintptr_t *)fp;
    uintptr_t next = frame[0], ret = frame[1];
    if (ret == 0)
      break;
    pcs[n++] = ret;
    if (next <= fp) /* frames must move up the stack, or we would loop */
      break;
    lo = fp + 2 * sizeof(uintptr_t);
    fp = next;
  }
  return n;
}

int cprof__unwind_sigsafe(cprof__unwinder_t how, const ucontext_t *uc, const cprof__maps_t *stacks,
                          uintptr_t *pcs, int max) {
  if (how == CPROF_UNWIND_DWARF)
    return cprof__unwind_dwarf_sigsafe(uc, pcs, max);
  return cprof__unwind_fp_sigsafe(uc, stacks, pcs, max);
}
