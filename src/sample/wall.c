/* The wall-clock sampler (sample/wall.h).
 *
 * Each tick is one all-thread capture with a cache (threads.c): a thread
 * still asleep in the same system call at the same place as at the tick
 * before keeps its stack, so after the first tick a sleeping thread costs
 * one read of /proc/self/task/TID/syscall. Running threads are asked for
 * their stacks with cprof's signal, as for /goroutine; sleeping ones never
 * are, so no call of the program ends early.
 *
 * Each thread of a tick weighs the wall time since the tick before, so a
 * thread's total is the time sampled, however late a tick came. The
 * sampling thread itself is left out (the capture with a cache leaves out
 * its caller): at every tick it is the one running, taking the capture.
 *
 * Regions (cprof_region_begin): while it samples, threads track their open
 * regions, and each thread's innermost goes with its stack of the tick.
 *
 * The budget. The sampling thread's own CPU time (CLOCK_THREAD_CPUTIME_ID)
 * is read around each tick. When recent ticks, at the rate asked, would
 * cost more than the budget (2 % of one core by default), the rate is
 * lowered to what the budget pays for: a process of many threads is
 * sampled less often rather than slowed. The rate in force at the end is
 * the profile's period. */
#include "sample/wall.h"

#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "sample/trace.h"

#define CAPTURE_TIMEOUT_MS 200

static int64_t thread_cpu_ns(void) { return cprof__now_ns(CLOCK_THREAD_CPUTIME_ID); }

/* Puts a thread's innermost open region into its entry of the dump. */
static void put_region(pid_t tid, const char *innermost, int depth, void *ctx) {
  (void)depth;
  cprof__thread_stack_t *t = cprof__threads_dump_find(ctx, tid);
  if (t)
    snprintf(t->region, sizeof t->region, "%s", innermost);
}

#define ASK_EVERY_NS 100000000LL

static int sleep_plainly(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  return 0;
}

int cprof__wall_record(const cprof__wall_opts_t *o, cprof__wall_result_t *res) {
  *res = (cprof__wall_result_t){.hz = o->hz};
  if (o->hz < 1 || o->hz > CPROF_WALL_MAX_HZ || o->duration_ms < 0 || !o->sink)
    return -EINVAL;
  cprof__threads_cache_t *cache = cprof__threads_cache_new();
  if (!cache)
    return -ENOMEM;
  cprof__trace_listen(CPROF__LISTEN_WALL, 1); /* regions are tracked from now */
  int hz = o->hz, err = 0;
  int64_t start = cprof__now_ns(CLOCK_MONOTONIC), end = start + (int64_t)o->duration_ms * 1000000;
  int64_t next = start, last = start - 1000000000LL / hz;
  double recent = 0; /* ns of CPU a tick, lately */
  int64_t asked = start;
  for (;;) {
    int64_t cpu0 = thread_cpu_ns();
    cprof__thread_dump_t d;
    err = cprof__threads_capture_cached(o->how, CAPTURE_TIMEOUT_MS, cache, &d);
    if (err)
      break;
    int64_t now = cprof__now_ns(CLOCK_MONOTONIC), weight = now - last;
    last = now;
    cprof__regions_each(put_region, &d);
    for (int i = 0; i < d.n && !err; i++) {
      err = o->sink(o->arg, &d.v[i], weight);
      res->reused += d.v[i].reused;
    }
    res->threads += d.n;
    cprof__threads_dump_free(&d);
    res->ticks++;
    res->cpu_ns += thread_cpu_ns() - cpu0;
    if (err)
      break;
    /* What a tick costs lately (a moving average; the first tick, which
     * unwinds every thread, fills the cache and does not count), against
     * what the budget pays a second: the rate goes down, and back up to
     * what was asked, to match. */
    int64_t cost = thread_cpu_ns() - cpu0;
    if (res->ticks == 2)
      recent = (double)cost;
    else if (res->ticks > 2)
      recent += 0.2 * ((double)cost - recent);
    if (o->budget > 0 && res->ticks >= 2) {
      double afford = o->budget * 1e9 / (recent > 1 ? recent : 1);
      hz = afford >= o->hz ? o->hz : afford < 1 ? 1 : (int)afford;
    }
    next += 1000000000LL / hz;
    now = cprof__now_ns(CLOCK_MONOTONIC);
    if (next < now) /* late (the machine is busy): no catching up */
      next = now;
    if (next >= end)
      break;
    long ms = (long)((next - now + 999999) / 1000000);
    /* Whether the client went away is asked every ASK_EVERY_NS, not at
     * every tick: the asking (a poll of its socket) was a twentieth of a
     * tick's cost. */
    int ask = o->wait && now - asked >= ASK_EVERY_NS;
    if (ask)
      asked = now;
    if (ms > 0 && (ask ? o->wait(o->ctx, ms) : sleep_plainly(ms)) != 0) {
      err = -ECANCELED;
      break;
    }
  }
  res->hz = hz;
  res->wall_ns = cprof__now_ns(CLOCK_MONOTONIC) - start;
  cprof__trace_listen(CPROF__LISTEN_WALL, 0);
  cprof__threads_cache_free(cache);
  return err;
}
