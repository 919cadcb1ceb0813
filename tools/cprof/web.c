/* cprof web SOURCE [--http HOST:PORT]: serves the viewer page for the
 * profile, as go tool pprof -http= serves its web UI, until interrupted.
 * The page is made once, at start, and is self-contained: the server only
 * hands it out. It listens on the loopback interface unless told
 * otherwise, as pprof does. */
#include <microhttpd.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "web.h"

#include "commands.h"
#include "listen.h"
#include "page.h"
#include "report.h"

static const char usage[] =
    "usage: cprof web [OPTIONS] SOURCE... [--http HOST:PORT]\n"
    "\n"
    "Serves the profile's viewer page (flame graph, icicle, top table) over HTTP,\n"
    "as go tool pprof -http, until interrupted (Ctrl-C).\n"
    "\n"
    "  --http HOST:PORT   where to listen (default 127.0.0.1:6061; port 0: any free\n"
    "                     port; :PORT means localhost)\n";

typedef struct web_args {
  const char *http;
} web_args_t;

static int extra(void *ctx, int argc, char **argv, int *i) {
  web_args_t *a = ctx;
  if (strncmp(argv[*i], "--http=", 7) == 0 || strncmp(argv[*i], "-http=", 6) == 0) {
    a->http = strchr(argv[*i], '=') + 1;
    return 1;
  }
  if (strcmp(argv[*i], "--http") != 0 && strcmp(argv[*i], "-http") != 0)
    return 0;
  if (*i + 1 >= argc) {
    fprintf(stderr, "cprof web: --http wants HOST:PORT\n");
    return -1;
  }
  a->http = argv[++*i];
  return 1;
}

/* GET / is the page; anything else is not here. The page runs its own
 * inline script and loads nothing, which the policy says. */
static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *body,
                              size_t *body_len, void **state) {
  (void)version, (void)body, (void)body_len, (void)state;
  const web_page_t *page = cls;
  int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
  struct MHD_Response *r;
  unsigned status;
  if (get && strcmp(url, "/") == 0) {
    r = MHD_create_response_from_buffer(page->len, (void *)page->data, MHD_RESPMEM_PERSISTENT);
    status = MHD_HTTP_OK;
    if (r) {
      MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
      MHD_add_response_header(r, "Content-Security-Policy",
                              "default-src 'none'; script-src 'unsafe-inline'; "
                              "style-src 'unsafe-inline'; img-src data:");
    }
  } else {
    static const char missing[] = "404 page not found: the viewer is at /\n";
    r = MHD_create_response_from_buffer(sizeof missing - 1, (void *)missing,
                                        MHD_RESPMEM_PERSISTENT);
    status = get ? MHD_HTTP_NOT_FOUND : MHD_HTTP_METHOD_NOT_ALLOWED;
    if (r)
      MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
  }
  if (!r)
    return MHD_NO;
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

int web_serve(const web_page_t *page, const char *spec, int *signo) {
  struct sockaddr_storage ss;
  socklen_t len;
  char err[512];
  if (listen_addr("--http", "6061", spec, &ss, &len, err, sizeof err) != 0) {
    fprintf(stderr, "cprof web: %s\n", err);
    return 2;
  }
  /* The signals that end it are taken by sigwait below, in this thread;
   * the server's threads, started after, inherit the mask. The caller's
   * mask comes back after, for the prompt, which goes on. */
  sigset_t stop, old;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop, &old);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD; /* its errors: ours, one line */
  if (ss.ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  struct MHD_Daemon *d =
      MHD_start_daemon(flags, 0, NULL, NULL, answer, (void *)page, MHD_OPTION_SOCK_ADDR,
                       (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
  if (!d) {
    fprintf(stderr, "cprof web: cannot listen on %s (in use, or not an address of this host?)\n",
            spec);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return 1;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  char host[256];
  if (getnameinfo((struct sockaddr *)&ss, len, host, sizeof host, NULL, 0, NI_NUMERICHOST) != 0)
    snprintf(host, sizeof host, "127.0.0.1");
  fprintf(stderr, "Serving web UI on http://%s%s%s:%u/\n", ss.ss_family == AF_INET6 ? "[" : "",
          host, ss.ss_family == AF_INET6 ? "]" : "", info ? (unsigned)info->port : 0);
  int sig;
  sigwait(&stop, &sig);
  MHD_stop_daemon(d);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (signo)
    *signo = sig;
  return 0;
}

int cmd_web(int argc, char **argv) {
  report_opts_t o;
  web_args_t a = {"127.0.0.1:6061"};
  const char *arg;
  cprof__pf_t *p;
  int rc = report_open("web", usage, 0, extra, NULL, &a, argc, argv, &o, &arg, &p);
  if (rc != -1)
    return rc;
  cprof__buf_t html;
  cprof__buf_init(&html);
  rc = 0;
  if (page_build(p, NULL, &html) != 0) {
    fprintf(stderr, "cprof web: out of memory\n");
    rc = 1;
  }
  cprof__pf_free(p);
  if (rc == 0) {
    web_page_t page = {html.data, html.len};
    rc = web_serve(&page, a.http, NULL);
  }
  cprof__buf_free(&html);
  return rc;
}
