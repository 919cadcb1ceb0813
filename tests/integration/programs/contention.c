/* A program whose lock contention is known, for tests/integration/locks.sh.
 *
 *   contention [ROUND_MS]   four threads, idle until SIGUSR1 starts a round
 *                           of ROUND_MS milliseconds (default 1000):
 *     hold_lock     locks a pthread mutex, holds it HOLD_MS (2 ms), unlocks,
 *                   and waits for wait_lock to have had its turn
 *     wait_lock     once hold_lock holds the mutex, locks it (and so waits
 *                   for the rest of the hold), timing the wait with
 *                   clock_gettime, then unlocks
 *     cond_waiter   waits on a condition variable that cond_signaller
 *                   signals COND_MS (5 ms) later, timing each wait
 *   At the end of the round it prints
 *     round N waits=W wait_ns=X max_wait_ns=M wait_sq_us2=S cond_waits=C cond_ns=Y
 *   W and X are the mutex waits and their total as wait_lock measured them
 *   (the truth for the block profile's wait_lock and for the mutex
 *   profile's hold_lock, which caused them); M is the longest of them and
 *   S the sum of their squares in us^2, on which a sampled estimate's
 *   variance depends (waits are 2 ms, but a loaded machine stretches a few
 *   to tens of ms); C and Y are the same as W and X for cond_waiter. Before the first round, main calls spawn_worker
 *   SPAWNED (5) times, each a pthread_create of a thread that exits at
 *   once. Prints "ready" once all is in place; runs until killed.
 *   Between rounds the threads poll with nanosleep, which cprof does not
 *   interpose: nothing outside a round blocks in a lock.
 *
 *   contention_linked ROUND_MS --api   the same, linked with cprof, which
 *                   it turns on through the C API before "ready": block
 *                   rate 1 ns, mutex fraction 1. It prints what the calls
 *                   returned, "api: rate 0 7 7 fraction 0 9 9" if each
 *                   returned the previous setting and -1 changed nothing.
 *
 *   contention --heavy      two threads, 10^7 lock/unlock pairs in total
 *                   around a shared counter, then every interposed call's
 *                   results in cases with known answers (error-checking
 *                   and recursive mutexes, timeouts, EINTR, join values):
 *                   its output is the same with and without cprof.
 *
 * Functions are noinline and the program is built with
 * -fno-optimize-sibling-calls so that each is a frame of its own. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef LINK_CPROF
#include <cprof.h>
#endif

#define NOINLINE __attribute__((noinline))
#define HOLD_MS 2
#define COND_MS 5
#define SPAWNED 5

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void sleep_ns(long ns) {
  struct timespec t = {ns / 1000000000, ns % 1000000000};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

/* Polls (nanosleep, not a lock: it must not show in the profiles) until
 * *v differs from old; returns the new value. */
static long await_change(atomic_long *v, long old) {
  long x;
  while ((x = atomic_load(v)) == old)
    sleep_ns(20000);
  return x;
}

static void die(const char *what, int err) {
  fprintf(stderr, "contention: %s: %s\n", what, strerror(err));
  exit(2);
}

/* ---- the contention rounds ---- */

static atomic_long round_no;    /* main bumps it to start a round */
static int64_t round_deadline;  /* written before round_no is bumped */
static atomic_long threads_done;

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static atomic_long held_gen;    /* hold_lock's iteration, or -1: round over */
static atomic_long waited_gen;  /* wait_lock's last iteration */
static atomic_long waits, wait_ns, max_wait_ns, wait_sq_us2;

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int cond_flag;           /* 1: signalled, 2: round over; under cm */
static atomic_long cond_taken;  /* cond_waiter's count of consumed signals */
static atomic_long cond_waits, cond_ns;

NOINLINE void hold_lock(void) {
  long gen = atomic_load(&held_gen);
  while (now_ns() < round_deadline) {
    pthread_mutex_lock(&m);
    atomic_store(&held_gen, ++gen);
    sleep_ns(HOLD_MS * 1000000L);
    pthread_mutex_unlock(&m);
    while (atomic_load(&waited_gen) != gen)
      sleep_ns(20000);
  }
  atomic_store(&held_gen, -1);
}

