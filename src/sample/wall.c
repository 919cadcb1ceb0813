/* The wall-clock sampler (sample/wall.h).
 *
 * Each tick is one all-thread capture with a cache that defers (threads.c):
 * a thread still asleep in the same system call at the same place as at
 * the tick before keeps its stack, so after the first tick a sleeping
 * thread costs one read of /proc/self/task/TID/syscall and one of its CPU
 * clock. A running thread, or one that has run since the tick before, is
 * asked for its stack by a timer on its own CPU clock and not waited for:
 * it answers at its next clock tick on a CPU, on its way back to user
 * space, so no call of the program ends early (threads.c).
 *
 * What a tick stands for. A tick stands for the time from it to the next
 * (the last: to the end asked for, which the recording waits for, so the
 * profile covers the seconds asked). That time is split, for each thread,
 * by the CPU time the thread used in it, as the kernel counts it: the time
 * it ran goes to the stack it runs with (the answer to its ask, however
 * many ticks it stands for), the rest to where it waited: where it was
 * seen asleep at the tick, or at the next, or last seen asleep within a
 * second; a thread seen running at both ends that has not been seen asleep
 * for longer waited for a CPU where it runs. So a thread's share of time
 * on a CPU in the profile is the one it would measure itself, whatever the
 * ticks found: a thread woken in a call but not yet back reads as running
 * in /proc, and a sampler that itself waits for a CPU looks less often
 * while the threads it looks at compute (issue 28 saw a 3 ms / 7 ms thread
 * 74 % asleep where it measured 68-70 % off a CPU). The sampling thread
 * itself is left out (the capture with a cache leaves out its caller).
 *
 * Regions (cprof_region_begin): while it samples, threads track their open
 * regions; each thread's innermost at a tick goes with what the tick saw
 * of it (the time it ran, when it was seen running; the time it waited,
 * when it was seen asleep).
 *
 * The budget. The sampling thread's own CPU time (CLOCK_THREAD_CPUTIME_ID)
 * is read around each tick. The next tick comes when the budget (2 % of
 * one core by default) pays for all the sampling so far and for one more
 * tick at what ticks cost lately, and no sooner than the rate asked: a
 * process of many threads is sampled less often rather than slowed. The
 * first tick, which unwinds every thread, is paid for evenly over the
 * whole profile, so that the ticks after it come at the rate asked, not
 * after a pause. The average rate is the profile's period. */
#include "sample/wall.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/hash.h"
#include "sample/trace.h"

#define CAPTURE_TIMEOUT_MS 200

static int64_t thread_cpu_ns(void) { return cprof__now_ns(CLOCK_THREAD_CPUTIME_ID); }

/* The next of a sequence of uniform 64-bit draws: a Weyl sequence through
 * the stack tables' finalizer (core/hash.h). */
static uint64_t draw(uint64_t *state) {
  return cprof__hash_avalanche(*state += UINT64_C(0x9e3779b97f4a7c15));
}

/* Puts a thread's innermost open region into its entry of the dump. */
static void put_region(pid_t tid, const char *innermost, int depth, void *ctx) {
  (void)depth;
  cprof__thread_stack_t *t = cprof__threads_dump_find(ctx, tid);
  if (t)
    snprintf(t->region, sizeof t->region, "%s", innermost);
}

#define ASK_EVERY_NS 100000000LL
/* How long the end waits for the last asks (threads.h): a thread on a CPU
 * answers within a clock tick. */
#define SETTLE_MS 50
/* A running thread's time off a CPU goes to where it last waited in a
 * call if that was this recent (emit). */
#define WAITED_THERE_NS 1000000000LL

static int sleep_plainly_ns(int64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  nanosleep(&ts, NULL);
  return 0;
}

/* Running threads' samples waiting for their stack (a cache that defers,
 * threads.h): one record per thread and labels, the ticks it stands for
 * summed. */
typedef struct waiting {
  cprof__thread_stack_t t; /* pcs unused */
  int64_t count, weight_ns;
  int64_t from, to; /* the time the ticks summed stand for (CLOCK_MONOTONIC): its span */
  /* Waiting, not for the stack it runs with, but for the place it waits
   * in: time off a CPU of a thread seen running, and not seen asleep for
   * a while, until it is; since (CLOCK_MONOTONIC). */
  int place;
  int64_t since;
} waiting_t;

typedef struct recorder {
  const cprof__wall_opts_t *o;
  waiting_t *w;
  int n, cap;
} recorder_t;

