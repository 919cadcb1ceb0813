/* A request's parameters, read once (http/params.h). */
#include "http/params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/config.h"
#include "http/query.h"
#include "http/response.h"
#include "registry/wall_profile.h"

/* Sleeps up to ms, in steps of 100 ms, waking early when the client goes
 * away. Returns 0 after the full wait, -1 if cancelled. */
static int wait_request(void *ctx, long ms) {
  const cprof_request_t *req = ctx;
  while (ms > 0) {
    if (req->is_cancelled && req->is_cancelled(req->ctx))
      return -1;
    long step = ms < 100 ? ms : 100;
    struct timespec ts = {step / 1000, (step % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    ms -= step;
  }
  return 0;
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

void cprof__params_init(cprof__params_t *p, const cprof_request_t *req,
                        const char *accept_encoding) {
  memset(p, 0, sizeof *p);
  p->wait = wait_request;
  p->ctx = (void *)req;
  p->gzip = accepts_gzip(accept_encoding);
}

/* An integer parameter in [1, max]: absent leaves *v as is; a value that
 * is not one fills a 400 and returns -1. */
static int param_whole(const cprof_request_t *req, cprof_response_t *resp, const char *key,
                       long max, long *v) {
  char s[32];
  int got = cprof__query_get(req->query, key, s, sizeof s);
  if (got == 0)
    return 0;
  if (got < 0 || cprof__query_int(s, 1, max, v) != 0) {
    cprof__resp_error(resp, 400, "invalid value for \"%s\" - must be an integer from 1 to %ld", key,
                      max);
    return -1;
  }
  return 0;
}

int cprof__param_debug(const cprof_request_t *req, cprof_response_t *resp, long *debug) {
  char v[32];
  *debug = 0;
  int got = cprof__query_get(req->query, "debug", v, sizeof v);
  if (got == 0 || (got == 1 && v[0] == '\0'))
    return 0;
  if (got < 0 || cprof__query_int(v, 0, 1000, debug) != 0) {
    cprof__resp_error(resp, 400, "invalid value for \"debug\" - must be a non-negative integer");
    return -1;
  }
  return 0;
}

int cprof__param_seconds(const cprof_request_t *req, cprof_response_t *resp, long max,
                         long *seconds) {
  return param_whole(req, resp, "seconds", max, seconds);
}

int cprof__param_delta(const cprof_request_t *req, cprof_response_t *resp, long *debug,
                       long *seconds) {
  *seconds = 0;
  if (cprof__param_debug(req, resp, debug) != 0 ||
      cprof__param_seconds(req, resp, CPROF_MAX_SECONDS, seconds) != 0)
    return -1;
  if (*seconds && *debug) {
    cprof__resp_error(resp, 400, "seconds and debug params are incompatible");
    return -1;
  }
  return 0;
}

int cprof__params_profile(const cprof_request_t *req, cprof_response_t *resp, cprof__params_t *p) {
  p->seconds = CPROF_DEFAULT_SECONDS;
  if (cprof__param_seconds(req, resp, CPROF_MAX_SECONDS, &p->seconds) != 0)
    return -1;
  return param_whole(req, resp, "hz", CPROF_MAX_CPU_HZ, &p->hz);
}

int cprof__params_wall(const cprof_request_t *req, cprof_response_t *resp, cprof__params_t *p) {
  p->seconds = CPROF_DEFAULT_SECONDS;
  if (cprof__param_seconds(req, resp, CPROF_MAX_SECONDS, &p->seconds) != 0)
    return -1;
  return param_whole(req, resp, "hz", CPROF_WALL_MAX_HZ, &p->hz);
}

int cprof__params_trace(const cprof_request_t *req, cprof_response_t *resp, cprof__params_t *p) {
  p->trace_seconds = CPROF_TRACE_DEFAULT_SECONDS;
  char v[32];
  int got = cprof__query_get(req->query, "seconds", v, sizeof v);
  if (got == 0)
    return 0;
  char *end = NULL;
  if (got == 1)
    p->trace_seconds = strtod(v, &end);
  if (got < 0 || end == v || *end != '\0' || !isfinite(p->trace_seconds) || p->trace_seconds <= 0 ||
      p->trace_seconds > CPROF_TRACE_MAX_SECONDS) {
    cprof__resp_error(resp, 400,
                      "invalid value for \"seconds\" - must be a number greater than 0 and at "
                      "most %d",
                      CPROF_TRACE_MAX_SECONDS);
    return -1;
  }
  return 0;
}

int cprof__params_delta(const cprof_request_t *req, cprof_response_t *resp, cprof__params_t *p) {
  return cprof__param_delta(req, resp, &p->debug, &p->seconds);
}

int cprof__params_view(const cprof_request_t *req, cprof_response_t *resp, cprof__params_t *p) {
  int got = cprof__query_get(req->query, "name", p->name, sizeof p->name);
  if (got <= 0 || p->name[0] == '\0') {
    cprof__resp_error(resp, 400, "missing \"name\": the profile to show (profile, heap, ...)");
    return -1;
  }
  if (param_whole(req, resp, "seconds", CPROF_MAX_SECONDS, &p->seconds) != 0 ||
      param_whole(req, resp, "diff", CPROF_MAX_SECONDS, &p->diff) != 0)
    return -1;
  if (p->seconds && p->diff) {
    cprof__resp_error(resp, 400, "seconds and diff params are incompatible");
    return -1;
  }
  if (cprof__query_get(req->query, "tagroot", p->tagroot, sizeof p->tagroot) < 0) {
    cprof__resp_error(resp, 400, "invalid value for \"tagroot\" - label keys, at most %zu bytes",
                      sizeof p->tagroot - 1);
    return -1;
  }
  return 0;
}

int cprof__params_since(const cprof_request_t *req, cprof_response_t *resp, cprof__params_t *p) {
  char v[32];
  int got = cprof__query_get(req->query, "since", v, sizeof v);
  if (got < 0 || (got == 1 && v[0] && cprof__query_int(v, 0, 1L << 53, &p->since) != 0)) {
    cprof__resp_error(resp, 400, "invalid value for \"since\" - must be unix time in milliseconds");
    return -1;
  }
  return 0;
}
