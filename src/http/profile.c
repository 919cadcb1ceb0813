/* /debug/pprof/profile?seconds=N&hz=H: the CPU profile, as Go's.
 *
 * seconds defaults to 30, as in Go; 1..3600 are accepted (the router reads
 * it: http/params.c). Each request is a reader of the one CPU recording
 * (registry/cpu.h): concurrent requests share it, and each answer holds
 * the samples of its own seconds. hz asks for a rate: the recording's
 * first reader sets it (without hz, the configured one, CPROF_CPU_HZ);
 * a request with another hz while it runs gets 409 naming the running
 * rate, one without hz takes it. The request's own thread drains the
 * sample buffer every 50 ms while it waits, and looks for threads without
 * timers; a client that goes away ends its reader. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "http/handlers.h"
#include "http/response.h"
#include "registry/cpu.h"

#define DRAIN_MS 50

/* A reason no profile can be taken is said on stderr too, where whoever
 * runs the program looks, but once per reason rather than per request. */
static void log_once(const char *why) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static char last[256];
  pthread_mutex_lock(&lock);
  int seen = strcmp(last, why) == 0;
  if (!seen)
    snprintf(last, sizeof last, "%s", why);
  pthread_mutex_unlock(&lock);
  if (!seen)
    cprof__log("the CPU profile is off: %s", why);
}

int cprof__cpu_profile_take(const cprof__params_t *p, const cprof__config_t *cfg, long seconds,
                            cprof_response_t *resp, cprof__buf_t *out) {
  cprof__cpu_reader_t *rec;
  char why[256];
  int hz = p->hz ? (int)p->hz : cfg->cpu_hz;
  int flags = p->hz ? CPROF_CPU_READER_EXPLICIT_HZ : 0;
  int err = cprof__cpu_reader_start(hz, flags, cfg->unwind, why, sizeof why, &rec);
  switch (err) {
  case 0:
    break;
  case -ENOMEM:
    cprof__resp_error(resp, 500, "out of memory");
    return -1;
  case -EBUSY:
    cprof__resp_error(resp, 409,
                      "Could not enable CPU profiling: the program uses SIGPROF itself "
                      "(its own setitimer(ITIMER_PROF) or another profiler)");
    return -1;
  case -ERANGE: /* another rate than the running one's, asked for */
    cprof__resp_error(resp, 409, "Could not enable CPU profiling at %d Hz: %s", hz, why);
    return -1;
  case -EUSERS:
    cprof__resp_error(resp, 503, "Could not enable CPU profiling: %s; try again later", why);
    return -1;
  default:
    if (why[0]) { /* no thread can be sampled: an empty profile would look like an idle program */
      log_once(why);
      cprof__resp_error(resp, 500, "Could not enable CPU profiling: %s", why);
    } else {
      cprof__resp_error(resp, 500, "Could not enable CPU profiling: %s", cprof_strerror(err));
    }
    return -1;
  }

  /* A deadline on the monotonic clock, in nanoseconds: draining takes
   * time of its own, and a deadline in whole milliseconds would close the
   * window up to 1 ms early (a profile of 999.4 ms for ?seconds=1). */
  int64_t end_ns = cprof__now_ns(CLOCK_MONOTONIC) + seconds * 1000000000LL;
  int cancelled = 0;
  for (;;) {
    int64_t left_ns = end_ns - cprof__now_ns(CLOCK_MONOTONIC);
    if (left_ns <= 0 || cancelled)
      break;
    long left = (long)((left_ns + 999999) / 1000000); /* ms, rounded up */
    cancelled = p->wait(p->ctx, left < DRAIN_MS ? left : DRAIN_MS) != 0;
    cprof__cpu_recording_drain();
  }
  if (cancelled) {
    cprof__cpu_reader_stop(rec, NULL);
    cprof__resp_error(resp, 500, "request cancelled");
    return -1;
  }
  err = cprof__cpu_reader_stop(rec, out);
  if (err) {
    cprof__resp_error(resp, 500, "could not write the profile: %s", cprof_strerror(err));
    return -1;
  }
  return 0;
}

void cprof__serve_profile(const cprof__params_t *p, const cprof__config_t *cfg,
                          cprof_response_t *resp) {
  cprof__buf_t out;
  cprof__buf_init(&out);
  if (cprof__cpu_profile_take(p, cfg, p->seconds, resp, &out) != 0) {
    cprof__buf_free(&out);
    return;
  }
  cprof__resp_attachment(resp, "profile", &out);
}