NOINLINE void wait_lock(void) {
  long seen = 0; /* main set held_gen to 0; hold_lock may be past it already */
  for (;;) {
    seen = await_change(&held_gen, seen);
    if (seen < 0)
      break;
    int64_t t0 = now_ns();
    pthread_mutex_lock(&m);
    int64_t t1 = now_ns();
    pthread_mutex_unlock(&m);
    atomic_fetch_add(&waits, 1);
    atomic_fetch_add(&wait_ns, t1 - t0);
    if (t1 - t0 > atomic_load(&max_wait_ns)) /* only this thread writes it */
      atomic_store(&max_wait_ns, t1 - t0);
    atomic_fetch_add(&wait_sq_us2, ((t1 - t0) / 1000) * ((t1 - t0) / 1000));
    atomic_store(&waited_gen, seen);
  }
}

NOINLINE void cond_waiter(void) {
  for (;;) {
    pthread_mutex_lock(&cm);
    int64_t t0 = now_ns();
    while (cond_flag == 0)
      pthread_cond_wait(&cv, &cm);
    int64_t t1 = now_ns();
    int flag = cond_flag;
    cond_flag = 0;
    pthread_mutex_unlock(&cm);
    atomic_fetch_add(&cond_waits, 1);
    atomic_fetch_add(&cond_ns, t1 - t0);
    atomic_fetch_add(&cond_taken, 1);
    if (flag == 2)
      break;
  }
}

NOINLINE void cond_signaller(void) {
  int more;
  do {
    long taken = atomic_load(&cond_taken);
    sleep_ns(COND_MS * 1000000L);
    more = now_ns() < round_deadline;
    pthread_mutex_lock(&cm);
    cond_flag = more ? 1 : 2;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&cm);
    await_change(&cond_taken, taken);
  } while (more);
}

static void *round_thread(void *arg) {
  void (*work)(void) = (void (*)(void))arg;
  long seen = 0;
  for (;;) {
    seen = await_change(&round_no, seen);
    work();
    atomic_fetch_add(&threads_done, 1);
  }
  return NULL;
}

static void *short_job(void *arg) { return arg; }

NOINLINE void spawn_worker(void) {
  pthread_attr_t a;
  pthread_t t;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  int err = pthread_create(&t, &a, short_job, NULL);
  if (err)
    die("pthread_create", err);
  pthread_attr_destroy(&a);
}

static volatile sig_atomic_t go;
static void on_usr1(int sig) { go = 1; }

_Noreturn static void contention(long round_ms) {
  static void (*const work[])(void) = {hold_lock, wait_lock, cond_waiter, cond_signaller};
  const long nwork = sizeof work / sizeof work[0];
  struct sigaction sa = {.sa_handler = on_usr1};
  sigaction(SIGUSR1, &sa, NULL);
  for (long i = 0; i < nwork; i++) {
    pthread_t t;
    int err = pthread_create(&t, NULL, round_thread, (void *)work[i]);
    if (err)
      die("pthread_create", err);
  }
  for (int i = 0; i < SPAWNED; i++)
    spawn_worker();
  puts("ready");
  fflush(stdout);
  for (long n = 1;; n++) {
    while (!go)
      sleep_ns(5000000);
    go = 0;
    atomic_store(&waits, 0);
    atomic_store(&wait_ns, 0);
    atomic_store(&max_wait_ns, 0);
    atomic_store(&wait_sq_us2, 0);
    atomic_store(&cond_waits, 0);
    atomic_store(&cond_ns, 0);
    atomic_store(&threads_done, 0);
    atomic_store(&held_gen, 0);
    atomic_store(&waited_gen, 0);
    round_deadline = now_ns() + round_ms * 1000000L;
    atomic_store(&round_no, n);
    while (atomic_load(&threads_done) < nwork)
      sleep_ns(1000000);
    printf("round %ld waits=%ld wait_ns=%ld max_wait_ns=%ld wait_sq_us2=%ld cond_waits=%ld "
           "cond_ns=%ld\n",
           n, atomic_load(&waits), atomic_load(&wait_ns), atomic_load(&max_wait_ns),
           atomic_load(&wait_sq_us2), atomic_load(&cond_waits), atomic_load(&cond_ns));
    fflush(stdout);
  }
}

/* ---- --heavy: the same answers with and without cprof ---- */

#define PAIRS 10000000L
static pthread_mutex_t hm = PTHREAD_MUTEX_INITIALIZER;
static long counter;

