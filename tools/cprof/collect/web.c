/* cprof collect's web server (collect/web.h): the listening, the routing
 * and the static assets; the pages are in web_*.c. */
#include "collect/web.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "collect/web_pages.h"
#include "listen.h"
#include "ui/charts_assets.h"
#include "ui/collect_assets.h"

struct collect_web {
  struct MHD_Daemon *daemon;
  web_ctx_t ctx;
  char address[300];
};

static const char *param(void *req, const char *name) {
  return MHD_lookup_connection_value(req, MHD_GET_ARGUMENT_KIND, name);
}

static void asset(web_reply_t *r, const char *type, const unsigned char *data, size_t len) {
  r->status = MHD_HTTP_OK;
  r->type = type;
  cprof__buf_append(&r->body, data, len);
}

static void route(const web_ctx_t *ctx, struct MHD_Connection *c, const char *url, web_reply_t *r) {
  const char *format = param(c, "format");
  int json = format && strcmp(format, "json") == 0;
  if (strcmp(url, "/") == 0)
    asset(r, WEB_HTML, cprof__collect_html, cprof__collect_html_len);
  else if (strcmp(url, "/collect.js") == 0)
    asset(r, "text/javascript; charset=utf-8", cprof__collect_js, cprof__collect_js_len);
  else if (strcmp(url, "/chart.js") == 0)
    asset(r, "text/javascript; charset=utf-8", cprof__charts_chartjs, cprof__charts_chartjs_len);
  else if (strcmp(url, "/targets") == 0)
    web_targets(ctx, json, r);
  else if (strcmp(url, "/api/targets") == 0)
    web_targets(ctx, 1, r);
  else if (strcmp(url, "/metrics") == 0)
    web_metrics(ctx, r);
  else if (strcmp(url, "/api/series") == 0)
    web_series(ctx, r);
  else if (strcmp(url, "/api/profiles") == 0)
    web_profiles(ctx, param, c, r);
  else if (strcmp(url, "/api/scrapes") == 0)
    web_scrapes(ctx, param, c, r);
  else if (strcmp(url, "/api/merge") == 0)
    web_merge(ctx, param, c, 0, r);
  else if (strcmp(url, "/view") == 0)
    web_merge(ctx, param, c, 1, r);
  else
    web_reply_error(r, MHD_HTTP_NOT_FOUND,
                    "404 page not found: %s (the pages are /, /targets and /metrics)", url);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *body,
                              size_t *body_len, void **state) {
  (void)version, (void)body, (void)body_len, (void)state;
  web_reply_t r = {.status = MHD_HTTP_OK};
  cprof__buf_init(&r.body);
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    web_reply_error(&r, MHD_HTTP_METHOD_NOT_ALLOWED, "405 method not allowed: %s", method);
  else
    route(cls, c, url, &r);
  if (r.body.failed) {
    cprof__buf_free(&r.body);
    cprof__buf_init(&r.body);
    web_reply_error(&r, MHD_HTTP_INTERNAL_SERVER_ERROR, "500 out of memory");
  }
  size_t len = r.body.len;
  void *data = cprof__buf_take(&r.body, &len);
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      len, data ? data : (void *)"", data ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if (!resp) {
    free(data);
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Content-Type", r.type ? r.type : WEB_TEXT);
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  for (size_t i = 0; i < r.nheaders; i++)
    MHD_add_response_header(resp, r.headers[i].name, r.headers[i].value);
  /* Pages load only what this server gives them: Chart.js and the page's
   * script come from here, the viewer's page is inline. */
  MHD_add_response_header(resp, "Content-Security-Policy",
                          "default-src 'self'; script-src 'self' 'unsafe-inline'; "
                          "style-src 'unsafe-inline'; img-src data:");
  enum MHD_Result ok = MHD_queue_response(c, r.status, resp);
  MHD_destroy_response(resp);
  return ok;
}

int collect_web_start(const collect_config_t *cfg, collect_scraper_t *scraper,
                      collect_store_t *store, const char *listen, collect_web_t **out, char *err,
                      size_t errlen) {
  *out = NULL;
  struct sockaddr_storage ss;
  socklen_t len;
  int rc = listen_addr("--listen", "7070", listen, &ss, &len, err, errlen);
  if (rc != 0)
    return rc;
  collect_web_t *w = calloc(1, sizeof *w);
  if (!w) {
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  w->ctx = (web_ctx_t){cfg, scraper, store, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec};
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL;
  if (ss.ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  w->daemon =
      MHD_start_daemon(flags, 0, NULL, NULL, answer, &w->ctx, MHD_OPTION_SOCK_ADDR,
                       (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_END);
  if (!w->daemon) {
    snprintf(err, errlen, "cannot listen on %s (in use, or not an address of this host?)", listen);
    free(w);
    return -EADDRINUSE;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(w->daemon, MHD_DAEMON_INFO_BIND_PORT);
  char host[256];
  if (getnameinfo((struct sockaddr *)&ss, len, host, sizeof host, NULL, 0, NI_NUMERICHOST) != 0)
    snprintf(host, sizeof host, "127.0.0.1");
  int v6 = ss.ss_family == AF_INET6;
  snprintf(w->address, sizeof w->address, "%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "",
           info ? (unsigned)info->port : 0);
  *out = w;
  return 0;
}

const char *collect_web_address(const collect_web_t *w) { return w->address; }

void collect_web_stop(collect_web_t *w) {
  if (!w)
    return;
  MHD_stop_daemon(w->daemon);
  free(w);
}
