/* /debug/pprof/block, /mutex and /threadcreate (sample/contention.h).
 *
 *   debug=0    gzip profile.proto; debug=1 Go's legacy text.
 *   seconds=N  (debug=0 only) what happened over N seconds, as Go's delta.
 *   POST block?rate=NS, POST mutex?fraction=N: turn the profile on (or off
 *              with 0) without a restart, as runtime.SetBlockProfileRate
 *              and SetMutexProfileFraction do in a Go program; the answer
 *              is one line with the new and the old setting. A GET never
 *              changes anything. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "http/query.h"
#include "http/response.h"
#include "http/routes.h"
#include "profile/contention_profile.h"

static void serve(const cprof_request_t *req, cprof_response_t *resp,
                  cprof__contention_kind_t kind, const char *name, const char *delta_name) {
  long debug, seconds;
  if (cprof__param_delta(req, resp, &debug, &seconds) != 0)
    return;
  cprof__contention_snapshot_t base = {0}, now = {0};
  int64_t start = cprof__now_ns(CLOCK_MONOTONIC);
  int err = 0;
  if (seconds) {
    if ((err = cprof__contention_snapshot(kind, &base)) != 0)
      goto fail;
    if (cprof__wait_request(req, seconds * 1000) != 0) {
      cprof__contention_snapshot_free(&base);
      cprof__resp_error(resp, 500, "request cancelled");
      return;
    }
  }
  if ((err = cprof__contention_snapshot(kind, &now)) != 0)
    goto fail;
  cprof__buf_t out;
  cprof__buf_init(&out);
  err = cprof__contention_profile_write(kind, &now, seconds ? &base : NULL, debug != 0,
                                        seconds ? cprof__now_ns(CLOCK_MONOTONIC) - start : 0, &out);
  if (err) {
    cprof__buf_free(&out);
    goto fail;
  }
  if (debug)
    cprof__resp_body(resp, CPROF_TEXT, &out);
  else
    cprof__resp_attachment(resp, seconds ? delta_name : name, &out);
  cprof__contention_snapshot_free(&base);
  cprof__contention_snapshot_free(&now);
  return;
fail:
  cprof__contention_snapshot_free(&base);
  cprof__contention_snapshot_free(&now);
  cprof__resp_error(resp, 500, "could not write the %s profile: %s", name, cprof_strerror(err));
}

/* POST ...?PARAM=N: sets the profile's rate or fraction with `set`. */
static void configure(const cprof_request_t *req, cprof_response_t *resp, const char *name,
                      const char *param, long max, const char *what, long (*set)(long)) {
  char v[32], err[160];
  long n;
  int got = cprof__query_get(req->query, param, v, sizeof v);
  if (got <= 0) {
    cprof__resp_error(resp, 400, "POST /debug/pprof/%s needs %s=N (0 turns the profile off)", name,
                      param);
    return;
  }
  if (cprof__parse_setting(v, max, what, &n, err, sizeof err) != 0) {
    cprof__resp_error(resp, 400, "invalid value for \"%s\" - %s", param, err);
    return;
  }
  long old = set(n);
  cprof__buf_t out;
  cprof__buf_init(&out);
  cprof__buf_printf(&out, "%s profile: %s=%ld (was %ld)%s\n", name, param, n, old,
                    n ? "" : "; off");
  cprof__resp_body(resp, CPROF_TEXT, &out);
}

static int is_post(const cprof_request_t *req) {
  return req->method && strcmp(req->method, "POST") == 0;
}

void cprof__serve_block(const cprof_request_t *req, const cprof__config_t *cfg,
                        cprof_response_t *resp) {
  if (is_post(req))
    configure(req, resp, "block", "rate", CPROF_MAX_BLOCK_RATE, "nanoseconds",
              cprof__block_set_rate);
  else
    serve(req, resp, CPROF_BLOCK, "block", "block-delta");
}

void cprof__serve_mutex(const cprof_request_t *req, const cprof__config_t *cfg,
                        cprof_response_t *resp) {
  if (is_post(req))
    configure(req, resp, "mutex", "fraction", CPROF_MAX_MUTEX_FRACTION,
              "events (1 in N is recorded)", cprof__mutex_set_fraction);
  else
    serve(req, resp, CPROF_MUTEX, "mutex", "mutex-delta");
}

void cprof__serve_threadcreate(const cprof_request_t *req, const cprof__config_t *cfg,
                               cprof_response_t *resp) {
  serve(req, resp, CPROF_THREADCREATE, "threadcreate", "threadcreate-delta");
}

/* The index page's counts: records in each profile, as Go's index shows. */
int cprof__block_count(void) { return (int)cprof__contention_records(CPROF_BLOCK); }
int cprof__mutex_count(void) { return (int)cprof__contention_records(CPROF_MUTEX); }
int cprof__threadcreate_count(void) { return (int)cprof__contention_records(CPROF_THREADCREATE); }
