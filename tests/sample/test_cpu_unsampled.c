/* CPU time that no timer samples is counted all the same (cpu_timers.c,
 * "CPU time no timer samples"), exactly: each bound below is the thread's own CPU
 * clock read around the moments that matter, so no timing slack is needed.
 *
 * - "toggler" stops its timer as for a mask that blocks SIGPROF, burns
 *   200 ms of CPU while the owner looks at the threads (and counts its
 *   time) every few milliseconds, and starts it again from blocked_section:
 *   one record, or more, "[thread blocked SIGPROF]" with blocked_section's
 *   return address after it, holding the CPU between the two.
 * - "walled" stops its timer the same way and burns until the profile
 *   stops: its time comes in at the stop, without a stack.
 * - "waiter" stops its timer as for a sigwait (it sleeps: nothing counted)
 *   and burns anyway: no record.
 * - "exiter" stops its timer the same way, burns 100 ms and ends, as
 *   thread_start.c's key destructor ends a thread: one record, with its
 *   name, holding all of it.
 * - "flicker" blocks 20,000 times for a few microseconds each: about a
 *   record per sampling period of that time, not one per unblocking (which
 *   would flood the buffer), and together all of it.
 * The mask wrappers' entry points (sample/cpu.h) are called directly, as
 * sigmask.c calls them, so that the sanitizer builds, which leave the
 * wrappers out, run this too. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sample/cpu.h"
#include "symbol/symbolize.h"

#define NOINLINE __attribute__((noinline))
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static int go, stop;
static __thread volatile uint64_t sink;

static int64_t cpu_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct worker {
  const char *name;
  pthread_t th;
  pid_t tid;
  int ready, done;
  /* Its CPU clock before and after the pause, before and after the resume. */
  int64_t before_pause, after_pause, before_resume, after_resume;
  int pause_misses; /* pauses that stopped no running timer */
} worker_t;

static worker_t toggler = {.name = "toggler"}, walled = {.name = "walled"},
                waiter = {.name = "waiter"}, exiter = {.name = "exiter"},
                flicker = {.name = "flicker"};
/* flicker's blocked CPU: at least (the sum of its bursts), at most (the sum
 * including the pause and resume calls). */
static int64_t flicker_least, flicker_most;
#define FLICKERS 20000

static void burn_until(int64_t ns) {
  while (cpu_ns(CLOCK_THREAD_CPUTIME_ID) < ns && !LOAD(stop))
    for (int i = 0; i < 10000; i++)
      sink = sink * 6364136223846793005ULL + 1;
}

