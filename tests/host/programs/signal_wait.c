/* A server's graceful shutdown: SIGTERM and three real-time signals are
 * blocked from the start of main and read from a signalfd. Prints each
 * signal read; ends after SIGTERM with status 0. Under cprof, whose
 * threads exist before main, the kernel must still hand these signals to
 * the program. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

int main(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
    sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  int fd = signalfd(-1, &set, SFD_CLOEXEC);
  if (fd < 0) {
    perror("signalfd");
    return 2;
  }
  printf("ready\n");
  fflush(stdout);
  int rt = 0;
  for (;;) {
    struct signalfd_siginfo si;
    if (read(fd, &si, sizeof si) != sizeof si) {
      perror("read");
      return 3;
    }
    if ((int)si.ssi_signo != SIGTERM) {
      rt++;
      continue;
    }
    /* signalfd hands out the lowest-numbered pending signal first: those
     * sent before SIGTERM may still be queued. */
    fcntl(fd, F_SETFL, O_NONBLOCK);
    while (read(fd, &si, sizeof si) == sizeof si)
      rt++;
    printf("real-time signals read: %d\nSIGTERM read: shutting down\n", rt);
    return 0;
  }
}
