/* The wall-clock profile (registry/wall_profile.h). Identical stacks with
 * identical labels merge in the builder, so its size goes with the
 * program's distinct stacks, not with the ticks. */
#include "registry/wall_profile.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/fds.h"
#include "profile/builder.h"
#include "registry/builtin.h"
#include "core/guard.h"
#include "sample/threads.h"

/* The calls threads wait in, by the names strace gives them. */
static const struct {
  long nr;
  const char *name;
} calls[] = {
#define CALL(x)                                                                                    \
  { SYS_##x, #x }
    CALL(read),          CALL(write),           CALL(pread64),         CALL(pwrite64),
    CALL(readv),         CALL(writev),          CALL(openat),          CALL(close),
    CALL(ppoll),         CALL(pselect6),        CALL(epoll_pwait),     CALL(futex),
    CALL(nanosleep),     CALL(clock_nanosleep), CALL(wait4),           CALL(waitid),
    CALL(accept4),       CALL(connect),         CALL(recvfrom),        CALL(recvmsg),
    CALL(recvmmsg),      CALL(sendto),          CALL(sendmsg),         CALL(rt_sigtimedwait),
    CALL(rt_sigsuspend), CALL(fsync),           CALL(fdatasync),       CALL(flock),
    CALL(io_getevents),  CALL(io_uring_enter),  CALL(sched_yield),     CALL(getrandom),
    CALL(msgrcv),        CALL(semtimedop),      CALL(mq_timedreceive), CALL(splice),
#ifdef SYS_poll
    CALL(poll),          CALL(select),          CALL(epoll_wait),      CALL(accept),
    CALL(pause),
#endif
#ifdef SYS_epoll_pwait2
    CALL(epoll_pwait2),
#endif
#undef CALL
};

const char *cprof__syscall_name(long nr, char *buf, size_t len) {
  for (size_t i = 0; i < sizeof calls / sizeof *calls; i++)
    if (calls[i].nr == nr)
      return calls[i].name;
  snprintf(buf, len, "syscall %ld", nr);
  return buf;
}

/* ---- One recording, many readers ----
 *
 * As the CPU profile's (registry/cpu.h): one sampler thread ("cprof-wall"),
 * started with the first reader and ended after the last, samples for all
 * the readers open, each with a profile builder and a window of its own.
 * The sampler says what time each sample stands for (sample/wall.h:
 * from_ns, to_ns), and each reader gets the part of it inside its window,
 * so a reader's threads add up to its own seconds. A reader stays until
 * the sampler has handed out everything up to its end (the tick after
 * it, and the samples still waiting then for a stack or a place). The
 * sampler's end is the latest reader's: a reader that comes while it runs
 * moves it on; once the sampler has settled its end (closing), a reader
 * that comes starts the next recording, the one closing finishing for its
 * own readers meanwhile. The rate and the budget are the first reader's:
 * an explicit other rate is refused (-ERANGE), as the CPU's. */
#define MAX_READERS 16
#define WAIT_SLICE_MS 20
/* How long a reader waits past its end for the sampler's tick after it. */
#define SETTLE_NS 3000000000LL

typedef struct wall_reader wall_reader_t;

typedef struct wall_rec {
  int closing; /* its end is settled: no reader joins it any more */
  int hz;
  int n;
  wall_reader_t *readers[MAX_READERS];
  int64_t through;          /* every interval before this has been handed out */
  long threads, reused;     /* the sampler's figures at its last tick */
  int64_t cpu_ns;           /* its CPU time at its last tick */
  cprof__wall_opts_t o;     /* the sampler's: arg is this */
  pthread_t thread;
} wall_rec_t;

struct wall_reader {
  wall_rec_t *rec;
  cprof__builder_t *b;
  int64_t start, end; /* CLOCK_MONOTONIC: its window */
  int failed;
  long ticks, threads, reused; /* the sampler's ticks inside the window */
  int64_t cpu_ns;
};

/* Guards every recording, and `current`, the one a reader joins. */
static pthread_mutex_t w_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t w_cond;
static wall_rec_t *current;
static pthread_once_t w_once = PTHREAD_ONCE_INIT;

static void atfork_prepare(void) { pthread_mutex_lock(&w_lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&w_lock); }
static void atfork_child(void) {
  /* The samplers stayed in the parent, and so did the readers. */
  pthread_mutex_unlock(&w_lock);
  current = NULL;
}

static void init_once(void) {
  cprof__cond_init_monotonic(&w_cond);
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Under w_lock: no reader joins rec from now. */
static void close_locked(wall_rec_t *rec) {
  rec->closing = 1;
  if (current == rec)
    current = NULL;
}

static int add_labelled(cprof__builder_t *b, const cprof__thread_stack_t *t, int64_t count,
                        int64_t weight_ns) {
  char call[32];
  const char *state = t->state == 'R' ? "running" : t->state == '?' ? "unknown" : "sleeping";
  cprof__label_t labels[4 + CPROF_MAX_LABELS] = {{.key = "thread", .str = t->name},
                                                 {.key = "state", .str = state}};
  int n = 2;
  if (t->region[0])
    labels[n++] = (cprof__label_t){.key = "region", .str = t->region};
  if (t->syscall_nr >= 0 && t->state != 'R')
    labels[n++] = (cprof__label_t){.key = "syscall",
                                   .str = cprof__syscall_name(t->syscall_nr, call, sizeof call)};
  for (int j = 0; j < t->labels.n; j++)
    labels[n++] = (cprof__label_t){.key = t->labels.key[j], .str = t->labels.value[j]};
  int64_t values[2] = {count, weight_ns};
  if (t->status == CPROF_THREAD_OK)
    return cprof__builder_add(b, t->pcs, t->depth, values, labels, n);
  /* A running thread asked for its stack that gave none: it did not run
   * on a clock tick within a second, or before the end. */
  return cprof__builder_add_pseudo(b,
                                   t->status == CPROF_THREAD_TIMEOUT
                                       ? "[running: no stack: it did not answer]"
                                       : "[stack not known]",
                                   values, labels, n);
}

/* The sampler's sink: each reader gets the part of [from, to] inside its
 * window, and the ticks in proportion. */
static int fan_out(void *arg, const cprof__thread_stack_t *t, int64_t count, int64_t weight_ns,
                   int64_t from, int64_t to) {
  wall_rec_t *rec = arg;
  pthread_mutex_lock(&w_lock);
  for (int i = 0; i < rec->n; i++) {
    wall_reader_t *r = rec->readers[i];
    int64_t lo = from > r->start ? from : r->start, hi = to < r->end ? to : r->end;
    int64_t c = count, v = weight_ns;
    if (to > from) {
      if (hi <= lo)
        continue;
      double part = (double)(hi - lo) / (double)(to - from);
      c = (int64_t)((double)count * part + 0.5);
      v = (int64_t)((double)weight_ns * part + 0.5);
    } else if (from < r->start || from >= r->end) {
      continue;
    }
    if ((c || v) && add_labelled(r->b, t, c, v) != 0)
      r->failed = 1;
  }
  pthread_mutex_unlock(&w_lock);
  return 0;
}

static void on_tick(void *arg, int64_t at, int64_t pending, const cprof__wall_result_t *res,
                    int64_t cpu_ns) {
  wall_rec_t *rec = arg;
  pthread_mutex_lock(&w_lock);
  for (int i = 0; i < rec->n; i++) {
    wall_reader_t *r = rec->readers[i];
    if (at < r->start || at >= r->end)
      continue;
    r->ticks++;
    r->threads += res->threads - rec->threads;
    r->reused += res->reused - rec->reused;
    r->cpu_ns += cpu_ns - rec->cpu_ns;
  }
  rec->threads = res->threads;
  rec->reused = res->reused;
  rec->cpu_ns = cpu_ns;
  rec->through = pending < at ? pending : at;
  pthread_cond_broadcast(&w_cond);
  pthread_mutex_unlock(&w_lock);
}

/* The latest reader's end; with last, settled once last is past it. */
static int64_t until(void *arg, int64_t last) {
  wall_rec_t *rec = arg;
  pthread_mutex_lock(&w_lock);
  int64_t end = 0;
  for (int i = 0; i < rec->n; i++)
    if (rec->readers[i]->end > end)
      end = rec->readers[i]->end;
  if (!rec->n) /* every reader went away early: end now */
    end = cprof__now_ns(CLOCK_MONOTONIC);
  if (last && last >= end)
    close_locked(rec);
  pthread_mutex_unlock(&w_lock);
  return end;
}

/* The sampler's waits: cut short once no reader is left. */
static int sampler_wait(void *ctx, long ms) {
  wall_rec_t *rec = ctx;
  for (;;) {
    pthread_mutex_lock(&w_lock);
    int gone = rec->n == 0;
    pthread_mutex_unlock(&w_lock);
    if (gone)
      return -1;
    if (ms <= 0)
      return 0;
    long slice = ms < WAIT_SLICE_MS ? ms : WAIT_SLICE_MS;
    struct timespec ts = {0, slice * 1000000L};
    nanosleep(&ts, NULL);
    ms -= slice;
  }
}

static void *sampler(void *arg) {
  wall_rec_t *rec = arg;
  pthread_setname_np(pthread_self(), "cprof-wall");
  /* The sampling keeps /proc files open: not in the program's descriptor
   * table (a thread made on one of the program's threads shares it). */
  int err = cprof__fds_in_own_table() ? 0 : cprof__fds_unshare();
  cprof__wall_result_t res = {0};
  if (!err)
    cprof__wall_record(&rec->o, &res); /* an error ends it early: its readers get what came */
  pthread_mutex_lock(&w_lock);
  close_locked(rec);
  rec->through = INT64_MAX;
  pthread_cond_broadcast(&w_cond);
  pthread_mutex_unlock(&w_lock);
  return NULL;
}

/* Opens reader r for o's duration from now: joins the running recording
 * or starts one. 0, -ERANGE (*running: its rate), -EUSERS, -ENOMEM or
 * pthread_create's error. */
static int reader_open(const cprof__wall_opts_t *o, int flags, wall_reader_t *r, int *running) {
  pthread_once(&w_once, init_once);
  wall_rec_t *fresh = calloc(1, sizeof *fresh);
  if (!fresh)
    return -ENOMEM;
  pthread_mutex_lock(&w_lock);
  wall_rec_t *rec = current;
  int err = 0;
  if (rec) {
    *running = rec->hz;
    if ((flags & CPROF_WALL_EXPLICIT_HZ) && o->hz != rec->hz)
      err = -ERANGE;
    else if (rec->n == MAX_READERS)
      err = -EUSERS;
  } else {
    rec = fresh;
    fresh = NULL;
    rec->hz = o->hz;
    rec->o = (cprof__wall_opts_t){.hz = o->hz,
                                  .duration_ms = o->duration_ms,
                                  .budget = o->budget,
                                  .how = o->how,
                                  .wait = sampler_wait,
                                  .ctx = rec,
                                  .sink = fan_out,
                                  .arg = rec,
                                  .until = until,
                                  .on_tick = on_tick};
  }
  if (!err) {
    r->rec = rec;
    r->start = cprof__now_ns(CLOCK_MONOTONIC);
    r->end = r->start + (int64_t)o->duration_ms * 1000000;
    rec->readers[rec->n++] = r;
  }
  if (!err && !fresh && rec != current) {
    /* Made as cprof's own: every signal blocked, nothing sampled. It waits
     * for w_lock before it looks at rec. */
    cprof__guard_enter();
    err = -pthread_create(&rec->thread, NULL, sampler, rec);
    cprof__guard_leave();
    if (err)
      free(rec);
    else
      current = rec;
  }
  pthread_mutex_unlock(&w_lock);
  free(fresh);
  return err;
}

/* Closes r: after the sampler handed out its window (unless cancelled),
 * or it ended. The last reader of a recording joins its sampler and frees
 * it: no reader joins it from then on. */
static void reader_close(wall_reader_t *r, int cancelled) {
  wall_rec_t *rec = r->rec;
  pthread_mutex_lock(&w_lock);
  if (!cancelled) {
    struct timespec until = cprof__deadline_ms(CLOCK_MONOTONIC, SETTLE_NS / 1000000);
    while (rec->through < r->end && pthread_cond_timedwait(&w_cond, &w_lock, &until) == 0)
      ;
  }
  for (int i = 0; i < rec->n; i++)
    if (rec->readers[i] == r) {
      rec->readers[i] = rec->readers[--rec->n];
      break;
    }
  int last = rec->n == 0;
  if (last)
    close_locked(rec);
  pthread_mutex_unlock(&w_lock);
  if (last) {
    pthread_join(rec->thread, NULL); /* within a wait slice: it has no reader */
    free(rec);
  }
}

static int wait_plainly(void *ctx, long ms) {
  (void)ctx;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  return 0;
}

int cprof__wall_profile_take(const cprof__wall_opts_t *o, int flags, cprof__buf_t *out,
                             cprof__wall_result_t *res) {
  *res = (cprof__wall_result_t){.hz = o->hz};
  if (o->hz < 1 || o->hz > CPROF_WALL_MAX_HZ || o->duration_ms < 0)
    return -EINVAL;
  cprof__profile_desc_t desc = {
      .sample_types = {{"samples", "count"}, {"wall", "nanoseconds"}},
      .n_sample_types = 2,
      .period_type = {"wall", "nanoseconds"},
      .period = 1000000000LL / o->hz,
      .time_nanos = cprof__now_ns(CLOCK_REALTIME),
  };
  wall_reader_t r = {.b = cprof__builder_new(&desc)};
  if (!r.b)
    return -ENOMEM;
  int running = 0;
  int err = reader_open(o, flags, &r, &running);
  if (err) {
    res->hz = running;
    cprof__builder_free(r.b);
    return err;
  }
  cprof__builder_set_time(r.b, cprof__now_ns(CLOCK_REALTIME));
  /* The reader's own seconds, asking whether its client went away. */
  int (*wait)(void *, long) = o->wait ? o->wait : wait_plainly;
  int cancelled = 0;
  for (;;) {
    int64_t left = (r.end - cprof__now_ns(CLOCK_MONOTONIC) + 999999) / 1000000;
    if (left <= 0)
      break;
    if (wait(o->ctx, left < 100 ? left : 100) != 0) {
      cancelled = 1;
      break;
    }
  }
  reader_close(&r, cancelled);
  err = cancelled ? -ECANCELED : r.failed ? -ENOMEM : 0;
  if (!err) {
    int64_t dur = r.end - r.start;
    /* The rate the window was sampled at, on average: its period. */
    int64_t hz = dur > 0 ? (r.ticks * 1000000000LL + dur / 2) / dur : 0;
    res->hz = hz < 1 ? 1 : hz > o->hz ? o->hz : (int)hz;
    res->ticks = r.ticks;
    res->threads = r.threads;
    res->reused = r.reused;
    res->cpu_ns = r.cpu_ns;
    res->wall_ns = dur;
    cprof__builder_set_period(r.b, 1000000000LL / res->hz);
    cprof__builder_set_duration(r.b, dur);
    err = cprof__builder_write_proto(r.b, out);
  }
  cprof__builder_free(r.b);
  return err;
}

/* ---- In the registry ----
 *
 * For cprof_profile_write("wall") and whoever lists the registry. A wall
 * profile is a recording, not a state to snapshot: its snapshot records
 * the next WRITE_SECONDS at the default rate and the configured budget,
 * and its writer writes that, profile.proto whatever the debug (as the
 * CPU profile has one format). It is a reader of the one recording, whose
 * sampler thread keeps its /proc files in a descriptor table of its own,
 * so the program's descriptor numbers are untouched; the caller waits.
 * /debug/pprof/wall (http/wall.c) takes seconds and hz of its own. */
#define WRITE_SECONDS 1

typedef struct recorded {
  cprof__buf_t out;
  int err;
} recorded_t;

static int snapshot(const cprof__profile_t *p, void **out) {
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  recorded_t *r = calloc(1, sizeof *r);
  if (!r)
    return -ENOMEM;
  cprof__wall_opts_t o = {.hz = CPROF_WALL_DEFAULT_HZ,
                          .duration_ms = WRITE_SECONDS * 1000,
                          .budget = cfg.wall_budget,
                          .how = cfg.unwind};
  cprof__wall_result_t res;
  cprof__buf_init(&r->out);
  r->err = cprof__wall_profile_take(&o, 0, &r->out, &res);
  return cprof__snapshot_done(p, r, r->err ? r->err : r->out.failed ? -ENOMEM : 0, out);
}

static void release(const cprof__profile_t *p, void *snap) {
  (void)p;
  recorded_t *r = snap;
  cprof__buf_free(&r->out);
  free(r);
}

static int write_wall(const cprof__profile_t *p, void *now, void *base, int debug,
                      int64_t duration_ns, cprof__buf_t *out) {
  (void)p;
  (void)debug;
  (void)duration_ns;
  if (base)
    return -EINVAL; /* a recording has no delta */
  const recorded_t *r = now;
  cprof__buf_append(out, r->out.data, r->out.len);
  return 0;
}

static long count(const cprof__profile_t *p) {
  (void)p;
  return cprof__threads_count();
}

static const cprof__profile_ops_t ops = {count, snapshot, release, write_wall, NULL};

const cprof__profile_t cprof__wall_profile = {
    .name = "wall",
    .desc = "Wall-clock profile: every thread's stack, running or waiting, over the seconds "
            "given (one for cprof_profile_write)",
    .failure = "could not take the wall-clock profile",
    .ops = &ops,
};
