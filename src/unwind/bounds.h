/* Where a thread's stack ends, for walkers that must never read past it.
 *
 * A walker reads words above the stack pointer it starts from, up to the top
 * of that stack. The top is learnt, in order of trust:
 * - the alternate signal stack, when the stack pointer is on it: the kernel
 *   saves the thread's sigaltstack(2) settings in every signal frame's
 *   ucontext (uc_stack; flags SS_ONSTACK when the interrupted code ran on
 *   it), so a handler knows it without asking;
 * - this thread's own stack, learnt once per thread outside signal context
 *   (cprof__stack_bounds_learn) and kept in initial-exec TLS, which a
 *   signal handler reads with one %fs-relative load;
 * - a snapshot of /proc/self/maps taken before the signals were sent: the
 *   end of the mapping that holds the stack pointer.
 * A stack pointer none of them places has no known top, and the walk stops
 * there: a short stack, never a fault. */
#ifndef CPROF_UNWIND_BOUNDS_H
#define CPROF_UNWIND_BOUNDS_H

#include <signal.h>
#include <stdint.h>

#include "unwind/maps.h"

/* The calling thread's stack, [lo, hi), per thread in initial-exec TLS:
 * one %fs-relative access, never an allocation, and so readable from a
 * signal handler. A new thread's TLS starts zeroed: hi == 0 is "not learnt
 * yet", hi == 1 "cannot be known" (pthread_getattr_np failed). lo == hi is
 * "the top only" (cprof__stack_hi's guess for a thread other than the main
 * one): no stack pointer is placed by it, and cprof__stack_bounds_learn
 * still learns the rest. */
typedef struct cprof__stack_bounds {
  uintptr_t lo, hi;
} cprof__stack_bounds_t;
extern __thread cprof__stack_bounds_t cprof__stack_bounds
    __attribute__((tls_model("initial-exec")));

/* The calling thread's alternate signal stack of cprof's ([lo, hi); 0, 0:
 * none), set by sample/altstack.c: code that runs there (a handler of the
 * program's, which cprof's called or the kernel put there) walks up to its
 * top, then over the signal frame to the thread's own stack. */
void cprof__stack_bounds_signal_stack(uintptr_t lo, uintptr_t hi);
/* For a walk from `sp` on cprof's alternate stack, which goes on through a
 * signal frame to the thread's own stack: that stack's bounds, when known
 * (returns 1). Returns 0 when sp is elsewhere, or the bounds are unknown. */
int cprof__stack_beyond_signal_stack(uintptr_t sp, uintptr_t *lo, uintptr_t *hi);

/* Learns the calling thread's stack bounds, once per thread, for the
 * signal handlers' walks. The main thread's come from __libc_stack_end and
 * RLIMIT_STACK (one getrlimit per process, no allocation); another
 * thread's from pthread_getattr_np(3), which allocates through the
 * program's malloc: outside signal context, and never on a lock wrapper's
 * or the heap sampler's slow path (callers hold cprof's guard). */
void cprof__stack_bounds_learn(void);

/* The top (exclusive) of the stack the calling thread runs on, for a walk
 * from here: 1 when it cannot be known, so that no read is ever at or above
 * it. Never allocates: what the lock wrappers' and the heap sampler's slow
 * paths call, on threads that may hold any lock of the program's (its
 * allocator's among them). Where cprof__stack_bounds_learn has not been
 * called, a thread other than the main one has the top of the stack glibc
 * made for it: its thread descriptor, pthread_self(), lies above every
 * frame (x86-64 keeps the TCB and static TLS at the top of a thread's
 * stack block, glibc's own stacks and the program's alike). Outside signal
 * context. */
uintptr_t cprof__stack_hi(void);

/* The top (exclusive) of the stack that holds `sp`, on the calling thread,
 * or 0 when unknown. `alt` is the thread's sigaltstack as a signal frame
 * saved it (NULL: none known); `maps` a snapshot (NULL: none). Reads only
 * TLS and the arguments: async-signal-safe. */
uintptr_t cprof__stack_top_sigsafe(uintptr_t sp, const stack_t *alt, const cprof__maps_t *maps);

#endif
