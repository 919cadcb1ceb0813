/* /metrics (Prometheus) and /debug/charts/data (the charts' JSON). */
#ifndef CPROF_HTTP_METRICS_H
#define CPROF_HTTP_METRICS_H

#include "core/config.h"
#include "cprof.h"
#include "http/params.h"

/* Handlers as http/handlers.h's: /debug/charts/data's since= comes read
 * (cprof__params_since). */
void cprof__serve_metrics(const cprof__params_t *p, const cprof__config_t *cfg,
                          cprof_response_t *resp);
void cprof__serve_charts_data(const cprof__params_t *p, const cprof__config_t *cfg,
                              cprof_response_t *resp);

#endif
