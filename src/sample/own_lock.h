/* cprof's own locks: the ones over the samplers' tables (heap.c,
 * contention.c), taken on the program's threads from inside its malloc,
 * free and lock calls.
 *
 * Such a thread may hold any number of the program's locks, and another
 * thread may be in fork() running the program's fork handlers, which take
 * the program's locks too. These rules keep cprof out of every cycle:
 *
 * - While one of them is held nothing waits for anything else: no malloc of
 *   the program's, no lock of the program's, no other lock of ours (their
 *   critical sections never nest), and the guard (heap.h) is raised, so the
 *   lock wrappers pass every call through and nothing is sampled.
 * - fork: one pthread_atfork prepare handler takes every one of them, in
 *   the order they lie in memory, and the parent and child handlers release
 *   them, so the child inherits consistent tables whose locks its only
 *   thread holds: released, never re-initialised. The handlers are
 *   registered when the library is loaded, before the program can register
 *   its own, and prepare handlers run in the reverse order of registration:
 *   ours run after the program's have taken the program's locks, the order
 *   in which the samplers take them (the program's, then ours).
 * - A handler registered before ours (a library loaded before libcprof) runs
 *   after ours and may wait for a lock of the program's whose holder waits
 *   for one of ours. So a sampler that finds one of ours held while a fork is
 *   being prepared drops its sample instead of waiting
 *   (cprof__own_lock_for_sample). Only a free of a sampled block at a page's
 *   start cannot drop what it does, and waits (doc/internals.md).
 *
 * The locks are one array, cprof__own_locks, indexed by the enum below, in
 * the order fork takes them: the fork handlers find them all there, and
 * the lock wrappers (locks.c) tell them from the program's by address
 * alone, guard or not. A lock that keeps these rules joins it by a name in
 * the enum. */
#ifndef CPROF_SAMPLE_OWN_LOCK_H
#define CPROF_SAMPLE_OWN_LOCK_H

#include <pthread.h>

typedef struct cprof__own_lock {
  pthread_mutex_t m;
  pthread_t owner; /* atomic; valid while held: who holds it */
  int held;        /* atomic */
} __attribute__((aligned(64))) cprof__own_lock_t;

enum cprof__own_lock_id {
  CPROF_OWN_LOCK_HEAP,              /* heap.c's tables */
  CPROF_OWN_LOCK_BLOCK,             /* contention.c's, one per profile */
  CPROF_OWN_LOCK_MUTEX,
  CPROF_OWN_LOCK_THREADCREATE,
  CPROF_OWN_LOCKS
};
/* Zero-initialised: default mutexes, free. */
extern cprof__own_lock_t cprof__own_locks[CPROF_OWN_LOCKS];

/* Takes l, waiting as long as it takes. Raises the guard until the unlock. */
void cprof__own_lock(cprof__own_lock_t *l);
/* Takes l for a sample that may be dropped: returns 0, without the lock or
 * the guard, when l is held while a fork is being prepared. */
int cprof__own_lock_for_sample(cprof__own_lock_t *l);
void cprof__own_unlock(cprof__own_lock_t *l);
/* Whether the calling thread holds l (a fork prepare handler that runs
 * after ours, on the forking thread, while ours holds every lock). */
int cprof__own_lock_mine(const cprof__own_lock_t *l);

/* Whether p lies in one of cprof's own locks. */
int cprof__own_lock_at(const void *p);

/* How many of cprof's own locks are held, by anyone: a forked child's tests
 * expect 0. */
int cprof__own_locks_held(void);

#endif
