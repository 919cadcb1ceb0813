/* The blocking pthread and semaphore functions, interposed for the block
 * and mutex profiles (contention.h).
 *
 * While both profiles are off (the default, as in Go) and no trace
 * records, each wrapper is two loads and a call to the real function (an
 * unlock, one load). While one is on, a lock is first
 * tried: a lock that is free is taken with no clock read and nothing
 * recorded. Only when the try fails does the wrapper read the clock, wait
 * in the real function, and report the wait:
 * - to the block profile, with the waiter's stack (also for condition
 *   variables, semaphores, barriers, joins and spin locks, which have no
 *   holder to blame);
 * - to the mutex profile, through a small table of who waits for which
 *   lock: the holder's unlock reads the waiters' accumulated wait there and
 *   reports it with its own stack (Go 1.22's attribution: the delay is
 *   charged to the code that held the lock);
 * - to the execution trace (sample/trace.h), while one records, whether or
 *   not either profile is on: the wait's start, its length, and the
 *   address of what was waited for (the lock, condition variable or
 *   semaphore; 0 for a join).
 *
 * The table has a slot per hash of the lock's address. A slot counts its
 * lock's waiters and when each one's wait is not yet charged (charge.h);
 * an unlock charges what they have waited since the last charge, and a
 * waiter that gets the lock takes out what was not. So every waiter's wait
 * is charged once, to the holders during it, and the gap between an unlock
 * and the waiter's waking is not. Two locks that share a slot: the second
 * is left out of the mutex profile while the first has waiters (the block
 * profile still has it).
 *
 * What is cprof's passes straight through, unprofiled: every call while
 * the thread's guard is raised (cprof's own work, its threads, the
 * libraries it calls for itself, and a wrapper called again from a signal
 * handler that interrupted one of the wrappers' own critical sections);
 * cprof's own locks, by address (own_lock.h); and calls from libcprof's
 * own code, by return address, in case one was made without the guard.
 * Sanitizer builds leave these out, as they do the malloc wrappers: ASan
 * and TSan interpose the same functions. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>

#include "arch/arch.h"
#include "core/clock.h"
#include "cprof.h"
#include "sample/charge.h"
#include "sample/contention.h"
#include "core/guard.h"
#include "sample/own_lock.h"
#include "sample/trace.h"

#ifndef CPROF_NO_INTERPOSE

/* The real functions. Each pointer starts at a stand-in that looks the
 * function up (dlsym(RTLD_NEXT)) and calls it, so that the wrappers' fast
 * paths hold no call of their own: no frame, no saved register. The
 * library's constructor looks them all up before the program runs (init,
 * below): dlsym may take the loader's lock, which a thread in dlopen holds
 * while a constructor takes the program's locks. The stand-ins serve only
 * calls made before that, by constructors that run before ours. */
