/* The lock wrappers' slow path (src/interpose/locks.c, with contention.c and
 * unwind/caller.c behind it) on the program's threads, which may hold any
 * lock of the program's, its allocator's among them:
 *
 * - it allocates nothing through the program's malloc: this program
 *   replaces the malloc family with counting wrappers, and threads that
 *   wait for a contended mutex, each recorded into the block and mutex
 *   profiles, count their allocations across every lock and unlock (it
 *   was pthread_getattr_np's, the first time a thread recorded, and the
 *   fork handlers' registration);
 * - a wait in a signal handler is recorded with the stack beneath the
 *   signal frame, without libgcc (which takes the program's registered
 *   frames' mutex through the wrappers);
 * - a wrapper called from a signal handler that interrupted the wrappers'
 *   own critical section passes straight through instead of spinning on the
 *   waiters' table slot its thread holds.
 *
 * Sanitizer builds have no wrappers: skipped there. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "contention_count.h"
#include "sample/contention.h"

#include "count_alloc.h"

#define NOINLINE __attribute__((noinline))
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

#if COUNTING /* else a sanitizer's build: no lock wrappers, nothing counted */

/* ---- no allocation on the slow path ---- */

#define WORKERS 4
#define ROUNDS 2000

static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t all_there;
static long worker_allocations[WORKERS];
static volatile uint64_t sink;

static void *worker(void *arg) {
  long *out = arg, mine = 0;
  pthread_barrier_wait(&all_there); /* all at once, so that they contend */
  for (int i = 0; i < ROUNDS; i++) {
    long before = allocations;
    pthread_mutex_lock(&contended);
    for (int k = 0; k < 300; k++)
      sink = sink * 33 + (uint64_t)k;
    if (i % 50 == 0) /* now and then long enough that the others must wait */
      usleep(200);
    pthread_mutex_unlock(&contended);
    mine += allocations - before;
  }
  STORE(*out, mine);
  return NULL;
}

static void test_no_allocation(cprof__unwinder_t how, const char *name) {
  cprof__contention_set_unwinder(how);
  double blocks0 = total_count(CPROF_BLOCK), mutexes0 = total_count(CPROF_MUTEX);
  pthread_t t[WORKERS];
  pthread_barrier_init(&all_there, NULL, WORKERS);
  for (int i = 0; i < WORKERS; i++) /* new threads: nothing learnt about their stacks yet */
    CHECK_EQ_INT(pthread_create(&t[i], NULL, worker, &worker_allocations[i]), 0);
  for (int i = 0; i < WORKERS; i++)
    pthread_join(t[i], NULL);
  pthread_barrier_destroy(&all_there);
  double blocks = total_count(CPROF_BLOCK) - blocks0, mutexes = total_count(CPROF_MUTEX) - mutexes0;
  fprintf(stderr, "%s: %.0f waits and %.0f contended unlocks recorded; allocations:", name, blocks,
          mutexes);
  for (int i = 0; i < WORKERS; i++)
    fprintf(stderr, " %ld", LOAD(worker_allocations[i]));
  fprintf(stderr, "\n");
  CHECK(blocks > 0); /* the slow path ran, */
  CHECK(mutexes > 0);
  for (int i = 0; i < WORKERS; i++) /* and allocated nothing */
    CHECK_EQ_INT(LOAD(worker_allocations[i]), 0);
}

/* ---- a wait in a signal handler ---- */

static pthread_mutex_t held_by_main = PTHREAD_MUTEX_INITIALIZER;
static int in_place, handled, stop_spinning;
static long handler_allocations = -1;
static pthread_t spinner;

static void wait_in_handler(int sig) {
  (void)sig;
  long before = allocations;
  pthread_mutex_lock(&held_by_main);
  pthread_mutex_unlock(&held_by_main);
  STORE(handler_allocations, allocations - before);
  STORE(handled, 1);
}

NOINLINE void interrupted_here(void) {
  STORE(in_place, 1);
  while (!LOAD(stop_spinning))
    sink = sink * 33 + 1;
}
NOINLINE void interrupted_here_end(void) { sink++; }

static void *spin(void *arg) {
  (void)arg;
  interrupted_here();
  return NULL;
}

/* Whether a record that changed between two snapshots has a frame in
 * interrupted_here, beneath the handler's signal frame. */
static int found_beneath(const cprof__contention_snapshot_t *before,
                         const cprof__contention_snapshot_t *after) {
  uintptr_t lo = (uintptr_t)interrupted_here, hi = (uintptr_t)interrupted_here_end;
  if (hi <= lo || hi - lo > 4096)
    hi = lo + 256;
  for (size_t i = 0; i < after->n; i++) {
    if (i < before->n && after->v[i].count == before->v[i].count)
      continue;
    for (int d = 0; d < after->v[i].depth; d++)
      if (after->v[i].pcs[d] > lo && after->v[i].pcs[d] <= hi)
        return 1;
  }
  return 0;
}

