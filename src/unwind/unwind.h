/* Stack walking from a signal handler, behind one interface.
 *
 * Both unwinders start from the interrupted context the kernel handed the
 * handler (its ucontext_t), so the first pc is the exact pc the thread was
 * at, and the handler's own frames never appear. Output follows cprof's stack
 * convention: pcs[0] exact, pcs[1..] return addresses.
 *
 * Async-signal-safe: no allocation, no locks of ours, no stdio. */
#ifndef CPROF_UNWIND_UNWIND_H
#define CPROF_UNWIND_UNWIND_H

#include <stdint.h>
#include <ucontext.h>

#include "symbol/maps.h"

#define CPROF_MAX_DEPTH 128

typedef enum cprof__unwinder {
  CPROF_UNWIND_DWARF = 0, /* libunwind, reading .eh_frame: works without frame pointers */
  CPROF_UNWIND_FP = 1,    /* frame pointers: fast, needs -fno-omit-frame-pointer code */
} cprof__unwinder_t;

/* Prepares the unwinder outside signal context (loads libunwind, warms its
 * caches). Returns 0, or a negative errno when it cannot, after which the
 * caller falls back to CPROF_UNWIND_FP. Idempotent. */
int cprof__unwind_dwarf_init(void);

/* Walks the stack of the interrupted context into pcs[0..max). `stacks` is a
 * snapshot of the address space taken before the signal was sent; the
 * frame-pointer walker only follows frames inside the mapping that holds the
 * interrupted stack pointer (so a bad frame pointer ends the walk instead of
 * faulting). Returns the depth (at least 1). */
int cprof__unwind_sigsafe(cprof__unwinder_t how, const ucontext_t *uc, const cprof__maps_t *stacks,
                          uintptr_t *pcs, int max);
int cprof__unwind_fp_sigsafe(const ucontext_t *uc, const cprof__maps_t *stacks, uintptr_t *pcs,
                             int max);
int cprof__unwind_dwarf_sigsafe(const ucontext_t *uc, uintptr_t *pcs, int max);

#endif
