/* What a request asks, read in one place: the router (http/routes.c) fills
 * a cprof__params_t with the reader its endpoint names, and the handler
 * gets plain values (seconds, debug, whether the body may be gzipped, how
 * to wait on the client) rather than the request to read again. A bad
 * value is a 400 with Go's wording, before the handler runs. */
#ifndef CPROF_HTTP_PARAMS_H
#define CPROF_HTTP_PARAMS_H

#include "cprof.h"

/* seconds= of the CPU and wall-clock profiles when absent, as Go's
 * /debug/pprof/profile. */
#define CPROF_DEFAULT_SECONDS 30
/* The most a profile's seconds= (and the viewer's diff=) may ask: an hour. */
#define CPROF_MAX_SECONDS 3600
/* /debug/pprof/trace's seconds=, a number: its default, and its most
 * (http/trace.c says why). */
#define CPROF_TRACE_DEFAULT_SECONDS 1
#define CPROF_TRACE_MAX_SECONDS 60

typedef struct cprof__params {
  /* Sleeps up to ms, returning 0 after the full wait or -1 as soon as the
   * client goes away; the registry's recordings take the same pair. */
  int (*wait)(void *ctx, long ms);
  void *ctx;
  int gzip;             /* the client's Accept-Encoding lets the body be gzipped */
  long debug;           /* debug=N (0..1000); 0 when absent */
  long seconds;         /* seconds=N (1..CPROF_MAX_SECONDS); the endpoint's default when absent */
  double trace_seconds; /* /trace's seconds=X, a number */
  long hz;              /* /wall's and /profile's hz=N; 0 when absent (the default rate) */
  long diff;            /* the viewer's diff=N: two snapshots N seconds apart; 0 when absent */
  long since;           /* /debug/charts/data's since=UNIX_MS; 0 when absent */
  char name[80];        /* the viewer's name=: the profile to show */
  char tagroot[256];    /* the viewer's tagroot=KEY[,KEY]; "" when absent */
} cprof__params_t;

/* Empties p, with the waits of req (cut short when req->is_cancelled says
 * so) and whether accept_encoding (the Accept-Encoding header, or NULL)
 * lets a body be gzipped: a "gzip" or "*" coding whose q is not 0. */
void cprof__params_init(cprof__params_t *p, const cprof_request_t *req,
                        const char *accept_encoding);

/* An endpoint's reader: fills p from req's query, or fills a 400 in resp
 * and returns -1. */
typedef int (*cprof__params_fn)(const cprof_request_t *req, cprof_response_t *resp,
                                cprof__params_t *p);

/* /debug/pprof/profile: seconds, default CPROF_DEFAULT_SECONDS, then hz
 * (1..CPROF_MAX_CPU_HZ). */
int cprof__params_profile(const cprof_request_t *req, cprof_response_t *resp, cprof__params_t *p);
/* /debug/pprof/wall: seconds as /profile's, then hz (1..CPROF_WALL_MAX_HZ). */
int cprof__params_wall(const cprof_request_t *req, cprof_response_t *resp, cprof__params_t *p);
/* /debug/pprof/trace: seconds, a number in (0, CPROF_TRACE_MAX_SECONDS],
 * default CPROF_TRACE_DEFAULT_SECONDS. */
int cprof__params_trace(const cprof_request_t *req, cprof_response_t *resp, cprof__params_t *p);
/* A profile of the registry: debug and seconds, as cprof__param_delta. */
int cprof__params_delta(const cprof_request_t *req, cprof_response_t *resp, cprof__params_t *p);
/* /debug/pprof/ui/data: name (required), seconds or diff (1..
 * CPROF_MAX_SECONDS, not both; 0 when absent) and tagroot. */
int cprof__params_view(const cprof_request_t *req, cprof_response_t *resp, cprof__params_t *p);
/* /debug/charts/data: since, unix time in milliseconds (empty is 0). */
int cprof__params_since(const cprof_request_t *req, cprof_response_t *resp, cprof__params_t *p);

/* Reads the debug parameter: absent is 0. On a bad value fills a 400 and
 * returns -1. */
int cprof__param_debug(const cprof_request_t *req, cprof_response_t *resp, long *debug);
/* Reads the seconds parameter: absent leaves *seconds as is and returns 0;
 * a value that is not an integer in [1, max] fills a 400 and returns -1. */
int cprof__param_seconds(const cprof_request_t *req, cprof_response_t *resp, long max,
                         long *seconds);
/* The parameters of a profile that can be a delta (goroutine, heap,
 * allocs): debug, and seconds=N for a delta over N seconds (at most
 * CPROF_MAX_SECONDS), which Go refuses together with debug. On a bad value
 * fills a 400 and returns -1. */
int cprof__param_delta(const cprof_request_t *req, cprof_response_t *resp, long *debug,
                       long *seconds);

#endif
