/* Remote write to Grafana Pyroscope: every profile the scraper stores is
 * also pushed to Pyroscope's ingest API, as push/ingest.h writes the
 * request: the name JOB{instance=ADDR,k=v}, the profile's bytes as
 * scraped, and a sample_type_config for the profile's kind.
 *
 * A pusher owns one thread that sends what the scraper enqueues, oldest
 * first, one request at a time. A failure to connect, a 5xx or a 429 is
 * retried after a pause that doubles from 0.5 s to 30 s (counted as
 * retried); any other answer but a 2xx is final (counted as rejected, with
 * a line on stderr). The queue holds at most queue_size profiles: a full
 * queue drops its oldest (counted as dropped), since the newest tell most
 * about now. Everything but the bytes is built when a profile is enqueued,
 * so a profile's URL and config are fixed then. */
#ifndef CPROF_COLLECT_PUSH_H
#define CPROF_COLLECT_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "collect/config.h"
#include "model/model.h"

/* The collector's /metrics figures. queued is what waits now, with the
 * profile being sent. */
typedef struct collect_push_totals {
  uint64_t pushed, retried, dropped, rejected, queued;
} collect_push_totals_t;

/* One scraped profile; collect_pusher_enqueue copies what it needs. */
typedef struct collect_push_profile {
  const char *job, *instance;
  const char *kind;              /* the profile's name in the config: "process_cpu", "mutex"... */
  int delta;                     /* scraped with ?seconds=: its values are not cumulative */
  const collect_label_t *labels; /* the target's own */
  size_t nlabels;
  int64_t start_ns, duration_ns; /* Unix ns */
  const cprof__pf_t *profile;    /* decoded: its sample types and period */
  const void *data;              /* the bytes as scraped */
  size_t len;
} collect_push_profile_t;

typedef struct collect_pusher collect_pusher_t;

/* How long collect_pusher_stop tries to send what is queued. */
#define COLLECT_PUSH_FLUSH_MS 3000L

/* A pusher to rw (which outlives it) with its thread started. 0, -EINVAL
 * (a bad url), -ENOMEM or -EIO, with a line in err. libcurl must be
 * initialized (collect_fetcher_new does it). */
int collect_pusher_new(const collect_remote_write_t *rw, collect_pusher_t **out, char *err,
                       size_t errlen);

/* Queues a copy of prof; never blocks on the network. 0 or -ENOMEM (then
 * counted as dropped). From any thread. */
int collect_pusher_enqueue(collect_pusher_t *p, const collect_push_profile_t *prof);

/* From any thread. */
void collect_pusher_totals(collect_pusher_t *p, collect_push_totals_t *out);

/* Sends what is queued for at most flush_ms more (retrying as usual within
 * that), then ends the thread; what is left counts as dropped. */
void collect_pusher_stop(collect_pusher_t *p, long flush_ms);
void collect_pusher_free(collect_pusher_t *p);

/* JOB{instance=ADDR,k=v,...}: Pyroscope's application name with its tags,
 * the target's labels in config order after instance (cprof__ingest_name).
 * NULL when out of memory. */
char *collect_push_name(const char *job, const char *instance, const collect_label_t *labels,
                        size_t n);

#endif
