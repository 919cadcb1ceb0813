/* Around every dlclose (interpose/dlclose.c): no walk from a signal reads
 * a module while it is unmapped (see unload.h). */
#include "unwind/unload.h"

#include <time.h>

#include "unwind/modules.h"

cprof__unload_t cprof__unload;

/* One dlclose at a time moves the epoch and waits: a spin lock rather than
 * a mutex, so that a forked child can simply clear it. Held for as long as
 * the walks in flight take, microseconds. */
static int flipping;

void cprof__unload_atfork_child(void) {
  /* The child's only thread is the one that forked: no walk is in flight
   * and no dlclose is half done in it. */
  __atomic_store_n(&cprof__unload.walks[0], 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&cprof__unload.walks[1], 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&cprof__unload.unloading, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&flipping, 0, __ATOMIC_SEQ_CST);
  cprof__modules_atfork_child();
}

static void pause_briefly(void) {
  struct timespec ts = {0, 20 * 1000};
  nanosleep(&ts, NULL);
}

/* Returns once every walk that began before the call has ended. Walks
 * that begin later find `unloading` raised (the caller raised it first)
 * and read only the stack, so they need no waiting for. */
static void wait_for_walks(void) {
  while (__atomic_exchange_n(&flipping, 1, __ATOMIC_ACQUIRE))
    pause_briefly();
  unsigned old = __atomic_fetch_add(&cprof__unload.epoch, 1, __ATOMIC_SEQ_CST) & 1;
  while (__atomic_load_n(&cprof__unload.walks[old], __ATOMIC_SEQ_CST) != 0)
    pause_briefly();
  __atomic_store_n(&flipping, 0, __ATOMIC_RELEASE);
}

void cprof__unload_begin(void) {
  /* What is loaded now, for the samples taken in what this unmaps
   * (modules.h). */
  cprof__modules_unload_begin();
  __atomic_add_fetch(&cprof__unload.unloading, 1, __ATOMIC_SEQ_CST);
  wait_for_walks();
}

void cprof__unload_end(void) {
  /* Whatever went, its rules go with it: pcs of a library loaded at the
   * same address later must not find them. */
  __atomic_add_fetch(&cprof__unload.generation, 1, __ATOMIC_RELEASE);
  cprof__modules_unload_end();
  __atomic_sub_fetch(&cprof__unload.unloading, 1, __ATOMIC_SEQ_CST);
}