static void test_wait_in_handler(void) {
  cprof__contention_set_unwinder(CPROF_UNWIND_DWARF);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = wait_in_handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  cprof__contention_snapshot_t before, after;
  CHECK_EQ_INT(cprof__contention_snapshot(CPROF_BLOCK, &before), 0);
  CHECK_EQ_INT(pthread_create(&spinner, NULL, spin, NULL), 0);
  while (!LOAD(in_place))
    usleep(100);
  pthread_mutex_lock(&held_by_main);
  pthread_kill(spinner, SIGUSR1);
  usleep(20000); /* the handler waits this long for the lock */
  pthread_mutex_unlock(&held_by_main);
  while (!LOAD(handled))
    usleep(100);
  STORE(stop_spinning, 1);
  pthread_join(spinner, NULL);
  CHECK_EQ_INT(cprof__contention_snapshot(CPROF_BLOCK, &after), 0);
  fprintf(stderr, "wait in a handler: %ld allocations; stack beneath the signal frame: %s\n",
          LOAD(handler_allocations), found_beneath(&before, &after) ? "yes" : "no");
  CHECK_EQ_INT(LOAD(handler_allocations), 0);
  CHECK(found_beneath(&before, &after));
  cprof__contention_snapshot_free(&before);
  cprof__contention_snapshot_free(&after);
}

/* ---- re-entrance from a signal handler ----
 *
 * Two threads take turns at a mutex, so that their lock and unlock calls
 * keep entering the wrappers' table of waiters; a third signals one of
 * them as fast as it can, and that thread's handler tries the same mutex
 * for a moment (timedlock: without cprof it never waits for itself). A
 * handler that lands inside the table's critical section must not wait for
 * the slot its own thread holds. A thread that stops making progress for
 * 5 s is a hang. */

static pthread_mutex_t turns = PTHREAD_MUTEX_INITIALIZER;
static int reentry_stop, finished;
static long progress[2], handler_runs, handler_took;
static pthread_t signalled;

static void try_in_handler(int sig) {
  (void)sig;
  int saved = errno;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += 50000;
  if (until.tv_nsec >= 1000000000) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000;
  }
  if (pthread_mutex_timedlock(&turns, &until) == 0) {
    pthread_mutex_unlock(&turns);
    __atomic_add_fetch(&handler_took, 1, __ATOMIC_RELAXED);
  }
  __atomic_add_fetch(&handler_runs, 1, __ATOMIC_RELAXED);
  errno = saved;
}

static void *take_turns(void *arg) {
  long *mine = arg;
  while (!LOAD(reentry_stop)) {
    pthread_mutex_lock(&turns);
    for (int k = 0; k < 50; k++)
      sink = sink * 33 + (uint64_t)k;
    pthread_mutex_unlock(&turns);
    __atomic_add_fetch(mine, 1, __ATOMIC_RELAXED);
  }
  __atomic_add_fetch(&finished, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void *send_signals(void *arg) {
  (void)arg;
  while (!LOAD(reentry_stop))
    pthread_kill(signalled, SIGUSR2);
  return NULL;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_reentry(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = try_in_handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, NULL);
  pthread_t other, sender;
  CHECK_EQ_INT(pthread_create(&signalled, NULL, take_turns, &progress[0]), 0);
  CHECK_EQ_INT(pthread_create(&other, NULL, take_turns, &progress[1]), 0);
  CHECK_EQ_INT(pthread_create(&sender, NULL, send_signals, NULL), 0);
  /* 2 s of it, and 2000 handlers (a loaded machine runs fewer), 8 s at
   * most; then each turn-taker must see the stop within 5 s. */
  long last[2] = {-1, -1};
  int64_t start = now_ms(), moved = start;
  while (now_ms() - moved < 5000 && LOAD(finished) < 2) {
    usleep(10000);
    int64_t ran = now_ms() - start;
    if ((ran >= 2000 && LOAD(handler_runs) >= 2000) || ran >= 8000)
      STORE(reentry_stop, 1);
    long p0 = LOAD(progress[0]), p1 = LOAD(progress[1]);
    if (p0 != last[0] || p1 != last[1])
      moved = now_ms();
    last[0] = p0;
    last[1] = p1;
  }
  if (LOAD(finished) < 2) {
    fprintf(stderr, "re-entrance: FAIL: stuck for 5 s (turns %ld and %ld, %ld handlers)\n",
            last[0], last[1], LOAD(handler_runs));
    _exit(1); /* the stuck thread cannot be joined */
  }
  pthread_join(sender, NULL);
  pthread_join(signalled, NULL);
  pthread_join(other, NULL);
  fprintf(stderr, "re-entrance: turns %ld and %ld, %ld handlers ran, %ld took the lock\n",
          LOAD(progress[0]), LOAD(progress[1]), LOAD(handler_runs), LOAD(handler_took));
  CHECK(LOAD(handler_runs) > 200);
  CHECK(LOAD(progress[0]) > 0 && LOAD(progress[1]) > 0);
}

#endif

int main(void) {
#if !COUNTING
  return check_skip("test_lock_slowpath", "sanitizer builds have no lock wrappers");
#else
  /* Every contended wait and unlock is recorded. */
  cprof__block_set_rate(1);
  cprof__mutex_set_fraction(1);
  test_no_allocation(CPROF_UNWIND_DWARF, "dwarf");
  test_no_allocation(CPROF_UNWIND_FP, "fp");
  /* The counter counts: one allocation here must show. */
  long before = allocations;
  void *volatile p = malloc(16);
  free(p);
  CHECK_EQ_INT(allocations - before, 2);
  test_wait_in_handler();
  test_reentry();
  cprof__block_set_rate(0);
  cprof__mutex_set_fraction(0);
  return check_result("test_lock_slowpath");
#endif
}
