/* contend: two threads contending for one lock, with a wait they measure.
 *
 *   contend [--prim mutex|timedlock|rwlock|spin] [--rounds N] [--unit-us U]
 *           [--think T] [--seed S] [--linger SECONDS]
 *
 * Two threads, named "long" and "short", each run N rounds of: take the
 * lock (in wait_long / wait_short), hold it, busy, for 3 units (long) or 1
 * unit (short), release it (in release_long / release_short), then sleep
 * a random 0-2T units (T=2 by default) outside it. A unit is U µs
 * (default 1000): busy waiting on CLOCK_MONOTONIC while holding, so the
 * holder runs; nanosleep outside, so that the process never needs more
 * than one CPU and a released waiter finds one free (on a busy machine
 * its wake-up would otherwise wait for a CPU, a delay the holder did not
 * cause). Defaults: N=300. The lock is a
 * pthread_mutex_t (pthread_mutex_lock, or pthread_mutex_timedlock with a
 * deadline a minute away), a pthread_rwlock_t taken for writing, or a
 * pthread_spinlock_t; every release is the matching unlock.
 *
 * The call stacks are, for each thread W:
 *   lock:   thread_W -> section_W -> wait_W -> pthread_mutex_lock
 *   unlock: thread_W -> section_W -> release_W -> pthread_mutex_unlock
 * so a mutex profile (the holder's stack at unlock) should charge
 * release_long with the time "short" waited and release_short with the
 * time "long" waited; a block profile (the waiter's stack) charges
 * wait_long with long's own wait and wait_short with short's.
 *
 * The truth, per thread: wait_ns, the time its lock calls took (a
 * CLOCK_MONOTONIC read before and after each call, summed over all of
 * them); contended, the calls that had to wait for the other thread (the
 * lock was released after the call began); until_unlock_ns, over those,
 * the time from the call's start to that release (what the holder's unlock
 * could know); wake_ns, from the release to the call's return (the
 * waiter's wake-up). wait_ns = until_unlock_ns + wake_ns + the uncontended
 * calls' few ns each. released counts, over the contended calls, the
 * releases that happened during the call: 1 when the waiter got the lock
 * at the first release, more when the other thread took it back first
 * (glibc's locks are not fair), which a profile that records an event per
 * release with a waiter counts as that many contentions. With two threads, a thread waits only while the
 * other holds the lock, so short's wait is what long's holding caused, and
 * the other way round.
 *
 * At the end it prints one line
 *   contend: prim=P unit_us=U rounds=N wall_ns=W long_wait_ns=...
 *            long_until_unlock_ns=... long_wake_ns=... long_contended=...
 *            long_released=... long_max_wait_ns=... short_wait_ns=... (the same for short)
 * flushes stdout and, with --linger, sleeps SECONDS more (default 0) so
 * that a script can fetch profiles before it exits. */
#include "lock.h"

static const char usage[] =
    "contend [--prim mutex|timedlock|rwlock|spin] [--rounds N] [--unit-us U] [--think T] [--seed S] [--linger SECONDS]";

enum prim { MUTEX, TIMEDLOCK, RWLOCK, SPIN };
static const char *const prim_names[] = {"mutex", "timedlock", "rwlock", "spin"};
static enum prim prim = MUTEX;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t sp;

/* CLOCK_MONOTONIC just before the last release; written and read only
 * while holding the lock. */
static int64_t last_release;
/* Releases so far: written while holding the lock, read before taking it. */
static long releases;

static int64_t unit_ns = 1000000;
static double think_units = 2;
static pthread_barrier_t ready;

typedef struct side {
  const char *name;
  pthread_t tid;
  long rounds;
  long hold_units;
  uint64_t seed;
  int64_t wait_ns, until_unlock_ns, wake_ns, max_wait_ns;
  long contended, released;
} side_t;

static inline void take(void) {
  int rc = 0;
  switch (prim) {
  case MUTEX:
    rc = pthread_mutex_lock(&mu);
    break;
  case TIMEDLOCK: {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 60;
    rc = pthread_mutex_timedlock(&mu, &dl);
    break;
  }
  case RWLOCK:
    rc = pthread_rwlock_wrlock(&rw);
    break;
  case SPIN:
    rc = pthread_spin_lock(&sp);
    break;
  }
  if (rc != 0) {
    fprintf(stderr, "contend: taking the %s failed: %s\n", prim_names[prim], strerror(rc));
    exit(1);
  }
}

static inline void give(void) {
  int rc = 0;
  switch (prim) {
  case MUTEX:
  case TIMEDLOCK:
    rc = pthread_mutex_unlock(&mu);
    break;
  case RWLOCK:
    rc = pthread_rwlock_unlock(&rw);
    break;
  case SPIN:
    rc = pthread_spin_unlock(&sp);
    break;
  }
  if (rc != 0) {
    fprintf(stderr, "contend: releasing the %s failed: %s\n", prim_names[prim], strerror(rc));
    exit(1);
  }
}

