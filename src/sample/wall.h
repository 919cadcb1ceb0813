/* The wall-clock sampler, behind /debug/pprof/wall: every thread's stack,
 * running or waiting, hz times a second, as Go's fgprof samples every
 * goroutine. A sampler: it hands each thread of each tick to a sink, with
 * the wall time the tick stands for; the registry makes the profile
 * (registry/wall_profile.c). */
#ifndef CPROF_SAMPLE_WALL_H
#define CPROF_SAMPLE_WALL_H

#include <stdint.h>

#include "sample/threads.h"
#include "unwind/unwind.h"

#define CPROF_WALL_DEFAULT_HZ 50
#define CPROF_WALL_MAX_HZ 250
#define CPROF_WALL_DEFAULT_BUDGET 0.02 /* of one core */

struct cprof__wall_result;

typedef struct cprof__wall_opts {
  int hz;           /* ticks a second asked for, 1..CPROF_WALL_MAX_HZ */
  long duration_ms; /* how long to sample */
  double budget;    /* the most of one core the sampling thread may use, e.g. 0.02 */
  cprof__unwinder_t how;
  /* Sleeps ms, returning non-zero when the wait was cut short (the client
   * went away); called at most every 100 ms, the ticks between sleep
   * plainly; NULL sleeps plainly. */
  int (*wait)(void *ctx, long ms);
  void *ctx;
  /* Called for every thread of every tick, on the sampling thread: t as
   * cprof__threads_capture gives it, standing for `count` ticks (a running
   * thread's ticks until it answered are handed over at once) and
   * weight_ns of wall time: each tick the time from it to the next, the
   * last the time to the end; that time lies within [from_ns, to_ns]
   * (CLOCK_MONOTONIC: the tick's, or the span of the ticks summed), so
   * that a consumer can split it between windows of its own. Non-zero
   * stops the sampling with that error. */
  int (*sink)(void *arg, const cprof__thread_stack_t *t, int64_t count, int64_t weight_ns,
              int64_t from_ns, int64_t to_ns);
  void *arg;
  /* Optional, for a recording whose end moves (registry/wall_profile.c:
   * readers come and go): replaces duration_ms. Returns the end
   * (CLOCK_MONOTONIC ns) as it stands; with last > 0, the sampler will
   * stop once last is past that end, and the end it returns then must not
   * move again if it is before last. Called with arg, on the sampling
   * thread, after each tick. */
  int64_t (*until)(void *arg, int64_t last);
  /* Optional: called with arg after each tick, taken at `at`, once every
   * interval up to `at` has gone to the sink but those of the samples
   * still waiting for a stack or a place, the earliest of which begins at
   * `pending` (INT64_MAX: none); with the figures so far and the sampling
   * thread's CPU time since the start. */
  void (*on_tick)(void *arg, int64_t at, int64_t pending, const struct cprof__wall_result *res,
                  int64_t cpu_ns);
} cprof__wall_opts_t;

typedef struct cprof__wall_result {
  int hz;          /* the rate sampled at on average: hz, or lower to keep the budget */
  long ticks;      /* captures made */
  long reused;     /* thread stacks taken from the last capture, not unwound again */
  long threads;    /* thread stacks in all */
  int64_t cpu_ns;  /* the sampling thread's CPU time */
  int64_t wall_ns; /* from the first tick to the end: the duration asked, or more */
} cprof__wall_result_t;

/* Samples for opts->duration_ms on the calling thread, and returns no
 * sooner. Threads asleep in the kernel are unwound from outside and never
 * signalled (threads.c); a thread asleep where it was at the tick before
 * keeps its stack from then; a running thread is asked without waiting
 * for it (cprof__threads_cache_defer), and its ticks get the stack it
 * answers with. The next tick comes when the sampling thread's CPU time
 * so far is within the budget, so that it stays there. 0, -ECANCELED when
 * the wait was cut short, or the sink's or the capture's error. */
int cprof__wall_record(const cprof__wall_opts_t *opts, cprof__wall_result_t *res);

#endif
