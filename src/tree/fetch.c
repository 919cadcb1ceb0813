/* The owner asking its members (tree.h): one HTTP/1.0 GET on each
 * member's Unix socket, all at once from one thread, with poll. HTTP/1.0,
 * so that each answer ends when its connection closes (no chunks, no
 * keep-alive). The request carries no Accept-Encoding: text comes back
 * plain, profile.proto gzip-compressed as always. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "tree/tree.h"

/* An answer larger than this is cut off (the largest profiles of a big
 * program are tens of MB). */
#define MAX_REPLY ((size_t)256 << 20)
/* How long one wait in poll lasts at most, so that a cancelled request is
 * seen soon. */
#define POLL_SLICE_MS 200

typedef struct conn {
  int fd;
  size_t sent; /* bytes of the request written */
  int done;
} conn_t;

static void fail(cprof__tree_reply_t *r, const char *what, int err) {
  snprintf(r->error, sizeof r->error, "%s%s%s", what, err ? ": " : "", err ? strerror(err) : "");
}

static int connect_member(cprof__tree_reply_t *r) {
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  if (cprof__tree_socket_path(r->pid, sun.sun_path, sizeof sun.sun_path) != 0) {
    fail(r, "no socket", 0);
    return -1;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    fail(r, "socket", errno);
    return -1;
  }
  /* A Unix socket connects at once or not at all: EAGAIN is the member's
   * queue of connections full (it accepts none), not a connection under
   * way (unix(7)); the socket stays unconnected. */
  if (connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
    if (errno == EAGAIN)
      fail(r, "cannot connect: its queue of connections is full (the process accepts none)", 0);
    else
      fail(r, "cannot connect", errno);
    close(fd);
    return -1;
  }
  return fd;
}

