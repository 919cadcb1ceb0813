/* A program with threads parked in known functions, for the thread-stack
 * tests. Built twice: stacks_linked calls cprof_start(NULL); stacks_plain
 * knows nothing of cprof and is profiled through LD_PRELOAD.
 *
 *   reader   block_in_read: blocked in read(2) on a pipe nobody writes
 *   spinner  spin_outer -> spin_inner: burning CPU in our own code
 *   sleeper  sleep_an_hour: in nanosleep(2), which a signal would end early
 *   blocker  wait_with_signals_blocked: all signals blocked, in sigwait
 *   main     main_wait: in a single pause(2)
 *
 * Prints "ready" once every thread is in place. If profiling ever ends the
 * sleep or the pause early, it says so on stderr and exits 9 or 8: a test
 * that sees the program gone or those lines knows cprof disturbed it. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#ifdef LINK_CPROF
#include <cprof.h>
#endif

#define NOINLINE __attribute__((noinline))

static int pipefd[2];
static volatile int spinning;
static volatile uint64_t sink;

NOINLINE void block_in_read(void) {
  char c;
  ssize_t n = read(pipefd[0], &c, 1); /* blocks: nobody writes */
  sink += (uint64_t)n;
}

NOINLINE void spin_inner(void) {
  spinning = 1;
  for (;;)
    sink = sink * 31 + 7;
}

NOINLINE void spin_outer(void) {
  spin_inner();
  sink++;
}

NOINLINE void sleep_an_hour(void) {
  struct timespec ts = {3600, 0};
  if (nanosleep(&ts, NULL) != 0) {
    fprintf(stderr, "sleep_an_hour: nanosleep ended early\n");
    exit(9);
  }
}

NOINLINE void wait_with_signals_blocked(void) {
  sigset_t all, usr2;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  int sig;
  sigwait(&usr2, &sig); /* nobody sends it */
}

static void *sleeper_main(void *arg) {
  pthread_setname_np(pthread_self(), "sleeper");
  sleep_an_hour();
  return NULL;
}

static void *blocker_main(void *arg) {
  pthread_setname_np(pthread_self(), "blocker");
  wait_with_signals_blocked();
  return NULL;
}

static void *reader_main(void *arg) {
  pthread_setname_np(pthread_self(), "reader");
  block_in_read();
  return NULL;
}

static void *spinner_main(void *arg) {
  pthread_setname_np(pthread_self(), "spinner");
  spin_outer();
  return NULL;
}

NOINLINE void main_wait(void) {
  pause(); /* until SIGTERM ends us; returns only if a handler ran */
  fprintf(stderr, "main_wait: pause returned\n");
  exit(8);
}

int main(void) {
#ifdef LINK_CPROF
  cprof_start(NULL);
#endif
  if (pipe(pipefd) != 0)
    return 1;
  pthread_t r, s, z, b;
  pthread_create(&r, NULL, reader_main, NULL);
  pthread_create(&s, NULL, spinner_main, NULL);
  pthread_create(&z, NULL, sleeper_main, NULL);
  pthread_create(&b, NULL, blocker_main, NULL);
  while (!spinning)
    usleep(1000);
  usleep(50000); /* let the others reach their calls */
  printf("ready\n");
  fflush(stdout);
  main_wait();
  return 0;
}
