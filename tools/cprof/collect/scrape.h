/* The scrape scheduler: one loop per (job, target, enabled profile), as
 * Parca and Prometheus keep one per target, each on its own schedule (the
 * job's interval, first run at an offset spread by a hash of the loop's
 * URL, so that targets do not all fire at once), all in flight together on
 * one collect_fetcher driven by the thread that calls collect_scraper_run.
 *
 * A scrape is good when the answer is a 200 whose body decodes and passes
 * collect_validate; then it is stored (collect_store_put: job, instance,
 * the profile's name as type, the target's labels with job and instance,
 * the scrape's start, the profile's duration and the sum of its default
 * sample type). Anything else marks the loop Bad with the reason kept, as
 * Parca's /targets shows it; a loop not yet scraped is Unknown. A failure
 * is also data: a row in the store's scrape_events (with its class and
 * text; the one that turned the loop Bad marked down), as is a loop good
 * again (up), and the round's line on stderr names each failure's target,
 * profiles and reason. */
#ifndef CPROF_COLLECT_SCRAPE_H
#define CPROF_COLLECT_SCRAPE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/config.h"
#include "collect/fetch.h"
#include "collect/push.h"
#include "collect/store.h"

typedef enum { COLLECT_UNKNOWN, COLLECT_GOOD, COLLECT_BAD } collect_health_t;

/* What /targets shows of one loop; strings point into the config and live
 * as long as the scraper. */
typedef struct collect_loop_status {
  const collect_job_t *job;
  const collect_target_t *target;
  const collect_profile_t *profile;
  const char *url;
  collect_health_t health;
  int64_t last_ns;          /* the last scrape's start, Unix ns; 0 before one */
  int64_t last_duration_ns; /* how long it took */
  char last_error[256];     /* "" when good */
  uint64_t scrapes, failures;
  /* The last failure, kept after the loop is good again, and the
   * failures by class (fetch.h), for /targets and /metrics. */
  int64_t last_failure_ns; /* 0 before one */
  char last_failure[256];
  collect_reason_t last_reason;
  uint64_t failures_by[COLLECT_REASON_N];
} collect_loop_status_t;

/* The collector's own figures, for its /metrics. */
typedef struct collect_scrape_totals {
  uint64_t scrapes, failures, bytes_scraped;
} collect_scrape_totals_t;

typedef struct collect_scraper collect_scraper_t;

/* A scraper of cfg's enabled profiles into store (both outlive it). 0,
 * -ENOMEM or -EIO with a line in err. */
int collect_scraper_new(const collect_config_t *cfg, collect_store_t *store,
                        collect_scraper_t **out, char *err, size_t errlen);
void collect_scraper_free(collect_scraper_t *s);

/* Every profile stored from now on is also enqueued on p (remote write);
 * NULL stops that. Before collect_scraper_run; p outlives the run. */
void collect_scraper_set_pusher(collect_scraper_t *s, collect_pusher_t *p);
collect_pusher_t *collect_scraper_pusher(collect_scraper_t *s);

/* Scrapes until collect_scraper_stop, then lets the scrapes in flight end
 * (their profiles stored) and returns 0, or -EIO. A line on stderr per
 * round: once per shortest interval, what was scraped, stored and failed. */
int collect_scraper_run(collect_scraper_t *s);

/* Asks collect_scraper_run to stop; from any thread (not a signal
 * handler). */
void collect_scraper_stop(collect_scraper_t *s);

/* Copies up to max loops' status into out; returns how many loops there
 * are. From any thread. */
size_t collect_scraper_status(collect_scraper_t *s, collect_loop_status_t *out, size_t max);
void collect_scraper_totals(collect_scraper_t *s, collect_scrape_totals_t *out);

/* "Unknown", "Good", "Bad", as Parca's /targets writes them. */
const char *collect_health_name(collect_health_t h);

#endif
