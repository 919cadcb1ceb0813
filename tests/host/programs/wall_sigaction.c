/* A program that installs handlers on the real-time signals while a wall
 * profile asks its threads for their stacks (tests/host/wall_sigaction.sh):
 * a spinning thread, and one that computes 3 ms and sleeps 3 ms, are asked
 * over and over; after a second the main thread installs a handler on
 * every real-time signal cprof may hold (SIGRTMIN+2 to SIGRTMAX), and
 * the signal's asks still out must not keep it waiting, nor reach its
 * handler.
 *
 *   wall_sigaction
 *
 * Prints "ready", then, after the handlers are in, "sigaction took MS ms",
 * and at the end "handler calls N" (nobody sends these signals: 0). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static atomic_long calls;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void *spin(void *arg) {
  volatile unsigned long x = 0;
  while (!stop)
    x++;
  return arg;
}

static void *burst(void *arg) {
  while (!stop) {
    double end = now() + 0.003;
    volatile unsigned long x = 0;
    while (now() < end)
      x++;
    struct timespec t = {0, 3000000};
    nanosleep(&t, NULL);
  }
  return arg;
}

static void on_signal(int sig, siginfo_t *info, void *uctx) { calls++; }

int main(void) {
  pthread_t a, b;
  pthread_create(&a, NULL, spin, NULL);
  pthread_create(&b, NULL, burst, NULL);
  printf("ready\n");
  fflush(stdout);
  sleep(1);
  struct sigaction sa = {0};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  double t0 = now();
  for (int sig = SIGRTMIN + 2; sig <= SIGRTMAX; sig++)
    sigaction(sig, &sa, NULL);
  printf("sigaction took %.0f ms\n", (now() - t0) * 1000);
  fflush(stdout);
  sleep(2);
  stop = 1;
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("handler calls %ld\n", (long)calls);
  return 0;
}
