/* The embedded server: libmicrohttpd in its own threads, handing every
 * request to cprof_handle_request().
 *
 * - The server's threads, and every descriptor they open (the listening
 *   socket, libmicrohttpd's eventfd, connections, the files the symbolizer
 *   reads), live in a descriptor table of cprof's own (core/fds.c), out of
 *   the program's reach. A thread gets into that table only by being
 *   created from one already there, so one thread of ours, the keeper,
 *   makes the table, opens the socket and starts libmicrohttpd from it, and
 *   then stays for what must be done in that table later: stopping the
 *   daemon (which closes its descriptors by number) and letting the
 *   symbolizer go when it has been idle a while. Otherwise it sleeps.
 * - We open the listening socket ourselves, so that "address in use" and
 *   friends come back as an errno for a precise stderr line, and so that
 *   a port of 0 can be reported as the port the kernel chose.
 * - A thread per connection: a 30-second CPU profile must not hold up an
 *   index page request that arrives meanwhile.
 * - The raw query string comes from MHD's URI log callback: MHD's parsed
 *   arguments would turn the symbol endpoint's "0x1+0x2" into "0x1 0x2".
 * - Limits (http/limits.c): caps on connections and on profiles built at
 *   once, a deadline for each request that the keeper enforces. Their
 *   libmicrohttpd options are in limit_options.
 * - HTTPS (CPROF_TLS_CERT, CPROF_TLS_KEY) is libmicrohttpd's, over GnuTLS.
 *   The keeper reads the PEM files, in its own table, and hands their bytes
 *   to MHD_start_daemon, which parses them into GnuTLS credentials there
 *   and then; our copy of the key is wiped. The files must be regular
 *   files, looked at before and after a non-blocking open: the program
 *   waits for the keeper before main, so a FIFO or a device must not hold
 *   it. Why a start failed (a file GnuTLS rejects) comes from
 *   libmicrohttpd's error log, caught while starting, for the one stderr
 *   line.
 * - Out of descriptors (RLIMIT_NOFILE lowered after start), libmicrohttpd
 *   would try to accept again at once, for ever; its error log is where
 *   its listening thread is made to wait between tries (cannot_accept).
 * - libmicrohttpd's one cap is on connections held in all: at it, it stops
 *   accepting. Its per-address cap, past which it closes a connection at
 *   once (a reset), is not used; limits.c tells such a client 503. */
#include "http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/buf.h"
#include "core/fds.h"
#include "core/log.h"
#include "http/limits.h"
#include "http/routes.h"
#include "cprof.h"
#include "registry/symbols.h"

/* How long the symbolizer may sit unused before the keeper lets it go, with
 * its memory (16 MB of a small program's RSS once libc's DWARF is loaded).
 * Building it again costs the next /goroutine about 80 ms, against 2 ms
 * warm: a burst of requests (pprof's, a person's) stays warm, and an idle
 * process holds nothing. */
#define SYMBOLIZER_IDLE_MS 5000

static struct MHD_Daemon *daemon_;

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond; /* on CLOCK_MONOTONIC */
  pthread_t thread;
  int running; /* a keeper serves; cprof__server_stop must end it */
  /* The start, as the caller asked it and as it went. */
  const cprof__addr_t *addr;
  char *bound;
  size_t boundlen;
  int started;
  int result;
  int unshare_err; /* why the keeper could not have a table of its own */
  unsigned table;  /* its table, which the connections' threads share */
  char why[1600];  /* why the server did not start, when the keeper knows */
  int stop;        /* cprof__server_stop asks the keeper to end */
  int used;        /* the symbolizer was used since the keeper last looked */
  int reap;        /* a request deadline was set: look at them */
  int hand_to;     /* cprof__server_stop_keeping's socket, in the program's table, or -1 */
  int adopt;       /* cprof__server_start_on's listener, in the program's table, or -1 */
} keeper = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

typedef struct request_state {
  char *uri;        /* path?query as the client sent it */
  int seen_headers; /* the first call, with the headers only, has been made */
  int slot;         /* an expensive request's slot (limits.h), 0 for none */
  cprof__buf_t body;
} request_state_t;

static void *uri_logger(void *cls, const char *uri, struct MHD_Connection *con) {
  /* The first call on a connection's thread, which libmicrohttpd created
   * from a thread in our table. */
  cprof__fds_joined(keeper.table);
  request_state_t *st = calloc(1, sizeof *st);
  if (st)
    st->uri = strdup(uri ? uri : "");
  return st;
}