/* The header named name (with its colon) in the head, copied into out. */
static void header(const char *head, const char *name, char *out, size_t outlen) {
  size_t n = strlen(name);
  for (const char *p = strstr(head, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
    if (strncasecmp(p + 2, name, n) != 0)
      continue;
    const char *v = p + 2 + n;
    while (*v == ' ')
      v++;
    size_t len = strcspn(v, "\r\n");
    if (len >= outlen)
      len = outlen - 1;
    memcpy(out, v, len);
    out[len] = '\0';
    return;
  }
}

/* The status line and headers off the front of the body. */
static void parse(cprof__tree_reply_t *r) {
  cprof__buf_t *b = &r->body;
  if (b->failed) {
    fail(r, "out of memory", 0);
    return;
  }
  cprof__buf_putc(b, '\0'); /* for the string functions below; taken off after */
  b->len--;
  char *end = b->len ? strstr(b->data, "\r\n\r\n") : NULL;
  int status;
  if (!end || sscanf(b->data, "HTTP/1.%*d %d", &status) != 1) {
    fail(r, b->len ? "not an HTTP answer" : "no answer (the process closed the connection)", 0);
    return;
  }
  *end = '\0';
  header(b->data, "Content-Type:", r->content_type, sizeof r->content_type);
  header(b->data, "Content-Disposition:", r->disposition, sizeof r->disposition);
  char length[32] = "";
  header(b->data, "Content-Length:", length, sizeof length);
  size_t head = (size_t)(end + 4 - b->data);
  size_t body = b->len - head;
  if (length[0] && strtoull(length, NULL, 10) != body) {
    fail(r, "the answer was cut short", 0);
    return;
  }
  memmove(b->data, b->data + head, body);
  b->len = body;
  r->status = status;
}

static void step(cprof__tree_reply_t *r, conn_t *c, short revents, const char *req, size_t reqlen) {
  if (c->sent < reqlen && (revents & POLLOUT)) {
    ssize_t w = send(c->fd, req + c->sent, reqlen - c->sent, MSG_NOSIGNAL);
    if (w > 0)
      c->sent += (size_t)w;
    else if (w < 0 && errno != EAGAIN && errno != EINTR) {
      fail(r, "cannot send the request", errno);
      c->done = 1;
      return;
    }
  }
  if (!(revents & (POLLIN | POLLHUP | POLLERR)))
    return;
  for (;;) {
    if (cprof__buf_reserve(&r->body, 65536) != 0 || r->body.len > MAX_REPLY) {
      fail(r, r->body.len > MAX_REPLY ? "the answer is too large" : "out of memory", 0);
      c->done = 1;
      return;
    }
    ssize_t got = recv(c->fd, r->body.data + r->body.len, r->body.cap - r->body.len, 0);
    if (got > 0) {
      r->body.len += (size_t)got;
      continue;
    }
    if (got < 0 && (errno == EAGAIN || errno == EINTR))
      return;
    if (got < 0)
      fail(r, "cannot read the answer", errno);
    else
      parse(r);
    c->done = 1;
    return;
  }
}

void cprof__tree_fetch(cprof__tree_reply_t *replies, int n, const char *target, long timeout_ms,
                       int (*cancelled)(void *), void *ctx) {
  char req[2200];
  int reqlen = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: cprof\r\n\r\n", target);
  conn_t *conns = calloc((size_t)(n > 0 ? n : 1), sizeof *conns);
  struct pollfd *pfd = calloc((size_t)(n > 0 ? n : 1), sizeof *pfd);
  int *at = calloc((size_t)(n > 0 ? n : 1), sizeof *at);
  for (int i = 0; i < n; i++) {
    cprof__tree_reply_t *r = &replies[i];
    r->status = 0;
    r->error[0] = r->content_type[0] = r->disposition[0] = '\0';
    cprof__buf_init(&r->body);
    if (!conns || !pfd || !at) {
      fail(r, "out of memory", 0);
      continue;
    }
    if (reqlen < 0 || (size_t)reqlen >= sizeof req) {
      fail(r, "the request is too long", 0);
      conns[i].done = 1;
      conns[i].fd = -1;
      continue;
    }
    conns[i].fd = connect_member(r);
    conns[i].done = conns[i].fd < 0;
  }
  if (!conns || !pfd || !at) {
    free(conns);
    free(pfd);
    free(at);
    return;
  }
  int64_t start = cprof__now_ms(CLOCK_MONOTONIC);
  for (;;) {
    /* Only the connections still waiting, pfd[k] for conns[at[k]]: poll
     * refuses more descriptors than RLIMIT_NOFILE, even ignored ones, and
     * a tree may have more members than that, most of them done. */
    int waiting = 0;
    for (int i = 0; i < n; i++) {
      if (conns[i].done)
        continue;
      pfd[waiting].fd = conns[i].fd;
      pfd[waiting].events = POLLIN | (conns[i].sent < (size_t)reqlen ? POLLOUT : 0);
      pfd[waiting].revents = 0;
      at[waiting++] = i;
    }
    if (!waiting)
      break;
    long left = timeout_ms - (long)(cprof__now_ms(CLOCK_MONOTONIC) - start);
    int stop = left <= 0 || (cancelled && cancelled(ctx));
    if (stop) {
      for (int i = 0; i < n; i++)
        if (!conns[i].done) {
          fail(&replies[i], left <= 0 ? "no answer in time" : "request cancelled", 0);
          conns[i].done = 1;
        }
      break;
    }
    int ready = poll(pfd, (nfds_t)waiting, (int)(left < POLL_SLICE_MS ? left : POLL_SLICE_MS));
    if (ready < 0 && errno != EINTR) {
      int err = errno;
      for (int k = 0; k < waiting; k++) {
        fail(&replies[at[k]], "cannot wait for the answer", err);
        conns[at[k]].done = 1;
      }
      break;
    }
    for (int k = 0; ready > 0 && k < waiting; k++)
      if (pfd[k].revents)
        step(&replies[at[k]], &conns[at[k]], pfd[k].revents, req, (size_t)reqlen);
  }
  for (int i = 0; i < n; i++)
    if (conns[i].fd >= 0)
      close(conns[i].fd);
  free(conns);
  free(pfd);
  free(at);
}

void cprof__tree_replies_free(cprof__tree_reply_t *replies, int n) {
  for (int i = 0; i < n; i++)
    cprof__buf_free(&replies[i].body);
}
