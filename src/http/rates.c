/* POST /debug/pprof/block?rate=NS and /debug/pprof/mutex?fraction=N: turn
 * the profile on (or off with 0) without a restart, as
 * runtime.SetBlockProfileRate and SetMutexProfileFraction do in a Go
 * program; the answer is one line with the new and the old setting. A GET
 * never changes anything: it is the registry's profile (routes.c). */
#include "http/rates.h"

#include "core/config.h"
#include "http/query.h"
#include "http/response.h"

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

void cprof__serve_block_rate(const cprof_request_t *req, cprof_response_t *resp) {
  configure(req, resp, "block", "rate", CPROF_MAX_BLOCK_RATE, "nanoseconds", cprof_set_block_rate);
}

void cprof__serve_mutex_fraction(const cprof_request_t *req, cprof_response_t *resp) {
  configure(req, resp, "mutex", "fraction", CPROF_MAX_MUTEX_FRACTION,
            "events (1 in N is recorded)", cprof_set_mutex_fraction);
}
