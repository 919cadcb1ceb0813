/* A program that takes SIGPROF for itself after start, as GNU sort does:
 * under a whole-run CPU profile (CPROF_OUTPUT) it must see exactly what it
 * sees without cprof: its own raise(SIGPROF)s, none of the profiler's
 * ticks, and its handler back from signal(). Prints what it saw. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t count;
static void on_prof(int sig) { count++; }

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_prof;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGPROF, &sa, &old) != 0)
    return 1;
  printf("before: %s\n", old.sa_handler == SIG_DFL ? "default" : "something else");
  volatile unsigned long x = 0;
  for (double t0 = cpu_seconds(); cpu_seconds() - t0 < 0.3;) /* 30 profiler ticks at 100 Hz */
    x++;
  printf("after burning the CPU: %d\n", (int)count);
  for (int i = 0; i < 3; i++)
    raise(SIGPROF);
  printf("after raising 3: %d\n", (int)count);
  printf("signal() returns the handler: %s\n", signal(SIGPROF, SIG_IGN) == on_prof ? "yes" : "no");
  raise(SIGPROF); /* ignored */
  printf("ignored: %d\n", (int)count);
  return 0;
}