static int same_sample(const cprof__thread_stack_t *a, const cprof__thread_stack_t *b) {
  if (a->tid != b->tid || a->labels.n != b->labels.n || strcmp(a->region, b->region) != 0 ||
      strcmp(a->name, b->name) != 0)
    return 0;
  for (int j = 0; j < a->labels.n; j++)
    if (strcmp(a->labels.key[j], b->labels.key[j]) != 0 ||
        strcmp(a->labels.value[j], b->labels.value[j]) != 0)
      return 0;
  return 1;
}

static int wait_for(recorder_t *r, const cprof__thread_stack_t *t, int place, int64_t since,
                    int64_t count, int64_t weight, int64_t from, int64_t to) {
  for (int i = r->n - 1; i >= 0; i--) {
    if (r->w[i].t.tid != t->tid)
      continue;
    if (r->w[i].place == place && same_sample(&r->w[i].t, t)) {
      r->w[i].count += count;
      r->w[i].weight_ns += weight;
      if (from < r->w[i].from)
        r->w[i].from = from;
      if (to > r->w[i].to)
        r->w[i].to = to;
      return 0;
    }
    break;
  }
  if (r->n == r->cap) {
    int cap = r->cap ? r->cap * 2 : 64;
    waiting_t *w = realloc(r->w, (size_t)cap * sizeof *w);
    if (!w)
      return -ENOMEM;
    r->w = w;
    r->cap = cap;
  }
  waiting_t *x = &r->w[r->n++];
  x->t = *t;
  x->t.pcs = NULL;
  x->t.depth = 0;
  x->t.answer_pcs = NULL;
  x->count = count;
  x->weight_ns = weight;
  x->from = from;
  x->to = to;
  x->place = place;
  x->since = since;
  return 0;
}

static int wait_for_stack(recorder_t *r, const cprof__thread_stack_t *t, int64_t count,
                          int64_t weight, int64_t from, int64_t to) {
  return wait_for(r, t, 0, 0, count, weight, from, to);
}

/* The waits of threads seen asleep in d go where they are; those not
 * placed since before `stale` (every one: INT64_MAX) wait for the stack
 * the thread runs with instead: it waited for a CPU where it ran. */
static int place_waits(recorder_t *r, const cprof__thread_dump_t *d, int64_t stale) {
  int err = 0, kept = 0;
  for (int i = 0; i < r->n; i++) {
    waiting_t *x = &r->w[i];
    const cprof__thread_stack_t *q = x->place && d ? cprof__threads_dump_find(d, x->t.tid) : NULL;
    if (x->place && q && q->status == CPROF_THREAD_OK && q->state == 'S' && q->depth > 0 && !err) {
      x->t.status = CPROF_THREAD_OK;
      x->t.state = 'S';
      x->t.pcs = q->pcs;
      x->t.depth = q->depth;
      x->t.syscall_nr = q->syscall_nr;
      memcpy(x->t.region, q->region, sizeof x->t.region);
      err = r->o->sink(r->o->arg, &x->t, x->count, x->weight_ns, x->from, x->to);
      continue;
    }
    if (x->place && x->since < stale) {
      x->place = 0;
      x->t.state = 'R';
      x->t.syscall_nr = -1;
    }
    r->w[kept++] = *x;
  }
  r->n = kept;
  return err;
}

/* Hands the samples waiting for thread tid's stack to the sink: with the
 * stack it answered with (pcs, depth), or, where it gave none (depth < 0),
 * as not known. tid 0: every thread's. */
static int answer(recorder_t *r, pid_t tid, const uintptr_t *pcs, int depth) {
  int err = 0, kept = 0;
  for (int i = 0; i < r->n; i++) {
    waiting_t *x = &r->w[i];
    if ((tid && x->t.tid != tid) || x->place) {
      r->w[kept++] = *x;
      continue;
    }
    if (err)
      continue;
    x->t.status = depth >= 0 ? CPROF_THREAD_OK : CPROF_THREAD_TIMEOUT;
    x->t.pcs = (uintptr_t *)pcs;
    x->t.depth = depth >= 0 ? depth : 0;
    err = r->o->sink(r->o->arg, &x->t, x->count, x->weight_ns, x->from, x->to);
  }
  r->n = kept;
  return err;
}

/* Hands t's share of a tick to the sink, or, when its stack is still to
 * come (`later`), to the thread's samples waiting for it. */
static int give(recorder_t *r, const cprof__thread_stack_t *t, int later, int64_t count,
                int64_t weight, int64_t from, int64_t to) {
  if (weight <= 0 && count == 0)
    return 0;
  if (later)
    return wait_for_stack(r, t, count, weight, from, to);
  return r->o->sink(r->o->arg, t, count, weight, from, to);
}