#define REAL_FNS(X)                                                                               \
  X(pthread_mutex_lock, int, (pthread_mutex_t * m), (m))                                          \
  X(pthread_mutex_trylock, int, (pthread_mutex_t * m), (m))                                       \
  X(pthread_mutex_timedlock, int, (pthread_mutex_t * m, const struct timespec *t), (m, t))        \
  X(pthread_mutex_clocklock, int, (pthread_mutex_t * m, clockid_t k, const struct timespec *t),   \
    (m, k, t))                                                                                    \
  X(pthread_mutex_unlock, int, (pthread_mutex_t * m), (m))                                        \
  X(pthread_rwlock_rdlock, int, (pthread_rwlock_t * l), (l))                                      \
  X(pthread_rwlock_wrlock, int, (pthread_rwlock_t * l), (l))                                      \
  X(pthread_rwlock_tryrdlock, int, (pthread_rwlock_t * l), (l))                                   \
  X(pthread_rwlock_trywrlock, int, (pthread_rwlock_t * l), (l))                                   \
  X(pthread_rwlock_timedrdlock, int, (pthread_rwlock_t * l, const struct timespec *t), (l, t))    \
  X(pthread_rwlock_timedwrlock, int, (pthread_rwlock_t * l, const struct timespec *t), (l, t))    \
  X(pthread_rwlock_clockrdlock, int, (pthread_rwlock_t * l, clockid_t k, const struct timespec *t), \
    (l, k, t))                                                                                    \
  X(pthread_rwlock_clockwrlock, int, (pthread_rwlock_t * l, clockid_t k, const struct timespec *t), \
    (l, k, t))                                                                                    \
  X(pthread_rwlock_unlock, int, (pthread_rwlock_t * l), (l))                                      \
  X(pthread_spin_lock, int, (pthread_spinlock_t * l), (l))                                        \
  X(pthread_spin_trylock, int, (pthread_spinlock_t * l), (l))                                     \
  X(pthread_join, int, (pthread_t t, void **out), (t, out))                                       \
  X(pthread_tryjoin_np, int, (pthread_t t, void **out), (t, out))                                 \
  X(pthread_timedjoin_np, int, (pthread_t t, void **out, const struct timespec *a), (t, out, a))  \
  X(pthread_clockjoin_np, int, (pthread_t t, void **out, clockid_t k, const struct timespec *a),  \
    (t, out, k, a))                                                                               \
  X(pthread_barrier_wait, int, (pthread_barrier_t * b), (b))                                      \
  X(pthread_cond_wait, int, (pthread_cond_t * c, pthread_mutex_t *m), (c, m))                     \
  X(pthread_cond_timedwait, int,                                                                  \
    (pthread_cond_t * c, pthread_mutex_t *m, const struct timespec *t), (c, m, t))                \
  X(pthread_cond_clockwait, int,                                                                  \
    (pthread_cond_t * c, pthread_mutex_t *m, clockid_t k, const struct timespec *t), (c, m, k, t)) \
  X(sem_wait, int, (sem_t * s), (s))                                                              \
  X(sem_trywait, int, (sem_t * s), (s))                                                           \
  X(sem_timedwait, int, (sem_t * s, const struct timespec *t), (s, t))                            \
  X(sem_clockwait, int, (sem_t * s, clockid_t k, const struct timespec *t), (s, k, t))

