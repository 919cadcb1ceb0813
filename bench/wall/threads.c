/* N threads that sleep or spin, for bench/wall/cost.sh:
 *
 *   threads N sleep|spin SECONDS
 *
 * sleep: each thread sleeps in clock_nanosleep, a second at a time (asleep
 * in the same call at the same place: the wall profile's cheap case).
 * spin: each thread computes without a pause (running: asked for its stack
 * with a signal at every tick). Prints "ready" when all run, and at the
 * end "loops N": the work the spinning threads did, for the handler's
 * cost to them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static int spin;
static unsigned long long loops; /* added up as threads end */

static void *body(void *arg) {
  (void)arg;
  volatile unsigned long x = 1;
  unsigned long long mine = 0;
  while (!stop) {
    if (spin) {
      for (int i = 0; i < 100000; i++)
        x = x * 2654435761u + 1;
      mine++;
    } else {
      struct timespec ts = {1, 0};
      clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
    }
  }
  __atomic_add_fetch(&loops, mine, __ATOMIC_RELAXED);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4 || (strcmp(argv[2], "sleep") && strcmp(argv[2], "spin"))) {
    fprintf(stderr, "usage: threads N sleep|spin SECONDS\n");
    return 2;
  }
  int n = atoi(argv[1]);
  spin = !strcmp(argv[2], "spin");
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 64 * 1024);
  pthread_t *t = calloc((size_t)n, sizeof *t);
  for (int i = 0; t && i < n; i++) {
    if (pthread_create(&t[i], &a, body, NULL) != 0) {
      fprintf(stderr, "threads: cannot start thread %d\n", i);
      return 1;
    }
  }
  printf("ready\n");
  fflush(stdout);
  sleep((unsigned)atoi(argv[3]));
  stop = 1;
  for (int i = 0; spin && i < n; i++) /* sleepers may sleep a second more: not waited for */
    pthread_join(t[i], NULL);
  printf("loops %llu\n", loops);
  return 0;
}
