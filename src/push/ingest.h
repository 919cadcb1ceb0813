/* Grafana Pyroscope's ingest API, spoken by both of cprof's pushers: the
 * library's own (push/push.c, CPROF_PUSH_URL) and cprof collect's remote
 * write (tools/cprof/collect/push.c). Its docs: "Pyroscope server HTTP
 * API", POST /ingest:
 *
 *   POST URL/ingest?name=APP{k=v,...}&from=S&until=S&format=pprof
 *        &spyName=cprof[&sampleRate=HZ]
 *   Content-Type: multipart/form-data
 *     part "profile" (file profile.pprof): the profile.proto, gzipped
 *     part "sample_type_config" (file sample_type_config.json): for each
 *       sample type of the profile, {"units", "display-name", "aggregation",
 *       "cumulative", "sampled"} as Pyroscope's SampleTypeConfig reads them
 *
 * The name is the application, not APP.cpu: with format=pprof the server
 * makes one series per profile, its __name__ read off the display-names
 * (process_cpu, memory, mutex, block, goroutines), and takes service_name
 * from the name, as pyroscope-go's uploads do. Cumulative profiles (the
 * heap's allocations, block, mutex) go as they are, marked so: Pyroscope
 * stores them with __delta__="false" and takes the differences itself.
 * No "prev_profile" part: Pyroscope 1.x refuses it. */
#ifndef CPROF_PUSH_INGEST_H
#define CPROF_PUSH_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "core/buf.h"
#include "model/model.h"

/* The pure parts. Each returns a malloc'd string, NULL when out of memory. */

typedef struct cprof__ingest_tag {
  const char *name, *value;
} cprof__ingest_tag_t;

/* APP{k=v,...}: the application name with its tags, in order. Characters
 * that would end a name or a value early ({ } , = and white space) become
 * _. With no tags, APP{}. */
char *cprof__ingest_name(const char *app, const cprof__ingest_tag_t *tags, size_t n);

/* Appends s percent-encoded as a URL's query component (RFC 3986: all but
 * letters, digits and -._~). */
void cprof__url_escape(cprof__buf_t *b, const char *s);

/* BASE/ingest?name=...&from=...&until=...&format=pprof&spyName=cprof, with
 * &sampleRate=HZ when hz > 0; BASE's trailing slashes dropped, the name
 * percent-encoded. */
char *cprof__ingest_url(const char *base, const char *name, int64_t from_s, int64_t until_s,
                        long hz);

/* The sample_type_config JSON of n sample types of a profile of KIND
 * ("process_cpu", "memory", "mutex", "block", ...). Go's types get
 * Pyroscope's own settings (DefaultSampleTypeMapping of
 * pkg/og/convert/pprof, pyroscope-go's sample_types.go), with alloc_*,
 * contentions and delay cumulative unless delta. Any other type: units
 * "bytes" for bytes, "objects" for count, else its pprof unit; aggregation
 * "average" when the profile is a snapshot (not delta: a sum of snapshots
 * over time means nothing), else Pyroscope's default sum; not cumulative,
 * not sampled; its display-name the type's name, except a CPU profile's
 * "cpu" (nanoseconds), shown as "cpu_nanoseconds" so that it does not
 * land on the series of "samples", whose display-name is cpu. */
char *cprof__ingest_sample_type_config(const char *kind, int delta,
                                       const cprof__value_type_t *types, size_t n);

/* The sample rate in Hz of a CPU profile (period type cpu, in
 * nanoseconds), or 0. */
long cprof__ingest_sample_rate(const cprof__value_type_t *period_type, int64_t period);

/* The request. libcurl's functions come in a table, so that the library,
 * which loads libcurl only when it pushes (push/libcurl.c), and the cprof
 * command, which links it, send the same request. */
typedef struct cprof__curl {
  CURL *(*easy_init)(void);
  CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
  CURLcode (*easy_perform)(CURL *);
  CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
  void (*easy_cleanup)(CURL *);
  void (*easy_reset)(CURL *);
  const char *(*easy_strerror)(CURLcode);
  curl_mime *(*mime_init)(CURL *);
  curl_mimepart *(*mime_addpart)(curl_mime *);
  CURLcode (*mime_name)(curl_mimepart *, const char *);
  CURLcode (*mime_filename)(curl_mimepart *, const char *);
  CURLcode (*mime_type)(curl_mimepart *, const char *);
  CURLcode (*mime_data)(curl_mimepart *, const char *, size_t);
  void (*mime_free)(curl_mime *);
  /* The multi interface (7.66 or later), for a request that may be
   * aborted: its wait is cut into short polls, so that an abort takes
   * effect within POLL_MS (ingest.c) rather than at libcurl's next
   * progress call, up to a second later. NULL: curl_easy_perform. */
  CURLM *(*multi_init)(void);
  CURLMcode (*multi_add_handle)(CURLM *, CURL *);
  CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
  CURLMcode (*multi_perform)(CURLM *, int *);
  CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned, int, int *);
  CURLMsg *(*multi_info_read)(CURLM *, int *);
  CURLMcode (*multi_cleanup)(CURLM *);
} cprof__curl_t;

typedef struct cprof__ingest_request {
  const char *url;     /* cprof__ingest_url's */
  const void *profile; /* gzipped profile.proto */
  size_t len;
  const char *stc;                 /* cprof__ingest_sample_type_config's */
  const char *user_agent;          /* "cprof/0.3.0" */
  const char *username, *password; /* HTTP Basic, or NULL (the URL's user:password@ works too) */
  struct curl_slist *headers; /* more headers (Authorization: Bearer, X-Scope-OrgID), or NULL */
  long timeout_ms;            /* for the whole request */
  /* Called while the request runs: non-zero aborts it. May be NULL. */
  int (*abort)(void *arg);
  void *abort_arg;
  /* Sockets made by the caller (SOCK_CLOEXEC, say), or NULL for libcurl's. */
  curl_opensocket_callback open_socket;
} cprof__ingest_request_t;

enum { CPROF_INGEST_SENT, CPROF_INGEST_RETRY, CPROF_INGEST_REJECTED };

/* One POST on c (reset first). CPROF_INGEST_SENT for a 2xx;
 * CPROF_INGEST_RETRY when it could not be sent, for a 5xx and a 429;
 * CPROF_INGEST_REJECTED for any other answer, final. Unless SENT, why gets
 * one line: libcurl's error, or the status and the answer's first bytes. */
int cprof__ingest_post(const cprof__curl_t *api, CURL *c, const cprof__ingest_request_t *r,
                       char *why, size_t whylen);

#endif