#define REAL_FN(name, ret, params, args)                                                          \
  static ret first_##name params;                                                               \
  static ret(*real_##name) params = first_##name;                                               \
  static ret first_##name params {                                                              \
    ret(*f_) params = (ret(*) params)dlsym(RTLD_NEXT, #name);                                   \
    __atomic_store_n(&real_##name, f_, __ATOMIC_RELAXED);                                       \
    return f_ args;                                                                             \
  }
REAL_FNS(REAL_FN)

#define RESOLVE(name, ret, params, args)                                                          \
  {                                                                                               \
    ret(*f_) params = (ret(*) params)dlsym(RTLD_NEXT, #name);                                   \
    if (f_)                                                                                       \
      __atomic_store_n(&real_##name, f_, __ATOMIC_RELAXED);                                       \
  }
#define NEXT(name) __atomic_load_n(&real_##name, __ATOMIC_RELAXED)
#define RET ((uintptr_t)__builtin_return_address(0))

/* On the program's thread: by the system call where it turned its TSC
 * off (core/clock.h). */
static int64_t now_ns(void) { return cprof__now_ns_program(CLOCK_MONOTONIC); }

/* ---- what is cprof's ---- */

/* libcprof.so's mappings, when cprof is a library of its own; empty when
 * it is linked into the program (a static build), where only the guard
 * and the address of its own locks tell. */
static uintptr_t own_lo, own_hi;

/* The guard is up (heap.h) around each critical section of the waiters'
 * table below, so that a signal handler that interrupts one and calls a
 * wrapper passes straight through instead of spinning on a slot its own
 * thread holds. */

/* Whether a call on obj (NULL: none) returning to ret is cprof's. */
static int ours(const void *obj, uintptr_t ret) {
  return cprof__guarded() || (obj && cprof__own_lock_at(obj)) || (ret >= own_lo && ret < own_hi);
}

/* ---- who waits for which lock ---- */

#define SLOTS 4096

typedef struct slot {
  int busy;        /* a spin lock over the rest */
  const void *obj; /* the lock its waiters wait for; NULL: free */
  cprof__charge_t charge;
} __attribute__((aligned(64))) slot_t;

static slot_t slots[SLOTS];

static slot_t *slot_of(const void *obj) {
  return &slots[((uintptr_t)obj >> 4) * 0x9e3779b97f4a7c15ull >> (64 - 12)];
}
static void slot_lock(slot_t *s) {
  cprof__guard_up();
  while (__atomic_exchange_n(&s->busy, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&s->busy, __ATOMIC_RELAXED))
      cprof__arch_pause();
}
static void slot_unlock(slot_t *s) {
  __atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
  cprof__guard_down();
}

/* A fork child has only the forking thread: no waiters. A slot another
 * thread held at the fork is plain memory, never a mutex, and cleared with
 * the rest: nothing in it is of any use to the child. (Taking all 4096 in
 * a prepare handler would cost every fork of the program that much.)
 * Only slots in use are written: a memset of the whole 256 KiB would make
 * every page of it the child's own, 256 KiB of RSS in each worker of a
 * prefork server even when the mutex profile is off and the parent never
 * touched the table (issue 31). Reading a page nobody wrote maps the
 * kernel's zero page, which counts for nobody. */
static void forget_waiters(void) {
  static const slot_t empty;
  for (size_t i = 0; i < SLOTS; i++)
    if (memcmp(&slots[i], &empty, sizeof empty) != 0)
      memset(&slots[i], 0, sizeof slots[i]);
}

__attribute__((constructor)) static void init(void) {
  REAL_FNS(RESOLVE)
  pthread_atfork(NULL, NULL, forget_waiters);
  struct dl_find_object o;
  if (_dl_find_object((void *)init, &o) == 0 && o.dlfo_link_map && o.dlfo_link_map->l_name &&
      o.dlfo_link_map->l_name[0]) {
    own_lo = (uintptr_t)o.dlfo_map_start;
    own_hi = (uintptr_t)o.dlfo_map_end;
  }
}

/* A wait in progress. */
typedef struct wait {
  const void *obj; /* tracked for the mutex profile; NULL: not */
  const void *on;  /* what is waited for, for the trace */
  const char *what; /* its kind, for the trace: "mutex", "cond", ... */
  int64_t t0;
} wait_t;

/* Starts timing a wait of kind `what` for `on`; obj is what a holder is
 * charged for (NULL for waits with no holder). */
static void wait_begin(wait_t *w, const void *obj, const void *on, const char *what) {
  w->t0 = now_ns();
  w->obj = NULL;
  w->on = on;
  w->what = what;
  if (!obj || cprof__mutex_fraction() <= 0)
    return;
  slot_t *s = slot_of(obj);
  slot_lock(s);
  if (!s->obj || s->obj == obj) {
    s->obj = obj;
    cprof__charge_join(&s->charge, w->t0);
    w->obj = obj;
  }
  slot_unlock(s);
}

/* The wait is over: out of the table, and into the block profile. errno
 * is left as the real function left it. */
static void wait_end(wait_t *w, uintptr_t ret) {
  int64_t t1 = now_ns();
  int saved = errno;
  if (w->obj) {
    slot_t *s = slot_of(w->obj);
    slot_lock(s);
    cprof__charge_leave(&s->charge, w->t0);
    if (s->charge.n <= 0)
      s->obj = NULL;
    slot_unlock(s);
  }
  cprof__block_event(t1 - w->t0, ret);
  if (cprof__trace_recording())
    cprof__trace_emit(CPROF__TRACE_LOCK_WAIT, w->t0, (uintptr_t)w->on, (uint64_t)(t1 - w->t0),
                      w->what, NULL);
  errno = saved;
}

/* At the unlock of obj, before the real one: the wait its waiters have
 * accumulated since the last charge, now charged to this unlock. */
static int64_t charge(const void *obj) {
  slot_t *s = slot_of(obj);
  if (__atomic_load_n(&s->obj, __ATOMIC_RELAXED) != obj)
    return 0;
  int64_t d = 0;
  slot_lock(s);
  if (s->obj == obj)
    d = cprof__charge_take(&s->charge, now_ns());
  slot_unlock(s);
  return d;
}

/* ---- the wrappers ----
 *
 * Each is split in two. The exported function is what every call pays:
 * one load of the on/off word, a test, and a jump to the real function,
 * with no frame and no register saved. Anything more, when a profile is
 * on, is in a function of its own (SLOW), out of line, so that its
 * registers and frame are set up only there. */
#define SLOW __attribute__((noinline, cold)) static

/* FAST(bit, slow, real): the exported function's body. */
#define FAST(bit, slow_call, real_call)                                                           \
  do {                                                                                            \
    if (__builtin_expect(cprof__contention_enabled(bit), 0))                                      \
      return slow_call;                                                                           \
    return real_call;                                                                             \
  } while (0)
/* FAST_WAIT: the same for a call that may wait, which a trace also wants
 * to see. */
#define FAST_WAIT(bit, slow_call, real_call)                                                       \
  do {                                                                                             \
    if (__builtin_expect(cprof__contention_enabled(bit) || cprof__trace_recording(), 0))           \
      return slow_call;                                                                            \
    return real_call;                                                                              \
  } while (0)
#define ANY (CPROF_CONTENTION_BLOCK_ON | CPROF_CONTENTION_MUTEX_ON)

/* LOCK: the slow half of every lock with a try-lock: `call` is the real
 * blocking call, `try` the try-lock (0 when taken), obj what waiters wait
 * for (NULL: nothing to charge a holder with), on and what the trace's
 * address and kind, `ret` the caller. */
#define LOCK(call, try, obj, on, what, ret)                                                        \
  do {                                                                                             \
    if (ours(obj, ret))                                                                            \
      return call;                                                                                 \
    int rc_ = try;                                                                                 \
    if (rc_ != EBUSY)                                                                              \
      return rc_;                                                                                  \
    wait_t w_;                                                                                     \
    wait_begin(&w_, obj, on, what);                                                                \
    rc_ = call;                                                                                    \
    wait_end(&w_, ret);                                                                            \
    return rc_;                                                                                    \
  } while (0)

/* TIMED_LOCK: LOCK for a call with a timeout, which goes straight
 * through, unprofiled, unless `valid` (the timeout is one the real
 * function takes: valid_timeout below). */
#define TIMED_LOCK(valid, call, try, obj, on, what, ret)                                           \
  do {                                                                                             \
    if (!(valid))                                                                                  \
      return call;                                                                                 \
    LOCK(call, try, obj, on, what, ret);                                                           \
  } while (0)

/* UNLOCK: the slow half of an unlock: the real unlock, then the charge
 * reported with the holder's stack, once the lock is free (the unwinding
 * does not lengthen the hold). */
#define UNLOCK(call, obj, ret)                                                                    \
  do {                                                                                            \
    if (ours(obj, ret))                                                                           \
      return call;                                                                                \
    int64_t d_ = charge(obj);                                                                     \
    int rc_ = call, saved_ = errno;                                                               \
    if (d_ > 0)                                                                                   \
      cprof__mutex_event(d_, ret);                                                                \
    errno = saved_;                                                                               \
    return rc_;                                                                                   \
  } while (0)

/* Whether a timeout is one the real functions all take. glibc refuses
 * (EINVAL) a clock other than these two and a tv_nsec out of range, and
 * several of its functions (the rwlocks', the semaphores', every clock*
 * one) refuse them before they try the lock, so that a free lock is not
 * taken. A call with any other timeout goes straight through, unprofiled:
 * its answer is the real function's, and it does not wait. */
static int valid_clock(clockid_t k) { return k == CLOCK_REALTIME || k == CLOCK_MONOTONIC; }
static int valid_timeout(clockid_t k, const struct timespec *t) {
  return valid_clock(k) && t && t->tv_nsec >= 0 && t->tv_nsec < 1000000000;
}

SLOW int mutex_lock(pthread_mutex_t *m, uintptr_t ret) {
  LOCK(NEXT(pthread_mutex_lock)(m), NEXT(pthread_mutex_trylock)(m), m, m, "mutex", ret);
}
CPROF_EXTERN int pthread_mutex_lock(pthread_mutex_t *m) {
  FAST_WAIT(ANY, mutex_lock(m, RET), NEXT(pthread_mutex_lock)(m));
}

SLOW int mutex_timedlock(pthread_mutex_t *m, const struct timespec *t, uintptr_t ret) {
  TIMED_LOCK(valid_timeout(CLOCK_REALTIME, t), NEXT(pthread_mutex_timedlock)(m, t),
             NEXT(pthread_mutex_trylock)(m), m, m, "mutex", ret);
}
CPROF_EXTERN int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *t) {
  FAST_WAIT(ANY, mutex_timedlock(m, t, RET), NEXT(pthread_mutex_timedlock)(m, t));
}

/* The clock* calls (glibc 2.30) are the timed ones on a clock of the
 * caller's choosing: what C++'s try_lock_for, try_lock_until and wait_for
 * compile to, on CLOCK_MONOTONIC (std::chrono::steady_clock). The same
 * waits, profiled the same way. */
SLOW int mutex_clocklock(pthread_mutex_t *m, clockid_t k, const struct timespec *t, uintptr_t ret) {
  TIMED_LOCK(valid_timeout(k, t), NEXT(pthread_mutex_clocklock)(m, k, t),
             NEXT(pthread_mutex_trylock)(m), m, m, "mutex", ret);
}
CPROF_EXTERN int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t k,
                                         const struct timespec *t) {
  FAST_WAIT(ANY, mutex_clocklock(m, k, t, RET), NEXT(pthread_mutex_clocklock)(m, k, t));
}

SLOW int mutex_unlock(pthread_mutex_t *m, uintptr_t ret) {
  UNLOCK(NEXT(pthread_mutex_unlock)(m), m, ret);
}
CPROF_EXTERN int pthread_mutex_unlock(pthread_mutex_t *m) {
  FAST(CPROF_CONTENTION_MUTEX_ON, mutex_unlock(m, RET), NEXT(pthread_mutex_unlock)(m));
}

SLOW int rwlock_rdlock(pthread_rwlock_t *l, uintptr_t ret) {
  LOCK(NEXT(pthread_rwlock_rdlock)(l), NEXT(pthread_rwlock_tryrdlock)(l), l, l, "rwlock", ret);
}
CPROF_EXTERN int pthread_rwlock_rdlock(pthread_rwlock_t *l) {
  FAST_WAIT(ANY, rwlock_rdlock(l, RET), NEXT(pthread_rwlock_rdlock)(l));
}

SLOW int rwlock_wrlock(pthread_rwlock_t *l, uintptr_t ret) {
  LOCK(NEXT(pthread_rwlock_wrlock)(l), NEXT(pthread_rwlock_trywrlock)(l), l, l, "rwlock", ret);
}
CPROF_EXTERN int pthread_rwlock_wrlock(pthread_rwlock_t *l) {
  FAST_WAIT(ANY, rwlock_wrlock(l, RET), NEXT(pthread_rwlock_wrlock)(l));
}

SLOW int rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *t, uintptr_t ret) {
  TIMED_LOCK(valid_timeout(CLOCK_REALTIME, t), NEXT(pthread_rwlock_timedrdlock)(l, t),
             NEXT(pthread_rwlock_tryrdlock)(l), l, l, "rwlock", ret);
}
CPROF_EXTERN int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *t) {
  FAST_WAIT(ANY, rwlock_timedrdlock(l, t, RET), NEXT(pthread_rwlock_timedrdlock)(l, t));
}

