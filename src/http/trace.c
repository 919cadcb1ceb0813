/* /debug/pprof/trace?seconds=N: the execution trace (registry/trace.h)
 * over N seconds, as Chrome Trace Event JSON, named trace.json, gzipped
 * when the client accepts it.
 *
 * seconds is a number, as Go's (default 1; 0.5 and 2.5 are fine), at most
 * CPROF_TRACE_MAX_SECONDS, 60 (read by the router: http/params.c): each
 * thread that records keeps up to BUFFER_BYTES of events (about 30000
 * regions), and a longer trace would mostly say how many it dropped. One
 * trace at a time: a second one gets Go's 500 and message. A client that
 * goes away ends the trace, and what it recorded is thrown away. */
#include <errno.h>

#include "http/handlers.h"
#include "http/response.h"
#include "profile/gzip.h"
#include "registry/trace.h"

#define BUFFER_BYTES (1 << 20)

void cprof__serve_trace(const cprof__params_t *p, const cprof__config_t *cfg,
                        cprof_response_t *resp) {
  cprof__trace_opts_t o = {.seconds = p->trace_seconds,
                           .buffer_bytes = BUFFER_BYTES,
                           .cpu_hz = cfg->cpu_hz,
                           .how = cfg->unwind,
                           .wait = p->wait,
                           .ctx = p->ctx};
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
  if (p->gzip) {
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
