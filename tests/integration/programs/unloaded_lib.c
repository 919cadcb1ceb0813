/* One of two libraries of the same shape, built as libunloaded_a.so
 * (-DLIB_A) and libunloaded_b.so, which unloaded.c loads in turn at the
 * same address. A's first function allocates; B's, at about the same
 * place, never does. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#ifdef LIB_A
__attribute__((noinline)) void *a_alloc_func(size_t n) {
  char *p = malloc(n);
  if (p)
    memset(p, 1, n);
  return p;
}
#define SPIN a_spin
#else
__attribute__((noinline)) void *b_other_func(size_t n) {
  static volatile char sink[64];
  (void)sink[0];
  for (size_t i = 0; i < n % 64; i++)
    sink[i] = (char)i;
  return NULL;
}
#define SPIN b_spin
#endif

/* Burns `seconds` of CPU here. */
__attribute__((noinline)) double SPIN(double seconds) {
  volatile double x = 0;
  for (double end = now() + seconds; now() < end;)
    for (int i = 0; i < 10000; i++)
      x += i * 0.5;
  return x;
}
