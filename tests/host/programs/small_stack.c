/* Threads on the smallest stack pthreads allows (PTHREAD_STACK_MIN), each
 * using most of it itself, busy in CPU down there: a profiler's signal
 * handler lands on what is left. Without cprof they print their sums; under
 * a 1000 Hz whole-run profile they must print the same.
 *
 *   small_stack [ITERATIONS]   (default 80 million per thread)
 *
 * Each thread holds a buffer of USE bytes on its stack (5, 6, 7, 8 and
 * 8.5 KiB: glibc puts the thread's TLS and descriptor at the top of the
 * same 16 KiB, so 8.5 KiB leaves about 2 KiB for a signal frame and its
 * handler) and spins in a function called from there. */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long iterations = 80000000;

typedef struct job {
  int use;
  uint64_t sum;
} job_t;

/* The CPU: no call, no stack of its own, deep in the thread's stack. */
__attribute__((noinline)) static uint64_t spin(volatile char *buf, int n) {
  uint64_t x = (uint64_t)buf[0] + (uint64_t)n;
  for (long i = 0; i < iterations; i++)
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

#define AT_DEPTH(bytes)                                                                           \
  __attribute__((noinline)) static uint64_t use_##bytes(void) {                                   \
    volatile char buf[bytes];                                                                     \
    for (int i = 0; i < (bytes); i += 64)                                                         \
      buf[i] = (char)i;                                                                           \
    return spin(buf, bytes) + (uint64_t)buf[(bytes) / 2];                                         \
  }
AT_DEPTH(5120)
AT_DEPTH(6144)
AT_DEPTH(7168)
AT_DEPTH(8192)
AT_DEPTH(8704)

static void *thread(void *arg) {
  job_t *j = arg;
  switch (j->use) {
  case 5120: j->sum = use_5120(); break;
  case 6144: j->sum = use_6144(); break;
  case 7168: j->sum = use_7168(); break;
  case 8192: j->sum = use_8192(); break;
  case 8704: j->sum = use_8704(); break;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1)
    iterations = atol(argv[1]);
  job_t jobs[] = {{5120, 0}, {6144, 0}, {7168, 0}, {8192, 0}, {8704, 0}};
  enum { N = sizeof jobs / sizeof *jobs };
  pthread_t th[N];
  pthread_attr_t a;
  pthread_attr_init(&a);
  if (pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN) != 0)
    return 1;
  for (int i = 0; i < N; i++)
    if (pthread_create(&th[i], &a, thread, &jobs[i]) != 0)
      return 1;
  for (int i = 0; i < N; i++) {
    pthread_join(th[i], NULL);
    printf("%d bytes: %016llx\n", jobs[i].use, (unsigned long long)jobs[i].sum);
  }
  return 0;
}
