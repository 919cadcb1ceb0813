/* The blocking pthread and semaphore functions, interposed for the block
 * and mutex profiles (contention.h).
 *
 * While both profiles are off (the default, as in Go) each wrapper is one
 * load and a call to the real function. While one is on, a lock is first
 * tried: a lock that is free is taken with no clock read and nothing
 * recorded. Only when the try fails does the wrapper read the clock, wait
 * in the real function, and report the wait:
 * - to the block profile, with the waiter's stack (also for condition
 *   variables, semaphores, pthread_join and spin locks, which have no
 *   holder to blame);
 * - to the mutex profile, through a small table of who waits for which
 *   lock: the holder's unlock reads the waiters' accumulated wait there and
 *   reports it with its own stack (Go 1.22's attribution: the delay is
 *   charged to the code that held the lock).
 *
 * The table has a slot per hash of the lock's address. A slot counts its
 * lock's waiters and the sum of the times from which each waiter's wait has
 * not yet been charged; an unlock at t charges n*t - sum and sets the sum
 * to n*t, and a waiter that gets the lock takes out max(its start, the last
 * charge). So every waiter's wait is charged once, to the holders during
 * it, and the gap between an unlock and the waiter's waking is not. Two
 * locks that share a slot: the second is left out of the mutex profile
 * while the first has waiters (the block profile still has it).
 *
 * cprof's own work (the guard raised) passes straight through. Sanitizer
 * builds leave these out, as they do the malloc wrappers: ASan and TSan
 * interpose the same functions. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>

#include "cprof.h"
#include "sample/contention.h"
#include "sample/heap.h"

#ifndef CPROF_NO_INTERPOSE

/* The real functions. Each pointer starts at a stand-in that looks the
 * function up (dlsym(RTLD_NEXT)) and calls it, so that the wrappers' fast
 * paths hold no call of their own: no frame, no saved register. */
