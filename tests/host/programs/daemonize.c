// cprof-host: -fno-omit-frame-pointer
/* A daemon: the process that was started forks, and only its child lives
 * on (issue 31: the child must take over cprof's address from its parent).
 *
 *   host_daemonize PIDFILE [SECONDS]
 *
 * Calls daemon(1, 1) (keeps the working directory and stdio; glibc's
 * daemon forks once, the parent _exits 0 and the child calls setsid), then
 * the child writes its pid and a newline to PIDFILE, through a temporary
 * file renamed over it so that a reader never sees half of it, and loops in
 * daemon_compute, about 5 ms of CPU then 5 ms asleep, until SECONDS
 * (default 60) have passed since the start; then it exits 0. Writes nothing
 * unless something fails; usage errors exit 2, a failed daemon() or pid
 * file 3. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Busy for 5 ms of the wall clock, which on an idle CPU is 5 ms of CPU. */
__attribute__((noinline)) static void daemon_compute(void) {
  double end = now() + 0.005;
  unsigned long x = (unsigned long)getpid() | 1;
  while (now() < end)
    for (int i = 0; i < 1000; i++)
      x = x * 6364136223846793005ul + 1442695040888963407ul;
  sink += x;
}

static int write_pidfile(const char *path) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
    return -1;
  FILE *f = fopen(tmp, "w");
  if (!f)
    return -1;
  int bad = fprintf(f, "%d\n", (int)getpid()) < 0;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  int seconds = argc > 2 ? atoi(argv[2]) : 60;
  if (argc < 2 || seconds < 1) {
    fprintf(stderr, "usage: %s PIDFILE [SECONDS]\n", argv[0]);
    return 2;
  }
  double deadline = now() + seconds;
  if (daemon(1, 1) != 0) {
    perror("daemon");
    return 3;
  }
  if (write_pidfile(argv[1]) != 0) {
    perror(argv[1]);
    return 3;
  }
  struct timespec nap = {0, 5 * 1000 * 1000};
  while (now() < deadline) {
    daemon_compute();
    nanosleep(&nap, NULL);
  }
  return 0;
}
