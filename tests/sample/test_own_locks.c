/* cprof's own locks (src/sample/own_lock.h), over the heap and contention
 * tables:
 *
 * - they are never profiled as the program's: threads that contend for the
 *   heap sampler's lock (sampled blocks at a page's start, allocated and
 *   freed) add nothing to the block and mutex profiles (the free path took
 *   it without the guard, through the lock wrapper, which recorded its wait
 *   while it held the lock);
 * - across fork, while threads record into every table: a prepare handler
 *   that runs after ours finds every one held by the forking thread, and a
 *   sampler on another thread drops its sample instead of waiting; the
 *   child finds them all held by itself in its first handler and free when
 *   fork returns, and its tables work and are whole. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "contention_count.h"
#include "sample/contention.h"
#include "sample/heap.h"
#include "sample/own_lock.h"

#define NOINLINE __attribute__((noinline))
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define RET ((uintptr_t)__builtin_return_address(0))

/* A sampled block at a page's start, recorded and freed: both take the
 * heap sampler's lock. Nothing is dereferenced: the addresses are made up,
 * one range per thread. */
NOINLINE static void heap_round(int thread, int i) {
  void *p = (void *)(((uintptr_t)(thread + 1) << 36) | ((uintptr_t)(i & 0xffff) << 12));
  cprof__heap_sample_t s;
  cprof__heap_record(p, 64, 16, RET, &s);
  uint32_t offset;
  if (s.slot)
    cprof__heap_release(p, &offset);
}

/* ---- not profiled ---- */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HAVE_WRAPPERS 0 /* the sanitizer interposes the lock functions itself */
#else
#define HAVE_WRAPPERS 1
#endif

#define THREADS 4
static int stop;

#if HAVE_WRAPPERS
static int churned;

