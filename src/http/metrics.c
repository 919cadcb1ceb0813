/* /metrics and /debug/charts/data: the metrics sampler's figures
 * (metrics/sampler.h), for Prometheus and for the charts page. While the
 * sampler is off both answer 404 with the reason. Without cprof's server
 * (a program that serves cprof_handle_request itself) the first request
 * starts the sampler: the exposition is whole from then on, the charts'
 * ring fills from then. With CPROF_PUSH_URL, the push's counters follow. */
#include "http/metrics.h"

#include <errno.h>

#include "http/response.h"
#include "metrics/sampler.h"
#include "push/push.h"

#define PROMETHEUS_TEXT "text/plain; version=0.0.4; charset=utf-8"

void cprof__serve_metrics(const cprof__params_t *p, const cprof__config_t *cfg,
                          cprof_response_t *resp) {
  (void)p;
  (void)cfg;
  cprof__metrics_demand();
  cprof__buf_t b;
  cprof__buf_init(&b);
  const char *why = "";
  if (cprof__metrics_exposition(&b, &why) != 0) {
    cprof__buf_free(&b);
    cprof__resp_error(resp, 404, "%s", why);
    return;
  }
  cprof__push_exposition(&b);
  cprof__resp_body(resp, PROMETHEUS_TEXT, &b);
}

void cprof__serve_charts_data(const cprof__params_t *p, const cprof__config_t *cfg,
                              cprof_response_t *resp) {
  (void)cfg;
  cprof__metrics_demand();
  cprof__buf_t b;
  cprof__buf_init(&b);
  const char *why = "";
  if (cprof__metrics_charts_json(p->since, &b, &why) != 0) {
    cprof__buf_free(&b);
    cprof__resp_error(resp, 404, "%s", why);
    return;
  }
  cprof__resp_header(resp, "Cache-Control", "no-store");
  cprof__resp_body(resp, "application/json", &b);
}