/* The lock call, timed. */
static inline void timed_take(side_t *s) {
  long r0 = __atomic_load_n(&releases, __ATOMIC_RELAXED);
  int64_t t0 = clock_ns(CLOCK_MONOTONIC);
  take();
  int64_t t1 = clock_ns(CLOCK_MONOTONIC);
  int64_t w = t1 - t0;
  s->wait_ns += w;
  if (w > s->max_wait_ns)
    s->max_wait_ns = w;
  if (last_release > t0) { /* released after we asked: we waited for it */
    s->contended++;
    s->released += releases - r0;
    s->until_unlock_ns += last_release - t0;
    s->wake_ns += t1 - last_release;
  }
}

static inline void timed_give(void) {
  __atomic_store_n(&releases, releases + 1, __ATOMIC_RELAXED);
  last_release = clock_ns(CLOCK_MONOTONIC);
  give();
}

/* One set of named functions per thread, so that each profile can tell
 * the two apart by function name alone. */
#define SIDE(W)                                                                                    \
  BENCH_FN void wait_##W(side_t *s) {                                                              \
    timed_take(s);                                                                                 \
    NOT_A_TAIL_CALL();                                                                             \
  }                                                                                                \
  BENCH_FN void release_##W(side_t *s) {                                                           \
    (void)s;                                                                                       \
    timed_give();                                                                                  \
    NOT_A_TAIL_CALL();                                                                             \
  }                                                                                                \
  BENCH_FN void section_##W(side_t *s) {                                                           \
    wait_##W(s);                                                                                   \
    NOT_A_TAIL_CALL();                                                                             \
    spin_until(clock_ns(CLOCK_MONOTONIC) + s->hold_units * unit_ns);                               \
    release_##W(s);                                                                                \
    NOT_A_TAIL_CALL();                                                                             \
  }                                                                                                \
  BENCH_FN void *thread_##W(void *arg) {                                                           \
    side_t *s = arg;                                                                               \
    rng_t r;                                                                                       \
    rng_seed(&r, s->seed);                                                                         \
    pthread_barrier_wait(&ready);                                                                  \
    for (long k = 0; k < s->rounds; k++) {                                                         \
      section_##W(s);                                                                              \
      NOT_A_TAIL_CALL();                                                                           \
      sleep_ns((int64_t)(2 * think_units * rng_unit(&r) * unit_ns));                              \
    }                                                                                              \
    return NULL;                                                                                   \
  }

SIDE(long)
SIDE(short)

int main(int argc, char **argv) {
  long rounds = 300;
  double linger = 0;
  uint64_t seed = 1;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc)
      return number_arg(NULL, usage), 2;
    const char *a = argv[i], *v = argv[++i];
    if (strcmp(a, "--prim") == 0) {
      int found = 0;
      for (int p = 0; p < 4; p++)
        if (strcmp(v, prim_names[p]) == 0)
          prim = (enum prim)p, found = 1;
      if (!found)
        return number_arg(NULL, usage), 2;
    } else if (strcmp(a, "--rounds") == 0)
      rounds = (long)number_arg(v, usage);
    else if (strcmp(a, "--unit-us") == 0)
      unit_ns = (int64_t)(number_arg(v, usage) * 1000);
    else if (strcmp(a, "--think") == 0)
      think_units = number_arg(v, usage);
    else if (strcmp(a, "--seed") == 0)
      seed = (uint64_t)number_arg(v, usage);
    else if (strcmp(a, "--linger") == 0)
      linger = number_arg(v, usage);
    else
      return number_arg(NULL, usage), 2;
  }
  pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE);
  pthread_barrier_init(&ready, NULL, 3);

  static side_t sides[2] = {{.name = "long", .hold_units = 3}, {.name = "short", .hold_units = 1}};
  void *(*fn[2])(void *) = {thread_long, thread_short};
  for (int t = 0; t < 2; t++) {
    sides[t].rounds = rounds;
    sides[t].seed = seed * 1000003 + (uint64_t)t;
    if (pthread_create(&sides[t].tid, NULL, fn[t], &sides[t]) != 0) {
      fprintf(stderr, "contend: pthread_create failed\n");
      return 1;
    }
    pthread_setname_np(sides[t].tid, sides[t].name);
  }
  pthread_barrier_wait(&ready);
  int64_t w0 = clock_ns(CLOCK_MONOTONIC);
  for (int t = 0; t < 2; t++)
    pthread_join(sides[t].tid, NULL);
  int64_t w1 = clock_ns(CLOCK_MONOTONIC);

  printf("contend: prim=%s unit_us=%lld rounds=%ld think=%g wall_ns=%lld", prim_names[prim],
         (long long)(unit_ns / 1000), rounds, think_units, (long long)(w1 - w0));
  for (int t = 0; t < 2; t++) {
    side_t *s = &sides[t];
    printf(" %s_wait_ns=%lld %s_until_unlock_ns=%lld %s_wake_ns=%lld %s_contended=%ld %s_released=%ld"
           " %s_max_wait_ns=%lld",
           s->name, (long long)s->wait_ns, s->name, (long long)s->until_unlock_ns, s->name,
           (long long)s->wake_ns, s->name, s->contended, s->name, s->released, s->name,
           (long long)s->max_wait_ns);
  }
  printf("\n");
  fflush(stdout);
  if (linger > 0)
    sleep_ms((long)(linger * 1000));
  return 0;
}
