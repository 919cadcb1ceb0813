/* The stack of the caller of an interposed function (malloc, a contended
 * pthread_mutex_lock, pthread_create), walked from inside cprof's own
 * frames, for the heap and contention profiles.
 *
 * Outside signal context, on the calling thread, which may hold any lock of
 * the program's (its allocator's among them): no allocation, no lock, and
 * warm, no system call. The stack's top comes from cprof__stack_hi
 * (bounds.h), and every walk stays below it. */
#ifndef CPROF_UNWIND_CALLER_H
#define CPROF_UNWIND_CALLER_H

#include <stdint.h>

#include "unwind/unwind.h"

/* The stack of the call whose return address is `ret`, walked with `how`:
 * pcs[0] inside that call (ret - 1: the profile's convention, an exact pc
 * first), then the callers' return addresses. CPROF_UNWIND_DWARF uses
 * cfa.h's cached walker, or where its walk from here gives up (a signal
 * frame, a rule it does not cache) the same walker's walk from a context,
 * as the signal handlers use it;
 * CPROF_UNWIND_FP the frame-pointer chain. Returns the depth, at least 1
 * (the caller alone when nothing could be walked). */
int cprof__unwind_caller(cprof__unwinder_t how, uintptr_t *pcs, int max, uintptr_t ret);

/* An array for one such walk, of cprof__max_depth() frames: `small` (the
 * caller's, on its stack) at the default depth or less; above it, one of
 * a few arrays of the library's own, or `small` again when all are taken.
 * Give it back when the stack has been copied. No allocation, no lock, no
 * system call. */
typedef struct cprof__caller_pcs {
  uintptr_t *pcs;
  int max;
  int slot; /* which of the library's arrays, or -1 */
} cprof__caller_pcs_t;
void cprof__caller_pcs_take(cprof__caller_pcs_t *a, uintptr_t small[CPROF_DEFAULT_DEPTH]);
void cprof__caller_pcs_give(cprof__caller_pcs_t *a);

#endif
