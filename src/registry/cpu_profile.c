/* The CPU profile's contents, as Go's: sample types samples/count and
 * cpu/nanoseconds, period type cpu/nanoseconds with the sampling period,
 * each sample labelled thread=NAME plus the thread's own labels
 * (cprof_do); lost samples as a frame of their own, and so CPU time that
 * no timer sampled (a frame that says why: src/sample/cpu_timers.c). */
#include "registry/cpu_profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "profile/builder.h"
#include "sample/threads.h"

struct cprof__cpu_profile {
  cprof__builder_t *b;
  int64_t period, start_ns, end_ns; /* end_ns: 0 until the window closes */
  int failed;
  /* Thread names by tid, read once per profile from /proc: open addressing. */
  pid_t *tid;
  char (*name)[16];
  size_t cap, n;
};

cprof__cpu_profile_t *cprof__cpu_profile_new(int hz) {
  cprof__cpu_profile_t *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->period = 1000000000L / hz;
  cprof__profile_desc_t desc = {
      .sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
      .n_sample_types = 2,
      .period_type = {"cpu", "nanoseconds"},
      .period = p->period,
      .time_nanos = cprof__now_ns(CLOCK_REALTIME),
  };
  if (!(p->b = cprof__builder_new(&desc))) {
    free(p);
    return NULL;
  }
  p->start_ns = cprof__now_ns(CLOCK_MONOTONIC);
  return p;
}

void cprof__cpu_profile_restart(cprof__cpu_profile_t *p) {
  cprof__builder_set_time(p->b, cprof__now_ns(CLOCK_REALTIME));
  p->start_ns = cprof__now_ns(CLOCK_MONOTONIC);
}

void cprof__cpu_profile_end(cprof__cpu_profile_t *p) { p->end_ns = cprof__now_ns(CLOCK_MONOTONIC); }

static int grow(cprof__cpu_profile_t *p) {
  size_t cap = p->cap ? p->cap * 2 : 64;
  pid_t *tid = calloc(cap, sizeof *tid);
  char(*name)[16] = calloc(cap, sizeof *name);
  if (!tid || !name) {
    free(tid);
    free(name);
    return -ENOMEM;
  }
  for (size_t i = 0; i < p->cap; i++) {
    if (!p->tid[i])
      continue;
    size_t j = (size_t)p->tid[i] & (cap - 1);
    while (tid[j])
      j = (j + 1) & (cap - 1);
    tid[j] = p->tid[i];
    memcpy(name[j], p->name[i], 16);
  }
  free(p->tid);
  free(p->name);
  p->tid = tid;
  p->name = name;
  p->cap = cap;
  return 0;
}

static const char *thread_name(cprof__cpu_profile_t *p, pid_t tid) {
  if (p->n * 2 >= p->cap && grow(p) != 0)
    return "?";
  size_t j = (size_t)tid & (p->cap - 1);
  while (p->tid[j] && p->tid[j] != tid)
    j = (j + 1) & (p->cap - 1);
  if (!p->tid[j]) {
    p->tid[j] = tid;
    p->n++;
    if (cprof__thread_name(tid, p->name[j]) != 0)
      strcpy(p->name[j], "?"); /* exited before we looked */
  }
  return p->name[j];
}

void cprof__cpu_profile_add(void *arg, const cprof__cpu_sample_t *s) {
  cprof__cpu_profile_t *p = arg;
  /* samples/count counts sampling periods, so that cpu = samples x period
   * holds as pprof assumes; see src/sample/cpu.c on overruns. CPU time no
   * timer sampled (cpu.c) is what it is, in periods rounded to the nearest. */
  int64_t values[2] = {s->periods, s->periods * p->period};
  if (s->cpu_ns) {
    values[0] = (s->cpu_ns + p->period / 2) / p->period;
    values[1] = s->cpu_ns;
  }
  cprof__label_t labels[1 + CPROF_MAX_LABELS];
  labels[0] =
      (cprof__label_t){.key = "thread", .str = s->name[0] ? s->name : thread_name(p, s->tid)};
  for (int i = 0; i < s->labels.n; i++)
    labels[1 + i] = (cprof__label_t){.key = s->labels.key[i], .str = s->labels.value[i]};
  if (cprof__builder_add(p->b, s->pcs, s->depth, values, labels, 1 + s->labels.n) != 0)
    p->failed = 1;
}

int cprof__cpu_profile_write(cprof__cpu_profile_t *p, uint64_t lost, cprof__buf_t *out) {
  if (lost) {
    /* Shown, not hidden: Go's lostProfileEvent. */
    int64_t values[2] = {(int64_t)lost, (int64_t)lost * p->period};
    cprof__builder_add_pseudo(p->b, "[lost samples: buffer full]", values, NULL, 0);
  }
  int64_t end = p->end_ns ? p->end_ns : cprof__now_ns(CLOCK_MONOTONIC);
  cprof__builder_set_duration(p->b, end - p->start_ns);
  return p->failed ? -ENOMEM : cprof__builder_write_proto(p->b, out);
}

void cprof__cpu_profile_free(cprof__cpu_profile_t *p) {
  if (!p)
    return;
  cprof__builder_free(p->b);
  free(p->tid);
  free(p->name);
  free(p);
}
