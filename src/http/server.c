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
 * - A thread per connection: a 30-second CPU profile must not hold up an
 *   index page request that arrives meanwhile.
 * - Its parts: the listening socket, which we open ourselves
 *   (listener.c); HTTPS's PEM files (tls.c); libmicrohttpd's callbacks and
 *   the limits' options (callbacks.c); the waits between tries when it
 *   cannot accept (accept_retry.c).
 * - libmicrohttpd's error log is caught here: while starting, for why a
 *   start failed (a file GnuTLS rejects), for the one stderr line; after
 *   that, out of descriptors (RLIMIT_NOFILE lowered after start),
 *   libmicrohttpd would try to accept again at once, for ever: its error
 *   log is where its listening thread is made to wait between tries. */
#include "http/server.h"

#include <errno.h>
#include <malloc.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fds.h"
#include "core/log.h"
#include "http/accept_retry.h"
#include "http/callbacks.h"
#include "http/limits.h"
#include "http/listener.h"
#include "http/tls.h"
#include "registry/symbols.h"

/* How long the symbolizer may sit unused before the keeper lets it go, with
 * its memory (16 MB of a small program's RSS once libc's DWARF is loaded).
 * Building it again costs the next /goroutine about 80 ms, against 2 ms
 * warm: a burst of requests (pprof's, a person's) stays warm, and an idle
 * process holds nothing. */
#define SYMBOLIZER_IDLE_MS 5000

/* After a member's request (cprof__server_frugal), how long the keeper
 * waits before it trims malloc's arenas: libmicrohttpd frees the answer
 * once the connection has closed, just after the request completes. */
#define FRUGAL_TRIM_MS 100

static struct MHD_Daemon *daemon_;
static int frugal; /* cprof__server_frugal */

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
  int trim;        /* frugal: a request was answered since malloc's arenas were trimmed */
  int hand_to;     /* cprof__server_stop_keeping's socket, in the program's table, or -1 */
  int adopt;       /* cprof__server_start_on's listener, in the program's table, or -1 */
} keeper = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

unsigned cprof__server_table(void) { return keeper.table; }

int cprof__server_stopping(void) { return __atomic_load_n(&keeper.stop, __ATOMIC_RELAXED); }

/* limits.c set a request deadline: the keeper may be asleep for good. */
static void limits_wake(void) {
  pthread_mutex_lock(&keeper.lock);
  keeper.reap = 1;
  pthread_cond_signal(&keeper.cond);
  pthread_mutex_unlock(&keeper.lock);
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
      cprof__accept_failed(strncmp(msg + sizeof at_limit - 1, "FIRST ", 6) == 0);
    else if (strncmp(msg, poll_failed, sizeof poll_failed - 1) == 0)
      cprof__accept_failed(1);
    return;
  }
  size_t n = strlen(msg);
  while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '.'))
    msg[--n] = '\0';
  size_t used = strlen(keeper.why);
  snprintf(keeper.why + used, sizeof keeper.why - used, "%s%s", used ? "; " : "", msg);
}

/* Opens the socket and starts libmicrohttpd, whose threads share the
 * calling thread's descriptor table. Returns 0 or a negative errno. */
static int serve(const cprof__addr_t *addr, char *bound, size_t boundlen) {
  cprof__tls_t tls;
  int terr = cprof__tls_load(&tls, keeper.why, sizeof keeper.why);
  if (terr)
    return terr;
  int fd = keeper.adopt >= 0 ? cprof__listener_adopt(keeper.adopt, addr, bound, boundlen) : -1;
  if (fd < 0)
    fd = cprof__listener_open(addr, bound, boundlen);
  if (fd < 0) {
    cprof__tls_wipe(&tls);
    return fd;
  }
  cprof__mhd_tls = tls.cert != NULL;
  struct MHD_OptionItem limits[CPROF_MHD_LIMIT_OPTIONS];
  cprof__mhd_limit_options(limits, cprof__mhd_tls, limits_wake);
  /* libmicrohttpd names its threads MHD-listen and MHD-connection. */
  __atomic_store_n(&starting, 1, __ATOMIC_RELAXED);
  daemon_ =
      MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                           MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG | tls.flags,
                       0, NULL, NULL, cprof__mhd_request, NULL, MHD_OPTION_EXTERNAL_LOGGER,
                       server_log, NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_URI_LOG_CALLBACK,
                       cprof__mhd_uri_log, NULL, MHD_OPTION_NOTIFY_COMPLETED, cprof__mhd_completed,
                       NULL, MHD_OPTION_ARRAY, limits, MHD_OPTION_ARRAY, tls.opts, MHD_OPTION_END);
  __atomic_store_n(&starting, 0, __ATOMIC_RELAXED);
  cprof__tls_wipe(&tls);
  if (!daemon_) {
    close(fd);
    if (!cprof__mhd_tls)
      return -EIO;
    cprof__tls_refused(keeper.why, sizeof keeper.why);
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

void cprof__server_frugal(int on) { frugal = on; }

void cprof__server_request_done(void) {
  if (!frugal)
    return;
  pthread_mutex_lock(&keeper.lock);
  keeper.trim = 1;
  pthread_cond_signal(&keeper.cond);
  pthread_mutex_unlock(&keeper.lock);
}

/* Frugal: FRUGAL_TRIM_MS after the last request answered, malloc's free
 * memory goes back to the system. Returns how long to wait for that, or
 * -1 when nothing is due. */
static long trim_heap(void) {
  static struct timespec due;
  if (!keeper.trim)
    return -1;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (keeper.trim == 1) {
    keeper.trim = 2;
    due = cprof__deadline_ms(CLOCK_MONOTONIC, FRUGAL_TRIM_MS);
  }
  long left = (long)(due.tv_sec - now.tv_sec) * 1000 + (due.tv_nsec - now.tv_nsec) / 1000000;
  if (left > 0)
    return left;
  keeper.trim = 0;
  pthread_mutex_unlock(&keeper.lock);
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  pthread_mutex_lock(&keeper.lock);
  return -1;
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
#ifdef __GLIBC__
      /* Ended now: what libdw freed goes back to the system, rather than
       * stay in malloc's arenas (6 MB of a tree's owner that had named
       * its workers' profiles). */
      if (ms < 0)
        malloc_trim(0);
#endif
      pthread_mutex_lock(&keeper.lock);
      if (ms >= 0)
        keeper.used = 1; /* still kept: look again when it is due */
    }
    if (keeper.stop)
      break;
    long reap_ms = cprof__limits_reap();
    if (reap_ms >= 0 && (ms < 0 || reap_ms < ms))
      ms = reap_ms + 1; /* past the deadline, not just before it */
    long trim_ms = trim_heap();
    if (trim_ms >= 0 && (ms < 0 || trim_ms < ms))
      ms = trim_ms;
    if (ms >= 0)
      wait_ms(ms);
    else if (!keeper.used && !keeper.reap && keeper.trim != 1)
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

  cprof__accept_retry_stop(); /* libmicrohttpd's listening thread may wait in it */
  int quiesced = -1;
  if (keeper.hand_to >= 0 && (quiesced = (int)MHD_quiesce_daemon(daemon_)) >= 0)
    cprof__listener_hand_over(quiesced, keeper.hand_to);
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
  cprof__accept_retry_init();
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
  int fd = cprof__listener_take_back(pair[0]);
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
