/* A thread's stack bounds (see bounds.h). */
#include "unwind/bounds.h"

#include <pthread.h>

__thread cprof__stack_bounds_t cprof__stack_bounds __attribute__((tls_model("initial-exec")));

void cprof__stack_bounds_learn(void) {
  cprof__stack_bounds_t *mine = &cprof__stack_bounds;
  if (mine->hi)
    return;
  pthread_attr_t a;
  void *addr;
  size_t size;
  cprof__stack_bounds_t b = {0, 1};
  if (pthread_getattr_np(pthread_self(), &a) == 0) {
    if (pthread_attr_getstack(&a, &addr, &size) == 0)
      b = (cprof__stack_bounds_t){(uintptr_t)addr, (uintptr_t)addr + size};
    pthread_attr_destroy(&a);
  }
  /* lo before hi, each a single store, with a compiler barrier between: a
   * handler interrupting this sees hi == 0 (unknown) or both. */
  mine->lo = b.lo;
  __atomic_signal_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&mine->hi, b.hi, __ATOMIC_RELAXED);
}

uintptr_t cprof__stack_top_sigsafe(uintptr_t sp, const stack_t *alt, const cprof__maps_t *maps) {
  /* sigaltstack(2): ss_flags is SS_DISABLE when there is none. SS_ONSTACK
   * says whether the interrupted code was on it; the range says whether
   * this sp is, which is what matters for frames further up. */
  if (alt && !(alt->ss_flags & SS_DISABLE) && alt->ss_size > 0) {
    uintptr_t lo = (uintptr_t)alt->ss_sp, hi = lo + alt->ss_size;
    if (sp >= lo && sp < hi)
      return hi;
  }
  const cprof__stack_bounds_t *mine = &cprof__stack_bounds;
  uintptr_t hi = __atomic_load_n(&mine->hi, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_ACQUIRE);
  if (hi > 1 && sp >= mine->lo && sp < hi)
    return hi;
  const cprof__map_entry_t *m = maps ? cprof__maps_find_sigsafe(maps, sp) : NULL;
  if (m && m->perms[0] == 'r')
    return m->end;
  return 0;
}
