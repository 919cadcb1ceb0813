/* Query strings (http/query.c) and the parameters the routes read from
 * them (debug, seconds and their delta pair, in routes.c). The input is
 * the raw query, as a client sends it after the '?'. */
#include "fuzz.h"

#include "cprof.h"
#include "http/query.h"
#include "http/response.h"
#include "http/routes.h"

/* Every key a route asks for, and some a client may send. */
static const char *const keys[] = {"debug", "seconds", "gc", "rate", "fraction", "", "a b", "%"};

static void get(const char *query) {
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    for (size_t outlen = 1; outlen <= 33; outlen += 8) {
      char out[64];
      memset(out, 'x', sizeof out);
      int got = cprof__query_get(query, keys[k], out, outlen);
      if (got < -1 || got > 1)
        abort();
      if (got == 1 && strnlen(out, outlen) >= outlen)
        abort(); /* a value must fit, with its NUL, or be refused */
      long n;
      if (got == 1 && cprof__query_int(out, -5, 3600, &n) == 0 && (n < -5 || n > 3600))
        abort();
    }
  }
}

/* The routes' readers fill a 400 or leave the response alone. */
static void params(const char *query) {
  cprof_request_t req = {.method = "GET", .path = "/debug/pprof/heap", .query = query};
  cprof_response_t resp;
  if (cprof__resp_init(&resp) != 0)
    abort();
  long debug = -1, seconds = 30;
  if (cprof__param_debug(&req, &resp, &debug) == 0 && (debug < 0 || debug > 1000))
    abort();
  if (cprof__param_seconds(&req, &resp, 3600, &seconds) == 0 && (seconds < 1 || seconds > 3600))
    abort();
  if (cprof__param_delta(&req, &resp, &debug, &seconds) == 0 && seconds && debug)
    abort(); /* Go refuses the two together */
  cprof_response_free(&resp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *query = fuzz_str(data, size);
  get(query);
  params(query);
  free(query);
  return 0;
}
