/* The next definition of a function libcprof interposes (pthread_create,
 * sigaction, signal): the one that comes after libcprof in the lookup
 * order, found with dlsym(RTLD_NEXT) at the first call and kept in *cache.
 * (The malloc family resolves its own, with a bootstrap arena for the
 * allocations dlsym makes meanwhile: src/interpose/malloc_real.c.) */
#ifndef CPROF_CORE_NEXT_H
#define CPROF_CORE_NEXT_H

#include <dlfcn.h>
#include <stddef.h>

/* The first call's lookup, out of line, so that a wrapper's fast path is a
 * load and a jump, with no frame or saved register for the dlsym call. */
__attribute__((noinline, cold)) static void *cprof__next_lookup(void **cache, const char *name) {
  void *f = dlsym(RTLD_NEXT, name);
  __atomic_store_n(cache, f, __ATOMIC_RELEASE);
  return f;
}

static inline void *cprof__next(void **cache, const char *name) {
  void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  return __builtin_expect(f != NULL, 1) ? f : cprof__next_lookup(cache, name);
}

#endif
