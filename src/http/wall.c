/* /debug/pprof/wall?seconds=N&hz=H: the wall-clock profile, every thread
 * running or waiting (registry/wall_profile.h), as fgprof's endpoint.
 *
 * seconds defaults to 30 as /profile's (1..3600); hz to 50 (1..250); the
 * router reads both (http/params.c). Concurrent requests share one
 * recording (registry/wall_profile.h), each answered for its own seconds;
 * one with another hz than the running rate gets 409 naming it. A client
 * that goes away ends its reader. The answer's X-Cprof-Wall header
 * says what the sampling did: the average rate, ticks, thread stacks in
 * all and how many were reused from the tick before, and the sampling
 * thread's CPU time. */
#include <errno.h>
#include <stdio.h>

#include "http/handlers.h"
#include "http/response.h"
#include "registry/wall_profile.h"

int cprof__wall_take(const cprof__params_t *p, const cprof__config_t *cfg, long seconds, long hz,
                     cprof_response_t *resp, cprof__buf_t *out) {
  cprof__wall_opts_t o = {.hz = hz ? (int)hz : CPROF_WALL_DEFAULT_HZ,
                          .duration_ms = seconds * 1000,
                          .budget = cfg->wall_budget,
                          .how = cfg->unwind,
                          .wait = p->wait,
                          .ctx = p->ctx};
  cprof__wall_result_t res;
  int err = cprof__wall_profile_take(&o, hz ? CPROF_WALL_EXPLICIT_HZ : 0, out, &res);
  if (err == -ERANGE) {
    cprof__resp_error(resp, 409,
                      "Could not take the wall-clock profile at %ld Hz: the wall-clock profile "
                      "already records at %d Hz",
                      hz, res.hz);
    return -1;
  }
  if (err == -EUSERS) {
    cprof__resp_error(resp, 503,
                      "Could not take the wall-clock profile: 16 wall-clock profiles already "
                      "record, the most at once; try again later");
    return -1;
  }
  if (err == -ECANCELED) {
    cprof__resp_error(resp, 500, "request cancelled");
    return -1;
  }
  if (err) {
    cprof__resp_error(resp, 500, "could not take the wall-clock profile: %s", cprof_strerror(err));
    return -1;
  }
  /* What the sampling did, for whoever wants to know its cost. */
  char how[160];
  snprintf(how, sizeof how, "hz=%d; ticks=%ld; threads=%ld; reused=%ld; cpu_us=%lld", res.hz,
           res.ticks, res.threads, res.reused, (long long)(res.cpu_ns / 1000));
  cprof__resp_header(resp, "X-Cprof-Wall", how);
  return 0;
}

void cprof__serve_wall(const cprof__params_t *p, const cprof__config_t *cfg,
                       cprof_response_t *resp) {
  cprof__buf_t out;
  cprof__buf_init(&out);
  if (cprof__wall_take(p, cfg, p->seconds, p->hz, resp, &out) != 0) {
    cprof__buf_free(&out);
    return;
  }
  cprof__resp_attachment(resp, "wall", &out);
}
