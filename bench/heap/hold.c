/* hold: many live small blocks, for what a heap profiler's own memory is.
 *
 *   hold [--blocks N] [--size S] [--stacks K] [--hold-ms MS]
 *
 * Mallocs N blocks of S bytes (defaults 1000000 and 64), writes each one's
 * first byte and keeps them all. Block i is allocated K_i = i % K frames
 * deep (a noinline recursion), so the allocations come from K distinct
 * stacks (default 16), as a real program's come from more than one place.
 * Then it prints
 *   hold: blocks=N size=S stacks=K bytes=B build_ms=T vm_rss_kb=R vm_hwm_kb=H
 * (VmRSS and VmHWM from /proc/self/status, read without allocating) and
 * sleeps MS ms (default 0) with everything still allocated, so that a
 * script can read /proc/PID/status or ask a profiler's server. */
#include "heap.h"

static const char usage[] = "hold [--blocks N] [--size S] [--stacks K] [--hold-ms MS]";

BENCH_FN void *alloc_at(long depth, size_t size) {
  if (depth > 0) {
    void *p = alloc_at(depth - 1, size);
    __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
    return p;
  }
  char *p = malloc(size);
  if (!p) {
    fprintf(stderr, "hold: malloc(%zu) failed\n", size);
    exit(1);
  }
  p[0] = 1;
  return p;
}

int main(int argc, char **argv) {
  long blocks = 1000000, size = 64, stacks = 16, hold_ms = 0;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc)
      return number_arg(NULL, usage), 2;
    long v = (long)number_arg(argv[i + 1], usage);
    if (strcmp(argv[i], "--blocks") == 0 && v >= 1)
      blocks = v;
    else if (strcmp(argv[i], "--size") == 0 && v >= 1)
      size = v;
    else if (strcmp(argv[i], "--stacks") == 0 && v >= 1)
      stacks = v;
    else if (strcmp(argv[i], "--hold-ms") == 0)
      hold_ms = v;
    else
      return number_arg(NULL, usage), 2;
    i++;
  }
  void **kept = bench_map((size_t)blocks * sizeof *kept);
  int64_t t0 = clock_ns(CLOCK_MONOTONIC);
  for (long i = 0; i < blocks; i++)
    kept[i] = alloc_at(i % stacks, (size_t)size);
  int64_t t1 = clock_ns(CLOCK_MONOTONIC);
  printf("hold: blocks=%ld size=%ld stacks=%ld bytes=%ld build_ms=%lld vm_rss_kb=%ld vm_hwm_kb=%ld\n", blocks,
         size, stacks, blocks * size, (long long)((t1 - t0) / 1000000), status_kb("VmRSS"), status_kb("VmHWM"));
  fflush(stdout);
  if (hold_ms)
    sleep_ms(hold_ms);
  return kept[0] == NULL;
}