/* One tick's dump, each thread standing for weight ns, split by its CPU
 * time over that time (next: the capture after, or the end's, with each
 * thread's CPU time then): the time it ran goes to its running stack,
 * which is the answer to an ask (threads.h), and the rest to where it
 * waited: where it was seen asleep, or, if it was seen running (woken in a
 * call and not yet back, or waiting its turn for a CPU), where it was
 * last seen asleep. So a tick found by a sampler that itself had to wait
 * for a CPU (when the thread it looks at runs, more often than when it
 * sleeps) still gives each thread's time on and off a CPU as the kernel
 * counts it. */
static int emit(recorder_t *r, const cprof__thread_dump_t *d, int64_t d_at,
                const cprof__thread_dump_t *next, int64_t weight) {
  int err = 0;
  int64_t to = d_at + weight; /* the time this tick stands for: [d_at, to] */
  for (int i = 0; i < d->n && !err; i++) {
    const cprof__thread_stack_t *p = &d->v[i];
    const cprof__thread_stack_t *q = next ? cprof__threads_dump_find(next, p->tid) : NULL;
    int deferred = p->status == CPROF_THREAD_DEFERRED;
    int asleep = p->status == CPROF_THREAD_OK && p->state == 'S';
    int64_t ran = q && q->cpu_ns >= 0 && p->cpu_ns >= 0 ? q->cpu_ns - p->cpu_ns
                  : asleep                              ? 0
                                                        : weight;
    if (ran < 0)
      ran = 0;
    if (ran > weight)
      ran = weight;
    int64_t waited = weight - ran;
    /* Running: its stack is the answer to come, where it was asked (a
     * thread that cannot be asked keeps what its entry says). */
    cprof__thread_stack_t running = *p;
    running.state = 'R';
    running.syscall_nr = -1;
    if (asleep)
      running.region[0] = '\0'; /* the region it ran in is not known */
    int later = deferred || asleep;
    /* Waiting: where it was seen asleep at the end of the tick's time, or
     * last seen asleep, within a second (a thread woken in a call and not
     * yet back, or waiting its turn for a CPU between its waits); one not
     * seen asleep for longer waited for a CPU where it runs. */
    cprof__thread_stack_t waiting = *p;
    int wait_later = 0;
    if (!asleep && q && q->status == CPROF_THREAD_OK && q->state == 'S' && q->depth > 0) {
      waiting.status = CPROF_THREAD_OK;
      waiting.state = 'S';
      waiting.pcs = q->pcs;
      waiting.depth = q->depth;
      waiting.syscall_nr = q->syscall_nr;
      memcpy(waiting.region, q->region, sizeof waiting.region);
    } else if (!asleep && p->sleep_depth > 0 && d_at - p->sleep_ns < WAITED_THERE_NS) {
      waiting.status = CPROF_THREAD_OK;
      waiting.state = 'S';
      waiting.pcs = p->sleep_pcs;
      waiting.depth = p->sleep_depth;
      waiting.syscall_nr = p->sleep_nr;
      waiting.region[0] = '\0'; /* the region it waited in is not known */
    } else if (!asleep) {
      waiting = running;
      wait_later = 2; /* where it is next seen asleep (place_waits) */
    }
    if (ran > 0 || !asleep)
      err = give(r, &running, later, ran >= waited, ran, d_at, to);
    if (!err && waited > 0 && wait_later == 2) {
      err = wait_for(r, &waiting, 1, d_at, waited > ran, waited, d_at, to);
    } else if (!err && waited > 0) {
      err = give(r, &waiting, wait_later, waited > ran, waited, d_at, to);
    }
  }
  return err;
}

/* The answers a dump carries to asks of ticks before. */
static int take_answers(recorder_t *r, const cprof__thread_dump_t *d) {
  int err = 0;
  for (int i = 0; i < d->n && !err; i++)
    if (d->v[i].answered)
      err = answer(r, d->v[i].tid, d->v[i].answer_pcs,
                   d->v[i].answered > 0 ? d->v[i].answer_depth : -1);
  return err;
}

/* Sleeps until `until` (CLOCK_MONOTONIC ns), asking o->wait whether the
 * client went away every ASK_EVERY_NS, and giving up the asks out when the
 * program wants the capture signal (a program's sigaction waits for them):
 * in slices of ASK_EVERY_NS at most. Returns non-zero when the client went
 * away. */
