/* cprof collect's main loop: the store opened (and repaired) under the
 * config's directory, the web server (collect/web.h) listening on listen,
 * the scraper run on the calling thread until SIGTERM or SIGINT, then the
 * scrapes in flight finished and stored, the server stopped, the store
 * closed. */
#ifndef CPROF_COLLECT_RUN_H
#define CPROF_COLLECT_RUN_H

#include "collect/config.h"

/* The exit status: 0 after a stop by signal, 1 when it could not start. */
int collect_run(const collect_config_t *cfg, const char *listen);

#endif