static void pause_timer(worker_t *w, int runs) {
  w->before_pause = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
  cprof__cpu_mask_enter();
  w->pause_misses += cprof__cpu_timer_pause(runs, NULL) != 1; /* checked by main, after the join */
  cprof__cpu_mask_leave();
  w->after_pause = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* What sigmask.c's wrapper does when the program opens SIGPROF: its return
 * address, here, is in blocked_section. */
NOINLINE static void unblock(worker_t *w, int counted) {
  w->before_resume = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
  cprof__cpu_mask_enter();
  cprof__cpu_timer_resume(counted ? __builtin_return_address(0) : NULL);
  cprof__cpu_mask_leave();
  w->after_resume = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
}

NOINLINE static void flicker_section(worker_t *w) {
  pause_timer(w, 1);
  for (int i = 0; i < 50; i++)
    sink = sink * 6364136223846793005ULL + 1;
  unblock(w, 1);
  __asm__ volatile("" ::: "memory");
  flicker_least += w->before_resume - w->after_pause;
  flicker_most += w->after_resume - w->before_pause;
}

NOINLINE static void blocked_section(worker_t *w, int64_t burn_ns) {
  pause_timer(w, 1);
  burn_until(w->after_pause + burn_ns);
  unblock(w, 1);
  __asm__ volatile("" ::: "memory"); /* not a tail call: the return address stays here */
}

static void *run(void *arg) {
  worker_t *w = arg;
  STORE(w->tid, gettid());
  STORE(w->ready, 1);
  while (!LOAD(go))
    usleep(1000);
  if (w == &toggler) {
    blocked_section(w, 200 * 1000000LL);
  } else if (w == &walled) {
    pause_timer(w, 1);
    burn_until(INT64_MAX);
  } else if (w == &flicker) {
    for (int i = 0; i < FLICKERS; i++)
      flicker_section(w);
  } else if (w == &exiter) {
    pthread_setname_np(pthread_self(), "exiter");
    pause_timer(w, 1);
    burn_until(w->after_pause + 100 * 1000000LL);
    w->before_resume = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    cprof__cpu_thread_ending();
    w->after_resume = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    STORE(w->done, 1);
    return NULL;
  } else {
    pause_timer(w, 0); /* as for a sigwait */
    burn_until(w->after_pause + 50 * 1000000LL);
    unblock(w, 0);
  }
  STORE(w->done, 1);
  while (!LOAD(stop))
    usleep(1000);
  return NULL;
}

typedef struct tally {
  int64_t ns;     /* CPU time of the thread's BLOCKED records */
  int records;    /* how many */
  int with_stack; /* of them, with blocked_section's return address after the mark */
  int named;      /* of them, with the name of the thread in the record */
  int timer_samples;
  int64_t undelivered;
} tally_t;

#define NWORKERS 5
static tally_t tallies[NWORKERS];
static worker_t *workers[NWORKERS] = {&toggler, &walled, &waiter, &exiter, &flicker};

static void count(void *arg, const cprof__cpu_sample_t *s) {
  for (int i = 0; i < NWORKERS; i++) {
    if (s->tid != LOAD(workers[i]->tid))
      continue;
    tally_t *t = &tallies[i];
    if (!s->cpu_ns) {
      t->timer_samples += s->periods;
      return;
    }
    if (s->depth >= 1 && s->pcs[0] == CPROF_PC_UNDELIVERED) {
      t->undelivered += s->cpu_ns; /* the timer's, due at a pause and not delivered */
      return;
    }
    CHECK(s->depth >= 1 && s->pcs[0] == CPROF_PC_UNSAMPLED_BLOCKED);
    t->ns += s->cpu_ns;
    t->records++;
    t->named += strcmp(s->name, workers[i]->name) == 0;
    if (s->depth >= 2) {
      cprof__symbolizer_t *sym = cprof__symbolizer_acquire();
      const char *name = cprof__symbolize_name(sym, s->pcs[1] - 1);
      if (name && (strcmp(name, "blocked_section") == 0 || strcmp(name, "flicker_section") == 0))
        t->with_stack++;
      cprof__symbolizer_release(sym);
    }
  }
}

int main(void) {
  for (int i = 0; i < NWORKERS; i++) {
    pthread_create(&workers[i]->th, NULL, run, workers[i]);
    while (!LOAD(workers[i]->ready))
      usleep(1000);
  }
  CHECK_EQ_INT(cprof__cpu_start(100, CPROF_UNWIND_FP), 0);
  STORE(go, 1);
  /* The owner's looks (and counts) while the toggler burns blocked. */
  for (int i = 0; i < 6000 && !(LOAD(toggler.done) && LOAD(waiter.done) && LOAD(exiter.done) &&
                                LOAD(flicker.done));
       i++) {
    usleep(10000);
    cprof__cpu_track_threads();
    cprof__cpu_drain(count, NULL);
  }
  CHECK(LOAD(toggler.done) && LOAD(waiter.done) && LOAD(exiter.done) && LOAD(flicker.done));
  clockid_t walled_clock;
  pthread_getcpuclockid(walled.th, &walled_clock);
  int64_t walled_before_stop = cpu_ns(walled_clock);
  CHECK_EQ_INT(cprof__cpu_stop(count, NULL), 0); /* nothing lost */
  int64_t walled_after_stop = cpu_ns(walled_clock);
  STORE(stop, 1);
  for (int i = 0; i < NWORKERS; i++) {
    pthread_join(workers[i]->th, NULL);
    CHECK_EQ_INT(workers[i]->pause_misses, 0);
  }

  tally_t *t = &tallies[0], *w = &tallies[1], *s = &tallies[2], *e = &tallies[3], *f = &tallies[4];
  fprintf(
      stderr, "toggler: %d records, %d with its stack, %.3f ms (its CPU blocked %.3f..%.3f ms)\n",
      t->records, t->with_stack, t->ns / 1e6, (toggler.before_resume - toggler.after_pause) / 1e6,
      (toggler.after_resume - toggler.before_pause) / 1e6);
  CHECK(t->records >= 1);
  CHECK_EQ_INT(t->with_stack, t->records); /* the owner's counts went to the thread's record */
  CHECK(t->ns >= toggler.before_resume - toggler.after_pause);
  CHECK(t->ns <= toggler.after_resume - toggler.before_pause);

  fprintf(stderr, "walled: %d records, %.3f ms (its CPU blocked %.3f..%.3f ms)\n", w->records,
          w->ns / 1e6, (walled_before_stop - walled.after_pause) / 1e6,
          (walled_after_stop - walled.before_pause) / 1e6);
  CHECK(w->records >= 1);
  CHECK_EQ_INT(w->with_stack, 0);
  CHECK(w->ns >= walled_before_stop - walled.after_pause);
  CHECK(w->ns <= walled_after_stop - walled.before_pause);
  CHECK_EQ_INT(w->timer_samples, 0);

  fprintf(stderr, "waiter: %d records\n", s->records);
  CHECK_EQ_INT(s->records, 0);

  fprintf(stderr, "exiter: %d records, %d named, %.3f ms (its CPU blocked %.3f..%.3f ms)\n",
          e->records, e->named, e->ns / 1e6, (exiter.before_resume - exiter.after_pause) / 1e6,
          (exiter.after_resume - exiter.before_pause) / 1e6);
  CHECK(e->records >= 1);
  CHECK_EQ_INT(e->named, e->records);
  CHECK(e->ns >= exiter.before_resume - exiter.after_pause);
  CHECK(e->ns <= exiter.after_resume - exiter.before_pause);

  /* 100 Hz: a record per 10 ms of blocked time, the last (at the stop)
   * holding what was left and no stack. */
  fprintf(stderr,
          "flicker: %d unblockings, %d records, %d with its stack, %.3f ms (its CPU blocked "
          "%.3f..%.3f ms)\n",
          FLICKERS, f->records, f->with_stack, f->ns / 1e6, flicker_least / 1e6,
          flicker_most / 1e6);
  CHECK(f->records >= 1 && f->records <= flicker_most / 10000000 + 2);
  CHECK(f->with_stack >= f->records - 1);
  CHECK(f->ns >= flicker_least && f->ns <= flicker_most);
  return check_result("test_cpu_unsampled");
}
