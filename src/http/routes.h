/* The endpoints, apart from any transport: cprof_handle_request() strips
 * the prefix, checks credentials and dispatches on the path. Each profile
 * is one row of cprof__profiles; the index page lists the rows. */
#ifndef CPROF_HTTP_ROUTES_H
#define CPROF_HTTP_ROUTES_H

#include "core/config.h"
#include "cprof.h"

typedef void (*cprof__endpoint_fn)(const cprof_request_t *req, const cprof__config_t *cfg,
                                   cprof_response_t *resp);

typedef struct cprof__profile_entry {
  const char *name;        /* the path under /debug/pprof/ */
  const char *desc;        /* one line, for the index page */
  int (*count)(void);      /* the index page's count; NULL for non-profiles */
  const char *link_query;  /* the index link's query, e.g. "debug=1" */
  cprof__endpoint_fn serve;
  const char *(*off)(void); /* NULL, or when the profile is off how to turn it on */
} cprof__profile_entry_t;

extern const cprof__profile_entry_t cprof__profiles[];
extern const int cprof__nprofiles;

/* Reads the debug parameter: absent is 0. On a bad value fills a 400 and
 * returns -1. */
int cprof__param_debug(const cprof_request_t *req, cprof_response_t *resp, long *debug);
/* Reads the seconds parameter: absent leaves *seconds as is and returns 0;
 * a value that is not an integer in [1, max] fills a 400 and returns -1. */
int cprof__param_seconds(const cprof_request_t *req, cprof_response_t *resp, long max,
                         long *seconds);

/* The parameters of a profile that can be a delta (goroutine, heap,
 * allocs): debug, and seconds=N for a delta over N seconds (at most an
 * hour), which Go refuses together with debug. On a bad value fills a 400
 * and returns -1. */
int cprof__param_delta(const cprof_request_t *req, cprof_response_t *resp, long *debug,
                       long *seconds);

/* Sleeps up to ms, waking early when the client goes away. Returns 0 after
 * the full wait, -1 if cancelled. */
int cprof__wait_request(const cprof_request_t *req, long ms);

/* The endpoints (src/http/<name>.c, src/ui/index.c). */
void cprof__serve_index(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
void cprof__serve_cmdline(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
void cprof__serve_symbol(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
void cprof__serve_profile(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
void cprof__serve_heap(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
void cprof__serve_allocs(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
int cprof__heap_count(void);
void cprof__serve_block(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
void cprof__serve_mutex(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
void cprof__serve_threadcreate(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
int cprof__block_count(void);
int cprof__mutex_count(void);
int cprof__threadcreate_count(void);
void cprof__serve_goroutine(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);

#endif
