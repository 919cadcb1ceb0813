#include "http/routes.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "http/auth.h"
#include "http/query.h"
#include "http/response.h"
#include "sample/contention.h"
#include "sample/heap.h"
#include "sample/threads.h"

static const char *block_off(void) {
  return cprof__block_rate() > 0 ? NULL
                                 : "off: turn it on with CPROF_BLOCK_RATE=NS, "
                                   "cprof_set_block_rate(NS) or POST /debug/pprof/block?rate=NS "
                                   "(1 records every wait)";
}
static const char *mutex_off(void) {
  return cprof__mutex_fraction() > 0
             ? NULL
             : "off: turn it on with CPROF_MUTEX_FRACTION=N, cprof_set_mutex_fraction(N) or "
               "POST /debug/pprof/mutex?fraction=N (1 records every contended unlock)";
}

/* Sorted by name, as Go's index lists them. */
const cprof__profile_entry_t cprof__profiles[] = {
    {"allocs",
     "A sampling of all past memory allocations (malloc and friends, C++ new), one sample per "
     "CPROF_HEAP_RATE bytes on average; CPROF_HEAP_RATE=0 turns it off.",
     cprof__heap_count, "debug=1", cprof__serve_allocs, NULL},
    {"block",
     "Stack traces that led to blocking on synchronization primitives (pthread mutexes, rwlocks, "
     "condition variables, semaphores, joins, spin locks)",
     cprof__block_count, "debug=1", cprof__serve_block, block_off},
    {"cmdline", "The command line invocation of the current program", NULL, NULL,
     cprof__serve_cmdline, NULL},
    {"goroutine",
     "Stack traces of all current threads (cprof's name for threads is Go's for goroutines; "
     "/debug/pprof/threads is the same). Use debug=2 for every thread with its name and state.",
     cprof__threads_count, "debug=1", cprof__serve_goroutine, NULL},
    {"heap",
     "A sampling of memory allocations of live objects: where the memory in use was allocated. "
     "The gc GET parameter is accepted and ignored (C has no collector).",
     cprof__heap_count, "debug=1", cprof__serve_heap, NULL},
    {"mutex",
     "Stack traces of holders of contended mutexes (pthread mutexes and rwlocks), charged with "
     "the delay their hold caused",
     cprof__mutex_count, "debug=1", cprof__serve_mutex, mutex_off},
    {"profile",
     "CPU profile. You can specify the duration in the seconds GET parameter (default 30, at "
     "most 3600). After you get the profile file, use the go tool pprof command to investigate "
     "the profile.",
     NULL, "seconds=30", cprof__serve_profile, NULL},
    {"symbol", "Maps program counters to function names: POST 0xADDR+0xADDR...", NULL, NULL,
     cprof__serve_symbol, NULL},
    {"threadcreate", "Stack traces that led to the creation of new OS threads",
     cprof__threadcreate_count, "debug=1", cprof__serve_threadcreate, NULL},
};
const int cprof__nprofiles = sizeof cprof__profiles / sizeof cprof__profiles[0];

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
  static const char root[] = "/debug/pprof/";
  if (strcmp(path, "/debug/pprof") == 0) { /* as Go's ServeMux: redirect to the directory */
    char loc[300];
    snprintf(loc, sizeof loc, "%s/debug/pprof/", cfg->prefix);
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
    cprof__serve_index(req, cfg, resp);
    return;
  }
  if (strcmp(name, "threads") == 0)
    name = "goroutine";
  for (int i = 0; i < cprof__nprofiles; i++) {
    if (strcmp(name, cprof__profiles[i].name) == 0) {
      cprof__profiles[i].serve(req, cfg, resp);
      return;
    }
  }
  cprof__resp_error(resp, 404, "Unknown profile");
}

int cprof_handle_request(const cprof_request_t *req, cprof_response_t *resp) {
  /* Serving a profile allocates; the program's thread that asked must not
   * see those allocations in its own heap profile. */
  cprof__heap_guard_enter();
  int rc = 0;
  if (cprof__resp_init(resp) != 0) {
    cprof_response_free(resp);
    rc = -ENOMEM;
  } else {
    cprof__config_t cfg;
    cprof__config_get(&cfg);
    route(req, &cfg, resp);
  }
  cprof__heap_guard_leave();
  return rc;
}
