/* Stack walking from a signal handler, behind one interface.
 *
 * Both unwinders start from the interrupted context the kernel handed the
 * handler (its ucontext_t), so the first pc is the exact pc the thread was
 * at, and the handler's own frames never appear. Output follows cprof's stack
 * convention: pcs[0] exact, pcs[1..] return addresses, and CPROF_PC_STACK_CUT
 * (pc.h) last where a stack was cut short.
 *
 * Async-signal-safe: no allocation, no locks, no stdio, no system call. */
#ifndef CPROF_UNWIND_UNWIND_H
#define CPROF_UNWIND_UNWIND_H

#include <stdint.h>
#include <ucontext.h>

#include "core/config.h" /* cprof__unwinder_t and the depths: settings' constants */
#include "unwind/maps.h"
#include "unwind/pc.h"

/* How many frames a stack keeps: CPROF_MAX_DEPTH, set at start, from
 * CPROF_MIN_DEPTH to CPROF_DEPTH_LIMIT (core/config.h). */
int cprof__max_depth(void);
/* Clamps depth into [CPROF_MIN_DEPTH, CPROF_DEPTH_LIMIT]. */
void cprof__set_max_depth(int depth);

/* The walkers read words of the stack above the frames they start from:
 * return addresses, saved registers, a signal frame's ucontext, the word at
 * an interrupted leaf's stack pointer. Under AddressSanitizer some of them
 * lie in the redzones of instrumented frames, mapped and readable but
 * poisoned, and a report from a signal handler would be the end of the
 * program: the functions that read the stack are not instrumented. */
#if defined(__SANITIZE_ADDRESS__)
#define CPROF_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) /* clang's way of saying it (the fuzz build) */
#define CPROF_ASAN 1
#endif
#endif
#ifdef CPROF_ASAN
#define CPROF_READS_STACK __attribute__((no_sanitize("address")))
#else
#define CPROF_READS_STACK
#endif

/* Walks the stack of the interrupted context into pcs[0..max), on the
 * thread that was interrupted. `stacks` is a snapshot of the address space
 * taken before the signal was sent (may be NULL): with the thread's own
 * stack bounds in TLS and the sigaltstack the context records, it bounds
 * every read of the stack (bounds.h), so a bad frame ends the walk instead
 * of faulting. Returns the depth (at least 1). */
int cprof__unwind_sigsafe(cprof__unwinder_t how, const ucontext_t *uc, const cprof__maps_t *stacks,
                          uintptr_t *pcs, int max);

/* The most stack, in bytes, the walkers use below cprof__unwind_sigsafe's
 * frame: the DWARF walker's cache miss, its deepest path, with a margin.
 * Measured by tests/sample/test_handler_stack.c (doc/internals.md,
 * "Stack"). With less room than this below it, cprof__unwind_sigsafe
 * gives the exact pc and CPROF_PC_STACK_CUT, and walks nothing. */
#define CPROF_UNWIND_STACK_USE 1024

/* Walks once from here with each unwinder, outside signal context, so that
 * every function the walkers call from another object (_dl_find_object) is
 * bound before a signal needs it: libcprof.so binds at load (-z now), but
 * a program linking libcprof.a may bind lazily, and a lazy binding in a
 * handler runs the dynamic linker's resolver on the interrupted stack. */
void cprof__unwind_bind_now(void);
int cprof__unwind_fp_sigsafe(const ucontext_t *uc, const cprof__maps_t *stacks, uintptr_t *pcs,
                             int max);

#endif
