/* /debug/pprof/trace?seconds=N: the execution trace (sample/trace.h) over
 * N seconds, as Chrome Trace Event JSON (registry/trace_json.h), named
 * trace.json, gzipped when the client accepts it.
 *
 * seconds is a number, as Go's (default 1; 0.5 and 2.5 are fine), at most
 * MAX_SECONDS: each thread that records keeps up to BUFFER_BYTES of events
 * (about 30000 regions), and a longer trace would mostly say how many it
 * dropped. One trace at a time: a second one gets Go's 500 and message. A
 * client that goes away ends the trace, and what it recorded is thrown
 * away.
 *
 * Besides the events the program's threads record, the trace shows:
 * - CPU samples, from the CPU recording: the trace starts one of its own
 *   at the CPU profile's rate (CPROF_CPU_HZ), or, when one already runs
 *   (a /debug/pprof/profile, CPROF_OUTPUT, the push), takes its samples
 *   too. While the trace's own runs, a CPU profile request gets "cpu
 *   profiling already in use", as during another CPU profile; a program
 *   that uses SIGPROF itself gets a trace without CPU samples, which
 *   otherData's cpu_samples says.
 * - Counter tracks of the resident set and the heap in use, read every
 *   COUNTER_MS (the heap once a second without the heap profile). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/clock.h"
#include "http/query.h"
#include "http/response.h"
#include "http/routes.h"
#include "metrics/sampler.h"
#include "profile/gzip.h"
#include "registry/cpu.h"
#include "registry/trace_json.h"
#include "sample/trace.h"

#define DEFAULT_SECONDS 1.0
#define MAX_SECONDS 60
#define BUFFER_BYTES (1 << 20)
#define DRAIN_MS 50
#define COUNTER_MS 100
/* Without the heap profile, the heap's figure walks glibc's free lists
 * under the arenas' locks, which the program's threads wait for: once a
 * second, as the metrics sampler does. */
#define WALK_EVERY_NS 1000000000LL

/* The counters read while the trace runs: at most one per COUNTER_MS. */
typedef struct counter {
  int64_t ts, rss, heap;
} counter_t;
#define MAX_COUNTERS (MAX_SECONDS * 1000 / COUNTER_MS + 2)

static void discard(const cprof__trace_rec_t *r, void *ctx) {
  (void)r;
  (void)ctx;
}

/* Whether an Accept-Encoding header lets the body be gzipped: a "gzip" or
 * "*" coding whose q is not 0. */
