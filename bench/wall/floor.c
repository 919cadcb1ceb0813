/* What the machine charges for the two system calls a wall profile makes
 * for a running thread, for bench/wall/cost.sh: a signal queued to a
 * thread that runs on another CPU (tgkill; rt_tgsigqueueinfo is the same
 * path), in wall time per call, and the CPU a sleeping thread spends to
 * be woken (nanosleep of 200 µs), per sleep. On a VM both pay for the
 * hypervisor (an IPI, a timer), which sets a floor under the cost of
 * asking a running thread for its stack. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define N 2000

static volatile int got, stop;
static volatile pid_t tid;

static void handler(int sig) {
  (void)sig;
  got++;
}

static void *spin(void *arg) {
  tid = (pid_t)syscall(SYS_gettid);
  volatile unsigned long x = 0;
  while (!stop)
    x++;
  return arg;
}

static long long ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(void) {
  signal(SIGRTMIN, handler);
  pthread_t t;
  pthread_create(&t, NULL, spin, NULL);
  while (!tid) {
  }
  struct timespec pause = {0, 200000};
  long long sent = 0;
  for (int i = 0; i < N; i++) {
    int before = got;
    long long a = ns(CLOCK_MONOTONIC);
    syscall(SYS_tgkill, getpid(), tid, SIGRTMIN);
    sent += ns(CLOCK_MONOTONIC) - a;
    while (got == before) {
    }
    nanosleep(&pause, NULL);
  }
  long long c0 = ns(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < N; i++)
    nanosleep(&pause, NULL);
  long long woken = ns(CLOCK_THREAD_CPUTIME_ID) - c0;
  stop = 1;
  pthread_join(t, NULL);
  printf("floor: a signal to a running thread %.2f us; a wake from sleep %.2f us of CPU\n",
         sent / 1000.0 / N, woken / 1000.0 / N);
  return 0;
}
