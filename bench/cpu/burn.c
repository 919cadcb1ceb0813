/* burn: a fixed amount of single-threaded CPU work, for overhead.
 *
 *   burn --calibrate SECONDS            prints the units that take about SECONDS here
 *   burn UNITS [--wait-ms A] [--until-ms B]
 *
 * Runs UNITS units through a few named frames (burn_loop -> burn_outer ->
 * burn_middle -> burn_inner -> unit_kernel), so an unwinder has a real stack
 * to walk. --wait-ms sleeps A ms before the timed work (time for a script to
 * start a profile request); --until-ms sleeps after it until B ms after
 * main began (so a profile request longer than the work completes while the
 * program is still there). Neither sleep is timed: at exit it prints
 *   burn: units=N wall_ns=W thread_cpu_ns=T process_cpu_ns=P checksum=X
 * for the work alone: wall (CLOCK_MONOTONIC), this thread's CPU (which
 * includes any signal handler that ran on it) and the whole process's CPU
 * (which includes any profiler thread). */
#include "work.h"

#include <string.h>

static const char usage[] = "burn --calibrate SECONDS | burn UNITS [--wait-ms A] [--until-ms B]";

BENCH_FN uint64_t burn_inner(uint64_t x) { return unit_kernel(x) + 1; }
BENCH_FN uint64_t burn_middle(uint64_t x) { return burn_inner(x) ^ 3; }
BENCH_FN uint64_t burn_outer(uint64_t x) { return burn_middle(x) * 5; }

BENCH_FN uint64_t burn_loop(long units) {
  uint64_t x = 1;
  for (long u = 0; u < units; u++)
    x = burn_outer(x);
  return x;
}

int main(int argc, char **argv) {
  int64_t start = clock_ns(CLOCK_MONOTONIC);
  if (argc == 3 && strcmp(argv[1], "--calibrate") == 0) {
    printf("%ld\n", (long)(positive_arg(argv[2], usage) * 1e9 / unit_ns()) + 1);
    return 0;
  }
  if (argc < 2)
    return positive_arg(NULL, usage), 2;
  long units = (long)positive_arg(argv[1], usage), wait_ms = 0, until_ms = 0;
  for (int i = 2; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--wait-ms") == 0)
      wait_ms = (long)positive_arg(argv[++i], usage);
    else if (i + 1 < argc && strcmp(argv[i], "--until-ms") == 0)
      until_ms = (long)positive_arg(argv[++i], usage);
    else
      return positive_arg(NULL, usage), 2;
  }
  if (wait_ms)
    sleep_ms(wait_ms);

  int64_t w0 = clock_ns(CLOCK_MONOTONIC);
  int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  int64_t p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  uint64_t x = burn_loop(units);
  int64_t p1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  int64_t t1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  int64_t w1 = clock_ns(CLOCK_MONOTONIC);

  printf("burn: units=%ld wall_ns=%lld thread_cpu_ns=%lld process_cpu_ns=%lld checksum=%llx\n",
         units, (long long)(w1 - w0), (long long)(t1 - t0), (long long)(p1 - p0),
         (unsigned long long)x);
  fflush(stdout);
  long left = until_ms - (long)((clock_ns(CLOCK_MONOTONIC) - start) / 1000000);
  if (left > 0)
    sleep_ms(left);
  return 0;
}