#define REAL_FN(name, ret, params, args)                                                          \
  static ret first_##name params;                                                               \
  static ret(*real_##name) params = first_##name;                                               \
  static ret first_##name params {                                                              \
    ret(*f_) params = (ret(*) params)dlsym(RTLD_NEXT, #name);                                   \
    __atomic_store_n(&real_##name, f_, __ATOMIC_RELAXED);                                       \
    return f_ args;                                                                             \
  }
REAL_FN(pthread_mutex_lock, int, (pthread_mutex_t * m), (m))
REAL_FN(pthread_mutex_trylock, int, (pthread_mutex_t * m), (m))
REAL_FN(pthread_mutex_timedlock, int, (pthread_mutex_t * m, const struct timespec *t), (m, t))
REAL_FN(pthread_mutex_unlock, int, (pthread_mutex_t * m), (m))
REAL_FN(pthread_rwlock_rdlock, int, (pthread_rwlock_t * l), (l))
REAL_FN(pthread_rwlock_wrlock, int, (pthread_rwlock_t * l), (l))
REAL_FN(pthread_rwlock_tryrdlock, int, (pthread_rwlock_t * l), (l))
REAL_FN(pthread_rwlock_trywrlock, int, (pthread_rwlock_t * l), (l))
REAL_FN(pthread_rwlock_timedrdlock, int, (pthread_rwlock_t * l, const struct timespec *t), (l, t))
REAL_FN(pthread_rwlock_timedwrlock, int, (pthread_rwlock_t * l, const struct timespec *t), (l, t))
REAL_FN(pthread_rwlock_unlock, int, (pthread_rwlock_t * l), (l))
REAL_FN(pthread_spin_lock, int, (pthread_spinlock_t * l), (l))
REAL_FN(pthread_spin_trylock, int, (pthread_spinlock_t * l), (l))
REAL_FN(pthread_join, int, (pthread_t t, void **out), (t, out))
REAL_FN(pthread_tryjoin_np, int, (pthread_t t, void **out), (t, out))
REAL_FN(pthread_cond_wait, int, (pthread_cond_t * c, pthread_mutex_t *m), (c, m))
REAL_FN(pthread_cond_timedwait, int,
        (pthread_cond_t * c, pthread_mutex_t *m, const struct timespec *t), (c, m, t))
REAL_FN(sem_wait, int, (sem_t * s), (s))
REAL_FN(sem_trywait, int, (sem_t * s), (s))
REAL_FN(sem_timedwait, int, (sem_t * s, const struct timespec *t), (s, t))
#define NEXT(name) __atomic_load_n(&real_##name, __ATOMIC_RELAXED)
#define RET ((uintptr_t)__builtin_return_address(0))

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- who waits for which lock ---- */

#define SLOTS 4096

typedef struct slot {
  int busy;        /* a spin lock over the rest */
  const void *obj; /* the lock its waiters wait for; NULL: free */
  int64_t n;       /* waiters */
  int64_t sum;     /* over the waiters, the time from which each is not yet charged */
  int64_t charged; /* the last charge's time */
} __attribute__((aligned(64))) slot_t;

static slot_t slots[SLOTS];
static int64_t epoch; /* times are kept from here, so n * t stays small */

static slot_t *slot_of(const void *obj) {
  return &slots[((uintptr_t)obj >> 4) * 0x9e3779b97f4a7c15ull >> (64 - 12)];
}
static void slot_lock(slot_t *s) {
  while (__atomic_exchange_n(&s->busy, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&s->busy, __ATOMIC_RELAXED))
      __builtin_ia32_pause();
}
static void slot_unlock(slot_t *s) { __atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE); }

/* A fork child has only the forking thread: no waiters, and no slot held
 * by a thread that is not there to release it. */
static void forget_waiters(void) { memset(slots, 0, sizeof slots); }
__attribute__((constructor)) static void watch_forks(void) { pthread_atfork(NULL, NULL, forget_waiters); }

static int64_t since_epoch(int64_t t) {
  int64_t e = __atomic_load_n(&epoch, __ATOMIC_RELAXED);
  if (!e) {
    int64_t zero = 0;
    e = t - 1;
    if (!__atomic_compare_exchange_n(&epoch, &zero, e, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      e = zero;
  }
  return t - e;
}

/* A wait in progress. */
typedef struct wait {
  const void *obj; /* tracked for the mutex profile; NULL: not */
  int64_t t0;
} wait_t;

/* Starts timing a wait for obj (NULL for waits with no holder). */
static void wait_begin(wait_t *w, const void *obj) {
  w->t0 = now_ns();
  w->obj = NULL;
  if (!obj || cprof__mutex_fraction() <= 0)
    return;
  slot_t *s = slot_of(obj);
  int64_t t = since_epoch(w->t0);
  slot_lock(s);
  if (!s->obj || s->obj == obj) {
    if (!s->obj)
      *s = (slot_t){.busy = 1, .obj = obj};
    s->n++;
    s->sum += t;
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
    int64_t t0 = since_epoch(w->t0);
    slot_lock(s);
    s->sum -= t0 > s->charged ? t0 : s->charged;
    if (--s->n == 0)
      s->obj = NULL;
    slot_unlock(s);
  }
  cprof__block_event(t1 - w->t0, ret);
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
  if (s->obj == obj && s->n > 0) {
    int64_t t = since_epoch(now_ns());
    d = s->n * t - s->sum;
    s->sum = s->n * t;
    s->charged = t;
  }
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
#define ANY (CPROF_CONTENTION_BLOCK_ON | CPROF_CONTENTION_MUTEX_ON)

/* LOCK: the slow half of every lock with a try-lock: `call` is the real
 * blocking call, `try` the try-lock (0 when taken), obj what waiters wait
 * for (NULL: nothing to charge a holder with), `ret` the caller. */
#define LOCK(call, try, obj, ret)                                                                 \
  do {                                                                                            \
    if (cprof__heap_guarded())                                                                    \
      return call;                                                                                \
    int rc_ = try;                                                                                \
    if (rc_ != EBUSY)                                                                             \
      return rc_;                                                                                 \
    wait_t w_;                                                                                    \
    wait_begin(&w_, obj);                                                                         \
    rc_ = call;                                                                                   \
    wait_end(&w_, ret);                                                                           \
    return rc_;                                                                                   \
  } while (0)

/* UNLOCK: the slow half of an unlock: the real unlock, then the charge
 * reported with the holder's stack, once the lock is free (the unwinding
 * does not lengthen the hold). */
#define UNLOCK(call, obj, ret)                                                                    \
  do {                                                                                            \
    if (cprof__heap_guarded())                                                                    \
      return call;                                                                                \
    int64_t d_ = charge(obj);                                                                     \
    int rc_ = call, saved_ = errno;                                                               \
    if (d_ > 0)                                                                                   \
      cprof__mutex_event(d_, ret);                                                                \
    errno = saved_;                                                                               \
    return rc_;                                                                                   \
  } while (0)

SLOW int mutex_lock(pthread_mutex_t *m, uintptr_t ret) {
  LOCK(NEXT(pthread_mutex_lock)(m), NEXT(pthread_mutex_trylock)(m), m, ret);
}
CPROF_EXTERN int pthread_mutex_lock(pthread_mutex_t *m) {
  FAST(ANY, mutex_lock(m, RET), NEXT(pthread_mutex_lock)(m));
}

SLOW int mutex_timedlock(pthread_mutex_t *m, const struct timespec *t, uintptr_t ret) {
  LOCK(NEXT(pthread_mutex_timedlock)(m, t), NEXT(pthread_mutex_trylock)(m), m, ret);
}
CPROF_EXTERN int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *t) {
  FAST(ANY, mutex_timedlock(m, t, RET), NEXT(pthread_mutex_timedlock)(m, t));
}

SLOW int mutex_unlock(pthread_mutex_t *m, uintptr_t ret) {
  UNLOCK(NEXT(pthread_mutex_unlock)(m), m, ret);
}
CPROF_EXTERN int pthread_mutex_unlock(pthread_mutex_t *m) {
  FAST(CPROF_CONTENTION_MUTEX_ON, mutex_unlock(m, RET), NEXT(pthread_mutex_unlock)(m));
}

SLOW int rwlock_rdlock(pthread_rwlock_t *l, uintptr_t ret) {
  LOCK(NEXT(pthread_rwlock_rdlock)(l), NEXT(pthread_rwlock_tryrdlock)(l), l, ret);
}
CPROF_EXTERN int pthread_rwlock_rdlock(pthread_rwlock_t *l) {
  FAST(ANY, rwlock_rdlock(l, RET), NEXT(pthread_rwlock_rdlock)(l));
}

SLOW int rwlock_wrlock(pthread_rwlock_t *l, uintptr_t ret) {
  LOCK(NEXT(pthread_rwlock_wrlock)(l), NEXT(pthread_rwlock_trywrlock)(l), l, ret);
}
CPROF_EXTERN int pthread_rwlock_wrlock(pthread_rwlock_t *l) {
  FAST(ANY, rwlock_wrlock(l, RET), NEXT(pthread_rwlock_wrlock)(l));
}

SLOW int rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *t, uintptr_t ret) {
  LOCK(NEXT(pthread_rwlock_timedrdlock)(l, t), NEXT(pthread_rwlock_tryrdlock)(l), l, ret);
}
CPROF_EXTERN int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *t) {
  FAST(ANY, rwlock_timedrdlock(l, t, RET), NEXT(pthread_rwlock_timedrdlock)(l, t));
}

SLOW int rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *t, uintptr_t ret) {
  LOCK(NEXT(pthread_rwlock_timedwrlock)(l, t), NEXT(pthread_rwlock_trywrlock)(l), l, ret);
}
CPROF_EXTERN int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *t) {
  FAST(ANY, rwlock_timedwrlock(l, t, RET), NEXT(pthread_rwlock_timedwrlock)(l, t));
}