static void accept_worked(void);

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
  accept_worked();
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

static void completed(void *cls, struct MHD_Connection *con, void **con_cls,
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
}

/* The client has gone (the peer closed or reset the connection), or the
 * server is stopping: a profile waiting out its seconds ends early. */
static int client_gone(void *ctx) {
  if (__atomic_load_n(&keeper.stop, __ATOMIC_RELAXED))
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

static int serving_tls; /* set before the daemon starts, read by its threads */

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
    if (!serving_tls)
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *con, const char *url,
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

static void describe_listener(int fd, int port, char *bound, size_t boundlen);

/* Creates, binds and listens; fills bound. Returns the fd or a negative errno. */
static int open_listener(const cprof__addr_t *a, char *bound, size_t boundlen) {
  char port[8];
  snprintf(port, sizeof port, "%d", a->port);
  struct addrinfo hints = {
      .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
  struct addrinfo *res = NULL;
  /* ":port" means every interface, IPv6 and IPv4 alike, as in Go. */
  int gai = getaddrinfo(a->host[0] ? a->host : "::", port, &hints, &res);
  if (gai != 0 && !a->host[0])
    gai = getaddrinfo("0.0.0.0", port, &hints, &res);
  if (gai != 0)
    return gai == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;

  int err = -EADDRNOTAVAIL, fd = -1;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = -errno;
      continue;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6 && !a->host[0])
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 64) == 0)
      break;
    err = -errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0)
    return err;
  describe_listener(fd, a->port, bound, boundlen);
  return fd;
}

/* The address fd listens on, as "host:port", into bound. */
static void describe_listener(int fd, int port, char *bound, size_t boundlen) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char host[INET6_ADDRSTRLEN] = "?";
  int p = port;
  ss.ss_family = AF_UNSPEC;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
    if (ss.ss_family == AF_INET) {
      struct sockaddr_in *in = (struct sockaddr_in *)&ss;
      inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
      p = ntohs(in->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
      inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
      p = ntohs(in6->sin6_port);
    }
  }
  snprintf(bound, boundlen, ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", host, p);
}

/* limits.c set a request deadline: the keeper may be asleep for good. */
static void limits_wake(void) {
  pthread_mutex_lock(&keeper.lock);
  keeper.reap = 1;
  pthread_cond_signal(&keeper.cond);
  pthread_mutex_unlock(&keeper.lock);
}

#define LIMIT_OPTIONS 5

/* The limits' options for MHD_start_daemon (an MHD_OPTION_ARRAY), from the
 * settings in force; also sets limits.c's caps. */
