/* split: one thread dividing its CPU between work_60, work_30 and work_10,
 * which run 6, 3 and 1 identical units per round, so about 60/30/10.
 *
 *   split SECONDS [--wait-ms A] [--until-ms B]     calibrate, then run the
 *                                                  rounds that take about SECONDS
 *   split -r ROUNDS [--wait-ms A] [--until-ms B]   run exactly ROUNDS rounds
 *
 * (--wait-ms and --until-ms: see work.h.)
 *
 * The truth is measured: each call is bracketed by CLOCK_THREAD_CPUTIME_ID
 * reads, and at exit it prints, for each function, its CPU ns and its share
 * of the three:
 *   truth work_60 <ns> <percent>
 * Each round interleaves the three calls (a few ms in all), so any window of
 * a second or more of the run has the same split as the whole run. The
 * order of the calls changes from round to round (a fixed pseudo-random
 * sequence), so a sampling clock whose period happens to be close to a
 * round's length cannot keep landing in the same function. */
#include "work.h"

static const char usage[] = "split SECONDS|-r ROUNDS [--wait-ms A] [--until-ms B]";
static uint64_t state = 1;

BENCH_FN void work_60(void) {
  for (int k = 0; k < 6; k++)
    state = unit_kernel(state);
}

BENCH_FN void work_30(void) {
  for (int k = 0; k < 3; k++)
    state = unit_kernel(state);
}

BENCH_FN void work_10(void) { state = unit_kernel(state); }

int main(int argc, char **argv) {
  bench_args_t a;
  bench_parse(argc, argv, usage, &a);
  long rounds = a.rounds ? a.rounds : (long)(a.seconds * 1e9 / (10 * unit_ns())) + 1;

  static void (*const fns[3])(void) = {work_60, work_30, work_10};
  static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                   {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  int64_t ns[3] = {0, 0, 0};
  uint32_t rng = 2463534242u;
  int64_t w0 = clock_ns(CLOCK_MONOTONIC);
  for (long r = 0; r < rounds; r++) {
    rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
    const int *order = orders[rng % 6];
    int64_t t = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < 3; i++) {
      fns[order[i]]();
      int64_t t1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
      ns[order[i]] += t1 - t;
      t = t1;
    }
  }
  double wall = (double)(clock_ns(CLOCK_MONOTONIC) - w0) / 1e9;
  double total = (double)(ns[0] + ns[1] + ns[2]);
  static const char *names[3] = {"work_60", "work_30", "work_10"};
  /* thread_cpu_ns: all this thread has run since main began, calibration included. */
  printf("split: rounds=%ld wall_s=%.3f elapsed_ms=%ld thread_cpu_ns=%lld checksum=%llx\n", rounds,
         wall, bench_elapsed_ms(&a), (long long)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - a.start_cpu),
         (unsigned long long)state);
  for (int i = 0; i < 3; i++)
    printf("truth %s %lld %.3f\n", names[i], (long long)ns[i], 100.0 * (double)ns[i] / total);
  bench_linger(&a);
  return 0;
}
