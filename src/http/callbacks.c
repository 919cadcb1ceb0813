/* libmicrohttpd's callbacks (callbacks.h), handing every request to
 * cprof_handle_request().
 *
 * - The raw query string comes from MHD's URI log callback: MHD's parsed
 *   arguments would turn the symbol endpoint's "0x1+0x2" into "0x1 0x2".
 * - Limits (http/limits.c): caps on connections and on profiles built at
 *   once, a deadline for each request that the keeper enforces. Their
 *   libmicrohttpd options are in cprof__mhd_limit_options.
 * - libmicrohttpd's one cap is on connections held in all: at it, it stops
 *   accepting. Its per-address cap, past which it closes a connection at
 *   once (a reset), is not used; limits.c tells such a client 503. */
#include "http/callbacks.h"

#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/buf.h"
#include "core/config.h"
#include "core/fds.h"
#include "cprof.h"
#include "http/accept_retry.h"
#include "http/limits.h"
#include "http/routes.h"
#include "http/server.h"

int cprof__mhd_tls;

typedef struct request_state {
  char *uri;        /* path?query as the client sent it */
  int seen_headers; /* the first call, with the headers only, has been made */
  int slot;         /* an expensive request's slot (limits.h), 0 for none */
  cprof__buf_t body;
} request_state_t;

void *cprof__mhd_uri_log(void *cls, const char *uri, struct MHD_Connection *con) {
  /* The first call on a connection's thread, which libmicrohttpd created
   * from a thread in our table. */
  cprof__fds_joined(cprof__server_table());
  request_state_t *st = calloc(1, sizeof *st);
  if (st)
    st->uri = strdup(uri ? uri : "");
  return st;
}

/* The connection's record in limits.c, made when it opened. */
static cprof__conn_t *conn_of(struct MHD_Connection *con) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(con, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *con, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code) {
  cprof__conn_t *c = *socket_ctx;
  if (code == MHD_CONNECTION_NOTIFY_CLOSED) { /* before MHD closes its descriptor */
    if (c) {
      cprof__limits_close(c);
      free(c);
      *socket_ctx = NULL;
    }
    return;
  }
  cprof__accept_worked();
  const union MHD_ConnectionInfo *fd =
      MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
  const union MHD_ConnectionInfo *peer =
      MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!fd || !(c = malloc(sizeof *c)))
    return; /* out of memory: served, without limits */
  *socket_ctx = c;
  /* MHD keeps the peer's address at its family's size, not a whole
   * sockaddr_storage. */
  const struct sockaddr *sa = peer ? peer->client_addr : NULL;
  socklen_t len = !sa                         ? 0
                  : sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                  : sa->sa_family == AF_INET  ? sizeof(struct sockaddr_in)
                                              : 0;
  cprof__limits_open(c, fd->connect_fd, len ? sa : NULL, len);
}

void cprof__mhd_completed(void *cls, struct MHD_Connection *con, void **con_cls,
                          enum MHD_RequestTerminationCode toe) {
  request_state_t *st = *con_cls;
  cprof__conn_t *c = conn_of(con);
  if (c && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
    cprof__limits_request_done(c); /* the next request's deadline */
  if (st) {
    cprof__limits_profile_leave(st->slot);
    free(st->uri);
    cprof__buf_free(&st->body);
    free(st);
    *con_cls = NULL;
  }
  cprof__server_request_done();
}

/* The client has gone (the peer closed or reset the connection), or the
 * server is stopping: a profile waiting out its seconds ends early. */
static int client_gone(void *ctx) {
  if (cprof__server_stopping())
    return 1;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info((struct MHD_Connection *)ctx, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci)
    return 0;
  struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static enum MHD_Result send_text(struct MHD_Connection *con, unsigned status, const char *text) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
  if (!r)
    return MHD_NO;
  MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
  MHD_add_response_header(r, "X-Go-Pprof", "1");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  enum MHD_Result ret = MHD_queue_response(con, status, r);
  MHD_destroy_response(r);
  return ret;
}

/* Queues r (and lets it go). While connections are being refused, the
 * answer ends its connection, so that the clients served take turns with
 * the ones told 503 instead of holding their places for good. */
static enum MHD_Result queue(struct MHD_Connection *con, unsigned status, struct MHD_Response *r) {
  if (cprof__limits_crowded())
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
  enum MHD_Result ret = MHD_queue_response(con, status, r);
  MHD_destroy_response(r);
  return ret;
}

/* The headers have arrived: a connection refused when it opened has had
 * its 503 over plain HTTP (limits.c wrote it) and gets it now over TLS;
 * an expensive request waits for no slot: 503 at once. */
static enum MHD_Result admit(struct MHD_Connection *con, request_state_t *st, const char *method,
                             const char *url) {
  cprof__conn_t *c = conn_of(con);
  int retry = 1;
  char why[160];
  if (c && c->refused) {
    if (!cprof__mhd_tls)
      return MHD_NO;
    snprintf(why, sizeof why, "%s", c->why);
  } else {
    const char *query = strchr(st->uri, '?');
    st->slot =
        cprof__limits_profile_enter(method, url, query ? query + 1 : NULL, &retry, why, sizeof why);
    if (st->slot >= 0)
      return MHD_YES;
    st->slot = 0;
  }
  char text[200], after[16];
  snprintf(text, sizeof text, "503 service unavailable: %s\n", why);
  snprintf(after, sizeof after, "%d", retry);
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_COPY);
  if (!r)
    return MHD_NO;
  MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "Retry-After", after);
  return queue(con, 503, r);
}

