/* Real-time signals a program blocks and reads later: every thread blocks
 * SIGRTMIN..SIGRTMAX (main blocks them before it makes any thread, and
 * threads inherit the mask), the program queues itself ROUNDS signals of
 * every real-time number with sigqueue, values included, and then reads
 * them: the lower half with a signalfd, the upper with sigtimedwait. It
 * prints how many of each it got and the sum of their values.
 *
 * A spinning thread and a sleeping one give a capture something to do
 * meanwhile. "ready" is printed once they run; the signals are sent over
 * about a second after that. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 10

static int stop;

__attribute__((noinline)) static void *spin(void *arg) {
  volatile uint64_t x = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
    x = x * 33 + 1;
  return NULL;
}

__attribute__((noinline)) static void *nap(void *arg) {
  struct timespec ts = {3, 0};
  nanosleep(&ts, NULL);
  return NULL;
}

int main(void) {
  sigset_t rt;
  sigemptyset(&rt);
  for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
    sigaddset(&rt, s);
  pthread_sigmask(SIG_BLOCK, &rt, NULL);
  pthread_t spinner, napper;
  pthread_create(&spinner, NULL, spin, NULL);
  pthread_create(&napper, NULL, nap, NULL);
  puts("ready");
  fflush(stdout);

  int n = SIGRTMAX - SIGRTMIN + 1;
  for (int round = 0; round < ROUNDS; round++) {
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
      union sigval v = {.sival_int = (s - SIGRTMIN) * 1000 + round};
      if (sigqueue(getpid(), s, v) != 0)
        printf("sigqueue(SIGRTMIN+%d): %s\n", s - SIGRTMIN, strerrorname_np(errno));
    }
    usleep(100 * 1000);
  }

  long count[64] = {0}, sum[64] = {0};
  sigset_t low, high;
  sigemptyset(&low);
  sigemptyset(&high);
  for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
    sigaddset(s - SIGRTMIN < n / 2 ? &low : &high, s);
  int fd = signalfd(-1, &low, SFD_CLOEXEC | SFD_NONBLOCK);
  struct signalfd_siginfo si;
  while (fd >= 0 && read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
    count[si.ssi_signo - SIGRTMIN]++;
    sum[si.ssi_signo - SIGRTMIN] += si.ssi_int;
  }
  struct timespec zero = {0, 0};
  siginfo_t info;
  int s;
  while ((s = sigtimedwait(&high, &info, &zero)) > 0) {
    count[s - SIGRTMIN]++;
    sum[s - SIGRTMIN] += info.si_value.sival_int;
  }
  for (int i = 0; i < n; i++)
    printf("SIGRTMIN+%d: %ld received, values summing to %ld\n", i, count[i], sum[i]);

  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  pthread_join(spinner, NULL);
  pthread_join(napper, NULL);
  return 0;
}
