/* /debug/pprof/heap and /debug/pprof/allocs: the same sampled heap profile,
 * as in Go, told apart only by the sample type pprof shows first.
 *
 *   debug=0  gzip profile.proto: alloc_objects, alloc_space, inuse_objects,
 *            inuse_space; heap defaults to inuse_space, allocs to alloc_space.
 *   debug=1  Go's legacy text heap profile, then memory statistics.
 *   seconds=N  (debug=0 only) the change over N seconds, as Go's delta:
 *            the allocations made meanwhile, and the change in use.
 *   gc=1     accepted and ignored: C has no collector to run first. */
#include <errno.h>
#include <time.h>

#include "core/clock.h"
#include "http/response.h"
#include "http/routes.h"
#include "profile/heap_profile.h"

static void serve(const cprof_request_t *req, cprof_response_t *resp, const char *name,
                  const char *delta_name, const char *default_type) {
  long debug, seconds;
  if (cprof__param_delta(req, resp, &debug, &seconds) != 0)
    return;
  cprof__heap_snapshot_t base = {0}, now = {0};
  int64_t start = cprof__now_ns(CLOCK_MONOTONIC);
  int err = 0;
  if (seconds) {
    if ((err = cprof__heap_snapshot(&base)) != 0)
      goto fail;
    if (cprof__wait_request(req, seconds * 1000) != 0) {
      cprof__heap_snapshot_free(&base);
      cprof__resp_error(resp, 500, "request cancelled");
      return;
    }
  }
  if ((err = cprof__heap_snapshot(&now)) != 0)
    goto fail;
  cprof__buf_t out;
  cprof__buf_init(&out);
  err = cprof__heap_profile_write(&now, seconds ? &base : NULL, debug != 0, default_type,
                                  seconds ? cprof__now_ns(CLOCK_MONOTONIC) - start : 0, &out);
  if (err) {
    cprof__buf_free(&out);
    goto fail;
  }
  if (debug)
    cprof__resp_body(resp, CPROF_TEXT, &out);
  else
    cprof__resp_attachment(resp, seconds ? delta_name : name, &out);
  cprof__heap_snapshot_free(&base);
  cprof__heap_snapshot_free(&now);
  return;
fail:
  cprof__heap_snapshot_free(&base);
  cprof__heap_snapshot_free(&now);
  cprof__resp_error(resp, 500, "could not write the heap profile: %s", cprof_strerror(err));
}

void cprof__serve_heap(const cprof_request_t *req, const cprof__config_t *cfg,
                       cprof_response_t *resp) {
  serve(req, resp, "heap", "heap-delta", "inuse_space");
}

void cprof__serve_allocs(const cprof_request_t *req, const cprof__config_t *cfg,
                         cprof_response_t *resp) {
  serve(req, resp, "allocs", "allocs-delta", "alloc_space");
}

/* The index page's count: heap profile records, as Go's index shows. */
int cprof__heap_count(void) { return (int)cprof__heap_records(); }