SLOW int rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *t, uintptr_t ret) {
  TIMED_LOCK(valid_timeout(CLOCK_REALTIME, t), NEXT(pthread_rwlock_timedwrlock)(l, t),
             NEXT(pthread_rwlock_trywrlock)(l), l, l, "rwlock", ret);
}
CPROF_EXTERN int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *t) {
  FAST_WAIT(ANY, rwlock_timedwrlock(l, t, RET), NEXT(pthread_rwlock_timedwrlock)(l, t));
}

SLOW int rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t k, const struct timespec *t,
                            uintptr_t ret) {
  TIMED_LOCK(valid_timeout(k, t), NEXT(pthread_rwlock_clockrdlock)(l, k, t),
             NEXT(pthread_rwlock_tryrdlock)(l), l, l, "rwlock", ret);
}
CPROF_EXTERN int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t k,
                                            const struct timespec *t) {
  FAST_WAIT(ANY, rwlock_clockrdlock(l, k, t, RET), NEXT(pthread_rwlock_clockrdlock)(l, k, t));
}

SLOW int rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t k, const struct timespec *t,
                            uintptr_t ret) {
  TIMED_LOCK(valid_timeout(k, t), NEXT(pthread_rwlock_clockwrlock)(l, k, t),
             NEXT(pthread_rwlock_trywrlock)(l), l, l, "rwlock", ret);
}
CPROF_EXTERN int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t k,
                                            const struct timespec *t) {
  FAST_WAIT(ANY, rwlock_clockwrlock(l, k, t, RET), NEXT(pthread_rwlock_clockwrlock)(l, k, t));
}

