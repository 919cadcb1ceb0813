/* A DWARF unwinder of our own, for the heap sampler's stacks (walked from
 * its own frames) and for every signal handler's (walked from the
 * interrupted context the kernel saved).
 *
 * What any DWARF unwinder does per frame is find the frame's FDE in
 * .eh_frame and run its call-frame program up to the pc, to learn where the
 * frame's caller's registers are: libgcc's _Unwind_Backtrace does it anew
 * for every frame of every walk, about 140 ns a frame. But on x86-64 the
 * answer, for almost every pc of compiled code, fits in a word: the CFA
 * (the caller's stack pointer) is %rsp or %rbp plus a constant (or, in a
 * frame GCC realigns, the word at %rbp plus a constant), the return address
 * is at CFA-8, and %rbp is either unchanged or saved at a constant offset.
 * So this walker computes that rule once per pc and keeps it in a cache; a
 * warm frame costs a cache probe and two loads from the stack.
 *
 * Where a pc's rule does not fit (signal trampolines, the PLT's
 * DW_CFA_def_cfa_expression, other registers as the CFA's base), the walk
 * from here gives up with -1, and its caller goes on with the handlers'
 * walk from a context (caller.c), never libgcc: the walk from a signal
 * cannot call libgcc (dl_iterate_phdr takes a lock in a
 * handler), so it steps over signal frames itself, falls back to a checked
 * leaf or frame-pointer step, or ends the stack with CPROF_PC_STACK_CUT.
 *
 * Lock-free, allocation-free and free of system calls: unwind tables are
 * found with glibc's _dl_find_object (async-signal-safe, no locks), and the
 * cache is a table of seqlocked slots that a writer skips rather than waits
 * for. */
#ifndef CPROF_UNWIND_CFA_H
#define CPROF_UNWIND_CFA_H

#include <stdint.h>
#include <ucontext.h>

#include "unwind/maps.h"

/* The rules of a thread's last walk, frame by frame: a thread that walks
 * the same stack again (a loop that allocates) finds them here, in a few
 * adjacent cache lines, rather than in as many lines of the shared cache as
 * it has frames. Zero-initialised; one per thread, never shared. */
#define CPROF_CFA_MEMO 32
typedef struct cprof__cfa_memo {
  uintptr_t pc[CPROF_CFA_MEMO];
  uint64_t rule[CPROF_CFA_MEMO];
} cprof__cfa_memo_t;

/* Walks the calling thread's stack from the caller of this function up to
 * `stack_hi` (the top of its stack: no read goes at or above it), keeping
 * the return addresses from the first that equals `from` on (all of them
 * when from is 0) into pcs[0..max). `memo` may be NULL. Returns how many,
 * or -1 when a frame's rule is beyond this walker, for the caller to walk
 * another way. */
int cprof__unwind_cfa_here(uintptr_t *pcs, int max, uintptr_t from, uintptr_t stack_hi,
                           cprof__cfa_memo_t *memo);

/* Walks the stack of the context a signal interrupted, `uc` as the kernel
 * handed it to the handler, into pcs[0..max): pcs[0] the interrupted pc,
 * then return addresses (an exact pc found past a signal frame is stored
 * one past itself, so that "one byte back" lands on it). Reads stay within
 * the bounds cprof__stack_top_sigsafe gives (`stacks` may be NULL); a stack
 * that goes on where the walk cannot ends with CPROF_PC_STACK_CUT. Returns
 * the depth, at least 1 when max is. Async-signal-safe; on the thread that
 * was interrupted. Reads no module while a dlclose unmaps one (unload.h):
 * the stack is then the exact pc and CPROF_PC_STACK_CUT. */
int cprof__unwind_cfa_sigsafe(const ucontext_t *uc, const cprof__maps_t *stacks, uintptr_t *pcs,
                              int max);

/* Whether `ret` is a return address: ret - 1 lies in a function the unwind
 * tables of a module loaded now describe, and the bytes before ret end in
 * a call instruction, read only where they are mapped. For a walker from a
 * signal, between cprof__unload_enter_sigsafe and _leave, while
 * cprof__unload_busy_sigsafe() is false (unload.h). */
int cprof__cfa_is_return_address_sigsafe(uintptr_t ret);
/* The first pc of the function the unwind tables place `pc` in, uncached;
 * 0 where they place it in none. Async-signal-safe, as the above. */
uintptr_t cprof__cfa_function_start_sigsafe(uintptr_t pc);

#endif
