/* Limits of the embedded server: what a slow or malicious client can hold.
 *
 * - Connections: at most max_connections served at once, at most
 *   max_per_ip of them from one address, so one host cannot take them all.
 *   A connection beyond either cap is still accepted, told "503, retry
 *   after 1 s" at once, without waiting for its request, and closed: a
 *   client learns why instead of seeing a silent close or waiting in the
 *   listen queue. Its sending side ends right after the answer (a FIN), and
 *   the socket stays open up to CPROF_REFUSE_LINGER_MS to read the request
 *   the client sends meanwhile: closing with unread data would send a reset,
 *   and a reset can reach the client before it has read the answer. At most
 *   max_connections linger at once; under a flood the oldest is cut first
 *   (it has had the longest to read its answer), which keeps the server
 *   below libmicrohttpd's own limit (limits.h).
 * - A deadline for each request: the whole request (line, headers, body)
 *   must arrive within read_timeout of the connection's opening or of the
 *   previous answer on it. libmicrohttpd's own timeout counts inactivity,
 *   which a client sending a byte a second (slowloris) never reaches; the
 *   reaper (the server's keeper thread) shuts down a connection past its
 *   deadline, and libmicrohttpd closes it as if the peer had.
 * - Expensive requests: profiles being built take one of max_profiles
 *   slots for as long as they build (a 30 s goroutine delta for 30 s);
 *   beyond that, 503 with Retry-After the time until the first running one
 *   is due. CPU and wall profiles take none: their recordings bound their
 *   readers (reads_recording).
 *   Requests with a body are expensive too, which bounds the bodies held
 *   at once to max_profiles of CPROF_MAX_BODY.
 *
 * Memory under abuse is bounded by 3 * max_connections (limits.h)
 * connections of CPROF_HEAD_MEMORY each, plus a thread each (the stack it
 * touches), plus max_profiles bodies of CPROF_MAX_BODY and the profiles
 * being built, plus the builders of the CPU and wall recordings' readers
 * (16 each). */
#include "http/limits.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "http/params.h"
#include "http/query.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cprof__limits_cfg_t cfg = {CPROF_DEFAULT_MAX_CONNECTIONS,
                                  CPROF_DEFAULT_MAX_CONNECTIONS_PER_IP, CPROF_DEFAULT_READ_TIMEOUT,
                                  CPROF_DEFAULT_MAX_PROFILES, 0};
static void (*wake_reaper)(void);
static cprof__conn_t *conns;   /* every open connection, refused ones too */
static int admitted;           /* of them, not refused */
static long long last_refusal; /* CLOCK_MONOTONIC ms of the latest refusal */
/* The deadline the reaper sleeps until (ms), 0 when it sleeps until woken:
 * a sooner deadline must wake it. */
static long long reaper_due;
/* When each running expensive request is expected to end (ms); 0: free. */
static long long slots[CPROF_LIMIT_MAX_PROFILES];

static long long now_ms(void) { return cprof__now_ms(CLOCK_MONOTONIC); }

void cprof__limits_init(const cprof__limits_cfg_t *c, void (*wake)(void)) {
  /* Also after fork: the parent's connections are not the child's, and
   * the lock may have been held by a thread the child does not have. */
  pthread_mutex_init(&lock, NULL);
  cfg = *c;
  if (cfg.max_profiles > CPROF_LIMIT_MAX_PROFILES)
    cfg.max_profiles = CPROF_LIMIT_MAX_PROFILES;
  wake_reaper = wake;
  conns = NULL;
  admitted = 0;
  last_refusal = 0;
  reaper_due = 0;
  memset(slots, 0, sizeof slots);
}

static int same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
  if (a->ss_family != b->ss_family)
    return 0;
  if (a->ss_family == AF_INET)
    return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
           ((const struct sockaddr_in *)b)->sin_addr.s_addr;
  if (a->ss_family == AF_INET6)
    return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                  &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
  return 1; /* another family: all one host */
}

/* Connections served from c's address, c not counted. Under the lock. */
static int from_same_host(const cprof__conn_t *c) {
  int n = 0;
  for (const cprof__conn_t *o = conns; o; o = o->next)
    n += o != c && !o->refused && same_host(&o->peer, &c->peer);
  return n;
}

/* c, told 503, has joined the ones that linger: past max_connections of
 * them, the one told 503 longest ago (the soonest deadline; never c, whose
 * answer is not written yet) is cut now, as the reaper would at its
 * deadline. Under the lock, which also keeps its descriptor its own
 * (limits_close). */
static void cut_oldest_refused(const cprof__conn_t *c) {
  int lingering = 0;
  cprof__conn_t *oldest = NULL;
  for (cprof__conn_t *o = conns; o; o = o->next) {
    if (!o->refused || !o->deadline)
      continue;
    lingering++;
    if (o != c && (!oldest || o->deadline < oldest->deadline))
      oldest = o;
  }
  if (lingering > cfg.max_connections && oldest) {
    shutdown(oldest->fd, SHUT_RDWR);
    oldest->deadline = 0;
  }
}

