/* Abusive HTTP clients for tests/http/limits.sh, each mode a way to hold a
 * server's connections without finishing a request:
 *
 *   slow_clients half HOST PORT SRC N SECONDS
 *     opens N connections from the local address SRC (any 127.x.y.z works
 *     on Linux's loopback), sends half a request line on each ("GET
 *     /debug/pprof/ HTT"), prints "holding K" (K: how many connected) and
 *     holds them for SECONDS, then prints how many the server answered
 *     with a 503 (those beyond its caps) and how many it closed.
 *   slow_clients trickle HOST PORT SRC 1 SECONDS
 *     slowloris: one connection that sends a request one byte a second,
 *     never finishing it; prints "closed after S s" when the server cuts
 *     it off, or "still open after S s" at SECONDS.
 *
 * Exit status 0 unless a socket call failed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int dial(const char *host, int port, const char *src) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a = {.sin_family = AF_INET};
  inet_pton(AF_INET, src, &a.sin_addr);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
    goto fail;
  a.sin_port = htons((unsigned short)port);
  inet_pton(AF_INET, host, &a.sin_addr);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
    goto fail;
  return fd;
fail:
  close(fd);
  return -1;
}

/* The server closed (or reset) the connection: reading what it sent ends
 * in end of file or an error. *answer gets the first bytes it sent. */
static int closed_by_server(int fd, char *answer, size_t len) {
  char buf[512];
  answer[0] = '\0';
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0)
      return 0;
    ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN))
      return 1;
    if (n < 0)
      return 0;
    if (!answer[0]) {
      buf[n] = '\0';
      snprintf(answer, len, "%s", buf);
    }
  }
}

static int half(const char *host, int port, const char *src, int n, int seconds) {
  static const char part[] = "GET /debug/pprof/ HTT";
  int *fds = calloc((size_t)n, sizeof *fds);
  int held = 0;
  for (int i = 0; i < n; i++) {
    fds[i] = dial(host, port, src);
    if (fds[i] >= 0 && send(fds[i], part, sizeof part - 1, MSG_NOSIGNAL) > 0)
      held++;
  }
  printf("holding %d\n", held);
  fflush(stdout);
  sleep((unsigned)seconds);
  int closed = 0, told = 0;
  char answer[64];
  for (int i = 0; i < n; i++) {
    if (fds[i] >= 0 && closed_by_server(fds[i], answer, sizeof answer))
      closed++;
    told += strncmp(answer, "HTTP/1.1 503 ", 13) == 0;
  }
  printf("told 503 %d\n", told);
  printf("closed by the server %d of %d\n", closed, held);
  return 0;
}

static int trickle(const char *host, int port, const char *src, int seconds) {
  static const char req[] = "GET /debug/pprof/ HTTP/1.1\r\nHost: x\r\nX-Slow: "
                            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  int fd = dial(host, port, src);
  if (fd < 0) {
    perror("connect");
    return 1;
  }
  printf("holding 1\n");
  fflush(stdout);
  double t0 = now_s();
  for (size_t i = 0; now_s() - t0 < seconds; i = (i + 1) % (sizeof req - 1)) {
    char answer[64];
    if (send(fd, req + i, 1, MSG_NOSIGNAL) != 1 || closed_by_server(fd, answer, sizeof answer)) {
      printf("closed after %.0f s\n", now_s() - t0);
      return 0;
    }
    sleep(1);
  }
  printf("still open after %.0f s\n", now_s() - t0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s half|trickle HOST PORT SRC N SECONDS\n", argv[0]);
    return 2;
  }
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) { /* room for N sockets */
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  const char *host = argv[2], *src = argv[4];
  int port = atoi(argv[3]), n = atoi(argv[5]), seconds = atoi(argv[6]);
  if (strcmp(argv[1], "half") == 0)
    return half(host, port, src, n, seconds);
  return trickle(host, port, src, seconds);
}