NOINLINE void *heavy_worker(void *arg) {
  long n = (long)(intptr_t)arg;
  for (long i = 0; i < n; i++) {
    pthread_mutex_lock(&hm);
    counter += i & 7;
    pthread_mutex_unlock(&hm);
  }
  return NULL;
}

static const char *rc(int err) {
  static char buf[32];
  if (err == 0)
    return "0";
  const char *name = strerrorname_np(err);
  if (name)
    return name;
  snprintf(buf, sizeof buf, "error %d", err);
  return buf;
}

/* For calls that return -1 and set errno. */
static const char *rc_errno(int ret) { return rc(ret == 0 ? 0 : errno); }

static struct timespec in_ms(long ms) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_nsec += ms * 1000000L;
  t.tv_sec += t.tv_nsec / 1000000000;
  t.tv_nsec %= 1000000000;
  return t;
}

/* A thread that takes a lock, says so, and keeps it until told. */
struct holder {
  int kind; /* 0: mutex, 1: rwlock for reading, 2: rwlock for writing */
  pthread_mutex_t *mx;
  pthread_rwlock_t *rw;
  sem_t locked, release;
};

static void *hold_until_told(void *arg) {
  struct holder *h = arg;
  if (h->kind == 0)
    pthread_mutex_lock(h->mx);
  else if (h->kind == 1)
    pthread_rwlock_rdlock(h->rw);
  else
    pthread_rwlock_wrlock(h->rw);
  sem_post(&h->locked);
  while (sem_wait(&h->release) != 0) {
  }
  if (h->kind == 0)
    pthread_mutex_unlock(h->mx);
  else
    pthread_rwlock_unlock(h->rw);
  return (void *)(intptr_t)(40 + h->kind);
}

static pthread_t start_holder(struct holder *h) {
  pthread_t t;
  sem_init(&h->locked, 0, 0);
  sem_init(&h->release, 0, 0);
  pthread_create(&t, NULL, hold_until_told, h);
  while (sem_wait(&h->locked) != 0) {
  }
  return t;
}

static void end_holder(pthread_t t, struct holder *h) {
  void *ret;
  sem_post(&h->release);
  int err = pthread_join(t, &ret);
  printf("join holder %d: %s, returned %ld\n", h->kind, rc(err), (long)(intptr_t)ret);
}

static sem_t never;
static void on_usr2(int sig) {}
static void *sem_waiter(void *arg) {
  int r = sem_wait(&never);
  return (void *)(intptr_t)(r == 0 ? 0 : errno);
}

