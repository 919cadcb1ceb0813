/* /debug/pprof/trace?seconds=N: the execution trace (registry/trace.h)
 * over N seconds, as Chrome Trace Event JSON, named trace.json, gzipped
 * when the client accepts it.
 *
 * seconds is a number, as Go's (default 1; 0.5 and 2.5 are fine), at most
 * MAX_SECONDS: each thread that records keeps up to BUFFER_BYTES of events
 * (about 30000 regions), and a longer trace would mostly say how many it
 * dropped. One trace at a time: a second one gets Go's 500 and message. A
 * client that goes away ends the trace, and what it recorded is thrown
 * away. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/query.h"
#include "http/response.h"
#include "http/routes.h"
#include "profile/gzip.h"
#include "registry/trace.h"

#define DEFAULT_SECONDS 1.0
#define MAX_SECONDS 60
#define BUFFER_BYTES (1 << 20)

static int wait_for(void *req, long ms) { return cprof__wait_request(req, ms); }

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
  cprof__trace_opts_t o = {.seconds = seconds,
                           .buffer_bytes = BUFFER_BYTES,
                           .cpu_hz = cfg->cpu_hz,
                           .how = cfg->unwind,
                           .wait = wait_for,
                           .ctx = (void *)req};
  cprof__buf_t json;
  cprof__buf_init(&json);
  int err = cprof__trace_take(&o, &json);
  if (err) {
    cprof__buf_free(&json);
    if (err == -EBUSY)
      cprof__resp_error(resp, 500, "Could not enable tracing: tracing is already enabled");
    else if (err == -ECANCELED)
      cprof__resp_error(resp, 500, "request cancelled");
    else if (err == -ENOMEM)
      cprof__resp_error(resp, 500, "could not write the trace: %s", cprof_strerror(err));
    else
      cprof__resp_error(resp, 500, "Could not enable tracing: %s", cprof_strerror(err));
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
