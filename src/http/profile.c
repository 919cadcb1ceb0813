/* /debug/pprof/profile?seconds=N: the CPU profile, as Go's.
 *
 * seconds defaults to 30, as in Go; 1..3600 are accepted. Sample types
 * samples/count and cpu/nanoseconds, period type cpu/nanoseconds with the
 * sampling period; each sample labelled thread=NAME. The request's own
 * thread drains the sample buffer every 10 ms while it waits, and gives
 * new threads their timers; a client that goes away stops the profile. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "http/response.h"
#include "http/routes.h"
#include "profile/builder.h"
#include "sample/cpu.h"

#define DEFAULT_SECONDS 30
#define MAX_SECONDS 3600
#define DRAIN_MS 10

/* Thread names by tid, read once per profile from /proc. */
typedef struct name_cache {
  pid_t *tid;
  char (*name)[16];
  size_t cap; /* a power of two; open addressing */
  size_t n;
} name_cache_t;

static const char *thread_name(name_cache_t *c, pid_t tid) {
  if (c->n * 2 >= c->cap) { /* grow, keeping the load at most one half */
    name_cache_t g = {NULL, NULL, c->cap ? c->cap * 2 : 64, 0};
    g.tid = calloc(g.cap, sizeof *g.tid);
    g.name = calloc(g.cap, sizeof *g.name);
    if (!g.tid || !g.name) {
      free(g.tid);
      free(g.name);
      return "?";
    }
    for (size_t i = 0; i < c->cap; i++) {
      if (!c->tid[i])
        continue;
      size_t j = (size_t)c->tid[i] & (g.cap - 1);
      while (g.tid[j])
        j = (j + 1) & (g.cap - 1);
      g.tid[j] = c->tid[i];
      memcpy(g.name[j], c->name[i], 16);
      g.n++;
    }
    free(c->tid);
    free(c->name);
    *c = g;
  }
  size_t j = (size_t)tid & (c->cap - 1);
  while (c->tid[j] && c->tid[j] != tid)
    j = (j + 1) & (c->cap - 1);
  if (!c->tid[j]) {
    c->tid[j] = tid;
    c->n++;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t k = fd >= 0 ? read(fd, c->name[j], 15) : -1;
    if (fd >= 0)
      close(fd);
    if (k <= 0) {
      strcpy(c->name[j], "?"); /* exited before we looked */
    } else {
      c->name[j][k] = '\0';
      c->name[j][strcspn(c->name[j], "\n")] = '\0';
    }
  }
  return c->name[j];
}

typedef struct collector {
  cprof__builder_t *b;
  name_cache_t names;
  int64_t period;
  int failed;
} collector_t;

static void add_sample(void *arg, const cprof__cpu_sample_t *s) {
  collector_t *c = arg;
  /* samples/count counts sampling periods, so that cpu = samples x period
   * holds as pprof assumes; see src/sample/cpu.c on overruns. */
  int64_t values[2] = {s->periods, s->periods * c->period};
  cprof__label_t labels[1 + CPROF_MAX_LABELS];
  labels[0] = (cprof__label_t){.key = "thread", .str = thread_name(&c->names, s->tid)};
  for (int i = 0; i < s->labels.n; i++)
    labels[1 + i] = (cprof__label_t){.key = s->labels.key[i], .str = s->labels.value[i]};
  if (cprof__builder_add(c->b, s->pcs, s->depth, values, labels, 1 + s->labels.n) != 0)
    c->failed = 1;
}

static int64_t now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void cprof__serve_profile(const cprof_request_t *req, const cprof__config_t *cfg,
                          cprof_response_t *resp) {
  long seconds = DEFAULT_SECONDS;
  if (cprof__param_seconds(req, resp, MAX_SECONDS, &seconds) != 0)
    return;
  collector_t c = {.period = 1000000000L / cfg->cpu_hz};
  cprof__profile_desc_t desc = {
      .sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
      .n_sample_types = 2,
      .period_type = {"cpu", "nanoseconds"},
      .period = c.period,
      .time_nanos = now_ns(CLOCK_REALTIME),
  };
  if (!(c.b = cprof__builder_new(&desc))) {
    cprof__resp_error(resp, 500, "out of memory");
    return;
  }
  int err = cprof__cpu_start(cfg->cpu_hz, cfg->unwind);
  if (err) {
    cprof__builder_free(c.b);
    if (err == -EALREADY)
      cprof__resp_error(resp, 500, "Could not enable CPU profiling: cpu profiling already in use");
    else if (err == -EBUSY)
      cprof__resp_error(resp, 409,
                        "Could not enable CPU profiling: the program uses SIGPROF itself "
                        "(its own setitimer(ITIMER_PROF) or another profiler)");
    else
      cprof__resp_error(resp, 500, "Could not enable CPU profiling: %s", cprof_strerror(err));
    return;
  }

  int64_t start = now_ns(CLOCK_MONOTONIC), end = start + (int64_t)seconds * 1000000000;
  int cancelled = 0;
  while (!cancelled && now_ns(CLOCK_MONOTONIC) < end) {
    cancelled = cprof__wait_request(req, DRAIN_MS) != 0;
    cprof__cpu_track_threads();
    cprof__cpu_drain(add_sample, &c);
  }
  uint64_t lost = cprof__cpu_stop(add_sample, &c);
  if (lost) {
    /* Shown, not hidden: Go's lostProfileEvent. */
    int64_t values[2] = {(int64_t)lost, (int64_t)lost * c.period};
    cprof__builder_add_pseudo(c.b, "[lost samples: buffer full]", values, NULL, 0);
  }
  free(c.names.tid);
  free(c.names.name);
  if (cancelled) {
    cprof__builder_free(c.b);
    cprof__resp_error(resp, 500, "request cancelled");
    return;
  }
  cprof__builder_set_duration(c.b, now_ns(CLOCK_MONOTONIC) - start);
  cprof__buf_t out;
  cprof__buf_init(&out);
  err = c.failed ? -ENOMEM : cprof__builder_write_proto(c.b, &out);
  cprof__builder_free(c.b);
  if (err) {
    cprof__buf_free(&out);
    cprof__resp_error(resp, 500, "could not write the profile: %s", cprof_strerror(err));
    return;
  }
  cprof__resp_attachment(resp, "profile", &out);
}