static int accepts_gzip(const char *h) {
  while (h && *h) {
    const char *end = strchr(h, ',');
    size_t n = end ? (size_t)(end - h) : strlen(h);
    while (n && (*h == ' ' || *h == '\t'))
      h++, n--;
    size_t name = strcspn(h, " \t;,");
    if (name > n)
      name = n;
    if ((name == 4 && strncasecmp(h, "gzip", 4) == 0) || (name == 1 && *h == '*')) {
      const char *q = h + name;
      while (q < h + n && *q != '=')
        q++;
      if (q >= h + n || strtod(q + 1, NULL) > 0)
        return 1;
    }
    h = end ? end + 1 : NULL;
  }
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

void cprof__serve_trace(const cprof_request_t *req, const cprof__config_t *cfg,
                        cprof_response_t *resp) {
  double seconds = DEFAULT_SECONDS;
  char v[32];
  int got = cprof__query_get(req->query, "seconds", v, sizeof v);
  if (got < 0 || got == 1) {
    char *end = NULL;
    if (got == 1)
      seconds = strtod(v, &end);
    if (got < 0 || end == v || *end != '\0' || !isfinite(seconds) || seconds <= 0 ||
        seconds > MAX_SECONDS) {
      cprof__resp_error(resp, 400,
                        "invalid value for \"seconds\" - must be a number greater than 0 and at "
                        "most %d",
                        MAX_SECONDS);
      return;
    }
  }
  int64_t start = cprof__now_ns(CLOCK_MONOTONIC);
  int err = cprof__trace_begin(BUFFER_BYTES);
  if (err == -EBUSY) {
    cprof__resp_error(resp, 500, "Could not enable tracing: tracing is already enabled");
    return;
  }
  if (err) {
    cprof__resp_error(resp, 500, "Could not enable tracing: %s", cprof_strerror(err));
    return;
  }
  counter_t *counters = malloc(MAX_COUNTERS * sizeof *counters);
  int ncounters = 0;
  cprof__cpu_recording_t *rec = NULL;
  char why[256] = "";
  err = cprof__cpu_recording_start(cfg->cpu_hz, cfg->unwind, why, sizeof why, &rec);
  const char *cpu = err == 0           ? "recorded by the trace"
                    : err == -EALREADY ? "from the CPU profile already running"
                    : err == -EBUSY    ? "none: the program uses SIGPROF itself"
                    : why[0]           ? why
                                       : cprof_strerror(err);
  /* A deadline on the monotonic clock: draining takes time of its own. */
  int64_t until = start + (int64_t)ceil(seconds * 1e9), next_counter = start;
  int64_t walked = start - WALK_EVERY_NS;
  int cancelled = 0;
  for (int64_t now = start; now < until && !cancelled; now = cprof__now_ns(CLOCK_MONOTONIC)) {
    if (counters && now >= next_counter && ncounters < MAX_COUNTERS) {
      counter_t *c = &counters[ncounters++];
      c->ts = now;
      int walk = now - walked >= WALK_EVERY_NS;
      cprof__metrics_read_memory(&c->rss, &c->heap, walk);
      if (walk)
        walked = now;
      next_counter = now + COUNTER_MS * 1000000LL;
    }
    long left = (long)((until - now + 999999) / 1000000);
    cancelled = cprof__wait_request(req, left < DRAIN_MS ? left : DRAIN_MS) != 0;
    if (rec)
      cprof__cpu_recording_drain(rec);
  }
  /* The last samples, before the events are handed out. */
  if (rec)
    cprof__cpu_recording_stop(rec, NULL);
  else
    cprof__cpu_recording_flush();
  if (cancelled) {
    cprof__trace_end(discard, NULL, NULL);
    free(counters);
    cprof__resp_error(resp, 500, "request cancelled");
    return;
  }
  int64_t end = cprof__now_ns(CLOCK_MONOTONIC);
  char name[17];
  process_name(name);
  cprof__buf_t json;
  cprof__buf_init(&json);
  cprof__trace_json_t j;
  cprof__trace_json_init(&j, &json, (int)getpid(), name[0] ? name : NULL, start, end);
  uint64_t dropped = 0;
  cprof__trace_end(cprof__trace_json_add, &j, &dropped);
  for (int i = 0; i < ncounters; i++) {
    if (counters[i].rss >= 0)
      cprof__trace_json_counter(&j, "RSS", "bytes", counters[i].ts, (double)counters[i].rss);
    if (counters[i].heap >= 0)
      cprof__trace_json_counter(&j, "heap in use", "bytes", counters[i].ts,
                                (double)counters[i].heap);
  }
  free(counters);
  if (cprof__trace_json_finish(&j, dropped, cpu) != 0) {
    cprof__buf_free(&json);
    cprof__resp_error(resp, 500, "could not write the trace: %s", cprof_strerror(-ENOMEM));
    return;
  }
  cprof__buf_t body = json;
  if (accepts_gzip(cprof__accept_encoding)) {
    cprof__buf_init(&body);
    if (cprof__gzip(json.data, json.len, &body) == 0 && !body.failed) {
      cprof__resp_header(resp, "Content-Encoding", "gzip");
      cprof__buf_free(&json);
    } else {
      cprof__buf_free(&body);
      body = json;
    }
  }
  cprof__resp_header(resp, "Vary", "Accept-Encoding");
  cprof__resp_header(resp, "Content-Disposition", "attachment; filename=\"trace.json\"");
  cprof__resp_body(resp, "application/json", &body);
}
