/* The stack of the caller of an interposed function (malloc, a contended
 * pthread_mutex_lock, pthread_create), walked from inside cprof's own
 * frames, for the heap and contention profiles.
 *
 * Outside signal context, on the calling thread: the stack's top is found
 * once per thread with pthread_getattr_np (which may allocate: the caller
 * holds cprof's guard), and every walk stays below it. */
#ifndef CPROF_UNWIND_CALLER_H
#define CPROF_UNWIND_CALLER_H

#include <stdint.h>

#include "unwind/unwind.h"

/* The stack of the call whose return address is `ret`, walked with `how`:
 * pcs[0] inside that call (ret - 1: the profile's convention, an exact pc
 * first), then the callers' return addresses. CPROF_UNWIND_DWARF uses
 * cfa.h's cached walker, or libgcc's _Unwind_Backtrace where that gives up;
 * CPROF_UNWIND_FP the frame-pointer chain. Returns the depth, at least 1
 * (the caller alone when nothing could be walked). */
int cprof__unwind_caller(cprof__unwinder_t how, uintptr_t *pcs, int max, uintptr_t ret);

#endif
