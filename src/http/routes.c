#include "http/routes.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "http/auth.h"
#include "http/handlers.h"
#include "http/metrics.h"
#include "http/rates.h"
#include "http/response.h"
#include "http/tree.h"
#include "metrics/sampler.h"
#include "registry/registry.h"
#include "registry/wall_profile.h"
#include "tree/tree.h"
#include "core/guard.h"
#include "ui/charts.h"
#include "ui/index.h"

/* The defaults and bounds (http/params.h, sample/wall.h) as the
 * descriptions and links say them. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define SECONDS STR(CPROF_DEFAULT_SECONDS)
#define MAX_SECONDS STR(CPROF_MAX_SECONDS)
#define TRACE_SECONDS STR(CPROF_TRACE_DEFAULT_SECONDS)
#define TRACE_MAX_SECONDS STR(CPROF_TRACE_MAX_SECONDS)
#define HZ STR(CPROF_WALL_DEFAULT_HZ)
#define MAX_HZ STR(CPROF_WALL_MAX_HZ)

/* The endpoints under /debug/pprof/ that are not profiles of the registry,
 * as the index lists them beside the profiles: each names what of the
 * request it takes (params) and its handler, or, for those that read the
 * request themselves, serve. */
static const struct endpoint {
  const char *name;
  const char *desc;
  const char *link_query;
  cprof__params_fn params;
  cprof__handler_fn handle;
  cprof__endpoint_fn serve;
} endpoints[] = {
    {"cmdline", "The command line invocation of the current program", NULL, NULL, NULL,
     cprof__serve_cmdline},
    {"profile",
     "CPU profile. You can specify the duration in the seconds GET parameter (default " SECONDS
     ", at most " MAX_SECONDS "). After you get the profile file, use the go tool pprof command "
     "to investigate the profile.",
     "seconds=" SECONDS, cprof__params_profile, cprof__serve_profile, NULL},
    {"symbol", "Maps program counters to function names: POST 0xADDR+0xADDR...", NULL, NULL, NULL,
     cprof__serve_symbol},
    {"trace",
     "A timeline of the program's threads over seconds (a number, default " TRACE_SECONDS
     ", at most " TRACE_MAX_SECONDS "), as Chrome Trace Event JSON for Perfetto UI or "
     "chrome://tracing: regions, tasks and logs, lock waits, threads starting and ending.",
     "seconds=" TRACE_SECONDS, cprof__params_trace, cprof__serve_trace, NULL},
    {"wall",
     "Wall-clock profile: every thread's stack, running or waiting, hz times a second (default " HZ
     ", at most " MAX_HZ ") for seconds (default " SECONDS "): where the time goes, on and off "
     "the CPU. Threads that wait are never interrupted.",
     "seconds=" SECONDS, cprof__params_wall, cprof__serve_wall, NULL},
};
#define NENDPOINTS ((int)(sizeof endpoints / sizeof endpoints[0]))

/* /debug/pprof/ui/REST: the viewer's page, its list of profiles and its
 * data (http/ui.c; the bytes are ui/ui.h's). */
static const struct ui_page {
  const char *rest;
  cprof__params_fn params;
  cprof__handler_fn handle;
} ui_pages[] = {
    {"", NULL, cprof__serve_ui_page},
    {"profiles", NULL, cprof__serve_ui_profiles},
    {"data", cprof__params_view, cprof__serve_ui_data},
};

__thread const char *cprof__accept_encoding;

/* Reads what the endpoint takes from req, once, and hands it to the
 * handler; a bad value is the reader's 400. */
static void dispatch(cprof__params_fn params, cprof__handler_fn handle, const cprof_request_t *req,
                     const cprof__config_t *cfg, cprof_response_t *resp) {
  cprof__params_t p;
  cprof__params_init(&p, req, cprof__accept_encoding);
  if (params && params(req, resp, &p) != 0)
    return;
  handle(&p, cfg, resp);
}

/* A profile of the registry: now, or its change over seconds=N, with
 * debug and seconds read (cprof__params_delta). */
static void serve_registered(const cprof__profile_t *prof, const cprof__params_t *p,
                             cprof_response_t *resp) {
  cprof__collect_t c = {
      .debug = (int)p->debug, .seconds = p->seconds, .wait = p->wait, .ctx = p->ctx};
  cprof__buf_t out;
  cprof__buf_init(&out);
  int err = cprof__profile_collect(prof, &c, &out);
  if (err) {
    cprof__buf_free(&out);
    if (err == -ECANCELED)
      cprof__resp_error(resp, 500, "request cancelled");
    else
      cprof__resp_error(resp, 500, "%s: %s", prof->failure, cprof_strerror(err));
  } else if (p->debug) {
    cprof__resp_body(resp, CPROF_TEXT, &out);
  } else {
    char name[80];
    snprintf(name, sizeof name, "%s%s", prof->name, p->seconds ? "-delta" : "");
    cprof__resp_attachment(resp, name, &out);
  }
}

