/* A batch program for CPROF_OUTPUT: about 1.5 s of CPU in batch_heavy and
 * batch_light (3 to 1), nearly all of it inside batch_mix, inlined into
 * batch_step; 16 MiB from batch_keep, still in use at exit; a forked child
 * that exits at once (it must not write or clobber the parent's profile);
 * then it prints "done" and returns from main. Knows nothing of cprof. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

static inline __attribute__((always_inline)) uint64_t batch_mix(uint64_t x, int i) {
  for (int k = 0; k < 8; k++) {
    x ^= x >> 29;
    x = x * 6364136223846793005ULL + (uint64_t)i;
  }
  return x;
}

NOINLINE void batch_step(void) {
  for (int i = 0; i < 25000; i++)
    sink = batch_mix(sink, i);
}

void *kept[16]; /* not static, so the compiler keeps the stores and the blocks */

NOINLINE void *batch_keep(size_t n) { return malloc(n); }

NOINLINE void batch_heavy(void) {
  for (int k = 0; k < 3; k++)
    batch_step();
}

NOINLINE void batch_light(void) { batch_step(); }

int main(void) {
  struct timespec t0, t;
  for (int i = 0; i < 16; i++)
    kept[i] = batch_keep(1 << 20);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  do {
    batch_heavy();
    batch_light();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 1500);
  pid_t child = fork();
  if (child == 0)
    return 0; /* exits through atexit too: must leave the file alone */
  waitpid(child, NULL, 0);
  printf("done\n");
  return 0;
}
