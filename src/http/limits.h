/* The embedded server's limits, apart from libmicrohttpd: which connections
 * are admitted, the deadline by which each must have sent its request, and
 * how many expensive requests (profiles being built) run at once. Beyond a
 * cap the answer is a 503 with Retry-After. callbacks.c is the glue that calls
 * these from libmicrohttpd's callbacks. */
#ifndef CPROF_HTTP_LIMITS_H
#define CPROF_HTTP_LIMITS_H

#include <stddef.h>
#include <sys/socket.h>

#include "core/config.h" /* the settings' defaults and ranges */

/* Connections accepted beyond the caps only to be told 503 linger for at
 * most CPROF_REFUSE_LINGER_MS, and at most max_connections of them at
 * once: past that, the one told 503 longest ago is cut (limits.c). So the
 * server holds at most max_connections served plus max_connections told
 * 503, and libmicrohttpd's one limit, CPROF_HELD_FACTOR * max_connections,
 * leaves as many again for connections being cut. That limit must never be
 * reached: at it, libmicrohttpd 0.9.75 in thread-per-connection mode still
 * accepts, and closes at once ("Server reached connection limit"), which
 * resets a client of any address that has sent its request. It has no
 * per-address limit of its own for the same reason. */
#define CPROF_HELD_FACTOR 3
#define CPROF_REFUSE_LINGER_MS 1000
/* libmicrohttpd's memory pool per connection, which holds the request line
 * and headers (its default, stated here so the bound below is ours). */
#define CPROF_HEAD_MEMORY (32 * 1024)
#define CPROF_MAX_BODY (1 << 20)

typedef struct cprof__limits_cfg {
  int max_connections;
  int max_per_ip;
  int read_timeout; /* s: a whole request must arrive within this */
  int max_profiles;
  int tls; /* the socket speaks TLS: no plain answer can be written on it */
} cprof__limits_cfg_t;

/* One connection, owned by the caller from open to close. */
typedef struct cprof__conn {
  struct cprof__conn *prev, *next;
  int fd;
  struct sockaddr_storage peer;
  int refused;        /* beyond a cap: told 503, closed soon */
  long long deadline; /* CLOCK_MONOTONIC ms; 0: none (a request is being served) */
  char why[120];      /* refused: the reason, for the 503 */
} cprof__conn_t;

/* Sets the caps and forgets every connection. wake is called (without any
 * lock of ours held) when a deadline appears and the reaper may be asleep. */
void cprof__limits_init(const cprof__limits_cfg_t *cfg, void (*wake)(void));

/* A new connection on fd from peer. Returns 0 when admitted; otherwise
 * marks c refused, with the reason in c->why, and returns 1. Over plain
 * HTTP it has written a 503 with Retry-After on fd and ended the sending
 * side: the caller answers no request on it. Over TLS nothing can be
 * written before the handshake: the caller answers its first request with
 * the 503 (the connection is still cut at CPROF_REFUSE_LINGER_MS). */
int cprof__limits_open(cprof__conn_t *c, int fd, const struct sockaddr *peer, socklen_t len);
void cprof__limits_close(cprof__conn_t *c);
/* The request has arrived whole (no deadline while it is served), and it
 * has been answered (the next one, on a kept-alive connection, has a new
 * deadline). */
void cprof__limits_request_read(cprof__conn_t *c);
void cprof__limits_request_done(cprof__conn_t *c);
/* Whether a connection was refused within the last
 * CPROF_REFUSE_LINGER_MS: then an answer ends its connection (Connection:
 * close) rather than keep it alive, so that the clients served take turns
 * with the ones told 503 instead of holding their places for good. */
int cprof__limits_crowded(void);
/* Cuts off (shutdown) every connection past its deadline. Returns the ms
 * until the next deadline, or -1 when none is set. Call it from a thread
 * in the connections' descriptor table. */
long cprof__limits_reap(void);

/* An expensive request (every profile, symbol lookups, any request with a
 * body) takes a slot for as long as it is built. Returns a slot (> 0) to
 * give back with cprof__limits_profile_leave, 0 when the request is cheap
 * (the index, cmdline, GET symbol, paths outside /debug/pprof/), or -1
 * when all slots are taken: then *retry_after is the seconds until the
 * first running one is expected to end, and why a one-line reason. */
int cprof__limits_profile_enter(const char *method, const char *path, const char *query,
                                int *retry_after, char *why, size_t whylen);
void cprof__limits_profile_leave(int slot);

#endif