static int sleep_until(const cprof__wall_opts_t *o, cprof__threads_cache_t *cache, int64_t until,
                       int64_t *asked) {
  for (;;) {
    cprof__threads_cache_yield(cache);
    int64_t now = cprof__now_ns(CLOCK_MONOTONIC);
    if (now >= until)
      return 0;
    int64_t slice = until - now < ASK_EVERY_NS ? until - now : ASK_EVERY_NS;
    /* Whether the client went away is asked every ASK_EVERY_NS, not at
     * every tick: the asking (a poll of its socket) was a twentieth of a
     * tick's cost. */
    int ask = o->wait && now - *asked >= ASK_EVERY_NS;
    if (ask)
      *asked = now;
    if (ask ? o->wait(o->ctx, (long)((slice + 999999) / 1000000)) != 0
            : sleep_plainly_ns(slice) != 0)
      return -1;
  }
}

/* One tick at `at`: every thread's stack, with the region it is in, and
 * the tick before (*prev, at *prev_at) emitted as standing for the time
 * from it to this one, so that how long a tick took, which depends on what
 * it found (a running thread costs an ask), weighs nothing; the last
 * stands for the time to the end. This tick becomes *prev. */
static int tick(recorder_t *r, cprof__threads_cache_t *cache, cprof__thread_dump_t *prev,
                int64_t *prev_at, int64_t at, cprof__wall_result_t *res) {
  cprof__thread_dump_t d;
  int err = cprof__threads_capture_cached(r->o->how, CAPTURE_TIMEOUT_MS, cache, &d);
  if (err)
    return err;
  cprof__regions_each(put_region, &d);
  if (res->ticks > 0)
    err = emit(r, prev, *prev_at, &d, at - *prev_at);
  if (!err)
    err = place_waits(r, &d, at - WAITED_THERE_NS);
  if (!err)
    err = take_answers(r, &d);
  cprof__threads_dump_free(prev);
  *prev = d;
  *prev_at = at;
  for (int i = 0; i < d.n; i++)
    res->reused += d.v[i].reused;
  res->threads += d.n;
  res->ticks++;
  return err;
}

/* What the budget goes by: the profile's start and end (CLOCK_MONOTONIC
 * ns), the sampling thread's CPU time at the start, what the first tick
 * cost, and what the ticks after it cost and took lately. */
typedef struct pace {
  int64_t start, end, cpu_start;
  int64_t first; /* ns of CPU */
  double recent; /* ns of CPU a tick, a moving average */
  double took;   /* ns a tick lasted, a moving average */
} pace_t;

/* Notes what tick number `ticks` (from 1) cost and how long it lasted:
 * one tick, which depends on what it found, moves the averages but
 * little. */
static void pace_note(pace_t *p, int64_t ticks, int64_t cost, int64_t took) {
  if (ticks == 1) {
    p->first = cost;
  } else if (ticks == 2) {
    p->recent = (double)cost;
    p->took = (double)took;
  } else {
    p->recent += 0.2 * ((double)cost - p->recent);
    p->took += 0.2 * ((double)took - p->took);
  }
}

/* When the tick after the one at `at` comes: no sooner than the budget
 * allows, and not in the past. */
static int64_t next_tick(const cprof__wall_opts_t *o, const pace_t *p, int64_t at, int64_t period,
                         uint64_t *seed) {
  /* Each interval drawn uniformly from half to one and a half periods:
   * ticks at a fixed period lock onto a thread whose cycle divides it (a
   * loop of 3 ms on, 7 ms off under 50 Hz ticks is found at the same
   * point of its cycle every time, and then never seen asleep, so that
   * its time off a CPU had nowhere to go but where it runs: 54 % of its
   * time in compute_part where it computed 30 %, in 2 runs of 5). */
  int64_t next = at + period / 2 + (int64_t)(draw(seed) % (uint64_t)period);
  if (o->budget > 0) {
    /* The time by which the budget pays for the ticks so far and the
     * next, at what ticks cost lately, and for the first tick's share of
     * the profile's time so far: the first, which unwinds every thread,
     * is paid for over the whole profile, not at once (paid at once, it
     * kept the next ticks 350, 144 and 118 ms apart, and a thread's
     * running over those went to one stack each). */
    double rate = o->budget - (double)p->first / (double)(p->end - p->start);
    double owed = (double)(thread_cpu_ns() - p->cpu_start - p->first) + p->recent;
    if (rate <= 0)
      return p->end;
    int64_t afford = (int64_t)(p->recent / o->budget), paid = (int64_t)(owed / rate);
    if (at + afford > next)
      next = at + afford;
    if (p->start + paid > next)
      next = p->start + paid;
  }
  int64_t now = cprof__now_ns(CLOCK_MONOTONIC);
  if (next < now) /* late (the machine is busy): no catching up */
    next = now;
  return next;
}