/* The most processes of a tree the index lists. */
#define CPROF_INDEX_MAX_PROCS 1024

/* The index: the registry's profiles and the other endpoints, by name. */
static void serve_index(cprof_response_t *resp) {
  const cprof__profile_t *profiles[CPROF_MAX_PROFILES_REGISTERED];
  int np = cprof__registry_list(profiles, CPROF_MAX_PROFILES_REGISTERED);
  cprof__index_row_t rows[CPROF_MAX_PROFILES_REGISTERED + NENDPOINTS];
  int n = 0, i = 0, e = 0;
  while (i < np || e < NENDPOINTS) {
    int order = i == np ? 1 : e == NENDPOINTS ? -1 : strcmp(profiles[i]->name, endpoints[e].name);
    if (order == 0) { /* wall: its endpoint's row, which links to its route */
      i++;
      continue;
    }
    if (order < 0) {
      const cprof__profile_t *p = profiles[i++];
      rows[n++] = (cprof__index_row_t){p->name, p->desc ? p->desc : "", p->ops->count(p),
                                       "debug=1", p->ops->off ? p->ops->off(p) : NULL};
    } else {
      const struct endpoint *x = &endpoints[e++];
      rows[n++] = (cprof__index_row_t){x->name, x->desc, 0, x->link_query, NULL};
    }
  }
  /* A process tree's processes, when this process answers for one. */
  cprof__tree_proc_t *procs = calloc(CPROF_INDEX_MAX_PROCS, sizeof *procs);
  int nprocs = procs ? cprof__tree_list(procs, CPROF_INDEX_MAX_PROCS) : 0;
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__index_page(rows, n, procs, nprocs, &b);
  free(procs);
  cprof__resp_body(resp, CPROF_HTML, &b);
}

/* /debug/charts/: the live charts page, the same bytes every time. */
static void serve_charts(cprof_response_t *resp) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__charts_page(&b);
  cprof__resp_body(resp, CPROF_HTML, &b);
  cprof__resp_header(resp, "Content-Security-Policy", CPROF_CHARTS_CSP);
}

static int is_post(const cprof_request_t *req) {
  return req->method && strcmp(req->method, "POST") == 0;
}

/* path without the prefix, or NULL (a 404 written) when it is not under
 * the prefix. */
static const char *strip_prefix(const char *path, const cprof__config_t *cfg,
                                cprof_response_t *resp) {
  size_t plen = strlen(cfg->prefix);
  if (plen) {
    if (strncmp(path, cfg->prefix, plen) != 0 || (path[plen] != '/' && path[plen] != '\0')) {
      cprof__resp_error(resp, 404, "404 page not found");
      return NULL;
    }
    path += plen;
  }
  return path;
}

/* Whether the request's credentials let it go on; if not, the 401 is
 * written. */
static int authorized(const cprof_request_t *req, const cprof__config_t *cfg,
                      cprof_response_t *resp) {
  int auth = cprof__auth_check(cfg, req->authorization);
  if (auth == CPROF_AUTH_OK)
    return 1;
  cprof__resp_error(resp, 401, "401 unauthorized: this cprof server requires credentials");
  /* A challenge per scheme configured (RFC 9110 11.6.1), as separate
   * headers: clients read the first challenge of a combined one only. */
  if (cfg->auth[0])
    cprof__resp_header_add(resp, "WWW-Authenticate", "Basic realm=\"cprof\"");
  if (cfg->token[0])
    cprof__resp_header_add(resp, "WWW-Authenticate", "Bearer realm=\"cprof\"");
  if (auth == CPROF_AUTH_WRONG)
    cprof__auth_refused(req->path);
  return 0;
}

/* 301 to loc. */
static void moved(cprof_response_t *resp, const char *loc) {
  cprof__resp_error(resp, 301, "Moved Permanently");
  cprof__resp_header(resp, "Location", loc);
}

/* 301 to dir (a path from the root) under the prefix: as Go's ServeMux,
 * a directory's name without its slash redirects to the directory. */
static void moved_to_dir(cprof_response_t *resp, const cprof__config_t *cfg, const char *dir) {
  char loc[300];
  snprintf(loc, sizeof loc, "%s%s", cfg->prefix, dir);
  moved(resp, loc);
}

/* The paths beside /debug/pprof/: /metrics (where Prometheus looks by
 * default, under the prefix as the rest) and the charts, and the
 * directories' redirects. Returns 1 when path was one of them (served). */
