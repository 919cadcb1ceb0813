/* A program and a library of its own (stripped_lib.c) for debuginfod.sh,
 * which strips both as Debian ships them and serves their debug
 * information from a local debuginfod server. Knows nothing of cprof.
 *
 *   stripped_main [-]   prints "ready", then its main thread spins in the
 *                       library (main -> main_loop -> stripped_lib_run ->
 *                       lib_spin) until killed, or with "-" until a line
 *                       (or the end) on its standard input; exits 0.
 *
 * main_loop is static, so the stripped program has no name for it. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stripped_shared.h"

#define NOINLINE __attribute__((noinline))

void stripped_lib_run(volatile int *stop);

static volatile int stop, stopped = 1;
static volatile unsigned long steps;

static void *reader(void *unused) {
  (void)unused;
  char c;
  while (read(0, &c, 1) == 1 && c != '\n')
    ;
  stop = 1;
  return NULL;
}

static NOINLINE void main_loop(void) {
  shared_spin(&stopped, &steps); /* returns at once: here for its debug information */
  stripped_lib_run(&stop); /* the program's call */
}

int main(int argc, char **argv) {
  pthread_t t;
  if (argc > 1 && strcmp(argv[1], "-") == 0 && pthread_create(&t, NULL, reader, NULL) != 0)
    return 1;
  printf("ready\n");
  fflush(stdout);
  main_loop();
  return 0;
}
