/* A GET through cprof_handle_request, for unit tests of what the router
 * answers; a router that cannot fill a response ends the test. */
#ifndef CPROF_TESTS_REQUEST_H
#define CPROF_TESTS_REQUEST_H

#include <stdlib.h>

#include "cprof.h"

static cprof_response_t get(const char *path, const char *query) {
  cprof_request_t req = {.method = "GET", .path = path, .query = query};
  cprof_response_t r;
  if (cprof_handle_request(&req, &r) != 0)
    abort();
  return r;
}

#endif