SLOW int rwlock_unlock(pthread_rwlock_t *l, uintptr_t ret) {
  UNLOCK(NEXT(pthread_rwlock_unlock)(l), l, ret);
}
CPROF_EXTERN int pthread_rwlock_unlock(pthread_rwlock_t *l) {
  FAST(CPROF_CONTENTION_MUTEX_ON, rwlock_unlock(l, RET), NEXT(pthread_rwlock_unlock)(l));
}

SLOW int spin_lock(pthread_spinlock_t *l, uintptr_t ret) {
  LOCK(NEXT(pthread_spin_lock)(l), NEXT(pthread_spin_trylock)(l), NULL, ret);
}
CPROF_EXTERN int pthread_spin_lock(pthread_spinlock_t *l) {
  FAST(CPROF_CONTENTION_BLOCK_ON, spin_lock(l, RET), NEXT(pthread_spin_lock)(l));
}

/* tryjoin says EBUSY while the thread runs: then the join waits. */
SLOW int join(pthread_t t, void **out, uintptr_t ret) {
  LOCK(NEXT(pthread_join)(t, out), NEXT(pthread_tryjoin_np)(t, out), NULL, ret);
}
CPROF_EXTERN int pthread_join(pthread_t t, void **out) {
  FAST(CPROF_CONTENTION_BLOCK_ON, join(t, out, RET), NEXT(pthread_join)(t, out));
}