static void semantics(void) {
  pthread_mutexattr_t a;
  pthread_mutex_t ec, rec;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_init(&ec, &a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&rec, &a);
  printf("errorcheck lock: %s\n", rc(pthread_mutex_lock(&ec)));
  printf("errorcheck relock: %s\n", rc(pthread_mutex_lock(&ec)));
  printf("errorcheck unlock: %s\n", rc(pthread_mutex_unlock(&ec)));
  printf("errorcheck unlock again: %s\n", rc(pthread_mutex_unlock(&ec)));
  printf("recursive lock, lock: %s", rc(pthread_mutex_lock(&rec)));
  printf(" %s\n", rc(pthread_mutex_lock(&rec)));
  printf("recursive unlock, unlock: %s", rc(pthread_mutex_unlock(&rec)));
  printf(" %s\n", rc(pthread_mutex_unlock(&rec)));

  /* Timeouts on locks another thread holds. */
  pthread_mutex_t mx = PTHREAD_MUTEX_INITIALIZER;
  pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
  struct holder h = {.kind = 0, .mx = &mx};
  pthread_t t = start_holder(&h);
  struct timespec ts = in_ms(20);
  printf("timedlock on a held mutex: %s\n", rc(pthread_mutex_timedlock(&mx, &ts)));
  printf("trylock on a held mutex: %s\n", rc(pthread_mutex_trylock(&mx)));
  end_holder(t, &h);
  ts = in_ms(20);
  printf("timedlock on a free mutex: %s\n", rc(pthread_mutex_timedlock(&mx, &ts)));
  printf("unlock: %s\n", rc(pthread_mutex_unlock(&mx)));

  h = (struct holder){.kind = 1, .rw = &rw};
  t = start_holder(&h);
  printf("rdlock beside a reader: %s\n", rc(pthread_rwlock_rdlock(&rw)));
  printf("rwlock unlock: %s\n", rc(pthread_rwlock_unlock(&rw)));
  ts = in_ms(20);
  printf("timedwrlock beside a reader: %s\n", rc(pthread_rwlock_timedwrlock(&rw, &ts)));
  end_holder(t, &h);
  h = (struct holder){.kind = 2, .rw = &rw};
  t = start_holder(&h);
  ts = in_ms(20);
  printf("timedrdlock beside a writer: %s\n", rc(pthread_rwlock_timedrdlock(&rw, &ts)));
  ts = in_ms(20);
  printf("timedwrlock beside a writer: %s\n", rc(pthread_rwlock_timedwrlock(&rw, &ts)));
  end_holder(t, &h);
  ts = in_ms(20);
  printf("timedwrlock free: %s\n", rc(pthread_rwlock_timedwrlock(&rw, &ts)));
  printf("rwlock unlock: %s\n", rc(pthread_rwlock_unlock(&rw)));
  ts = in_ms(20);
  printf("timedrdlock free: %s\n", rc(pthread_rwlock_timedrdlock(&rw, &ts)));
  printf("rwlock unlock: %s\n", rc(pthread_rwlock_unlock(&rw)));

  /* Condition variables: a timeout returns with the mutex held again. */
  pthread_mutex_t cmx = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  pthread_mutex_lock(&cmx);
  ts = in_ms(20);
  printf("cond_timedwait with nobody signalling: %s\n", rc(pthread_cond_timedwait(&c, &cmx, &ts)));
  printf("trylock of its mutex after the timeout: %s\n", rc(pthread_mutex_trylock(&cmx)));
  pthread_mutex_unlock(&cmx);

  /* Semaphores: -1 and errno, EINTR not retried. */
  sem_t s;
  sem_init(&s, 0, 0);
  ts = in_ms(20);
  printf("sem_timedwait on 0: %s\n", rc_errno(sem_timedwait(&s, &ts)));
  sem_post(&s);
  sem_post(&s);
  printf("sem_wait on 2: %s\n", rc_errno(sem_wait(&s)));
  ts = in_ms(20);
  printf("sem_timedwait on 1: %s\n", rc_errno(sem_timedwait(&s, &ts)));
  printf("sem_trywait on 0: %s\n", rc_errno(sem_trywait(&s)));
  struct timespec bad = {0, 2000000000L};
  printf("sem_timedwait with a bad time: %s\n", rc_errno(sem_timedwait(&s, &bad)));
  struct sigaction sa = {.sa_handler = on_usr2}; /* without SA_RESTART */
  sigaction(SIGUSR2, &sa, NULL);
  sem_init(&never, 0, 0);
  pthread_create(&t, NULL, sem_waiter, NULL);
  sleep_ns(50000000);
  pthread_kill(t, SIGUSR2);
  void *ret;
  int err = pthread_join(t, &ret);
  printf("sem_wait interrupted by a signal: %s (join %s)\n", rc((int)(intptr_t)ret), rc(err));

  /* Spin locks. */
  pthread_spinlock_t sp;
  pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE);
  printf("spin_lock: %s\n", rc(pthread_spin_lock(&sp)));
  printf("spin_trylock held: %s\n", rc(pthread_spin_trylock(&sp)));
  printf("spin_unlock: %s\n", rc(pthread_spin_unlock(&sp)));

  /* pthread_join's own errors. */
  printf("join self: %s\n", rc(pthread_join(pthread_self(), NULL)));
}

static int heavy(void) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    int err = pthread_create(&t[i], NULL, heavy_worker, (void *)(intptr_t)(PAIRS / 2));
    if (err)
      die("pthread_create", err);
  }
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  printf("pairs=%ld counter=%ld\n", PAIRS, counter);
  semantics();
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--heavy") == 0)
    return heavy();
#ifdef LINK_CPROF
  if (argc > 2 && strcmp(argv[2], "--api") == 0) {
    /* Each returns the previous setting; a negative one changes nothing. */
    long r0 = cprof_set_block_rate(7), f0 = cprof_set_mutex_fraction(9);
    long r1 = cprof_set_block_rate(-1), f1 = cprof_set_mutex_fraction(-1);
    long r2 = cprof_set_block_rate(1), f2 = cprof_set_mutex_fraction(1);
    printf("api: rate %ld %ld %ld fraction %ld %ld %ld\n", r0, r1, r2, f0, f1, f2);
  }
#endif
  contention(argc > 1 ? atol(argv[1]) : 1000);
}