SLOW int rwlock_unlock(pthread_rwlock_t *l, uintptr_t ret) {
  UNLOCK(NEXT(pthread_rwlock_unlock)(l), l, ret);
}
CPROF_EXTERN int pthread_rwlock_unlock(pthread_rwlock_t *l) {
  FAST(CPROF_CONTENTION_MUTEX_ON, rwlock_unlock(l, RET), NEXT(pthread_rwlock_unlock)(l));
}

SLOW int spin_lock(pthread_spinlock_t *l, uintptr_t ret) {
  LOCK(NEXT(pthread_spin_lock)(l), NEXT(pthread_spin_trylock)(l), NULL, (const void *)l, "spin",
       ret);
}
CPROF_EXTERN int pthread_spin_lock(pthread_spinlock_t *l) {
  FAST_WAIT(CPROF_CONTENTION_BLOCK_ON, spin_lock(l, RET), NEXT(pthread_spin_lock)(l));
}

/* tryjoin says EBUSY while the thread runs: then the join waits. glibc
 * looks at a timed join's timeout only once it waits, so only the clock
 * of clockjoin is checked first. */
SLOW int join(pthread_t t, void **out, uintptr_t ret) {
  LOCK(NEXT(pthread_join)(t, out), NEXT(pthread_tryjoin_np)(t, out), NULL, NULL, "join", ret);
}
CPROF_EXTERN int pthread_join(pthread_t t, void **out) {
  FAST_WAIT(CPROF_CONTENTION_BLOCK_ON, join(t, out, RET), NEXT(pthread_join)(t, out));
}

