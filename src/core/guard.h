/* cprof's re-entrancy guard: raised on a thread while cprof does its own
 * work there (serving a request, writing a file, taking a sample, waiting
 * on a lock of its own), so that what that work calls through cprof's
 * interposers (malloc, the lock calls, the credential calls) passes
 * straight through: nothing of cprof's own is sampled, profiled or looked
 * up, and no interposer re-enters cprof. It nests.
 *
 * The ground floor holds it because every floor raises it: the samplers,
 * the interposers, the server, the exit files, the push. As jemalloc keeps
 * its reentrancy level with the thread's state, it is one initial-exec
 * thread-local: one %fs-relative access, never an allocation. */
#ifndef CPROF_CORE_GUARD_H
#define CPROF_CORE_GUARD_H

#include <stdint.h>

extern __thread uint32_t cprof__guard_depth __attribute__((tls_model("initial-exec")));

static inline void cprof__guard_enter(void) { cprof__guard_depth++; }
static inline void cprof__guard_leave(void) { cprof__guard_depth--; }
static inline int cprof__guarded(void) { return cprof__guard_depth != 0; }

/* The guard around a critical section that a signal handler on the same
 * thread may interrupt: raised before it and lowered after it, with
 * nothing of the compiler's moved across, so that a handler calling a lock
 * wrapper or malloc meanwhile finds it raised and passes straight through. */
static inline void cprof__guard_up(void) {
  cprof__guard_enter();
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
static inline void cprof__guard_down(void) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  cprof__guard_leave();
}

#endif
