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
#include "http/accept_retry.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fds.h"
#include "http/server.h"

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

void cprof__accept_retry_init(void) {
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

void cprof__accept_worked(void) {
  pthread_mutex_lock(&refusal.lock);
  refusal.retry_ms = 0;
  if (refusal.unsaid) {
    cprof__fds_joined(cprof__server_table());
    long long now = cprof__now_ms(CLOCK_MONOTONIC);
    if (say_cannot_accept(refusal.since_ms, now) == 0) {
      refusal.unsaid = 0;
      refusal.said_ms = now;
    }
  }
  pthread_mutex_unlock(&refusal.lock);
}

void cprof__accept_failed(int first) {
  cprof__fds_joined(cprof__server_table()); /* for the borrowed stderr */
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
    while (!cprof__server_stopping() &&
           pthread_cond_timedwait(&refusal.cond, &refusal.lock, &ts) == 0) {
    }
  }
  pthread_mutex_unlock(&refusal.lock);
}

void cprof__accept_retry_stop(void) {
  pthread_mutex_lock(&refusal.lock);
  pthread_cond_broadcast(&refusal.cond);
  pthread_mutex_unlock(&refusal.lock);
}
