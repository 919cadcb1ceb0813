/* A process tree's requests: the list of its processes, ?pid=N, and the
 * profiles of all of them merged (tree.c). */
#ifndef CPROF_HTTP_TREE_H
#define CPROF_HTTP_TREE_H

#include "core/buf.h"
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

/* For the viewer (ui.c): take(arg, own) appends this process's
 * profile.proto of the profile named name ("profile", "wall", "heap") over
 * seconds (0: now) to own, returning 0, or -1 with the response's error
 * written. At the owner of a tree with members, they are asked the same at
 * once, and out gets every process's merged (as /debug/pprof/NAME without
 * ?pid gives it); else take fills out itself. Returns 0, -1 (take
 * failed), or -2 with a line in err (the merge failed). */
int cprof__tree_take(const char *name, long seconds, const cprof__config_t *cfg,
                     int (*take)(void *arg, cprof__buf_t *own), void *arg, cprof__buf_t *out,
                     char *err, size_t errlen);

#endif