int cprof__wall_record(const cprof__wall_opts_t *o, cprof__wall_result_t *res) {
  *res = (cprof__wall_result_t){.hz = o->hz};
  if (o->hz < 1 || o->hz > CPROF_WALL_MAX_HZ || o->duration_ms < 0 || !o->sink)
    return -EINVAL;
  cprof__threads_cache_t *cache = cprof__threads_cache_new();
  if (!cache)
    return -ENOMEM;
  cprof__threads_cache_defer(cache);
  recorder_t r = {.o = o};
  cprof__trace_listen(CPROF__LISTEN_WALL, 1); /* regions are tracked from now */
  int err = 0;
  int64_t start = cprof__now_ns(CLOCK_MONOTONIC), end = start + (int64_t)o->duration_ms * 1000000;
  if (o->until)
    end = o->until(o->arg, 0);
  pace_t pace = {
      .start = start, .end = end > start ? end : start + 1, .cpu_start = thread_cpu_ns()};
  int64_t period = 1000000000LL / o->hz, asked = start;
  uint64_t seed = (uint64_t)start ^ (uint64_t)(uintptr_t)&seed;
  cprof__thread_dump_t prev = {0};
  int64_t prev_at = start, at = start;
  for (;;) {
    int64_t cpu0 = thread_cpu_ns();
    err = tick(&r, cache, &prev, &prev_at, at, res);
    if (err)
      break;
    int64_t cpu1 = thread_cpu_ns();
    pace_note(&pace, res->ticks, cpu1 - cpu0, cprof__now_ns(CLOCK_MONOTONIC) - at);
    if (o->on_tick) {
      int64_t pending = INT64_MAX;
      for (int i = 0; i < r.n; i++)
        if (r.w[i].from < pending)
          pending = r.w[i].from;
      o->on_tick(o->arg, at, pending, res, cpu1 - pace.cpu_start);
    }
    if (o->until && (end = o->until(o->arg, 0)) > start)
      pace.end = end; /* readers came: a later end */
    int64_t next = next_tick(o, &pace, at, period, &seed);
    /* No tick begun that would likely end past the end: the profile
     * would stand for more than the time asked (with 1,000 threads, a
     * tick begun just before the end made a 6 s profile's Duration 6.14 s).
     * With until, the end is settled by asking it with this time: it
     * stays the end from then on, unless a reader came meanwhile. */
    int64_t last = next + 2 * (int64_t)pace.took;
    if (last >= end && o->until && (end = o->until(o->arg, last)) > start)
      pace.end = end;
    if (last >= end)
      break;
    if (sleep_until(o, cache, next, &asked) != 0) {
      err = -ECANCELED;
      break;
    }
    at = cprof__now_ns(CLOCK_MONOTONIC);
  }
  /* The last tick stands for the time to the end asked for. */
  if (!err && res->ticks > 0 && sleep_until(o, cache, end, &asked) != 0)
    err = -ECANCELED;
  int64_t stop = cprof__now_ns(CLOCK_MONOTONIC);
  /* Each thread's CPU time at the end, and the asks still out: a thread
   * on a CPU answers within a clock tick. */
  cprof__thread_dump_t last = {0};
  int settled = cprof__threads_cache_settle(cache, SETTLE_MS, &last) == 0;
  if (!err && res->ticks > 0)
    err = emit(&r, &prev, at, settled ? &last : NULL, (stop > end ? stop : end) - at);
  cprof__threads_dump_free(&prev);
  if (!err)
    err = place_waits(&r, NULL, INT64_MAX);
  if (!err && settled)
    err = take_answers(&r, &last);
  cprof__threads_dump_free(&last);
  if (!err)
    err = answer(&r, 0, NULL, -1); /* never answered: not known */
  free(r.w);
  res->cpu_ns = thread_cpu_ns() - pace.cpu_start;
  res->wall_ns = (stop > end ? stop : end) - start;
  /* The rate the profile was sampled at, on average. */
  int64_t hz = res->wall_ns > 0 ? (res->ticks * 1000000000LL + res->wall_ns / 2) / res->wall_ns : 0;
  res->hz = hz < 1 ? 1 : hz > o->hz ? o->hz : (int)hz;
  cprof__trace_listen(CPROF__LISTEN_WALL, 0);
  cprof__threads_cache_free(cache);
  return err;
}
