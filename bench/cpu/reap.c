/* reap: runs a command and says when it was reaped, for bench/cpu/exit.sh.
 *
 *   reap COMMAND [ARG...]
 *
 * Forks and execs COMMAND (its stdout and stderr are reap's), waits for it
 * with wait4, and then prints on stdout
 *   reap: reaped_ns=T status=S cpu_ns=C maxrss_kb=M
 * with T the CLOCK_MONOTONIC time right after wait4 returned, S the exit
 * status, C the user plus system CPU time the command used in all (every
 * thread, from exec to exit, atexit handlers included) and M its peak RSS.
 * CLOCK_MONOTONIC is one clock for every process of the machine, so T minus
 * the time the command printed when it called exit is the delay its exit
 * added: atexit handlers, flushing, and the kernel tearing the process down.
 * A program of its own rather than the shell's `wait; date`, because
 * starting date would add a millisecond of its own to every figure. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t ns(const struct timeval *tv) {
  return (int64_t)tv->tv_sec * 1000000000 + (int64_t)tv->tv_usec * 1000;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: reap COMMAND [ARG...]\n");
    return 2;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    _exit(127);
  }
  int status;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) {
      perror("wait4");
      return 1;
    }
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  printf("reap: reaped_ns=%lld status=%d cpu_ns=%lld maxrss_kb=%ld\n",
         (long long)ts.tv_sec * 1000000000 + ts.tv_nsec, status,
         (long long)(ns(&ru.ru_utime) + ns(&ru.ru_stime)), ru.ru_maxrss);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
