/* The pages of cprof collect's web server (collect/web.h), each a function
 * of a request to a reply, kept apart from libmicrohttpd: web.c hands them
 * a parameter getter and sends what they fill in; web_reply.c has what
 * they share. */
#ifndef CPROF_COLLECT_WEB_PAGES_H
#define CPROF_COLLECT_WEB_PAGES_H

#include <stdint.h>

#include "collect/config.h"
#include "collect/scrape.h"
#include "collect/store.h"
#include "core/buf.h"
#include "ui/template.h" /* cprof__ui_html_text */

typedef struct web_ctx {
  const collect_config_t *cfg;
  collect_scraper_t *scraper;
  collect_store_t *store;
  int64_t start_ns; /* when the server started, for process_start_time_seconds */
} web_ctx_t;

/* A query parameter's value, or NULL when absent. */
typedef const char *(*web_param_fn)(void *req, const char *name);

typedef struct web_reply {
  unsigned status;
  const char *type; /* Content-Type */
  cprof__buf_t body;
  /* Headers of the page's own (X-Cprof-Mode: what a range's merge did). */
  struct {
    char name[40], value[200];
  } headers[2];
  size_t nheaders;
} web_reply_t;

#define WEB_HTML "text/html; charset=utf-8"
#define WEB_JSON "application/json; charset=utf-8"
#define WEB_TEXT "text/plain; charset=utf-8"
#define WEB_METRICS "text/plain; version=0.0.4; charset=utf-8"

/* A reply of one line of text with status (web_reply.c). */
void web_reply_error(web_reply_t *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds a header to the reply (at most two; more are ignored). */
void web_reply_header(web_reply_t *r, const char *name, const char *value);

void web_targets(const web_ctx_t *ctx, int json, web_reply_t *r);
void web_metrics(const web_ctx_t *ctx, web_reply_t *r);
void web_series(const web_ctx_t *ctx, web_reply_t *r);
void web_profiles(const web_ctx_t *ctx, web_param_fn param, void *req, web_reply_t *r);
/* /api/scrapes: the failed scrapes and up/down transitions, JSON. */
void web_scrapes(const web_ctx_t *ctx, web_param_fn param, void *req, web_reply_t *r);
/* page 0: /api/merge's JSON; 1: /view's page. */
void web_merge(const web_ctx_t *ctx, web_param_fn param, void *req, int page, web_reply_t *r);

#endif