/* A deadline was set: does the reaper sleep past it? Under the lock. */
static int reaper_late(long long deadline) {
  if (reaper_due && reaper_due <= deadline)
    return 0;
  reaper_due = deadline; /* woken now: no need to wake it twice */
  return 1;
}

/* The answer to a connection beyond a cap, written straight to its socket:
 * it is small enough for any socket buffer, so the write never waits. */
static void refuse(int fd, const char *why) {
  char body[160], msg[400];
  int blen = snprintf(body, sizeof body, "503 service unavailable: %s\n", why);
  int n = snprintf(msg, sizeof msg,
                   "HTTP/1.1 503 Service Unavailable\r\n"
                   "Content-Type: text/plain; charset=utf-8\r\n"
                   "X-Content-Type-Options: nosniff\r\n"
                   "Retry-After: 1\r\n"
                   "Connection: close\r\n"
                   "Content-Length: %d\r\n\r\n%s",
                   blen, body);
  (void)!send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(fd, SHUT_WR);
}

int cprof__limits_open(cprof__conn_t *c, int fd, const struct sockaddr *peer, socklen_t len) {
  memset(c, 0, sizeof *c);
  c->fd = fd;
  if (peer && len <= sizeof c->peer)
    memcpy(&c->peer, peer, len);
  char *why = c->why;
  pthread_mutex_lock(&lock);
  if (admitted >= cfg.max_connections)
    snprintf(why, sizeof c->why, "too many connections (CPROF_MAX_CONNECTIONS=%d)",
             cfg.max_connections);
  else if (from_same_host(c) >= cfg.max_per_ip)
    snprintf(why, sizeof c->why,
             "too many connections from your address (CPROF_MAX_CONNECTIONS_PER_IP=%d)",
             cfg.max_per_ip);
  c->refused = why[0] != '\0';
  admitted += !c->refused;
  long long now = now_ms();
  if (c->refused)
    last_refusal = now;
  c->deadline = now + (c->refused ? CPROF_REFUSE_LINGER_MS : cfg.read_timeout * 1000LL);
  c->next = conns;
  if (conns)
    conns->prev = c;
  conns = c;
  if (c->refused)
    cut_oldest_refused(c);
  int wake = reaper_late(c->deadline);
  pthread_mutex_unlock(&lock);
  if (c->refused && !cfg.tls)
    refuse(fd, why);
  if (wake && wake_reaper)
    wake_reaper();
  return c->refused;
}

void cprof__limits_close(cprof__conn_t *c) {
  pthread_mutex_lock(&lock);
  if (c->prev)
    c->prev->next = c->next;
  else if (conns == c)
    conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  c->prev = c->next = NULL;
  admitted -= !c->refused;
  pthread_mutex_unlock(&lock);
}

void cprof__limits_request_read(cprof__conn_t *c) {
  pthread_mutex_lock(&lock);
  if (!c->refused)
    c->deadline = 0;
  pthread_mutex_unlock(&lock);
}

void cprof__limits_request_done(cprof__conn_t *c) {
  int wake = 0;
  pthread_mutex_lock(&lock);
  if (!c->refused) {
    c->deadline = now_ms() + cfg.read_timeout * 1000LL;
    wake = reaper_late(c->deadline);
  }
  pthread_mutex_unlock(&lock);
  if (wake && wake_reaper)
    wake_reaper();
}

int cprof__limits_crowded(void) {
  pthread_mutex_lock(&lock);
  long long last = last_refusal;
  pthread_mutex_unlock(&lock);
  return last && now_ms() - last < CPROF_REFUSE_LINGER_MS;
}

long cprof__limits_reap(void) {
  long long now = now_ms(), next = -1;
  pthread_mutex_lock(&lock);
  for (cprof__conn_t *c = conns; c; c = c->next) {
    if (!c->deadline)
      continue;
    if (c->deadline <= now) {
      /* libmicrohttpd's thread for it wakes, reads end of file and closes
       * it; it tells us (limits_close, under this lock) before it closes
       * the descriptor, so fd is still this connection's. */
      shutdown(c->fd, SHUT_RDWR);
      c->deadline = 0;
    } else if (next < 0 || c->deadline - now < next) {
      next = c->deadline - now;
    }
  }
  reaper_due = next < 0 ? 0 : now + next;
  pthread_mutex_unlock(&lock);
  return (long)next;
}

/* The profile's name under /debug/pprof/, or NULL outside it. */
static const char *profile_name(const char *path) {
  static const char root[] = "/debug/pprof/";
  const char *p = strstr(path, root); /* after any CPROF_PREFIX */
  return p ? p + sizeof root - 1 : NULL;
}