static int serve_beside(const char *path, const cprof_request_t *req, const cprof__config_t *cfg,
                        cprof_response_t *resp) {
  if (strcmp(path, "/metrics") == 0)
    dispatch(NULL, cprof__serve_metrics, req, cfg, resp);
  else if (strcmp(path, "/debug/charts/data") == 0)
    dispatch(cprof__params_since, cprof__serve_charts_data, req, cfg, resp);
  else if (strcmp(path, "/debug/pprof") == 0)
    moved_to_dir(resp, cfg, "/debug/pprof/");
  else if (strcmp(path, "/debug/charts/") == 0)
    serve_charts(resp);
  else if (strcmp(path, "/debug/charts") == 0)
    moved_to_dir(resp, cfg, "/debug/charts/");
  else
    return 0;
  return 1;
}

/* /debug/pprof/ui/REST: one of the viewer's pages, or 404. */
static void serve_ui(const char *rest, const cprof_request_t *req, const cprof__config_t *cfg,
                     cprof_response_t *resp) {
  for (size_t i = 0; i < sizeof ui_pages / sizeof ui_pages[0]; i++) {
    if (strcmp(rest, ui_pages[i].rest) == 0) {
      dispatch(ui_pages[i].params, ui_pages[i].handle, req, cfg, resp);
      return;
    }
  }
  cprof__resp_error(resp, 404, "404 page not found");
}

/* The endpoint of that name (endpoints[]), or NULL. */
static const struct endpoint *endpoint_named(const char *name) {
  for (int i = 0; i < NENDPOINTS; i++)
    if (strcmp(name, endpoints[i].name) == 0)
      return &endpoints[i];
  return NULL;
}

/* A profile of the registry by name ("threads" too), or 404. */
static void serve_named_profile(const char *name, const cprof_request_t *req,
                                cprof_response_t *resp) {
  const cprof__profile_t *prof = cprof__registry_lookup(name);
  if (!prof) {
    cprof__resp_error(resp, 404, "Unknown profile");
    return;
  }
  cprof__params_t p;
  cprof__params_init(&p, req, cprof__accept_encoding);
  if (cprof__params_delta(req, resp, &p) == 0)
    serve_registered(prof, &p, resp);
}

/* /debug/pprof/NAME: the index, the viewer, an endpoint, a rate set by
 * POST, or a profile of the registry. */
static void serve_pprof(const char *name, const cprof_request_t *req, const cprof__config_t *cfg,
                        cprof_response_t *resp) {
  const struct endpoint *x = endpoint_named(name);
  if (name[0] == '\0')
    serve_index(resp);
  else if (strcmp(name, "ui") == 0) /* the viewer's links are relative to ui/ */
    moved(resp, "ui/");
  else if (strncmp(name, "ui/", 3) == 0)
    serve_ui(name + 3, req, cfg, resp);
  else if (x && x->serve)
    x->serve(req, cfg, resp);
  else if (x)
    dispatch(x->params, x->handle, req, cfg, resp);
  else if (is_post(req) && strcmp(name, "block") == 0)
    cprof__serve_block_rate(req, resp);
  else if (is_post(req) && strcmp(name, "mutex") == 0)
    cprof__serve_mutex_fraction(req, resp);
  else
    serve_named_profile(name, req, resp);
}

/* A path (the prefix taken off) as this process alone serves it. */
static void serve_local(const char *path, const cprof_request_t *req, const cprof__config_t *cfg,
                        cprof_response_t *resp) {
  if (serve_beside(path, req, cfg, resp))
    return;
  static const char root[] = "/debug/pprof/";
  if (strncmp(path, root, sizeof root - 1) != 0)
    cprof__resp_error(resp, 404, "404 page not found");
  else
    serve_pprof(path + sizeof root - 1, req, cfg, resp);
}

static void route(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp) {
  const char *path = strip_prefix(req->path ? req->path : "", cfg, resp);
  /* Before anything else under the prefix: without credentials a client
   * learns nothing, not even which paths exist (the redirect, the 404s). */
  if (!path || !authorized(req, cfg, resp))
    return;
  /* A process tree's: ?pid=N, the list, the merged profiles (tree.c). */
  if (!cprof__serve_tree(path, req, cfg, resp, serve_local))
    serve_local(path, req, cfg, resp);
}

int cprof_handle_request(const cprof_request_t *req, cprof_response_t *resp) {
  /* Serving a profile allocates; the program's thread that asked must not
   * see those allocations in its own heap profile. */
  cprof__guard_enter();
  /* The CPU time serving takes, for the metrics (not the wall time: a
   * 30-second profile mostly waits). */
  struct timespec t0, t1;
  int timed = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0) == 0;
  int rc = 0;
  if (cprof__resp_init(resp) != 0) {
    cprof_response_free(resp);
    rc = -ENOMEM;
  } else {
    cprof__config_t cfg;
    cprof__config_get(&cfg);
    route(req, &cfg, resp);
  }
  if (timed && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1) == 0)
    cprof__metrics_serve_add((int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 +
                             (t1.tv_nsec - t0.tv_nsec));
  cprof__guard_leave();
  return rc;
}
