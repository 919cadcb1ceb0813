/* cprof collect's web server, as Parca's on port 7070: libmicrohttpd on
 * threads of its own (one per connection, so a long merge does not hold
 * up /metrics), serving
 *
 *   /                 the query page: pickers, a line of the profiles'
 *                     totals over time (Chart.js), the merged flame graph
 *   /targets          every (job, target, profile) loop's health, as
 *                     Parca's targets page; ?format=json (or /api/targets)
 *                     the same as JSON
 *   /metrics          the collector's own figures, Prometheus text 0.0.4
 *   /api/series       the stored (job, instance, type) series, JSON, each
 *                     with its kind, unit and quantity (collect/range.h)
 *   /api/profiles     one series' rows in a range, JSON, for the line, each
 *                     with its value in the series' unit
 *   /api/scrapes      the failed scrapes (time, job, instance, type, reason,
 *                     error) and the up/down transitions, JSON, for the
 *                     line's gap marks
 *   /api/merge        the profiles of a range merged, as the viewer's JSON
 *                     (ui/viewer.h) with "profiles" (how many were merged)
 *                     and "total" (the default sample type's sum) in front;
 *                     &base_from=&base_to= make it a diff against a second
 *                     range (then "base_profiles" and "base_total" too)
 *   /view             the same merge as a whole viewer page, for the
 *                     query page's frame
 *
 * A range is reduced by kind (collect/range.h), mode= choosing otherwise;
 * X-Cprof-Mode says what was done; /api/merge?format=pprof gives the
 * merged profile.proto, for go tool pprof.
 *
 * Times in parameters are Unix nanoseconds (decimal integers), the
 * store's own unit, so that a point of the line names its profile
 * exactly; JSON gives them as strings, which a browser's numbers would
 * round. A bad parameter is a 400 with one line of text. */
#ifndef CPROF_COLLECT_WEB_H
#define CPROF_COLLECT_WEB_H

#include <stddef.h>

#include "collect/config.h"
#include "collect/scrape.h"
#include "collect/store.h"

typedef struct collect_web collect_web_t;

/* Listens on listen ("HOST:PORT", "[V6]:PORT" or ":PORT" for the loopback
 * interface; port 0 takes any free port) and serves until
 * collect_web_stop. cfg, scraper and store must outlive the server. 0, or
 * -EINVAL (a bad spec) / -EADDRINUSE (cannot listen) / -ENOMEM with one
 * line in err. */
int collect_web_start(const collect_config_t *cfg, collect_scraper_t *scraper,
                      collect_store_t *store, const char *listen, collect_web_t **out, char *err,
                      size_t errlen);

/* Where it listens, "HOST:PORT" with the port bound ("[V6]:PORT" for IPv6). */
const char *collect_web_address(const collect_web_t *w);

/* Stops serving: waits for the requests in flight, then frees w. */
void collect_web_stop(collect_web_t *w);

#endif
