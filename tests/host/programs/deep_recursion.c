// cprof-host: -fno-optimize-sibling-calls -fno-inline
/* A 500-frame recursion between main (through above_recursion) and a leaf
 * that, by argv[1], burns CPU ("cpu"), allocates and keeps 1000 blocks of
 * 1000 bytes ("heap"), or sleeps ("sleep"), for argv[2] seconds (heap:
 * then sleeps). The stack at the leaf is deeper than cprof's default
 * depth (128), with a known shape: main, above_recursion, 500 frames of
 * recurse, the leaf (tests/host/stack_depth.sh).
 *
 * Prints "ready" once at the bottom. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEPTH 500

static const char *mode;
static int seconds;
static void *volatile kept[1000];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned burn_at_the_bottom(void) {
  unsigned x = 1;
  puts("ready");
  fflush(stdout);
  for (double end = now() + seconds; now() < end;)
    for (int i = 0; i < 100000; i++)
      x = x * 2654435761u + 1;
  return x;
}

__attribute__((noinline)) static unsigned alloc_at_the_bottom(void) {
  for (int i = 0; i < 1000; i++) {
    kept[i] = malloc(1000);
    memset(kept[i], i, 1000);
  }
  puts("ready");
  fflush(stdout);
  struct timespec ts = {seconds, 0};
  nanosleep(&ts, NULL);
  return 0;
}

__attribute__((noinline)) static unsigned sleep_at_the_bottom(void) {
  puts("ready");
  fflush(stdout);
  struct timespec ts = {seconds, 0};
  nanosleep(&ts, NULL);
  return 0;
}

__attribute__((noinline)) static unsigned recurse(int n) {
  unsigned r;
  if (n == 0)
    r = strcmp(mode, "cpu") == 0    ? burn_at_the_bottom()
        : strcmp(mode, "heap") == 0 ? alloc_at_the_bottom()
                                    : sleep_at_the_bottom();
  else
    r = recurse(n - 1);
  return r + (unsigned)n; /* work after the call: no loop, no tail call */
}

__attribute__((noinline)) static unsigned above_recursion(void) { return recurse(DEPTH - 1) + 1; }

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "cpu";
  seconds = argc > 2 ? atoi(argv[2]) : 2;
  unsigned r = above_recursion();
  return r == 0xffffffffu; /* never: keeps r alive */
}