static void limit_options(struct MHD_OptionItem *o, int tls) {
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  cprof__limits_cfg_t lc = {(int)cfg.max_connections, (int)cfg.max_connections_per_ip,
                            (int)cfg.read_timeout, (int)cfg.max_profiles, tls};
  cprof__limits_init(&lc, limits_wake);
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

/* The most a PEM file may hold: a certificate chain is a few KiB. */
#define MAX_PEM (1 << 20)

/* What a path names when it is not a regular file, for the stderr line;
 * NULL for a regular file. */
static const char *not_regular(mode_t mode) {
  return S_ISREG(mode)    ? NULL
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISDIR(mode)  ? "a directory"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a regular file";
}

/* Reads a whole PEM file, NUL-terminated, into *out (malloc'd; its length
 * in *len). Returns 0 or a negative errno; -EFBIG beyond MAX_PEM; -NOT_A_FILE
 * (with *kind saying what it is) when the path is not a regular file.
 *
 * The program waits in its constructor until the keeper has read these, so
 * nothing here may wait on what the path names: a FIFO's open blocks until
 * a writer comes, a FIFO's or a device's read until it has data, or reads
 * for ever (/dev/zero). The path is looked at first (stat), so that no
 * device is ever opened (opening some has effects: a tape rewinds, a
 * watchdog starts), then opened without blocking, and what was opened is
 * looked at again (fstat), as the path may have been replaced in between. */
#define NOT_A_FILE 4096 /* beyond every errno */
static int read_pem(const char *path, char **out, size_t *len, const char **kind) {
  struct stat st;
  if (stat(path, &st) != 0)
    return -errno;
  if ((*kind = not_regular(st.st_mode)))
    return -NOT_A_FILE;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return -errno;
  if (fstat(fd, &st) == 0 && (*kind = not_regular(st.st_mode))) {
    close(fd);
    return -NOT_A_FILE;
  }
  int err = 0;
  char *b = NULL;
  size_t n = 0;
  if (fstat(fd, &st) != 0) {
    err = -errno;
  } else if (st.st_size > MAX_PEM) {
    err = -EFBIG;
  } else if (!(b = malloc((size_t)st.st_size + 1))) {
    err = -ENOMEM;
  } else {
    while (n < (size_t)st.st_size) {
      ssize_t k = read(fd, b + n, (size_t)st.st_size - n);
      if (k < 0 && errno == EINTR)
        continue;
      if (k <= 0) {
        err = k < 0 ? -errno : 0;
        break;
      }
      n += (size_t)k;
    }
    b[n] = '\0';
  }
  close(fd);
  if (err) {
    if (b)
      explicit_bzero(b, n);
    free(b);
    return err;
  }
  *out = b;
  *len = n;
  return 0;
}

/* When the server cannot accept for want of descriptors (RLIMIT_NOFILE
 * lowered after start under what the server's table already holds:
 * OpenSSH's rlimit sandbox sets it to 0) or of kernel memory. accept fails
 * with EMFILE (or ENFILE, ENOMEM, ENOBUFS); below 2, poll itself fails with
 * EINVAL, as it polls more descriptors than the limit. libmicrohttpd 0.9.75
 * stops polling the listening socket until a connection ends when one is
 * open; with none open, there is none to end, and it polls and fails again
 * at once, for ever: 100 % of a core, the connection left in the listen
 * queue. It says so in its error log, from its listening thread, on each
 * failure, and the log is our one hook into that loop: there we wait
 * before letting it try again, 50 ms at first, doubling to at most 1 s.
 * A server that cannot accept then costs a few system calls a second, and
 * accepts within a second of descriptors being available again (the
 * connection waits in the listen queue meanwhile, neither refused nor
 * reset). The wait ends at once when the server stops. */
#define ACCEPT_RETRY_FIRST_MS 50
#define ACCEPT_RETRY_MAX_MS 1000
/* Between two lines about it, at least: a limit that keeps going up and
 * down says so once a minute at most. */
#define ACCEPT_SAY_EVERY_MS 60000

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond; /* on CLOCK_MONOTONIC; signalled when stopping */
  long retry_ms;       /* the next wait; 0 when the last accept worked */
  int unsaid;          /* a line is due and could not be written yet */
  long long said_ms;   /* CLOCK_MONOTONIC ms of the last line, 0: never */
  long long since_ms;  /* when this episode began */
  char lim[24];        /* RLIMIT_NOFILE then */
} refusal = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void refusal_init(void) {
  pthread_mutex_init(&refusal.lock, NULL);
  cprof__cond_init_monotonic(&refusal.cond);
  refusal.retry_ms = 0;
  refusal.unsaid = 0;
  refusal.said_ms = 0;
}

/* The one stderr line. Our table's 2 is /dev/null, and borrowing the
 * program's stderr takes a descriptor (core/fds.c), which is what may be
 * lacking: then the line is written once one can be had, at a later try or
 * when a connection is accepted again, saying for how long it could not.
 * Under refusal.lock. Returns 0 when written. */
static int say_cannot_accept(long long since_ms, long long now) {
  char line[480], late[64] = "";
  if (since_ms)
    snprintf(late, sizeof late, " for %.1f s", (double)(now - since_ms) / 1000);
  int n = snprintf(line, sizeof line,
                   "cprof: the profiling server %s accept connections%s: the process %s no "
                   "descriptor to spare (RLIMIT_NOFILE %s %s; a connection to the server needs "
                   "at least 4) or the system %s out of resources; %s\n",
                   since_ms ? "could not" : "cannot", late, since_ms ? "had" : "has",
                   since_ms ? "was" : "is", refusal.lim, since_ms ? "was" : "is",
                   since_ms ? "it serves again"
                            : "it tries again every second, and serves again when descriptors "
                              "are available");
  int to_close, fd = cprof__fds_stderr(&to_close);
  if (fd < 0)
    return -1;
  ssize_t unused = write(fd, line, (size_t)n);
  (void)unused;
  if (to_close >= 0)
    close(to_close);
  return 0;
}

