/* /metrics (Prometheus) and /debug/charts/data (the charts' JSON). */
#ifndef CPROF_HTTP_METRICS_H
#define CPROF_HTTP_METRICS_H

#include "http/routes.h"

void cprof__serve_metrics(const cprof_request_t *req, const cprof__config_t *cfg,
                          cprof_response_t *resp);
void cprof__serve_charts_data(const cprof_request_t *req, const cprof__config_t *cfg,
                              cprof_response_t *resp);

#endif
