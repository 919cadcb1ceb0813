/* cprof collect's main loop: the store opened (and repaired) under the
 * config's directory, the web server (collect/web.h) listening on listen,
 * the scraper run on the calling thread until SIGTERM or SIGINT, then the
 * scrapes in flight finished and stored, the server stopped, the store
 * closed. Every RETAIN_EVERY_S seconds (and at start) what is older or
 * more than the retention allows is deleted, oldest first. */
#ifndef CPROF_COLLECT_RUN_H
#define CPROF_COLLECT_RUN_H

#include <stdint.h>

#include "collect/config.h"

/* How much the store keeps (command-line settings, as Prometheus's
 * --storage.tsdb.retention.time and .size: Parca's config has none). */
typedef struct collect_retention {
  int64_t max_age_ns; /* <= 0: no limit */
  int64_t max_bytes;  /* <= 0: no limit */
} collect_retention_t;

/* The exit status: 0 after a stop by signal, 1 when it could not start. */
int collect_run(const collect_config_t *cfg, const collect_retention_t *keep, const char *listen);

#endif
