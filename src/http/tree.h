/* A process tree's requests: the list of its processes, ?pid=N, and the
 * profiles of all of them merged (tree.c). */
#ifndef CPROF_HTTP_TREE_H
#define CPROF_HTTP_TREE_H

#include "core/config.h"
#include "cprof.h"

/* How the router serves a path (under /debug/pprof/, the prefix taken
 * off) for this process alone. */
typedef void (*cprof__local_fn)(const char *path, const cprof_request_t *req,
                                const cprof__config_t *cfg, cprof_response_t *resp);

/* Serves the request if it is the tree's to serve, and returns 1; else
 * returns 0 and the caller serves it (with local). */
int cprof__serve_tree(const char *path, const cprof_request_t *req, const cprof__config_t *cfg,
                      cprof_response_t *resp, cprof__local_fn local);

#endif
