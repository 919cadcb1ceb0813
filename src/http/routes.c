#include "http/routes.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "http/auth.h"
#include "http/metrics.h"
#include "http/query.h"
#include "http/rates.h"
#include "http/response.h"
#include "metrics/sampler.h"
#include "registry/registry.h"
#include "core/guard.h"
#include "ui/charts.h"
#include "ui/index.h"
#include "ui/ui.h"

/* The endpoints under /debug/pprof/ that are not profiles of the registry,
 * as the index lists them beside the profiles. */
static const struct endpoint {
  const char *name;
  const char *desc;
  const char *link_query;
  cprof__endpoint_fn serve;
} endpoints[] = {
    {"cmdline", "The command line invocation of the current program", NULL, cprof__serve_cmdline},
    {"profile",
     "CPU profile. You can specify the duration in the seconds GET parameter (default 30, at "
     "most 3600). After you get the profile file, use the go tool pprof command to investigate "
     "the profile.",
     "seconds=30", cprof__serve_profile},
    {"symbol", "Maps program counters to function names: POST 0xADDR+0xADDR...", NULL,
     cprof__serve_symbol},
    {"trace",
     "A timeline of the program's threads over seconds (a number, default 1, at most 60), as "
     "Chrome Trace Event JSON for Perfetto UI or chrome://tracing: regions, tasks and logs, "
     "lock waits, threads starting and ending.",
     "seconds=1", cprof__serve_trace},
    {"wall",
     "Wall-clock profile: every thread's stack, running or waiting, hz times a second (default "
     "50, at most 250) for seconds (default 30): where the time goes, on and off the CPU. "
     "Threads that wait are never interrupted.",
     "seconds=30", cprof__serve_wall},
};
#define NENDPOINTS ((int)(sizeof endpoints / sizeof endpoints[0]))

int cprof__param_debug(const cprof_request_t *req, cprof_response_t *resp, long *debug) {
  char v[32];
  *debug = 0;
  int got = cprof__query_get(req->query, "debug", v, sizeof v);
  if (got == 0 || (got == 1 && v[0] == '\0'))
    return 0;
  if (got < 0 || cprof__query_int(v, 0, 1000, debug) != 0) {
    cprof__resp_error(resp, 400, "invalid value for \"debug\" - must be a non-negative integer");
    return -1;
  }
  return 0;
}

int cprof__param_seconds(const cprof_request_t *req, cprof_response_t *resp, long max,
                         long *seconds) {
  char v[32];
  int got = cprof__query_get(req->query, "seconds", v, sizeof v);
  if (got == 0)
    return 0;
  if (got < 0 || cprof__query_int(v, 1, max, seconds) != 0) {
    cprof__resp_error(resp, 400, "invalid value for \"seconds\" - must be an integer from 1 to %ld",
                      max);
    return -1;
  }
  return 0;
}

#define MAX_DELTA_SECONDS 3600

int cprof__param_delta(const cprof_request_t *req, cprof_response_t *resp, long *debug,
                       long *seconds) {
  *seconds = 0;
  if (cprof__param_debug(req, resp, debug) != 0 ||
      cprof__param_seconds(req, resp, MAX_DELTA_SECONDS, seconds) != 0)
    return -1;
  if (*seconds && *debug) {
    cprof__resp_error(resp, 400, "seconds and debug params are incompatible");
    return -1;
  }
  return 0;
}

__thread const char *cprof__accept_encoding;

