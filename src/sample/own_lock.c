/* cprof's own locks and the fork handlers that hold them across fork()
 * (see own_lock.h). */
#include "sample/own_lock.h"

#include <time.h>

#include "core/clock.h"
#include "core/guard.h"

cprof__own_lock_t cprof__own_locks[CPROF_OWN_LOCKS];
#define FIRST (&cprof__own_locks[0])
#define END (&cprof__own_locks[CPROF_OWN_LOCKS])

static int forking; /* atomic: > 0 while a fork's prepare handler holds the locks */

/* The guard goes up (heap.h) before a lock is taken and comes down after
 * it is let go. */

static void taken(cprof__own_lock_t *l) {
  __atomic_store_n(&l->owner, pthread_self(), __ATOMIC_RELAXED);
  __atomic_store_n(&l->held, 1, __ATOMIC_RELAXED);
}

static void let_go(cprof__own_lock_t *l) {
  __atomic_store_n(&l->held, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&l->m);
}

void cprof__own_lock(cprof__own_lock_t *l) {
  cprof__guard_up();
  pthread_mutex_lock(&l->m);
  taken(l);
}

/* Waits a millisecond at most between looks at `forking`, so that a
 * sampler that started waiting before a fork's prepare handler took the
 * lock drops its sample within a millisecond of it. TSan knows no
 * pthread_mutex_clocklock: there, the realtime clock. */
static int wait_a_little(pthread_mutex_t *m) {
#ifdef __SANITIZE_THREAD__
  clockid_t clock = CLOCK_REALTIME;
#else
  clockid_t clock = CLOCK_MONOTONIC;
#endif
  struct timespec until = cprof__deadline_ms(clock, 1);
#ifdef __SANITIZE_THREAD__
  return pthread_mutex_timedlock(m, &until);
#else
  return pthread_mutex_clocklock(m, clock, &until);
#endif
}

int cprof__own_lock_for_sample(cprof__own_lock_t *l) {
  cprof__guard_up();
  for (;;) {
    if (pthread_mutex_trylock(&l->m) == 0)
      break;
    if (__atomic_load_n(&forking, __ATOMIC_ACQUIRE)) {
      cprof__guard_down();
      return 0;
    }
    if (wait_a_little(&l->m) == 0)
      break;
  }
  taken(l);
  return 1;
}

void cprof__own_unlock(cprof__own_lock_t *l) {
  let_go(l);
  cprof__guard_down();
}

int cprof__own_lock_mine(const cprof__own_lock_t *l) {
  return __atomic_load_n(&l->held, __ATOMIC_RELAXED) &&
         pthread_equal(__atomic_load_n(&l->owner, __ATOMIC_RELAXED), pthread_self());
}

int cprof__own_lock_at(const void *p) {
  const char *c = p;
  return c >= (const char *)FIRST && c < (const char *)END;
}

int cprof__own_locks_held(void) {
  int n = 0;
  for (cprof__own_lock_t *l = FIRST; l < END; l++)
    n += __atomic_load_n(&l->held, __ATOMIC_RELAXED);
  return n;
}

/* ---- fork ----
 *
 * prepare takes every lock in the array's order, with the guard raised
 * until the parent or child handler: another prepare handler that runs
 * after ours on this thread (one registered before ours) and allocates or
 * takes a lock is neither sampled nor profiled, so never waits for a lock
 * this thread holds. The forking flag tells samplers on other threads to
 * drop rather than wait. */
static void fork_prepare(void) {
  cprof__guard_up();
  __atomic_add_fetch(&forking, 1, __ATOMIC_SEQ_CST);
  for (cprof__own_lock_t *l = FIRST; l < END; l++) {
    pthread_mutex_lock(&l->m);
    taken(l);
  }
}

/* In the parent and in the child alike, this thread holds them all: it lets
 * them go, last taken first. The child's copies are consistent, since no
 * other thread was inside one when the process was copied. */
static void fork_release(void) {
  for (cprof__own_lock_t *l = END; l-- > FIRST;)
    let_go(l);
  __atomic_sub_fetch(&forking, 1, __ATOMIC_SEQ_CST);
  cprof__guard_down();
}

/* At load, before the program's main: see own_lock.h for why first. */
__attribute__((constructor(102))) static void register_fork_handlers(void) {
  pthread_atfork(fork_prepare, fork_release, fork_release);
}
