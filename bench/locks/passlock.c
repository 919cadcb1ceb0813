/* libpasslock.so: the least an LD_PRELOAD lock interposer can cost.
 *
 * pthread_mutex_lock, pthread_mutex_trylock and pthread_mutex_unlock,
 * forwarded to the next definition in the lookup order (glibc's, found
 * with dlsym(RTLD_NEXT)) through a function pointer, as cprof's wrappers
 * do, and nothing else: no try-lock first, no clock, no profile. The lock
 * overhead benchmark's "passthrough" variant runs lockloop under it, so
 * the cost of interposing at all is told apart from the cost of cprof's
 * wrappers. Until dlsym has answered, calls go to glibc's __pthread_*
 * aliases. */
#include <dlfcn.h>
#include <pthread.h>

extern int __pthread_mutex_lock(pthread_mutex_t *);
extern int __pthread_mutex_trylock(pthread_mutex_t *);
extern int __pthread_mutex_unlock(pthread_mutex_t *);

typedef int (*mutex_fn)(pthread_mutex_t *);
static mutex_fn next_lock, next_trylock, next_unlock;

__attribute__((constructor)) static void resolve(void) {
  next_lock = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_lock");
  next_trylock = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_trylock");
  next_unlock = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_unlock");
}

int pthread_mutex_lock(pthread_mutex_t *m) {
  mutex_fn f = next_lock;
  return f ? f(m) : __pthread_mutex_lock(m);
}

int pthread_mutex_trylock(pthread_mutex_t *m) {
  mutex_fn f = next_trylock;
  return f ? f(m) : __pthread_mutex_trylock(m);
}

int pthread_mutex_unlock(pthread_mutex_t *m) {
  mutex_fn f = next_unlock;
  return f ? f(m) : __pthread_mutex_unlock(m);
}
