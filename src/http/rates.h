/* The POST forms of /debug/pprof/block and /mutex, which set the rate. */
#ifndef CPROF_HTTP_RATES_H
#define CPROF_HTTP_RATES_H

#include "cprof.h"

void cprof__serve_block_rate(const cprof_request_t *req, cprof_response_t *resp);
void cprof__serve_mutex_fraction(const cprof_request_t *req, cprof_response_t *resp);

#endif