SLOW int timedjoin(pthread_t t, void **out, const struct timespec *a, uintptr_t ret) {
  LOCK(NEXT(pthread_timedjoin_np)(t, out, a), NEXT(pthread_tryjoin_np)(t, out), NULL, NULL, "join",
       ret);
}
CPROF_EXTERN int pthread_timedjoin_np(pthread_t t, void **out, const struct timespec *a) {
  FAST_WAIT(CPROF_CONTENTION_BLOCK_ON, timedjoin(t, out, a, RET),
            NEXT(pthread_timedjoin_np)(t, out, a));
}

SLOW int clockjoin(pthread_t t, void **out, clockid_t k, const struct timespec *a, uintptr_t ret) {
  TIMED_LOCK(valid_clock(k), NEXT(pthread_clockjoin_np)(t, out, k, a),
             NEXT(pthread_tryjoin_np)(t, out), NULL, NULL, "join", ret);
}
CPROF_EXTERN int pthread_clockjoin_np(pthread_t t, void **out, clockid_t k,
                                      const struct timespec *a) {
  FAST_WAIT(CPROF_CONTENTION_BLOCK_ON, clockjoin(t, out, k, a, RET),
            NEXT(pthread_clockjoin_np)(t, out, k, a));
}

/* How a condition variable or semaphore call waits: for ever, until a
 * CLOCK_REALTIME time, or until a time on a clock of its own. */
enum { UNTIMED, TIMED, CLOCKED };

static int cond_real(pthread_cond_t *c, pthread_mutex_t *m, int how, clockid_t k,
                     const struct timespec *t) {
  return how == UNTIMED ? NEXT(pthread_cond_wait)(c, m)
         : how == TIMED ? NEXT(pthread_cond_timedwait)(c, m, t)
                        : NEXT(pthread_cond_clockwait)(c, m, k, t);
}

