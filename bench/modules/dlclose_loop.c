/* dlopen and dlclose one library N times (default 2000) and print the
 * microseconds a pair took: what cprof's dlclose wrapper adds (the wait for
 * walks in flight, and the modules listed before and retired after: see
 * src/unwind/modules.c). libexpat is in Debian's base system. Usage:
 * dlclose_loop [N] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 2000;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; i++) {
    void *h = dlopen("libexpat.so.1", RTLD_NOW);
    if (!h) {
      fprintf(stderr, "dlclose_loop: %s\n", dlerror());
      return 1;
    }
    dlclose(h);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%.1f\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / n / 1e3);
  return 0;
}
