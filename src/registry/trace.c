/* The execution trace as a recording (registry/trace.h). */
#include "registry/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "cprof.h"
#include "registry/cpu.h"
#include "registry/trace_json.h"
#include "sample/proc.h"
#include "sample/trace.h"

/* Each drain places the CPU samples taken since the last one on the
 * timeline by their order among all samples (sample/cpu.c, "Time
 * stamps"): a sample's time is off by at most the time between two
 * drains, so a trace drains often, whichever recording takes the samples. */
#define DRAIN_MS 10
#define COUNTER_NS 100000000LL
/* Without the heap profile, the heap's figure walks glibc's free lists
 * under the arenas' locks, which the program's threads wait for: once a
 * second, as the metrics sampler does. */
#define WALK_EVERY_NS 1000000000LL

/* The counters read while the trace runs. */
typedef struct counter {
  int64_t ts, rss, heap;
} counter_t;

static void discard(const cprof__trace_rec_t *r, void *ctx) {
  (void)r;
  (void)ctx;
}

static int sleep_plainly(void *ctx, long ms) {
  (void)ctx;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  return 0;
}

static void process_name(char name[17]) {
  name[0] = '\0';
  int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  ssize_t n = read(fd, name, 16);
  close(fd);
  name[n > 0 ? n : 0] = '\0';
  name[strcspn(name, "\n")] = '\0';
}

int cprof__trace_take(const cprof__trace_opts_t *o, cprof__buf_t *out) {
  int (*wait)(void *, long) = o->wait ? o->wait : sleep_plainly;
  int64_t start = cprof__now_ns(CLOCK_MONOTONIC);
  int err = cprof__trace_begin(o->buffer_bytes);
  if (err)
    return err;
  size_t cap = (size_t)(o->seconds * 1e9 / COUNTER_NS) + 2;
  counter_t *counters = malloc(cap * sizeof *counters);
  size_t ncounters = 0;
  /* A reader of the CPU recording without a profile of its own: its
   * samples reach the timeline in every drain (registry/cpu.c). */
  cprof__cpu_reader_t *rec = NULL;
  char why[256] = "";
  int others = cprof__cpu_readers(NULL);
  err = cprof__cpu_reader_start(o->cpu_hz, CPROF_CPU_READER_NO_PROFILE, o->how, why, sizeof why,
                                &rec);
  const char *cpu = err == 0 && !others ? "recorded by the trace"
                    : err == 0          ? "from the CPU profile already running"
                    : err == -EBUSY     ? "none: the program uses SIGPROF itself"
                    : why[0]            ? why
                                        : cprof_strerror(err);
  /* A deadline on the monotonic clock: draining takes time of its own. */
  int64_t until = start + (int64_t)ceil(o->seconds * 1e9), next_counter = start;
  int64_t walked = start - WALK_EVERY_NS;
  int cancelled = 0;
  for (int64_t now = start; now < until && !cancelled; now = cprof__now_ns(CLOCK_MONOTONIC)) {
    if (counters && now >= next_counter && ncounters < cap) {
      counter_t *c = &counters[ncounters++];
      c->ts = now;
      int walk = now - walked >= WALK_EVERY_NS;
      cprof__proc_memory(&c->rss, &c->heap, walk);
      if (walk)
        walked = now;
      next_counter = now + COUNTER_NS;
    }
    long left = (long)((until - now + 999999) / 1000000);
    cancelled = wait(o->ctx, left < DRAIN_MS ? left : DRAIN_MS) != 0;
    if (rec)
      cprof__cpu_recording_drain();
  }
  /* The last samples, before the events are handed out. */
  if (rec)
    cprof__cpu_reader_stop(rec, NULL);
  if (cancelled) {
    cprof__trace_end(discard, NULL, NULL);
    free(counters);
    return -ECANCELED;
  }
  int64_t end = cprof__now_ns(CLOCK_MONOTONIC);
  char name[17];
  process_name(name);
  cprof__trace_json_t j;
  cprof__trace_json_init(&j, out, (int)getpid(), name[0] ? name : NULL, start, end);
  uint64_t dropped = 0;
  cprof__trace_end(cprof__trace_json_add, &j, &dropped);
  for (size_t i = 0; i < ncounters; i++) {
    if (counters[i].rss >= 0)
      cprof__trace_json_counter(&j, "RSS", "bytes", counters[i].ts, (double)counters[i].rss);
    if (counters[i].heap >= 0)
      cprof__trace_json_counter(&j, "heap in use", "bytes", counters[i].ts,
                                (double)counters[i].heap);
  }
  free(counters);
  return cprof__trace_json_finish(&j, dropped, cpu);
}