/* A condition variable always waits: there is nothing to try. */
SLOW int cond_wait(pthread_cond_t *c, pthread_mutex_t *m, int how, clockid_t k,
                   const struct timespec *t, uintptr_t ret) {
  if (ours(m, ret) || (how != UNTIMED && !valid_timeout(k, t)))
    return cond_real(c, m, how, k, t);
  wait_t w;
  wait_begin(&w, NULL, c, "cond");
  int rc = cond_real(c, m, how, k, t);
  wait_end(&w, ret);
  return rc;
}
CPROF_EXTERN int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
  FAST_WAIT(CPROF_CONTENTION_BLOCK_ON, cond_wait(c, m, UNTIMED, CLOCK_REALTIME, NULL, RET),
            NEXT(pthread_cond_wait)(c, m));
}
CPROF_EXTERN int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                        const struct timespec *t) {
  FAST_WAIT(CPROF_CONTENTION_BLOCK_ON, cond_wait(c, m, TIMED, CLOCK_REALTIME, t, RET),
            NEXT(pthread_cond_timedwait)(c, m, t));
}
CPROF_EXTERN int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t k,
                                        const struct timespec *t) {
  FAST_WAIT(CPROF_CONTENTION_BLOCK_ON, cond_wait(c, m, CLOCKED, k, t, RET),
            NEXT(pthread_cond_clockwait)(c, m, k, t));
}

/* A barrier has nothing to try either. The thread whose arrival completes
 * the round does not wait: glibc and musl answer it, and only it,
 * PTHREAD_BARRIER_SERIAL_THREAD, and its call is left out, as Go leaves out
 * a WaitGroup.Wait that finds the count at 0. The others' waits are block
 * events; a barrier has no holder to charge in the mutex profile. */
SLOW int barrier_wait(pthread_barrier_t *b, uintptr_t ret) {
  if (ours(NULL, ret))
    return NEXT(pthread_barrier_wait)(b);
  wait_t w;
  wait_begin(&w, NULL, b, "barrier");
  int rc = NEXT(pthread_barrier_wait)(b);
  if (rc != PTHREAD_BARRIER_SERIAL_THREAD)
    wait_end(&w, ret);
  return rc;
}
CPROF_EXTERN int pthread_barrier_wait(pthread_barrier_t *b) {
  FAST_WAIT(CPROF_CONTENTION_BLOCK_ON, barrier_wait(b, RET), NEXT(pthread_barrier_wait)(b));
}

static int sem_real(sem_t *s, int how, clockid_t k, const struct timespec *t) {
  return how == UNTIMED ? NEXT(sem_wait)(s)
         : how == TIMED ? NEXT(sem_timedwait)(s, t)
                        : NEXT(sem_clockwait)(s, k, t);
}

/* Semaphores say "busy" as -1 with errno EAGAIN; errno is put back when
 * the try fails, so that a successful wait leaves it as it found it.
 * sem_wait and sem_timedwait are cancellation points that glibc tests
 * before it takes a posted semaphore (sem_clockwait is not tested there),
 * and sem_trywait is none: the wrapper tests first as they do, so that a
 * thread with a cancel pending is cancelled, not handed the semaphore. */
SLOW int sem_wait_slow(sem_t *s, int how, clockid_t k, const struct timespec *t, uintptr_t ret) {
  if (ours(NULL, ret) || (how != UNTIMED && !valid_timeout(k, t)))
    return sem_real(s, how, k, t);
  if (how != CLOCKED)
    pthread_testcancel();
  int saved = errno;
  if (NEXT(sem_trywait)(s) == 0)
    return 0;
  if (errno != EAGAIN)
    return -1;
  errno = saved;
  wait_t w;
  wait_begin(&w, NULL, s, "sem");
  int rc = sem_real(s, how, k, t);
  wait_end(&w, ret);
  return rc;
}
CPROF_EXTERN int sem_wait(sem_t *s) {
  FAST_WAIT(CPROF_CONTENTION_BLOCK_ON, sem_wait_slow(s, UNTIMED, CLOCK_REALTIME, NULL, RET),
            NEXT(sem_wait)(s));
}
CPROF_EXTERN int sem_timedwait(sem_t *s, const struct timespec *t) {
  FAST_WAIT(CPROF_CONTENTION_BLOCK_ON, sem_wait_slow(s, TIMED, CLOCK_REALTIME, t, RET),
            NEXT(sem_timedwait)(s, t));
}
CPROF_EXTERN int sem_clockwait(sem_t *s, clockid_t k, const struct timespec *t) {
  FAST_WAIT(CPROF_CONTENTION_BLOCK_ON, sem_wait_slow(s, CLOCKED, k, t, RET),
            NEXT(sem_clockwait)(s, k, t));
}

#endif