/* A connection was accepted: the next failure is a new episode, and a line
 * that could not be written is written now. */
static void accept_worked(void) {
  pthread_mutex_lock(&refusal.lock);
  refusal.retry_ms = 0;
  if (refusal.unsaid) {
    cprof__fds_joined(keeper.table);
    long long now = cprof__now_ms(CLOCK_MONOTONIC);
    if (say_cannot_accept(refusal.since_ms, now) == 0) {
      refusal.unsaid = 0;
      refusal.said_ms = now;
    }
  }
  pthread_mutex_unlock(&refusal.lock);
}

/* libmicrohttpd's listening thread could not accept (see above). first:
 * no connection was open, and libmicrohttpd will try again at once. */
static void cannot_accept(int first) {
  cprof__fds_joined(keeper.table); /* for the borrowed stderr */
  /* The limit may only be under the placeholders that keep our numbers
   * high (core/fds.c): a limit the server fitted under before them must
   * still be one it serves under. With those closed, libmicrohttpd tries
   * again, and no line is due unless that fails too. */
  if (cprof__fds_fit_limit() > 0)
    return;
  long long now = cprof__now_ms(CLOCK_MONOTONIC);
  pthread_mutex_lock(&refusal.lock);
  if (refusal.retry_ms == 0) { /* a new episode */
    struct rlimit rl;
    snprintf(refusal.lim, sizeof refusal.lim, "?");
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
      snprintf(refusal.lim, sizeof refusal.lim, "%llu", (unsigned long long)rl.rlim_cur);
    refusal.since_ms = now;
    if (!refusal.said_ms || now - refusal.said_ms >= ACCEPT_SAY_EVERY_MS)
      refusal.unsaid = 1;
  }
  /* Written at the first try, it says "cannot"; written late, for how long
   * it could not. */
  long long since = now - refusal.since_ms > ACCEPT_RETRY_MAX_MS ? refusal.since_ms : 0;
  if (refusal.unsaid && say_cannot_accept(since, now) == 0) {
    refusal.unsaid = 0;
    refusal.said_ms = now;
  }
  long ms = refusal.retry_ms ? refusal.retry_ms : ACCEPT_RETRY_FIRST_MS;
  refusal.retry_ms = ms * 2 < ACCEPT_RETRY_MAX_MS ? ms * 2 : ACCEPT_RETRY_MAX_MS;
  if (first) {
    struct timespec ts = cprof__deadline_ms(CLOCK_MONOTONIC, ms);
    while (!__atomic_load_n(&keeper.stop, __ATOMIC_RELAXED) &&
           pthread_cond_timedwait(&refusal.cond, &refusal.lock, &ts) == 0) {
    }
  }
  pthread_mutex_unlock(&refusal.lock);
}

/* The keeper is stopping the daemon: a wait above ends now. */
static void refusal_stop(void) {
  pthread_mutex_lock(&refusal.lock);
  pthread_cond_broadcast(&refusal.cond);
  pthread_mutex_unlock(&refusal.lock);
}

/* libmicrohttpd's error log. While the daemon starts: its reason for
 * refusing a certificate or key, kept for the one stderr line. Afterwards
 * only its word that accept failed for want of resources is acted on;
 * other messages (a client's failed handshake) are dropped: the server's
 * threads print nothing else. */
static int starting; /* the keeper is in MHD_start_daemon */

static void server_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char msg[300];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (!__atomic_load_n(&starting, __ATOMIC_RELAXED)) {
    /* libmicrohttpd 0.9.75's words (daemon.c): accept failed for want of
     * resources (MHD_accept_connection), or poll did in the listening
     * thread (MHD_poll_listen_socket), which it does with EINVAL when the
     * limit is below the number of descriptors it polls (2). */
    static const char at_limit[] = "Hit process or system resource limit at ",
                      poll_failed[] = "poll failed: ";
    if (strncmp(msg, at_limit, sizeof at_limit - 1) == 0)
      cannot_accept(strncmp(msg + sizeof at_limit - 1, "FIRST ", 6) == 0);
    else if (strncmp(msg, poll_failed, sizeof poll_failed - 1) == 0)
      cannot_accept(1);
    return;
  }
  size_t n = strlen(msg);
  while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '.'))
    msg[--n] = '\0';
  size_t used = strlen(keeper.why);
  snprintf(keeper.why + used, sizeof keeper.why - used, "%s%s", used ? "; " : "", msg);
}

