/* A program and a library of its own (stripped_lib.c) for debuginfod.sh,
 * which strips both as Debian ships them and serves their debug
 * information from a local debuginfod server. Knows nothing of cprof.
 *
 *   stripped_main [SECONDS]   prints "ready", then its main thread spins
 *                             in the library (main -> main_loop ->
 *                             stripped_lib_run -> lib_spin) for SECONDS,
 *                             or until killed without one; exits 0.
 *
 * main_loop is static, so the stripped program has no name for it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "stripped_shared.h"

#define NOINLINE __attribute__((noinline))

void stripped_lib_run(volatile int *stop);

static volatile int stop, stopped = 1;
static volatile unsigned long steps;

static void *timer(void *arg) {
  sleep((unsigned)(long)arg);
  stop = 1;
  return NULL;
}

static NOINLINE void main_loop(void) {
  shared_spin(&stopped, &steps); /* returns at once: here for its debug information */
  stripped_lib_run(&stop); /* the program's call */
}

int main(int argc, char **argv) {
  long seconds = argc > 1 ? atol(argv[1]) : 0;
  pthread_t t;
  if (seconds > 0 && pthread_create(&t, NULL, timer, (void *)seconds) != 0)
    return 1;
  printf("ready\n");
  fflush(stdout);
  main_loop();
  return 0;
}
