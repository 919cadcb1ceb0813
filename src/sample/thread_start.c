/* pthread_create, interposed, for two things a thread must have before it
 * runs a line of its own:
 * - created while a CPU profile runs, its CPU timer, as Go's threads set
 *   theirs when they start. Without this, the profile's periodic look at
 *   /proc/self/task would miss threads that live less than that.
 * - created by cprof's own work (the HTTP server's threads, the output
 *   collector), the heap sampler's guard: what cprof's threads allocate is
 *   never sampled.
 * And, once it is made, the threadcreate profile counts the creating stack
 * (cprof's own threads are not counted).
 *
 * The wrapper is exported from libcprof, so it comes first in the lookup
 * order both under LD_PRELOAD and when a program links -lcprof; the real
 * function is the next one, found with dlsym(RTLD_NEXT). Otherwise it
 * is two loads and a direct call: nothing is wrapped. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/next.h"
#include "cprof.h"
#include "sample/contention.h"
#include "sample/cpu.h"
#include "sample/heap.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

typedef struct start {
  void *(*fn)(void *);
  void *arg;
  int internal; /* started by cprof: guarded for life */
} start_t;

static create_fn real_create(void) {
  static void *real;
  return (create_fn)cprof__next(&real, "pthread_create");
}

/* The first frame of a thread created during a CPU profile. */
static void *cprof_thread_start(void *p) {
  start_t s = *(start_t *)p;
  if (s.internal)
    cprof__heap_guard_enter();
  free(p);
  cprof__cpu_thread_started();
  return s.fn(s.arg);
}

CPROF_EXTERN int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                                void *(*fn)(void *), void *arg) {
  create_fn real = real_create();
  if (!real)
    return EAGAIN; /* no pthread_create below us: cannot happen with glibc */
  int internal = cprof__heap_guarded();
  if (!internal && !cprof__cpu_running()) {
    int rc = real(thread, attr, fn, arg);
    if (rc == 0)
      cprof__threadcreate_event((uintptr_t)__builtin_return_address(0));
    return rc;
  }
  start_t *s = malloc(sizeof *s);
  if (!s)
    return real(thread, attr, fn, arg);
  s->fn = fn;
  s->arg = arg;
  s->internal = internal;
  int rc = real(thread, attr, cprof_thread_start, s);
  if (rc != 0)
    free(s);
  else if (!internal)
    cprof__threadcreate_event((uintptr_t)__builtin_return_address(0));
  return rc;
}
