/* Sleeps argv[1] seconds in nanosleep on the main thread and says how the
 * sleep ended. The tests stop and continue it meanwhile (after which the
 * kernel resumes the sleep through restart_syscall), or send it a signal it
 * never handled.
 *
 * Prints "ready" before it sleeps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__attribute__((noinline)) static int sleep_in_nanosleep(int seconds) {
  struct timespec ts = {seconds, 0};
  return nanosleep(&ts, NULL) == 0 ? 0 : errno;
}

int main(int argc, char **argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 5;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  puts("ready");
  fflush(stdout);
  int err = sleep_in_nanosleep(seconds);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double took = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf("nanosleep: %s%s\n", err ? strerrorname_np(err) : "0",
         took < seconds * 0.9 ? " (early)" : "");
  return 0;
}
