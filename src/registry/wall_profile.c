/* The wall-clock profile (registry/wall_profile.h). Identical stacks with
 * identical labels merge in the builder, so its size goes with the
 * program's distinct stacks, not with the ticks. */
#include "registry/wall_profile.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>

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

static int add_thread(void *arg, const cprof__thread_stack_t *t, int64_t count, int64_t weight_ns) {
  cprof__builder_t *b = arg;
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

int cprof__wall_profile_take(const cprof__wall_opts_t *o, cprof__buf_t *out,
                             cprof__wall_result_t *res) {
  cprof__profile_desc_t desc = {
      .sample_types = {{"samples", "count"}, {"wall", "nanoseconds"}},
      .n_sample_types = 2,
      .period_type = {"wall", "nanoseconds"},
      .period = 1000000000LL / o->hz,
      .time_nanos = cprof__now_ns(CLOCK_REALTIME),
  };
  cprof__builder_t *b = cprof__builder_new(&desc);
  if (!b)
    return -ENOMEM;
  cprof__wall_opts_t mine = *o;
  mine.sink = add_thread;
  mine.arg = b;
  int err = cprof__wall_record(&mine, res);
  if (err == 0) {
    cprof__builder_set_period(b, 1000000000LL / res->hz);
    cprof__builder_set_duration(b, res->wall_ns);
    err = cprof__builder_write_proto(b, out);
  }
  cprof__builder_free(b);
  return err;
}

/* ---- In the registry ----
 *
 * For cprof_profile_write("wall") and whoever lists the registry. A wall
 * profile is a recording, not a state to snapshot: its snapshot records
 * the next WRITE_SECONDS at the default rate and the configured budget,
 * and its writer writes that, profile.proto whatever the debug (as the
 * CPU profile has one format). The sampling keeps /proc files open while
 * it runs, so on a thread of the program's (cprof_profile_write) it runs
 * on a thread of cprof's own, in a descriptor table of its own, and the
 * caller waits for it: the program's descriptor numbers are untouched.
 * /debug/pprof/wall (http/wall.c) takes seconds and hz of its own. */
#define WRITE_SECONDS 1

typedef struct recorded {
  cprof__wall_opts_t o;
  cprof__buf_t out;
  cprof__wall_result_t res;
  int err;
} recorded_t;

static void *record_apart(void *arg) {
  recorded_t *r = arg;
  pthread_setname_np(pthread_self(), "cprof-wall");
  r->err = cprof__fds_unshare();
  if (!r->err)
    r->err = cprof__wall_profile_take(&r->o, &r->out, &r->res);
  return NULL;
}

static int snapshot(const cprof__profile_t *p, void **out) {
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  recorded_t *r = calloc(1, sizeof *r);
  if (!r)
    return -ENOMEM;
  r->o = (cprof__wall_opts_t){.hz = CPROF_WALL_DEFAULT_HZ,
                              .duration_ms = WRITE_SECONDS * 1000,
                              .budget = cfg.wall_budget,
                              .how = cfg.unwind};
  cprof__buf_init(&r->out);
  if (cprof__fds_in_own_table()) {
    r->err = cprof__wall_profile_take(&r->o, &r->out, &r->res);
  } else {
    /* Created as cprof's own: every signal blocked, nothing sampled. */
    pthread_t t;
    cprof__guard_enter();
    int err = pthread_create(&t, NULL, record_apart, r);
    cprof__guard_leave();
    if (err)
      r->err = -err;
    else
      pthread_join(t, NULL);
  }
  return cprof__snapshot_done(p, r, r->err ? r->err : r->out.failed ? -ENOMEM : 0, out);
}

static void release(const cprof__profile_t *p, void *snap) {
  (void)p;
  recorded_t *r = snap;
  cprof__buf_free(&r->out);
  free(r);
}

static int write(const cprof__profile_t *p, void *now, void *base, int debug, int64_t duration_ns,
                 cprof__buf_t *out) {
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

static const cprof__profile_ops_t ops = {count, snapshot, release, write, NULL};

const cprof__profile_t cprof__wall_profile = {
    .name = "wall",
    .desc = "Wall-clock profile: every thread's stack, running or waiting, over the seconds "
            "given (one for cprof_profile_write)",
    .failure = "could not take the wall-clock profile",
    .ops = &ops,
};
