/* The collector's HTTP client: every scrape in flight at once on one
 * libcurl multi handle, driven by one thread (the scheduler's), so that a
 * few hundred targets need no thread each. A request says where, how long
 * it may take and how to authenticate; its callback gets the status, the
 * body and the error, from collect_fetcher_run on the driving thread.
 * User-Agent names cprof; answers past max_bytes are cut off with an
 * error, so a wrong target cannot exhaust the collector's memory. */
#ifndef CPROF_COLLECT_FETCH_H
#define CPROF_COLLECT_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

typedef struct collect_request {
  const char *url;
  long timeout_ms;
  const char *username, *password; /* HTTP Basic, when username is not NULL */
  const char *bearer_token;        /* Authorization: Bearer, when not NULL */
} collect_request_t;

/* Why a scrape failed, in a few classes, for /metrics' reason label and
 * /api/scrapes (the whole error text goes beside it). The transfer's
 * classes are fetch.c's; the others scrape.c's. */
typedef enum collect_reason {
  COLLECT_REASON_NONE,
  COLLECT_REASON_REFUSED,   /* connection_refused: nothing listens (or it died) */
  COLLECT_REASON_TIMEOUT,   /* timeout: no whole answer within scrape_timeout */
  COLLECT_REASON_DNS,       /* dns: the host name does not resolve */
  COLLECT_REASON_TLS,       /* tls: the handshake or the certificate */
  COLLECT_REASON_TOO_LARGE, /* too_large: past the largest profile taken */
  COLLECT_REASON_TRANSFER,  /* transfer: any other libcurl error (reset, empty reply) */
  COLLECT_REASON_HTTP,      /* http_status: an answer other than 200 */
  COLLECT_REASON_INVALID,   /* invalid_profile: not a profile Parca would take */
  COLLECT_REASON_STORE,     /* store: the profile could not be stored */
  COLLECT_REASON_OTHER,     /* other: out of memory, a process list unreadable */
  COLLECT_REASON_N
} collect_reason_t;

/* "connection_refused", "timeout", ... ("" for none). */
const char *collect_reason_name(collect_reason_t r);

typedef struct collect_result {
  long status;         /* the HTTP status; 0 when no answer came */
  unsigned char *data; /* the body (the callback may take it: set to NULL) */
  size_t len;
  int64_t duration_ns; /* from the request's start to its end */
  char error[256];     /* "" when the transfer ended with an answer */
  collect_reason_t reason; /* the class of error; NONE with an answer */
} collect_result_t;

/* Called once per request, from collect_fetcher_run. */
typedef void (*collect_fetch_done_fn)(void *arg, collect_result_t *r);

typedef struct collect_fetcher collect_fetcher_t;

/* 0, -ENOMEM, or -EIO when libcurl cannot start. */
int collect_fetcher_new(size_t max_bytes, collect_fetcher_t **out);
/* Ends every request still in flight (their callbacks are not called). */
void collect_fetcher_free(collect_fetcher_t *f);

/* Starts a request; the strings are copied. 0 or -ENOMEM. */
int collect_fetcher_add(collect_fetcher_t *f, const collect_request_t *req,
                        collect_fetch_done_fn done, void *arg);

/* Moves the transfers on for up to wait_ms (returning early when one ends
 * or collect_fetcher_wakeup is called), calling the callbacks of those
 * that ended. Returns how many are still in flight, or -EIO. */
int collect_fetcher_run(collect_fetcher_t *f, long wait_ms);

/* Makes a collect_fetcher_run in progress return; from any thread. */
void collect_fetcher_wakeup(collect_fetcher_t *f);

#endif
