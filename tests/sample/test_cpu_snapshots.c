/* The snapshots of the address space a CPU profile takes for its walkers
 * (at most one a second while threads come and go, for as long as it
 * runs: under CPROF_OUTPUT, the life of the process) are not kept until
 * it stops: a fresh one replaces the last, which is freed once no handler
 * can be reading it. 2,000 refreshes while a thread is sampled at 1000 Hz
 * (its handlers read the snapshot) must leave the heap where it was, and
 * the samples must still come. */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "sample/cpu.h"

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static int stop;
static volatile uint64_t sink;

static void *burner(void *arg) {
  while (!LOAD(stop))
    sink = sink * 6364136223846793005ULL + 1;
  return NULL;
}

static long samples;
static void count(void *arg, const cprof__cpu_sample_t *s) { samples++; }

static size_t heap_in_use(void) {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

int main(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return check_skip("test_cpu_snapshots", "mallinfo2 does not see a sanitizer's heap");
#endif
  pthread_t th;
  pthread_create(&th, NULL, burner, NULL);
  CHECK_EQ_INT(cprof__cpu_start(1000, CPROF_UNWIND_DWARF), 0);
  for (int i = 0; i < 50; i++)
    cprof__cpu_refresh_stacks();
  cprof__cpu_drain(count, NULL);
  size_t before = heap_in_use();
  for (int i = 0; i < 2000; i++) {
    cprof__cpu_refresh_stacks();
    if (i % 50 == 0)
      cprof__cpu_drain(count, NULL);
  }
  cprof__cpu_drain(count, NULL);
  size_t after = heap_in_use();
  long during = samples;
  cprof__cpu_stop(count, NULL);
  STORE(stop, 1);
  pthread_join(th, NULL);
  fprintf(stderr, "heap in use: %zu bytes before 2000 refreshes, %zu after; %ld samples\n", before,
          after, during);
  CHECK(after < before + 256 * 1024);
  CHECK(during > 0);
  return check_result("test_cpu_snapshots");
}
