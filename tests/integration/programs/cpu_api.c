/* cprof_cpu_profile_start/stop around a known hot function, as a Go
 * program calls pprof.StartCPUProfile/StopCPUProfile (tests/integration/
 * cpu_api.sh).
 *
 *   cpu_api FILE
 *
 * Starts cprof (CPROF_ADDR from the environment), sets the CPU rate to
 * 250 Hz, starts the CPU profile to FILE, prints "ready" and burns CPU in
 * api_hot_function until SIGUSR1 (and at least 300 ms of it, so that the
 * profile has samples), stops the profile, prints "stopped" and waits for
 * SIGTERM. Exit code 1 when a call did not return what it should.
 *
 *   cpu_api --beside FILE
 *
 * Under CPROF_OUTPUT, which reads the CPU recording for the whole run: the
 * start shares it (0), a second start is -EBUSY as Go's, and the stop
 * writes FILE after 300 ms of api_hot_function (issue 32). */
#include <cprof.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static volatile sig_atomic_t go_on = 1;
static volatile unsigned long sink;

static void on_usr1(int sig) {
  (void)sig;
  go_on = 0;
}

static long cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

__attribute__((noinline)) static void api_hot_function(void) {
  long start = cpu_ms();
  while (go_on || cpu_ms() - start < 300)
    for (int i = 0; i < 100000; i++)
      sink += (unsigned long)i * 2654435761u;
}


int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--beside") == 0) {
    CHECK_EQ_INT(cprof_start(NULL), 0);
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK_EQ_INT(cprof_cpu_profile_start(fd), 0);
    CHECK_EQ_INT(cprof_cpu_profile_start(fd), -EBUSY);
    go_on = 0;
    api_hot_function();
    CHECK_EQ_INT(cprof_cpu_profile_stop(), 0);
    CHECK_EQ_INT(cprof_cpu_profile_stop(), -ENOENT);
    close(fd);
    cprof_stop(); /* writes CPROF_OUTPUT's files */
    return check_result("cpu_api");
  }
  if (argc != 2) {
    fprintf(stderr, "usage: cpu_api [--beside] FILE\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, NULL);
  signal(SIGUSR1, on_usr1);
  if (cprof_start(NULL) != 0)
    return 1;
  CHECK_EQ_INT(cprof_set_cpu_rate(250), 100);
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  CHECK_EQ_INT(cprof_cpu_profile_start(fd), 0);
  CHECK_EQ_INT(cprof_cpu_profile_start(fd), -EBUSY);
  printf("ready\n");
  api_hot_function();
  CHECK_EQ_INT(cprof_cpu_profile_stop(), 0);
  CHECK_EQ_INT(cprof_cpu_profile_stop(), -ENOENT);
  close(fd);
  printf("stopped\n");
  int sig;
  sigwait(&term, &sig);
  cprof_stop();
  return check_result("cpu_api");
}