static int is_cheap(const char *method, const char *path) {
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return 0; /* a body, or a setting changed */
  const char *name = profile_name(path);
  /* The viewer's page and its list of profiles are cheap; its data
   * (ui/data) takes a profile. */
  return !name || name[0] == '\0' || strcmp(name, "cmdline") == 0 || strcmp(name, "symbol") == 0 ||
         strcmp(name, "ui") == 0 || strcmp(name, "ui/") == 0 || strcmp(name, "ui/profiles") == 0;
}

/* A GET of the CPU or wall profile (or the viewer's data of one): a reader
 * of the shared recording (registry/cpu.c, wall_profile.c). It waits out
 * its seconds at no cost but a builder, and the recording bounds its
 * readers on its own (16 each, then 503). Holding a slot for its seconds
 * shut out the rest: three CPU profiles and a collector's process_cpu
 * scrape took the four, and the collector's heap, block, mutex and
 * goroutine scrapes got 503 for as long as they ran (issue 32,
 * tests/integration/cpu_concurrent.sh). */
static int reads_recording(const char *method, const char *path, const char *query) {
  char v[32];
  const char *name = profile_name(path);
  if (!name || (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0))
    return 0;
  if (strcmp(name, "ui/data") == 0)
    name = cprof__query_get(query, "name", v, sizeof v) == 1 ? v : "";
  return strcmp(name, "profile") == 0 || strcmp(name, "wall") == 0;
}

/* A GET for another process of the tree (?pid=N, N not this one): the
 * owner only passes it on (http/tree.c), and the member that builds the
 * profile takes one of its own slots. Counting it here too would let four
 * workers' CPU profiles, which a collector asks for at once (cprof collect's
 * process_tree: each), shut out the rest of a tree of sixteen; the
 * connection caps still bound how many are passed on at once. */
static int relayed(const char *method, const char *query) {
  char v[32];
  long pid;
  if (!method || (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0))
    return 0;
  return cprof__query_get(query, "pid", v, sizeof v) == 1 &&
         cprof__query_int(v, 1, 0x7fffffff, &pid) == 0 && pid != (long)getpid();
}

/* How long the request should take, in ms, for Retry-After. */
static long long expected_ms(const char *path, const char *query) {
  char v[32];
  const char *name;
  long seconds = 0;
  if ((name = profile_name(path)) && strcmp(name, "trace") == 0) {
    /* A number of seconds, default 1: 0.5 is half a second. */
    double s = CPROF_TRACE_DEFAULT_SECONDS;
    if (cprof__query_get(query, "seconds", v, sizeof v) == 1)
      s = strtod(v, NULL);
    return s > 0 && s <= CPROF_LIMIT_TIMEOUT ? (long long)(s * 1000) + 1000 : 1000;
  }
  if (cprof__query_get(query, "seconds", v, sizeof v) == 1)
    cprof__query_int(v, 1, CPROF_LIMIT_TIMEOUT, &seconds);
  else if (cprof__query_get(query, "diff", v, sizeof v) == 1) /* ui/data: two snapshots */
    cprof__query_int(v, 1, CPROF_LIMIT_TIMEOUT, &seconds);
  else if ((name = profile_name(path)) &&
           (strcmp(name, "profile") == 0 || strcmp(name, "wall") == 0 ||
            (strcmp(name, "ui/data") == 0 && cprof__query_get(query, "name", v, sizeof v) == 1 &&
             strcmp(v, "profile") == 0)))
    seconds = CPROF_DEFAULT_SECONDS; /* the CPU and wall profiles' default */
  return seconds * 1000LL + 1000;
}

int cprof__limits_profile_enter(const char *method, const char *path, const char *query,
                                int *retry_after, char *why, size_t whylen) {
  if (is_cheap(method ? method : "", path ? path : "") || relayed(method, query) ||
      reads_recording(method ? method : "", path ? path : "", query))
    return 0;
  long long now = now_ms(), soonest = -1;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < cfg.max_profiles; i++) {
    if (!slots[i]) {
      slots[i] = now + expected_ms(path, query);
      pthread_mutex_unlock(&lock);
      return i + 1;
    }
    if (soonest < 0 || slots[i] < soonest)
      soonest = slots[i];
  }
  pthread_mutex_unlock(&lock);
  long long wait = soonest - now;
  *retry_after = wait < 1000 ? 1 : (int)((wait + 999) / 1000);
  snprintf(why, whylen, "%d profiles are being built, the most at once (CPROF_MAX_PROFILES)",
           cfg.max_profiles);
  return -1;
}

void cprof__limits_profile_leave(int slot) {
  if (slot <= 0 || slot > CPROF_LIMIT_MAX_PROFILES)
    return;
  pthread_mutex_lock(&lock);
  slots[slot - 1] = 0;
  pthread_mutex_unlock(&lock);
}