static void *heap_churn(void *arg) {
  int me = (int)(intptr_t)arg;
  for (int i = 0; !LOAD(stop); i++)
    heap_round(me, i);
  __atomic_add_fetch(&churned, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void test_not_profiled(void) {
  double blocks = total_count(CPROF_BLOCK), mutexes = total_count(CPROF_MUTEX);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, heap_churn, (void *)(intptr_t)i);
  usleep(500000);
  STORE(stop, 1);
  while (LOAD(churned) < THREADS) /* not joined yet: a join's wait is the block profile's */
    usleep(1000);
  blocks = total_count(CPROF_BLOCK) - blocks;
  mutexes = total_count(CPROF_MUTEX) - mutexes;
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  STORE(stop, 0);
  cprof__heap_snapshot_t h;
  CHECK_EQ_INT(cprof__heap_snapshot(&h), 0);
  uint64_t allocs = 0;
  for (size_t i = 0; i < h.n; i++)
    allocs += h.v[i].allocs;
  cprof__heap_snapshot_free(&h);
  fprintf(stderr, "heap lock contended by %d threads (%llu samples): %.0f waits and %.0f unlocks "
          "profiled\n", THREADS, (unsigned long long)allocs, blocks, mutexes);
  CHECK(allocs > 1000); /* the lock was taken, */
  CHECK(blocks == 0);   /* and never profiled */
  CHECK(mutexes == 0);
}
#endif

/* ---- across fork ---- */

/* Registered before own_lock.c's handlers (constructor 101 < 102), so this
 * prepare handler runs after cprof's, and this child handler before. */
static int checking, in_prepare_held = -1, in_prepare_mine = -1, in_child_held = -1,
                     in_child_mine = -1, dropped = -1;
static sem_t go, done;

static int all_mine(void) {
  for (int i = 0; i < CPROF_OWN_LOCKS; i++)
    if (!cprof__own_lock_mine(&cprof__own_locks[i]))
      return 0;
  return 1;
}

/* Another thread samples while cprof's prepare handler holds the locks: it
 * must come back without the lock (a wait here would be for ever, were the
 * program's lock it holds wanted by a handler that runs after ours). */
static void *sampler_during_fork(void *arg) {
  (void)arg;
  while (sem_wait(&go) != 0)
    ;
  STORE(dropped, !cprof__own_lock_for_sample(&cprof__own_locks[CPROF_OWN_LOCK_HEAP]));
  sem_post(&done);
  return NULL;
}

static void late_prepare(void) {
  if (!LOAD(checking))
    return;
  in_prepare_held = cprof__own_locks_held();
  in_prepare_mine = all_mine();
  if (LOAD(dropped) == -1) {
    sem_post(&go);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    if (sem_timedwait(&done, &until) != 0)
      STORE(dropped, 0);
  }
}
static void early_child(void) {
  if (!LOAD(checking))
    return;
  in_child_held = cprof__own_locks_held();
  in_child_mine = all_mine();
}
__attribute__((constructor(101))) static void register_around_cprof(void) {
  pthread_atfork(late_prepare, NULL, early_child);
}

/* Threads that record into every table all the while. */
NOINLINE static void waited_here(int64_t ns) { cprof__block_event(ns, RET); }
NOINLINE static void unlocked_here(int64_t ns) { cprof__mutex_event(ns, RET); }

static void *record_all(void *arg) {
  int me = (int)(intptr_t)arg;
  for (int i = 0; !LOAD(stop); i++) {
    waited_here(1000 + i % 7);
    unlocked_here(1000);
    heap_round(me, i);
    if (i % 64 == 0)
      cprof__threadcreate_event(RET);
  }
  return NULL;
}

/* In the child: its only thread, alone with the tables it inherited. */
static int child_checks(void) {
  int bad = 0;
  alarm(10); /* a lock left held is a hang: SIGALRM ends the child */
  bad |= cprof__own_locks_held() != 0;
  bad |= in_child_held != CPROF_OWN_LOCKS || !in_child_mine;
  waited_here(5000);
  unlocked_here(5000);
  heap_round(THREADS, 1);
  for (int k = 0; k < CPROF_CONTENTION_KINDS; k++) {
    cprof__contention_snapshot_t s;
    if (cprof__contention_snapshot((cprof__contention_kind_t)k, &s) != 0)
      return 1;
    /* Whole: as many records as the table says, each with its stack. */
    bad |= s.n != cprof__contention_records((cprof__contention_kind_t)k) &&
           s.n != cprof__contention_records((cprof__contention_kind_t)k) + 1;
    for (size_t i = 1; i < s.n; i++)
      bad |= s.v[i].depth < 1 || !s.v[i].pcs;
    cprof__contention_snapshot_free(&s);
  }
  cprof__heap_snapshot_t h;
  if (cprof__heap_snapshot(&h) != 0)
    return 1;
  bad |= h.n != cprof__heap_records();
  cprof__heap_snapshot_free(&h);
  return bad;
}

#define FORKS 100

static void test_fork(void) {
  sem_init(&go, 0, 0);
  sem_init(&done, 0, 0);
  pthread_t sampler, t[THREADS];
  pthread_create(&sampler, NULL, sampler_during_fork, NULL);
  for (int i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, record_all, (void *)(intptr_t)i);
  STORE(checking, 1);
  int ok = 0, prepare_ok = 0;
  for (int f = 0; f < FORKS; f++) {
    usleep(1000);
    pid_t pid = fork();
    if (pid == 0)
      _exit(child_checks());
    prepare_ok += in_prepare_held == CPROF_OWN_LOCKS && in_prepare_mine == 1;
    int status;
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0)
      ok++;
    else if (pid > 0)
      fprintf(stderr, "fork %d: child %s %d\n", f, WIFSIGNALED(status) ? "killed by signal" : "exit",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  }
  STORE(checking, 0);
  STORE(stop, 1);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  pthread_join(sampler, NULL);
  fprintf(stderr, "%d forks: every lock held in a later prepare handler %d times, children fine "
          "%d times; a sampler during a fork %s\n", FORKS, prepare_ok, ok,
          LOAD(dropped) == 1 ? "dropped its sample" : "did not come back without the lock");
  CHECK_EQ_INT(prepare_ok, FORKS);
  CHECK_EQ_INT(ok, FORKS);
  CHECK_EQ_INT(LOAD(dropped), 1);
  CHECK_EQ_INT(cprof__own_locks_held(), 0);
}

int main(void) {
  cprof__heap_configure(1 << 20, CPROF_UNWIND_FP);
  cprof__contention_set_unwinder(CPROF_UNWIND_FP);
  cprof__block_set_rate(1);
  cprof__mutex_set_fraction(1);
#if HAVE_WRAPPERS /* else nothing profiles anything: only the fork part applies */
  test_not_profiled();
#endif
  test_fork();
  cprof__block_set_rate(0);
  cprof__mutex_set_fraction(0);
  cprof__heap_configure(0, CPROF_UNWIND_FP);
  return check_result("test_own_locks");
}
