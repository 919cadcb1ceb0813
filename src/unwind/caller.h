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

#endif
