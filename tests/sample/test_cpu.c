/* The CPU sampler on its own: samples land on the thread that burns the
 * CPU, in the function that burns it, weighted so that the CPU time adds
 * up; a second start is refused; a program's own SIGPROF handler is left
 * alone; and the SIGPROF handler allocates nothing (counting wrappers
 * around the malloc family, as in test_threads.c). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sample/cpu.h"
#include "symbol/symbolize.h"

#include "count_alloc.h"

#define NOINLINE __attribute__((noinline))
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static int stop, ready;
static long burner_allocations = -1;
static pid_t burner_tid;
static __thread volatile uint64_t sink;

NOINLINE void burn_in_known_function(void) {
  while (!LOAD(stop))
    sink = sink * 6364136223846793005ULL + 1;
}

static void *burner(void *arg) {
  STORE(burner_tid, gettid());
  STORE(ready, 1);
  long before = allocations;
  burn_in_known_function();
  STORE(burner_allocations, allocations - before);
  return NULL;
}

typedef struct tally {
  long samples, periods, in_function, on_burner;
} tally_t;

static void count(void *arg, const cprof__cpu_sample_t *smp) {
  tally_t *t = arg;
  pid_t tid = smp->tid;
  const uintptr_t *pcs = smp->pcs;
  int depth = smp->depth, periods = smp->periods;
  t->samples++;
  t->periods += periods;
  if (tid != LOAD(burner_tid))
    return;
  t->on_burner += periods;
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  const char *name = depth > 0 ? cprof__symbolize_name(s, pcs[0]) : NULL;
  if (name && strcmp(name, "burn_in_known_function") == 0)
    t->in_function += periods;
  cprof__symbolizer_release(s);
}

static void on_prof(int sig) {}

static long ms_between(const struct timespec *a, const struct timespec *b) {
  return (b->tv_sec - a->tv_sec) * 1000 + (b->tv_nsec - a->tv_nsec) / 1000000;
}

int main(void) {
  pthread_t th;
  pthread_create(&th, NULL, burner, NULL);
  while (!LOAD(ready))
    usleep(1000);

  /* The truth: the burner's own CPU clock, read around each profile. */
  clockid_t burner_clock;
  CHECK_EQ_INT(pthread_getcpuclockid(th, &burner_clock), 0);
  const int hz = 1000;
  for (int how = 0; how < 2; how++) {
    struct timespec c0, c1;
    clock_gettime(burner_clock, &c0);
    CHECK_EQ_INT(cprof__cpu_start(hz, (cprof__unwinder_t)how), 0);
    CHECK_EQ_INT(cprof__cpu_start(hz, (cprof__unwinder_t)how), -EALREADY);
    /* Until the burner has had 200 ms of CPU and its periods have caught
     * up with it, however long a busy machine takes (20 s at most): a
     * loaded kernel (seen on 6.18) can hold a CPU timer's signal back for
     * 200 ms of the thread's CPU, the periods arriving late in one
     * signal's overrun, so a profile's last moments may be undercounted
     * but nothing is lost while it runs. */
    tally_t t = {0};
    long truth_ms = 0;
    for (int i = 0; i < 2000; i++) {
      usleep(10000);
      cprof__cpu_track_threads();
      clock_gettime(burner_clock, &c1); /* before the drain: periods follow CPU */
      cprof__cpu_drain(count, &t);
      truth_ms = ms_between(&c0, &c1);
      if (truth_ms >= 200 && t.on_burner >= truth_ms * 3 / 4)
        break;
    }
    CHECK_EQ_INT(cprof__cpu_stop(count, &t), 0); /* nothing lost */
    clock_gettime(burner_clock, &c1);
    long truth_end_ms = ms_between(&c0, &c1); /* what the stop's drain may have counted */
    fprintf(stderr, "unwinder %d: %ld samples, %ld periods on the burner, its CPU %ld ms\n", how,
            t.samples, t.on_burner, truth_end_ms);
    /* Periods of 1 ms against the CPU the burner really used, however busy
     * the machine: within a quarter (the kernel checks CPU timers at its
     * tick), and nowhere near the fourfold undercount that unweighted
     * tick-limited samples would give. */
    CHECK(truth_ms >= 200);
    CHECK(t.on_burner >= truth_ms * 3 / 4 && t.on_burner <= truth_end_ms * 5 / 4 + 10);
#ifndef __SANITIZE_THREAD__
    /* (ThreadSanitizer delivers signals late, inside its own runtime.) */
    CHECK(t.in_function >= t.on_burner * 9 / 10);
#endif
    CHECK(t.periods >= t.samples);
  }

  /* A thread given its timer twice (the look at /proc and its own start
   * racing): its CPU must still be counted once. Here the main thread, which
   * the start gave a timer, is handed one again, then burns 200 ms. */
  {
    CHECK_EQ_INT(cprof__cpu_start(hz, CPROF_UNWIND_FP), 0);
    cprof__cpu_thread_started();
    tally_t t = {0};
    STORE(burner_tid, gettid()); /* count() tallies this thread now */
    struct timespec c0, c1;
    long truth_ms = 0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    /* 200 ms of CPU, and on until its periods catch up (as above; 3 s at
     * most), draining what has arrived between slices of a few ms. */
    do {
      for (int i = 0; i < 1000000; i++)
        sink = sink * 6364136223846793005ULL + 1;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
      cprof__cpu_drain(count, &t);
      truth_ms = ms_between(&c0, &c1);
    } while (truth_ms < 200 || (t.on_burner < truth_ms * 3 / 4 && truth_ms < 3000));
    cprof__cpu_stop(count, &t);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    long truth_end_ms = ms_between(&c0, &c1);
    fprintf(stderr, "twice-armed main thread: %ld periods, its CPU %ld ms\n", t.on_burner, truth_ms);
    CHECK(t.on_burner <= truth_end_ms * 5 / 4 + 10); /* not twice */
#ifndef __SANITIZE_THREAD__
    /* ThreadSanitizer defers a signal that arrives inside its runtime and
     * keeps one per signal number, so ticks that come while one waits are
     * lost to the kernel's overrun count too: 71-80 % of the periods
     * arrive there, before and after the drain's time marks. */
    CHECK(t.on_burner >= truth_ms * 3 / 4);
#endif
  }

  /* A program's own SIGPROF handler: refused, and left in place. */
  signal(SIGPROF, on_prof);
  CHECK_EQ_INT(cprof__cpu_start(hz, CPROF_UNWIND_FP), -EBUSY);
  struct sigaction cur;
  sigaction(SIGPROF, NULL, &cur);
  CHECK(cur.sa_handler == on_prof);

  STORE(stop, 1);
  pthread_join(th, NULL);
  if (COUNTING)
    CHECK_EQ_INT(LOAD(burner_allocations), 0); /* ~1000 SIGPROFs handled on it */
  return check_result("test_cpu");
}
