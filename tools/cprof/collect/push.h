/* Remote write to Grafana Pyroscope: every profile the scraper stores is
 * also pushed to Pyroscope's ingest API (its docs: "Pyroscope server HTTP
 * API", POST /ingest):
 *
 *   POST URL/ingest?name=JOB{instance=ADDR,k=v}&from=S&until=S&format=pprof
 *        &spyName=cprof[&sampleRate=HZ]
 *   Content-Type: multipart/form-data
 *     part "profile" (file profile.pprof): the bytes as scraped
 *     part "sample_type_config" (file sample_type_config.json): for each
 *       sample type of the profile, {"units", "display-name", "aggregation",
 *       "cumulative", "sampled"} as Pyroscope's SampleTypeConfig reads them
 *
 * The name is the job, not JOB.cpu: with format=pprof the server makes one
 * series per sample type itself, named by its display-name, and takes the
 * service_name from the name, as pyroscope-go's uploads do.
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
#include "profile/model.h"

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

/* The pure parts, for tests. All return malloc'd strings, NULL when out of
 * memory. */

/* JOB{instance=ADDR,k=v,...}: Pyroscope's application name with its tags,
 * the target's labels in config order after instance. Characters that
 * would end a name or a value early ({ } , = and white space) become _. */
char *collect_push_name(const char *job, const char *instance, const collect_label_t *labels,
                        size_t n);

/* BASE/ingest?name=...&from=...&until=...&format=pprof&spyName=cprof, with
 * &sampleRate=HZ when hz > 0; BASE's trailing slashes dropped, the name
 * percent-encoded. */
char *collect_push_url(const char *base, const char *name, int64_t from_s, int64_t until_s,
                       long hz);

/* The sample_type_config JSON of n sample types of a profile of KIND.
 * Go's types get Pyroscope's own settings (DefaultSampleTypeMapping of
 * pkg/og/convert/pprof, pyroscope-go's sample_types.go), with alloc_*,
 * contentions and delay cumulative unless delta. Any other type: units
 * "bytes" for bytes, "objects" for count, else its pprof unit; aggregation
 * "average" when the profile is a snapshot (not delta: a sum of snapshots
 * over time means nothing), else Pyroscope's default sum; not cumulative,
 * not sampled; its display-name the type's name, except a CPU profile's
 * "cpu" (nanoseconds), shown as "cpu_nanoseconds" so that it does not
 * land on the series of "samples", whose display-name is cpu. */
char *collect_push_sample_type_config(const char *kind, int delta, const cprof__value_type_t *types,
                                      size_t n);

/* The sample rate in Hz of a CPU profile (period type cpu, in
 * nanoseconds), or 0. */
long collect_push_sample_rate(const cprof__pf_t *p);

#endif
