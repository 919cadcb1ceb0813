/* CPROF_METRICS, CPROF_METRICS_INTERVAL, CPROF_METRICS_WINDOW. */
#include <stdlib.h>

#include "check.h"
#include "core/config.h"

static long duration(const char *s, long min, long max) {
  char err[160];
  long v = -1;
  return cprof__parse_duration_ms(s, min, max, &v, err, sizeof err) == 0 ? v : -1;
}

int main(void) {
  CHECK_EQ_INT(duration("1s", 10, 60000), 1000);
  CHECK_EQ_INT(duration("250ms", 10, 60000), 250);
  CHECK_EQ_INT(duration("2", 10, 60000), 2000);
  CHECK_EQ_INT(duration("1m", 10, 60000), 60000);
  CHECK_EQ_INT(duration("10m", 10000, 86400000), 600000);
  CHECK_EQ_INT(duration("1h", 10000, 86400000), 3600000);
  CHECK_EQ_INT(duration("5ms", 10, 60000), -1); /* below the minimum */
  CHECK_EQ_INT(duration("2m", 10, 60000), -1);  /* above the maximum */
  CHECK_EQ_INT(duration("1x", 10, 60000), -1);
  CHECK_EQ_INT(duration("", 10, 60000), -1);
  CHECK_EQ_INT(duration("-1s", 10, 60000), -1);
  CHECK_EQ_INT(duration("99999999999999999999h", 10, 60000), -1);

  cprof__config_t cfg;
  CHECK_EQ_INT(cprof__config_load(NULL, &cfg), 0);
  CHECK_EQ_INT(cfg.metrics, 1);
  CHECK_EQ_INT(cfg.metrics_interval_ms, 1000);
  CHECK_EQ_INT(cfg.metrics_window_s, 600);

  cprof_options_t o = {.metrics = "0", .metrics_interval = "100ms", .metrics_window = "1m"};
  CHECK_EQ_INT(cprof__config_load(&o, &cfg), 0);
  CHECK_EQ_INT(cfg.metrics, 0);
  CHECK_EQ_INT(cfg.metrics_interval_ms, 100);
  CHECK_EQ_INT(cfg.metrics_window_s, 60);

  /* Bad values: an error, and the defaults. */
  cprof_options_t bad = {.metrics = "yes", .metrics_interval = "1 s", .metrics_window = "1500ms"};
  CHECK_EQ_INT(cprof__config_load(&bad, &cfg), -22);
  CHECK_EQ_INT(cfg.metrics, 1);
  CHECK_EQ_INT(cfg.metrics_interval_ms, 1000);
  CHECK_EQ_INT(cfg.metrics_window_s, 600);

  /* Too many points: the window shrinks to fit. */
  cprof_options_t big = {.metrics_interval = "10ms", .metrics_window = "24h"};
  CHECK_EQ_INT(cprof__config_load(&big, &cfg), -22);
  CHECK_EQ_INT(cfg.metrics_window_s * 1000 / cfg.metrics_interval_ms, CPROF_MAX_METRICS_POINTS);
  return check_result("test_settings");
}