typedef struct tls {
  char *cert, *key;
  size_t certlen, keylen;
  struct MHD_OptionItem opts[3]; /* for MHD_OPTION_ARRAY */
  unsigned flags;
} tls_t;

/* Fills t from CPROF_TLS_CERT and CPROF_TLS_KEY, or leaves it empty for
 * plain HTTP. Returns 0, or -ENOTSUP with the reason in keeper.why. */
static int tls_load(tls_t *t) {
  memset(t, 0, sizeof *t);
  t->opts[0].option = MHD_OPTION_END;
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  if (!cfg.tls_cert[0])
    return 0;
  if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    snprintf(keeper.why, sizeof keeper.why,
             "CPROF_TLS_CERT: this libmicrohttpd was built without TLS; the profiling server "
             "stays off");
    return -ENOTSUP;
  }
  const char *kind = NULL;
  int err = read_pem(cfg.tls_cert, &t->cert, &t->certlen, &kind);
  const char *which = "CPROF_TLS_CERT", *path = cfg.tls_cert;
  if (!err) {
    err = read_pem(cfg.tls_key, &t->key, &t->keylen, &kind);
    which = "CPROF_TLS_KEY", path = cfg.tls_key;
  }
  if (err == -NOT_A_FILE) {
    free(t->cert);
    t->cert = NULL;
    snprintf(keeper.why, sizeof keeper.why,
             "%s=%s: not a regular file (%s): a PEM file is expected; the profiling server "
             "stays off",
             which, path, kind);
    return -ENOTSUP;
  }
  if (err) {
    free(t->cert);
    t->cert = NULL;
    snprintf(keeper.why, sizeof keeper.why,
             "%s=%s: cannot read it: %s; the profiling server "
             "stays off",
             which, path, err == -EFBIG ? "larger than 1 MiB" : strerror(-err));
    return -ENOTSUP;
  }
  t->flags = MHD_USE_TLS;
  t->opts[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, t->cert};
  t->opts[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, t->key};
  t->opts[2] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  return 0;
}

/* After MHD_start_daemon: GnuTLS holds the parsed key; our bytes go. */
static void tls_wipe(tls_t *t) {
  if (t->key)
    explicit_bzero(t->key, t->keylen);
  free(t->key);
  free(t->cert);
  t->key = t->cert = NULL;
}

/* The listening socket cprof__server_stop_keeping kept, numbered fd in
 * the program's table, copied into ours (pidfd_getfd, Linux 5.6, from the
 * thread group leader's table: the caller of cprof__server_start_on is the
 * program's only thread, and is the leader unless main has ended). Returns
 * the copy, or -1 to listen anew. */
static int adopt_listener(int fd, const cprof__addr_t *addr, char *bound, size_t boundlen) {
  int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
  if (pidfd < 0)
    return -1;
  int own = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
  close(pidfd);
  if (own >= 0)
    describe_listener(own, addr->port, bound, boundlen);
  return own;
}

/* The keeper, stopping for cprof__server_stop_keeping: the listening
 * socket, taken from libmicrohttpd (which then closes it no more), goes to
 * the program's table through the socket pair the caller made there. The
 * kernel holds it open while it is in flight; it goes on listening, and
 * connections wait in its backlog for the server started again. */
static void hand_over(int listener, int to) {
  int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
  int sock = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, to, 0);
  if (pidfd >= 0)
    close(pidfd);
  if (sock < 0)
    return;
  char byte = 0;
  struct iovec iov = {&byte, 1};
  union {
    struct cmsghdr h;
    char space[CMSG_SPACE(sizeof(int))];
  } c;
  memset(&c, 0, sizeof c);
  struct msghdr m = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.space, .msg_controllen = sizeof c.space};
  struct cmsghdr *h = CMSG_FIRSTHDR(&m);
  h->cmsg_level = SOL_SOCKET;
  h->cmsg_type = SCM_RIGHTS;
  h->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(h), &listener, sizeof(int));
  sendmsg(sock, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
  close(sock);
}

/* Opens the socket and starts libmicrohttpd, whose threads share the
 * calling thread's descriptor table. Returns 0 or a negative errno. */
