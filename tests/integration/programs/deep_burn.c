/* A deep stack that burns CPU, for tests/arm64: main calls descend 60
 * levels deep (each level a frame of its own), and the innermost level
 * calls burn_leaf, which spins on arithmetic for ARGV[1] seconds of CPU
 * (default 3). Built twice (tests/integration/CMakeLists.txt): with frame
 * pointers, and with -fomit-frame-pointer, where only the unwind tables
 * lead from burn_leaf back to main. Prints "ready" once it is burning. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;
static double seconds = 3;

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE void burn_leaf(void) {
  double end = cpu_now() + seconds;
  unsigned long x = sink;
  puts("ready");
  fflush(stdout);
  while (cpu_now() < end)
    for (int i = 0; i < 100000; i++)
      x = x * 6364136223846793005ul + 1442695040888963407ul;
  sink = x;
}

/* The level's own work after the call keeps each frame a real one (no
 * tail call, no frame merged with the next). */
NOINLINE int descend(int depth) {
  if (depth == 0) {
    burn_leaf();
    return 1;
  }
  int r = descend(depth - 1);
  sink += (unsigned long)r;
  return r + 1;
}

int main(int argc, char **argv) {
  if (argc > 1)
    seconds = atof(argv[1]);
  return descend(60) == 61 ? 0 : 1;
}