int cprof__wait_request(const cprof_request_t *req, long ms) {
  while (ms > 0) {
    if (req->is_cancelled && req->is_cancelled(req->ctx))
      return -1;
    long step = ms < 100 ? ms : 100;
    struct timespec ts = {step / 1000, (step % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    ms -= step;
  }
  return 0;
}

static int wait_for(void *req, long ms) { return cprof__wait_request(req, ms); }

/* A profile of the registry: now, or its change over seconds=N. */
static void serve_registered(const cprof__profile_t *p, const cprof_request_t *req,
                             cprof_response_t *resp) {
  long debug, seconds;
  if (cprof__param_delta(req, resp, &debug, &seconds) != 0)
    return;
  cprof__collect_t c = {
      .debug = (int)debug, .seconds = seconds, .wait = wait_for, .ctx = (void *)req};
  cprof__buf_t out;
  cprof__buf_init(&out);
  int err = cprof__profile_collect(p, &c, &out);
  if (err) {
    cprof__buf_free(&out);
    if (err == -ECANCELED)
      cprof__resp_error(resp, 500, "request cancelled");
    else
      cprof__resp_error(resp, 500, "%s: %s", p->failure, cprof_strerror(err));
  } else if (debug) {
    cprof__resp_body(resp, CPROF_TEXT, &out);
  } else {
    char name[80];
    snprintf(name, sizeof name, "%s%s", p->name, seconds ? "-delta" : "");
    cprof__resp_attachment(resp, name, &out);
  }
}

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
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__index_page(rows, n, &b);
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

static void route(const cprof_request_t *req, const cprof__config_t *cfg, cprof_response_t *resp) {
  const char *path = req->path ? req->path : "";
  size_t plen = strlen(cfg->prefix);
  if (plen) {
    if (strncmp(path, cfg->prefix, plen) != 0 || (path[plen] != '/' && path[plen] != '\0')) {
      cprof__resp_error(resp, 404, "404 page not found");
      return;
    }
    path += plen;
  }
  /* Before anything else under the prefix: without credentials a client
   * learns nothing, not even which paths exist (the redirect, the 404s). */
  int auth = cprof__auth_check(cfg, req->authorization);
  if (auth != CPROF_AUTH_OK) {
    cprof__resp_error(resp, 401, "401 unauthorized: this cprof server requires credentials");
    /* A challenge per scheme configured (RFC 9110 11.6.1), as separate
     * headers: clients read the first challenge of a combined one only. */
    if (cfg->auth[0])
      cprof__resp_header_add(resp, "WWW-Authenticate", "Basic realm=\"cprof\"");
    if (cfg->token[0])
      cprof__resp_header_add(resp, "WWW-Authenticate", "Bearer realm=\"cprof\"");
    if (auth == CPROF_AUTH_WRONG)
      cprof__auth_refused(req->path);
    return;
  }
  /* Where Prometheus looks by default, under the prefix as the rest. */
  if (strcmp(path, "/metrics") == 0) {
    cprof__serve_metrics(req, cfg, resp);
    return;
  }
  if (strcmp(path, "/debug/charts/data") == 0) {
    cprof__serve_charts_data(req, cfg, resp);
    return;
  }
  static const char root[] = "/debug/pprof/";
  if (strcmp(path, "/debug/pprof") == 0) { /* as Go's ServeMux: redirect to the directory */
    char loc[300];
    snprintf(loc, sizeof loc, "%s/debug/pprof/", cfg->prefix);
    cprof__resp_error(resp, 301, "Moved Permanently");
    cprof__resp_header(resp, "Location", loc);
    return;
  }
  if (strcmp(path, "/debug/charts/") == 0) {
    serve_charts(resp);
    return;
  }
  if (strcmp(path, "/debug/charts") == 0) {
    char loc[300];
    snprintf(loc, sizeof loc, "%s/debug/charts/", cfg->prefix);
    cprof__resp_error(resp, 301, "Moved Permanently");
    cprof__resp_header(resp, "Location", loc);
    return;
  }
  if (strncmp(path, root, sizeof root - 1) != 0) {
    cprof__resp_error(resp, 404, "404 page not found");
    return;
  }
  const char *name = path + sizeof root - 1;
  if (name[0] == '\0') {
    serve_index(resp);
    return;
  }
  if (strcmp(name, "ui") == 0) { /* the viewer's links are relative to ui/ */
    cprof__resp_error(resp, 301, "Moved Permanently");
    cprof__resp_header(resp, "Location", "ui/");
    return;
  }
  if (strncmp(name, "ui/", 3) == 0) {
    cprof__ui_serve(name + 3, req, cfg, resp);
    return;
  }
  for (int i = 0; i < NENDPOINTS; i++) {
    if (strcmp(name, endpoints[i].name) == 0) {
      endpoints[i].serve(req, cfg, resp);
      return;
    }
  }
  if (is_post(req) && strcmp(name, "block") == 0) {
    cprof__serve_block_rate(req, resp);
    return;
  }
  if (is_post(req) && strcmp(name, "mutex") == 0) {
    cprof__serve_mutex_fraction(req, resp);
    return;
  }
  const cprof__profile_t *p = cprof__registry_lookup(name); /* "threads" too */
  if (p)
    serve_registered(p, req, resp);
  else
    cprof__resp_error(resp, 404, "Unknown profile");
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
