/* The collector's HTTP client (tools/cprof/collect/fetch.c) against a small
 * server in this test: answers and their statuses, several requests in
 * flight at once on one thread, a timeout, an answer too large, Basic and
 * Bearer credentials and the User-Agent as the server received them, and
 * a target where nothing listens. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "collect/fetch.h"

static int listener;
static int port;

/* One connection: reads the request head, answers by its path. /echo
 * answers the request's head itself; /hold waits until the client goes. */
static void *serve_one(void *arg) {
  int fd = (int)(long)arg;
  char req[4096];
  size_t n = 0;
  while (n < sizeof req - 1) {
    ssize_t r = read(fd, req + n, sizeof req - 1 - n);
    if (r <= 0)
      break;
    n += (size_t)r;
    req[n] = '\0';
    if (strstr(req, "\r\n\r\n"))
      break;
  }
  req[n] = '\0';
  char path[256] = "";
  sscanf(req, "GET %255s", path);
  char head[256];
  const char *body = "hello";
  int status = 200;
  char big[300000];
  if (strcmp(path, "/missing") == 0) {
    status = 404;
    body = "404 page not found\n";
  } else if (strcmp(path, "/echo") == 0) {
    body = req;
  } else if (strcmp(path, "/big") == 0) {
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    body = big;
  } else if (strcmp(path, "/hold") == 0) {
    char c;
    while (read(fd, &c, 1) > 0) /* until the client gives up */
      ;
    close(fd);
    return NULL;
  }
  int h = snprintf(head, sizeof head,
                   "HTTP/1.1 %d X\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", status,
                   strlen(body));
  if (write(fd, head, (size_t)h) < 0 || write(fd, body, strlen(body)) < 0)
    perror("write");
  close(fd);
  return NULL;
}

static void *server(void *unused) {
  (void)unused;
  for (;;) {
    int fd = accept(listener, NULL, NULL);
    if (fd < 0)
      return NULL;
    pthread_t t;
    pthread_create(&t, NULL, serve_one, (void *)(long)fd);
    pthread_detach(t);
  }
}

typedef struct {
  int calls;
  collect_result_t r;
  char body[4096];
} got_t;

static void done(void *arg, collect_result_t *r) {
  got_t *g = arg;
  g->calls++;
  g->r = *r;
  size_t n = r->len < sizeof g->body - 1 ? r->len : sizeof g->body - 1;
  memcpy(g->body, r->data ? (const char *)r->data : "", n);
  g->body[n] = '\0';
  g->r.data = NULL;
}

static void url(char *out, size_t n, const char *path) {
  snprintf(out, n, "http://127.0.0.1:%d%s", port, path);
}

/* Runs f until nothing is in flight (a bound of 30 s of polls: a hang, not
 * a timing). */
static void drain(collect_fetcher_t *f) {
  for (int i = 0; i < 300 && collect_fetcher_run(f, 100) > 0; i++)
    ;
}

int main(void) {
  listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (bind(listener, (struct sockaddr *)&a, sizeof a) != 0 || listen(listener, 64) != 0 ||
      getsockname(listener, (struct sockaddr *)&a, &al) != 0)
    return perror("listen"), 1;
  port = ntohs(a.sin_port);
  pthread_t st;
  pthread_create(&st, NULL, server, NULL);

  collect_fetcher_t *f;
  CHECK_EQ_INT(collect_fetcher_new(100000, &f), 0);
  char u[5][128];
  got_t ok = {0}, missing = {0}, echo = {0}, big = {0}, hold = {0};
  url(u[0], sizeof u[0], "/ok");
  url(u[1], sizeof u[1], "/missing");
  url(u[2], sizeof u[2], "/echo");
  url(u[3], sizeof u[3], "/big");
  url(u[4], sizeof u[4], "/hold");
  /* All five in flight at once, on this one thread. */
  CHECK_EQ_INT(
      collect_fetcher_add(f, &(collect_request_t){.url = u[0], .timeout_ms = 10000}, done, &ok), 0);
  CHECK_EQ_INT(collect_fetcher_add(f, &(collect_request_t){.url = u[1], .timeout_ms = 10000}, done,
                                   &missing),
               0);
  CHECK_EQ_INT(collect_fetcher_add(
                   f,
                   &(collect_request_t){
                       .url = u[2], .timeout_ms = 10000, .username = "ann", .password = "s3cret"},
                   done, &echo),
               0);
  CHECK_EQ_INT(
      collect_fetcher_add(f, &(collect_request_t){.url = u[3], .timeout_ms = 10000}, done, &big),
      0);
  CHECK_EQ_INT(
      collect_fetcher_add(f, &(collect_request_t){.url = u[4], .timeout_ms = 300}, done, &hold), 0);
  drain(f);

  CHECK_EQ_INT(ok.calls, 1);
  CHECK_EQ_INT(ok.r.status, 200);
  CHECK_EQ_STR(ok.body, "hello");
  CHECK_EQ_STR(ok.r.error, "");
  CHECK(ok.r.duration_ns > 0);

  CHECK_EQ_INT(missing.calls, 1);
  CHECK_EQ_INT(missing.r.status, 404);
  CHECK_EQ_STR(missing.body, "404 page not found\n");

  CHECK_EQ_INT(echo.calls, 1);
  CHECK(strstr(echo.body, "Authorization: Basic YW5uOnMzY3JldA==\r\n") != NULL); /* ann:s3cret */
  CHECK(strstr(echo.body, "User-Agent: cprof-collect/") != NULL);

  CHECK_EQ_INT(big.calls, 1);
  CHECK(strstr(big.r.error, "larger than 100000 bytes") != NULL);

  CHECK_EQ_INT(hold.calls, 1);
  CHECK_EQ_INT(hold.r.status, 0);
  CHECK(strstr(hold.r.error, "imeout") || strstr(hold.r.error, "timed out"));

  /* A bearer token; then a port where nothing listens. */
  got_t bearer = {0}, refused = {0};
  CHECK_EQ_INT(collect_fetcher_add(f, &(collect_request_t){.url = u[2], .bearer_token = "tok-1"},
                                   done, &bearer),
               0);
  CHECK_EQ_INT(collect_fetcher_add(
                   f, &(collect_request_t){.url = "http://127.0.0.1:1/x", .timeout_ms = 5000}, done,
                   &refused),
               0);
  drain(f);
  CHECK(strstr(bearer.body, "Authorization: Bearer tok-1\r\n") != NULL);
  CHECK_EQ_INT(refused.calls, 1);
  CHECK_EQ_INT(refused.r.status, 0);
  CHECK(refused.r.error[0] != '\0');

  /* Freed with a request in flight: no callback, nothing leaked (ASan). */
  got_t left = {0};
  CHECK_EQ_INT(
      collect_fetcher_add(f, &(collect_request_t){.url = u[4], .timeout_ms = 10000}, done, &left),
      0);
  collect_fetcher_run(f, 50);
  collect_fetcher_free(f);
  CHECK_EQ_INT(left.calls, 0);
  return check_result("test_fetch");
}
