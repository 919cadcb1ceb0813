/* A program that lowers its RLIMIT_NOFILE after start, as OpenSSH's rlimit
 * sandbox does (issue 28, defect 4), for tests/host/nofile_limit.sh:
 *
 *   host_nofile_limit LIMIT
 *     sets the soft RLIMIT_NOFILE to LIMIT (the hard limit stays, so that
 *     it can be raised again), prints "ready", waits for the file named by
 *     $DONE, sets the soft limit back to what it was, prints "raised",
 *     waits for the file named by $DONE2, and exits 0.
 *
 * Each wait is bounded (30 s). Nothing here opens a descriptor while the
 * limit is low. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static void wait_for(const char *var) {
  const char *path = getenv(var);
  for (int i = 0; i < 3000 && path && access(path, F_OK) != 0; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s LIMIT\n", argv[0]);
    return 2;
  }
  struct rlimit was, low;
  if (getrlimit(RLIMIT_NOFILE, &was) != 0) {
    perror("getrlimit");
    return 1;
  }
  low = was;
  low.rlim_cur = (rlim_t)strtoull(argv[1], NULL, 10);
  if (setrlimit(RLIMIT_NOFILE, &low) != 0) {
    perror("setrlimit");
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  wait_for("DONE");
  if (setrlimit(RLIMIT_NOFILE, &was) != 0) {
    perror("setrlimit");
    return 1;
  }
  printf("raised\n");
  fflush(stdout);
  wait_for("DONE2");
  return 0;
}
