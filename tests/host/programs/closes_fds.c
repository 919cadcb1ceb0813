/* A daemon's start: close every descriptor above stderr, then use the
 * numbers the kernel hands out. What it prints depends only on its own
 * descriptors, so a run with cprof must print what a run without it does.
 *
 *   host_closes_fds loop|range|from work|idle
 *
 * loop closes 3..1023 one by one (and prints how many closes succeeded),
 * range calls close_range(3, ~0U, 0), from calls closefrom(3). Then a pipe
 * gets a known string, the next descriptors are probed, "ready" is printed,
 * and the program works (CPU and malloc) or sleeps until the file named by
 * $DONE exists (at least 0.3 s). Last it reads the pipe back. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char message[] = "the program's own bytes\n";

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void close_all(const char *how) {
  if (strcmp(how, "loop") == 0) {
    int closed = 0, ebadf = 0;
    for (int fd = 3; fd < 1024; fd++) {
      if (close(fd) == 0)
        closed++;
      else if (errno == EBADF)
        ebadf++;
    }
    printf("loop: %d closed, %d EBADF\n", closed, ebadf);
  } else if (strcmp(how, "range") == 0) {
    printf("close_range: %d\n", close_range(3, ~0U, 0));
  } else {
    closefrom(3);
    printf("closefrom: done\n");
  }
}

/* A little of everything a profile looks at: CPU in a few functions and
 * allocations that live a while. */
static volatile unsigned long sink;
__attribute__((noinline)) static void spin(int n) {
  for (int i = 0; i < n; i++)
    sink += (unsigned long)i * 2654435761u;
}
__attribute__((noinline)) static void churn(void) {
  static void *keep[256];
  for (int i = 0; i < 256; i++) {
    free(keep[i]);
    keep[i] = malloc(64 + (size_t)i * 16);
  }
}

static void until_done(int work) {
  const char *done = getenv("DONE");
  double start = now();
  for (;;) {
    if (now() - start > 0.3 && (!done || access(done, F_OK) == 0))
      return;
    if (now() - start > 30) {
      printf("gave up waiting for $DONE\n");
      return;
    }
    if (work) {
      spin(200000);
      churn();
    } else {
      struct timespec ts = {0, 20 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s loop|range|from work|idle\n", argv[0]);
    return 2;
  }
  close_all(argv[1]);

  int p[2];
  if (pipe(p) != 0) {
    perror("pipe");
    return 1;
  }
  printf("pipe: %d %d\n", p[0], p[1]);
  if (write(p[1], message, sizeof message - 1) != (ssize_t)sizeof message - 1) {
    perror("write");
    return 1;
  }
  /* The numbers the program gets next, as it would without cprof. */
  int f = open("/dev/null", O_RDONLY);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  int q[2] = {-1, -1};
  if (pipe(q) != 0)
    q[0] = q[1] = -1;
  printf("next: open %d socket %d pipe %d %d\n", f, s, q[0], q[1]);
  close(f);
  close(s);
  close(q[0]);
  close(q[1]);
  printf("ready\n");
  fflush(stdout);

  until_done(strcmp(argv[2], "work") == 0);

  /* Exactly the bytes written, and nothing after them. */
  char buf[256];
  struct pollfd pf = {.fd = p[0], .events = POLLIN};
  ssize_t n = poll(&pf, 1, 0) == 1 ? read(p[0], buf, sizeof buf - 1) : 0;
  buf[n > 0 ? n : 0] = '\0';
  printf("read back: %s", n > 0 ? buf : "(nothing)\n");
  ssize_t more = poll(&pf, 1, 0) == 1 ? read(p[0], buf, sizeof buf) : 0;
  printf("more bytes: %zd\n", more);
  return 0;
}