static void conn_read(struct MHD_Connection *con) {
  cprof__conn_t *c = conn_of(con);
  if (c)
    cprof__limits_request_read(c);
}

enum MHD_Result cprof__mhd_request(void *cls, struct MHD_Connection *con, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls) {
  request_state_t *st = *con_cls;
  if (!st || !st->uri)
    return MHD_NO; /* out of memory: drop the connection */
  /* MHD calls us first with the headers alone, then once per chunk of the
   * body, then once more with no data: that last call answers. */
  if (!st->seen_headers) {
    st->seen_headers = 1;
    return admit(con, st, method, url);
  }
  if (*upload_data_size) { /* a chunk of the body; more calls follow */
    if (st->body.len + *upload_data_size <= CPROF_MAX_BODY)
      cprof__buf_append(&st->body, upload_data, *upload_data_size);
    else
      st->body.failed = 1;
    *upload_data_size = 0;
    return MHD_YES;
  }
  conn_read(con);
  if (st->body.failed)
    return send_text(con, 413, "request body too large (the limit is 1 MiB)\n");

  char *query = strchr(st->uri, '?');
  if (query)
    *query++ = '\0';
  cprof_request_t req = {
      .method = method,
      .path = url,
      .query = query,
      .body = st->body.data,
      .body_len = st->body.len,
      .authorization = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization"),
      .is_cancelled = client_gone,
      .ctx = con,
  };
  cprof_response_t resp;
  /* Not a field of cprof_request_t, whose size programs compile in. */
  cprof__accept_encoding = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Accept-Encoding");
  int rc = cprof_handle_request(&req, &resp);
  cprof__accept_encoding = NULL;
  cprof__limits_profile_leave(st->slot); /* built: sending it is cheap */
  st->slot = 0;
  if (rc != 0)
    return send_text(con, 500, "out of memory\n");

  struct MHD_Response *r =
      resp.body ? MHD_create_response_from_buffer(resp.body_len, resp.body, MHD_RESPMEM_MUST_FREE)
                : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!r) {
    cprof_response_free(&resp);
    return MHD_NO;
  }
  resp.body = NULL; /* MHD frees it now */
  for (int i = 0; i < resp.nheaders; i++)
    MHD_add_response_header(r, resp.headers[i].name, resp.headers[i].value);
  enum MHD_Result ret = queue(con, (unsigned)resp.status, r);
  cprof_response_free(&resp);
  return ret;
}

void cprof__mhd_limit_options(struct MHD_OptionItem *o, int tls, void (*wake)(void)) {
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  cprof__limits_cfg_t lc = {(int)cfg.max_connections, (int)cfg.max_connections_per_ip,
                            (int)cfg.read_timeout, (int)cfg.max_profiles, tls};
  cprof__limits_init(&lc, wake);
  /* MHD's one cap is the most connections held, ours plus the reserve for
   * connections told 503 (limits.h). At it, MHD (with its eventfd, which
   * thread-per-connection mode always has) stops accepting, and a new
   * connection waits in the listen queue until one ends: it is late, never
   * reset. MHD's per-address cap is not used: past it MHD accepts and
   * closes at once, which resets a client that has sent its request;
   * limits.c's per-address cap tells it 503 instead. */
  unsigned total = (unsigned)(CPROF_HELD_FACTOR * cfg.max_connections);
  struct MHD_OptionItem items[] = {
      {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, NULL},
      {MHD_OPTION_CONNECTION_LIMIT, total, NULL},
      {MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg.idle_timeout, NULL},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, CPROF_HEAD_MEMORY, NULL},
      {MHD_OPTION_END, 0, NULL},
  };
  memcpy(o, items, sizeof items);
}
