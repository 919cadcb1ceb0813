/* The endpoints, apart from any transport: cprof_handle_request() strips
 * the prefix, checks credentials and dispatches on the path: to a profile
 * of the registry (registry/registry.h), or to one of the few endpoints
 * that are not profiles (cmdline, profile, symbol). The index page lists
 * both. */
#ifndef CPROF_HTTP_ROUTES_H
#define CPROF_HTTP_ROUTES_H

#include "core/buf.h"
#include "core/config.h"
#include "cprof.h"

typedef void (*cprof__endpoint_fn)(const cprof_request_t *req, const cprof__config_t *cfg,
                                   cprof_response_t *resp);

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

/* The Accept-Encoding header of the request cprof's own server is routing
 * on this thread, or NULL (a program's own server calling
 * cprof_handle_request: bodies then go plain). */
extern __thread const char *cprof__accept_encoding;

/* Sleeps up to ms, waking early when the client goes away. Returns 0 after
 * the full wait, -1 if cancelled. */
int cprof__wait_request(const cprof_request_t *req, long ms);

/* The endpoints that are not profiles of the registry (src/http/<name>.c). */
void cprof__serve_cmdline(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
void cprof__serve_symbol(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
void cprof__serve_profile(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
void cprof__serve_trace(const cprof_request_t *req, const cprof__config_t *cfg,
                        cprof_response_t *resp);
void cprof__serve_wall(const cprof_request_t *req, const cprof__config_t *cfg,
                       cprof_response_t *resp);
/* The wall-clock profile over seconds at hz (0: the default, 50) into out,
 * as /debug/pprof/wall takes it (with its X-Cprof-Wall header); 0, or -1
 * with resp filled with the error. */
int cprof__wall_take(const cprof_request_t *req, const cprof__config_t *cfg, long seconds, long hz,
                     cprof_response_t *resp, cprof__buf_t *out);
/* The CPU profile over seconds into out, as /debug/pprof/profile takes it;
 * 0, or -1 with resp filled with the error (out may hold partial bytes). */
int cprof__cpu_profile_take(const cprof_request_t *req, const cprof__config_t *cfg, long seconds,
                            cprof_response_t *resp, cprof__buf_t *out);

#endif
