/* burn: a fixed amount of CPU work, for overhead.
 *
 *   burn --calibrate SECONDS            prints the units that take about SECONDS here
 *   burn UNITS [--wait-ms A] [--until-ms B] [--threads T] [--depth D]
 *
 * Runs UNITS units through a few named frames (burn_loop -> burn_outer ->
 * burn_middle -> burn_inner -> unit_kernel), so an unwinder has a real stack
 * to walk. --wait-ms sleeps A ms before the timed work (time for a script to
 * start a profile request); --until-ms sleeps after it until B ms after
 * main began (so a profile request longer than the work completes while the
 * program is still there). --threads runs the work on T threads at once
 * (the main thread is the first), each UNITS units, from a start barrier;
 * --depth puts D more frames (burn_descend) between each thread's start and
 * burn_loop, so that a profiler's unwinder walks D + 5 or so frames a
 * sample. Defaults: T=1, D=0 (burn_loop called straight from main).
 * Neither sleep is timed: at exit it prints
 *   burn: units=N threads=T depth=D wall_ns=W thread_cpu_ns=C process_cpu_ns=P checksum=X
 * for the work alone: wall (CLOCK_MONOTONIC, from the barrier to the last
 * thread's end), the working threads' CPU, summed (which includes any
 * signal handler that ran on them) and the whole process's CPU (which
 * includes any profiler thread).
 *
 * The Makefile builds it twice: burn with frame pointers, as every
 * workload here, and burn-nofp with -fomit-frame-pointer, for the cost of
 * unwinding code that has none. */
#include "work.h"

#include <pthread.h>
#include <string.h>

static const char usage[] =
    "burn --calibrate SECONDS | burn UNITS [--wait-ms A] [--until-ms B] [--threads T] [--depth D]";

BENCH_FN uint64_t burn_inner(uint64_t x) { return unit_kernel(x) + 1; }
BENCH_FN uint64_t burn_middle(uint64_t x) { return burn_inner(x) ^ 3; }
BENCH_FN uint64_t burn_outer(uint64_t x) { return burn_middle(x) * 5; }

BENCH_FN uint64_t burn_loop(long units) {
  uint64_t x = 1;
  for (long u = 0; u < units; u++)
    x = burn_outer(x);
  return x;
}

typedef struct burner {
  pthread_t tid;
  long units, depth;
  int64_t t0, t1, cpu;
  uint64_t x;
} burner_t;

static pthread_barrier_t ready;

/* D frames of recursion above burn_loop. */
BENCH_FN void burn_descend(burner_t *b, long d) {
  if (d <= 0) {
    b->x = burn_loop(b->units);
    return;
  }
  burn_descend(b, d - 1);
  __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
}

static void burn_run(burner_t *b) {
  b->t0 = clock_ns(CLOCK_MONOTONIC);
  int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  if (b->depth > 0)
    burn_descend(b, b->depth);
  else
    b->x = burn_loop(b->units);
  b->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
  b->t1 = clock_ns(CLOCK_MONOTONIC);
}

static void *burn_thread(void *arg) {
  pthread_barrier_wait(&ready);
  burn_run(arg);
  return NULL;
}

int main(int argc, char **argv) {
  int64_t start = clock_ns(CLOCK_MONOTONIC);
  if (argc == 3 && strcmp(argv[1], "--calibrate") == 0) {
    printf("%ld\n", (long)(positive_arg(argv[2], usage) * 1e9 / unit_ns()) + 1);
    return 0;
  }
  if (argc < 2)
    return positive_arg(NULL, usage), 2;
  long units = (long)positive_arg(argv[1], usage), wait_ms = 0, until_ms = 0, threads = 1, depth = 0;
  for (int i = 2; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--wait-ms") == 0)
      wait_ms = (long)positive_arg(argv[++i], usage);
    else if (i + 1 < argc && strcmp(argv[i], "--until-ms") == 0)
      until_ms = (long)positive_arg(argv[++i], usage);
    else if (i + 1 < argc && strcmp(argv[i], "--threads") == 0)
      threads = (long)positive_arg(argv[++i], usage);
    else if (i + 1 < argc && strcmp(argv[i], "--depth") == 0)
      depth = (long)number_arg(argv[++i], usage);
    else
      return positive_arg(NULL, usage), 2;
  }
  if (wait_ms)
    sleep_ms(wait_ms);

  burner_t b[threads];
  pthread_barrier_init(&ready, NULL, (unsigned)threads);
  for (long t = 0; t < threads; t++) {
    b[t] = (burner_t){.units = units, .depth = depth};
    if (t > 0 && pthread_create(&b[t].tid, NULL, burn_thread, &b[t]) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  pthread_barrier_wait(&ready);
  int64_t p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  burn_run(&b[0]);
  for (long t = 1; t < threads; t++)
    pthread_join(b[t].tid, NULL);
  int64_t p1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  int64_t w0 = b[0].t0, w1 = b[0].t1, cpu = 0;
  uint64_t x = 0;
  for (long t = 0; t < threads; t++) {
    w0 = b[t].t0 < w0 ? b[t].t0 : w0;
    w1 = b[t].t1 > w1 ? b[t].t1 : w1;
    cpu += b[t].cpu;
    x += b[t].x;
  }

  printf("burn: units=%ld threads=%ld depth=%ld wall_ns=%lld thread_cpu_ns=%lld process_cpu_ns=%lld "
         "checksum=%llx\n",
         units, threads, depth, (long long)(w1 - w0), (long long)cpu, (long long)(p1 - p0),
         (unsigned long long)x);
  fflush(stdout);
  long left = until_ms - (long)((clock_ns(CLOCK_MONOTONIC) - start) / 1000000);
  if (left > 0)
    sleep_ms(left);
  return 0;
}
