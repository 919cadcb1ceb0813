/* cprof_handle_request (http/routes.c), the whole request as a program's
 * own server hands it over. The input is one byte choosing the
 * configuration (a prefix, Basic credentials, a bearer token: each its own
 * branch of the router) and then, one per line, the method, the path, the
 * query and the Authorization header; the rest is the body. A field the
 * input runs out before is absent (NULL).
 *
 * The request is cancelled from the start, so ?seconds=N waits and CPU
 * profiles end at once; the block and mutex settings a POST may change are
 * put back after each request so one input does not change the next. */
#include "fuzz.h"

#include "core/config.h"
#include "cprof.h"

static int cancelled(void *ctx) {
  (void)ctx;
  return 1;
}

static void configure(uint8_t how) {
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  strcpy(cfg.prefix, how & 1 ? "/ops" : "");
  strcpy(cfg.auth, how & 2 ? "ops:s3cret" : ""); /* Basic b3BzOnMzY3JldA== */
  strcpy(cfg.token, how & 4 ? "tok" : "");
  cfg.unwind = how & 8 ? CPROF_UNWIND_FP : CPROF_UNWIND_DWARF;
  cprof__config_set(&cfg);
}

static void check(const cprof_response_t *r) {
  if (r->status < 200 || r->status > 599 || r->nheaders < 0 || r->nheaders > CPROF_MAX_HEADERS)
    abort();
  for (int i = 0; i < r->nheaders; i++) /* a header value must be one line */
    if (!r->headers[i].name || !r->headers[i].value || strpbrk(r->headers[i].value, "\r\n"))
      abort();
  if (r->body_len && !r->body)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in_t in = {data, size};
  configure(fuzz_byte(&in));
  char *method = fuzz_field(&in), *path = fuzz_field(&in), *query = fuzz_field(&in),
       *authorization = fuzz_field(&in);
  char *body = fuzz_str(in.p, in.n); /* what is left, NULs and newlines too */
  cprof_request_t req = {.method = method,
                         .path = path,
                         .query = query,
                         .body = in.n ? body : NULL,
                         .body_len = in.n,
                         .authorization = authorization,
                         .is_cancelled = cancelled};
  cprof_response_t resp;
  if (cprof_handle_request(&req, &resp) == 0) {
    check(&resp);
    cprof_response_free(&resp);
  }
  cprof_set_block_rate(0);
  cprof_set_mutex_fraction(0);
  free(method), free(path), free(query), free(authorization), free(body);
  return 0;
}
