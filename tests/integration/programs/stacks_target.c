/* A program with threads parked in known functions, for the thread-stack
 * tests. Built twice: stacks_linked calls cprof_start(NULL); stacks_plain
 * knows nothing of cprof and is profiled through LD_PRELOAD.
 *
 *   reader   block_in_read: blocked in read(2) on a pipe nobody writes
 *   spinner  spin_outer -> spin_inner: burning CPU in our own code
 *   main     main_wait: in pause(2) until SIGTERM
 *
 * Prints "ready" once every thread is in place. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
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
  for (;;)
    pause(); /* until SIGTERM ends us */
}

int main(void) {
#ifdef LINK_CPROF
  cprof_start(NULL);
#endif
  if (pipe(pipefd) != 0)
    return 1;
  pthread_t r, s;
  pthread_create(&r, NULL, reader_main, NULL);
  pthread_create(&s, NULL, spinner_main, NULL);
  while (!spinning)
    usleep(1000);
  usleep(20000); /* let the reader reach read(2) */
  printf("ready\n");
  fflush(stdout);
  main_wait();
  return 0;
}
