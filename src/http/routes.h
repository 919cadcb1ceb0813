/* The endpoints, apart from any transport: cprof_handle_request() strips
 * the prefix, checks credentials and dispatches on the path: to a profile
 * of the registry (registry/registry.h), or to one of the few endpoints
 * that are not profiles (cmdline, profile, symbol, trace, wall). The index
 * page lists both. The router reads the request's parameters once, as the
 * endpoint's entry says (http/params.h), and hands them to the handler
 * (http/handlers.h); no handler calls the router back. */
#ifndef CPROF_HTTP_ROUTES_H
#define CPROF_HTTP_ROUTES_H

#include "core/config.h"
#include "cprof.h"
#include "http/params.h"

/* An endpoint that reads the request itself: cmdline, which reads nothing,
 * and symbol, whose body is addresses in a format of its own. */
typedef void (*cprof__endpoint_fn)(const cprof_request_t *req, const cprof__config_t *cfg,
                                   cprof_response_t *resp);

/* The Accept-Encoding header of the request cprof's own server is routing
 * on this thread, or NULL (a program's own server calling
 * cprof_handle_request: bodies then go plain). */
extern __thread const char *cprof__accept_encoding;

/* The endpoints that read the request themselves (src/http/<name>.c). */
void cprof__serve_cmdline(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp);
void cprof__serve_symbol(const cprof_request_t *req, const cprof__config_t *cfg,
                         cprof_response_t *resp);

#endif