/* A condition variable always waits: there is nothing to try. */
SLOW int cond_wait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t,
                   uintptr_t ret) {
  if (cprof__heap_guarded())
    return t ? NEXT(pthread_cond_timedwait)(c, m, t) : NEXT(pthread_cond_wait)(c, m);
  wait_t w;
  wait_begin(&w, NULL);
  int rc = t ? NEXT(pthread_cond_timedwait)(c, m, t) : NEXT(pthread_cond_wait)(c, m);
  wait_end(&w, ret);
  return rc;
}
CPROF_EXTERN int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
  FAST(CPROF_CONTENTION_BLOCK_ON, cond_wait(c, m, NULL, RET), NEXT(pthread_cond_wait)(c, m));
}
CPROF_EXTERN int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                        const struct timespec *t) {
  FAST(CPROF_CONTENTION_BLOCK_ON, cond_wait(c, m, t, RET), NEXT(pthread_cond_timedwait)(c, m, t));
}

/* Semaphores say "busy" as -1 with errno EAGAIN; errno is put back when
 * the try fails, so that a successful wait leaves it as it found it. */
SLOW int sem_wait_slow(sem_t *s, const struct timespec *t, uintptr_t ret) {
  if (cprof__heap_guarded())
    return t ? NEXT(sem_timedwait)(s, t) : NEXT(sem_wait)(s);
  int saved = errno;
  if (NEXT(sem_trywait)(s) == 0)
    return 0;
  if (errno != EAGAIN)
    return -1;
  errno = saved;
  wait_t w;
  wait_begin(&w, NULL);
  int rc = t ? NEXT(sem_timedwait)(s, t) : NEXT(sem_wait)(s);
  wait_end(&w, ret);
  return rc;
}
CPROF_EXTERN int sem_wait(sem_t *s) {
  FAST(CPROF_CONTENTION_BLOCK_ON, sem_wait_slow(s, NULL, RET), NEXT(sem_wait)(s));
}
CPROF_EXTERN int sem_timedwait(sem_t *s, const struct timespec *t) {
  FAST(CPROF_CONTENTION_BLOCK_ON, sem_wait_slow(s, t, RET), NEXT(sem_timedwait)(s, t));
}

#endif