static int serve(const cprof__addr_t *addr, char *bound, size_t boundlen) {
  tls_t tls;
  int terr = tls_load(&tls);
  if (terr)
    return terr;
  int fd = keeper.adopt >= 0 ? adopt_listener(keeper.adopt, addr, bound, boundlen) : -1;
  if (fd < 0)
    fd = open_listener(addr, bound, boundlen);
  if (fd < 0) {
    tls_wipe(&tls);
    return fd;
  }
  serving_tls = tls.cert != NULL;
  struct MHD_OptionItem limits[LIMIT_OPTIONS];
  limit_options(limits, serving_tls);
  /* libmicrohttpd names its threads MHD-listen and MHD-connection. */
  __atomic_store_n(&starting, 1, __ATOMIC_RELAXED);
  daemon_ =
      MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                           MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG | tls.flags,
                       0, NULL, NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, server_log,
                       NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_URI_LOG_CALLBACK, uri_logger,
                       NULL, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_ARRAY, limits,
                       MHD_OPTION_ARRAY, tls.opts, MHD_OPTION_END);
  __atomic_store_n(&starting, 0, __ATOMIC_RELAXED);
  tls_wipe(&tls);
  if (!daemon_) {
    close(fd);
    if (!serving_tls)
      return -EIO;
    cprof__config_t cfg;
    cprof__config_get(&cfg);
    char why[400];
    snprintf(why, sizeof why, "%.399s", keeper.why[0] ? keeper.why : "refused");
    snprintf(keeper.why, sizeof keeper.why,
             "CPROF_TLS_CERT=%s, CPROF_TLS_KEY=%s: libmicrohttpd (GnuTLS) refused them: %s; "
             "the profiling server stays off",
             cfg.tls_cert, cfg.tls_key, why);
    return -ENOTSUP;
  }
  return 0;
}

/* Called after each use of the symbolizer's kept instance. */
static void symbolizer_used(void) {
  pthread_mutex_lock(&keeper.lock);
  keeper.used = 1;
  pthread_cond_signal(&keeper.cond);
  pthread_mutex_unlock(&keeper.lock);
}

static void wait_ms(long ms) {
  struct timespec ts = cprof__deadline_ms(CLOCK_MONOTONIC, ms);
  pthread_cond_timedwait(&keeper.cond, &keeper.lock, &ts);
}

/* Until asked to stop: let the symbolizer go once it has been idle for
 * SYMBOLIZER_IDLE_MS, and cut off connections past their request deadline.
 * If the symbolizer holds descriptors, they are in our table, and so are
 * the connections; this thread is there too. */
static void keep_until_stopped(void) {
  while (!keeper.stop) {
    long ms = -1;
    keeper.reap = 0;
    if (keeper.used) {
      keeper.used = 0;
      pthread_mutex_unlock(&keeper.lock);
      ms = cprof__symbols_trim(SYMBOLIZER_IDLE_MS);
      pthread_mutex_lock(&keeper.lock);
      if (ms >= 0)
        keeper.used = 1; /* still kept: look again when it is due */
    }
    if (keeper.stop)
      break;
    long reap_ms = cprof__limits_reap();
    if (reap_ms >= 0 && (ms < 0 || reap_ms < ms))
      ms = reap_ms + 1; /* past the deadline, not just before it */
    if (ms >= 0)
      wait_ms(ms);
    else if (!keeper.used && !keeper.reap)
      pthread_cond_wait(&keeper.cond, &keeper.lock);
  }
}

static void *keep(void *unused) {
  (void)unused;
  /* Named for what it is, in top -H and /debug/pprof/goroutine. */
  pthread_setname_np(pthread_self(), "cprof-server");
  /* Without a table of our own the server does not run: in the program's
   * table it would change the numbers the program gets, take from its
   * RLIMIT_NOFILE, pass to its children, and poll a socket the program
   * may close (at 100 % of a core) or reuse. */
  keeper.unshare_err = cprof__fds_unshare();
  keeper.table = cprof__fds_table();
  int rc = keeper.unshare_err ? -ENOTSUP : serve(keeper.addr, keeper.bound, keeper.boundlen);
  if (rc == 0)
    cprof__symbols_set_used_hook(symbolizer_used);
  pthread_mutex_lock(&keeper.lock);
  keeper.result = rc;
  keeper.started = 1;
  pthread_cond_broadcast(&keeper.cond);
  if (rc != 0) {
    pthread_mutex_unlock(&keeper.lock);
    return NULL;
  }
  keep_until_stopped();
  pthread_mutex_unlock(&keeper.lock);

  refusal_stop(); /* libmicrohttpd's listening thread may wait in cannot_accept */
  int quiesced = -1;
  if (keeper.hand_to >= 0 && (quiesced = (int)MHD_quiesce_daemon(daemon_)) >= 0)
    hand_over(quiesced, keeper.hand_to);
  MHD_stop_daemon(daemon_); /* closes the listening socket too, unless quiesced */
  if (quiesced >= 0)
    close(quiesced);
  daemon_ = NULL;
  cprof__symbols_set_used_hook(NULL);
  cprof__symbols_trim(0); /* any files it holds are in this table */
  return NULL;
}

