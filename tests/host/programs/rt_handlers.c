/* A program that takes every real-time signal for itself after it started:
 * it first says which of them it finds already handled (none, without
 * cprof), then installs a handler on each (SA_SIGINFO, no SA_RESTART), a
 * few milliseconds apart, queues itself ROUNDS of each with sigqueue, and
 * prints how many its handlers got, the sum of their values, and how many
 * signals arrived that it did not send.
 *
 * A spinning thread gives a capture a running thread to ask. "ready" is
 * printed before anything is installed; the installing starts half a
 * second later. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 10

static int stop;
static long count[64], sum[64], strays;
static pid_t self;

__attribute__((noinline)) static void *spin(void *arg) {
  volatile uint64_t x = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
    x = x * 33 + 1;
  return NULL;
}

static void on_signal(int sig, siginfo_t *info, void *uctx) {
  int i = sig - SIGRTMIN;
  if (info->si_code != SI_QUEUE || info->si_pid != self || info->si_value.sival_int / 1000 != i) {
    __atomic_add_fetch(&strays, 1, __ATOMIC_RELAXED);
    return;
  }
  __atomic_add_fetch(&count[i], 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&sum[i], info->si_value.sival_int, __ATOMIC_RELAXED);
}

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

int main(void) {
  self = getpid();
  int n = SIGRTMIN <= SIGRTMAX ? SIGRTMAX - SIGRTMIN + 1 : 0;
  int handled = 0;
  for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
    struct sigaction cur;
    sigaction(s, NULL, &cur);
    if ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) {
      printf("SIGRTMIN+%d is already handled\n", s - SIGRTMIN);
      handled++;
    }
  }
  printf("%d of %d real-time signals already handled\n", handled, n);
  pthread_t spinner;
  pthread_create(&spinner, NULL, spin, NULL);
  puts("ready");
  fflush(stdout);
  pause_ms(500);

  for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(s, &sa, NULL) != 0)
      printf("sigaction(SIGRTMIN+%d): %s\n", s - SIGRTMIN, strerrorname_np(errno));
    pause_ms(20);
  }
  for (int round = 0; round < ROUNDS; round++) {
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
      union sigval v = {.sival_int = (s - SIGRTMIN) * 1000 + round};
      if (sigqueue(self, s, v) != 0)
        printf("sigqueue(SIGRTMIN+%d): %s\n", s - SIGRTMIN, strerrorname_np(errno));
    }
    pause_ms(50);
  }
  /* Let every signal in flight arrive. */
  pause_ms(300);
  for (int i = 0; i < n; i++)
    printf("SIGRTMIN+%d: %ld received, values summing to %ld\n", i,
           __atomic_load_n(&count[i], __ATOMIC_RELAXED), __atomic_load_n(&sum[i], __ATOMIC_RELAXED));
  printf("signals it did not send: %ld\n", __atomic_load_n(&strays, __ATOMIC_RELAXED));
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  pthread_join(spinner, NULL);
  return 0;
}