static void keeper_init(void) {
  cprof__cond_init_monotonic(&keeper.cond);
  pthread_mutex_init(&keeper.lock, NULL);
  refusal_init();
}

int cprof__server_start(const cprof__addr_t *addr, char *bound, size_t boundlen) {
  return cprof__server_start_on(-1, addr, bound, boundlen);
}

int cprof__server_start_on(int kept, const cprof__addr_t *addr, char *bound, size_t boundlen) {
  if (keeper.running)
    return -EALREADY;
  keeper_init();
  keeper.adopt = kept;
  keeper.hand_to = -1;
  keeper.addr = addr;
  keeper.bound = bound;
  keeper.boundlen = boundlen;
  keeper.started = keeper.stop = keeper.used = 0;
  keeper.why[0] = '\0';
  int err = pthread_create(&keeper.thread, NULL, keep, NULL);
  if (err != 0)
    return -err;
  pthread_mutex_lock(&keeper.lock);
  while (!keeper.started)
    pthread_cond_wait(&keeper.cond, &keeper.lock);
  int rc = keeper.result;
  pthread_mutex_unlock(&keeper.lock);
  if (rc != 0) {
    pthread_join(keeper.thread, NULL);
    if (rc == -ENOTSUP && keeper.why[0])
      cprof__log("%s", keeper.why);
    else if (rc == -ENOTSUP)
      cprof__log("the profiling server needs a descriptor table of its own, out of the "
                 "program's reach, and the kernel refused one (close_range with "
                 "CLOSE_RANGE_UNSHARE, from Linux 5.9, and unshare(CLONE_FILES): %s)",
                 strerror(-keeper.unshare_err));
    return rc;
  }
  keeper.running = 1;
  return 0;
}

void cprof__server_stop(void) {
  if (!keeper.running)
    return;
  pthread_mutex_lock(&keeper.lock);
  __atomic_store_n(&keeper.stop, 1, __ATOMIC_RELAXED);
  pthread_cond_signal(&keeper.cond);
  pthread_mutex_unlock(&keeper.lock);
  pthread_join(keeper.thread, NULL);
  keeper.running = 0;
}

int cprof__server_stop_keeping(void) {
  if (!keeper.running)
    return -1;
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) != 0) {
    cprof__server_stop();
    return -1;
  }
  keeper.hand_to = pair[1];
  cprof__server_stop();
  keeper.hand_to = -1;
  char byte;
  struct iovec iov = {&byte, 1};
  union {
    struct cmsghdr h;
    char space[CMSG_SPACE(sizeof(int))];
  } c;
  struct msghdr m = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.space, .msg_controllen = sizeof c.space};
  int fd = -1;
  if (recvmsg(pair[0], &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) == 1) {
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    if (h && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
        h->cmsg_len == CMSG_LEN(sizeof(int)))
      memcpy(&fd, CMSG_DATA(h), sizeof(int));
  }
  close(pair[0]);
  close(pair[1]);
  return fd;
}

void cprof__server_atfork_child(void) {
  /* The keeper and the daemon's threads stayed in the parent; leave their
   * memory alone. Their descriptors are in their own table: the child's
   * (a copy of the forking thread's) holds none of them, and closing their
   * numbers here would close the child's own. */
  daemon_ = NULL;
  keeper.running = 0;
  pthread_mutex_unlock(&keeper.lock); /* held across fork: see prepare */
}

/* The keeper's lock is held across fork (start.c's handlers), so that the
 * child finds it its own; a server started in the child makes its keeper
 * afresh (keeper_init). */
void cprof__server_atfork_prepare(void) { pthread_mutex_lock(&keeper.lock); }
void cprof__server_atfork_parent(void) { pthread_mutex_unlock(&keeper.lock); }
