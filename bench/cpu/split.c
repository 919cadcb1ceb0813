/* split: threads dividing their CPU between work_60, work_30 and work_10,
 * which run 6, 3 and 1 identical units per round, so about 60/30/10.
 *
 *   split SECONDS [--wait-ms A] [--until-ms B]     calibrate, then run the
 *                                                  rounds that take about SECONDS
 *   split -r ROUNDS [--wait-ms A] [--until-ms B]   run exactly ROUNDS rounds
 *
 * (--wait-ms and --until-ms: see work.h.) Two options of split's own:
 *   --threads N    N threads run the rounds each (the main thread one of
 *                  them; default 1): more samples a second on more CPUs
 *   --stop-ms C    every thread stops starting rounds C ms after main began
 *                  (a wall-clock end, whatever the load)
 *
 * The truth is measured: each call is bracketed by CLOCK_THREAD_CPUTIME_ID
 * reads, and at exit it prints, for each function, its CPU ns (all threads)
 * and its share of the three:
 *   truth work_60 <ns> <percent>
 * Each round interleaves the three calls (a few ms in all), so any window of
 * a second or more of the run has the same split as the whole run. The
 * order of the calls changes from round to round (a fixed pseudo-random
 * sequence, another one per thread), so a sampling clock whose period
 * happens to be close to a round's length cannot keep landing in the same
 * function. */
#include "work.h"

#include <pthread.h>

static const char usage[] =
    "split SECONDS|-r ROUNDS [--wait-ms A] [--until-ms B] [--threads N] [--stop-ms C]";

BENCH_FN void work_60(uint64_t *state) {
  for (int k = 0; k < 6; k++)
    *state = unit_kernel(*state);
}

BENCH_FN void work_30(uint64_t *state) {
  for (int k = 0; k < 3; k++)
    *state = unit_kernel(*state);
}

BENCH_FN void work_10(uint64_t *state) { *state = unit_kernel(*state); }

struct worker {
  pthread_t tid;
  long rounds, done;
  int64_t stop_ns; /* CLOCK_MONOTONIC; 0: no wall-clock end */
  uint32_t rng;
  uint64_t state;
  int64_t ns[3];
};

static void *run(void *arg) {
  struct worker *w = arg;
  static void (*const fns[3])(uint64_t *) = {work_60, work_30, work_10};
  static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                   {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (w->done = 0; w->done < w->rounds; w->done++) {
    if (w->stop_ns && clock_ns(CLOCK_MONOTONIC) >= w->stop_ns)
      break;
    w->rng ^= w->rng << 13, w->rng ^= w->rng >> 17, w->rng ^= w->rng << 5;
    const int *order = orders[w->rng % 6];
    int64_t t = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < 3; i++) {
      fns[order[i]](&w->state);
      int64_t t1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
      w->ns[order[i]] += t1 - t;
      t = t1;
    }
  }
  return NULL;
}

/* Takes split's own options (OPTION VALUE) out of argv, for bench_parse. */
static long take_option(int *argc, char **argv, const char *option) {
  for (int i = 1; i + 1 < *argc; i++) {
    if (strcmp(argv[i], option) == 0) {
      long v = (long)positive_arg(argv[i + 1], usage);
      memmove(&argv[i], &argv[i + 2], (size_t)(*argc - i - 1) * sizeof *argv);
      *argc -= 2;
      return v;
    }
  }
  return 0;
}

#define MAX_THREADS 64

int main(int argc, char **argv) {
  long nthreads = take_option(&argc, argv, "--threads");
  long stop_ms = take_option(&argc, argv, "--stop-ms");
  if (nthreads > MAX_THREADS)
    positive_arg(NULL, usage);
  if (nthreads < 1)
    nthreads = 1;
  bench_args_t a;
  bench_parse(argc, argv, usage, &a);
  long rounds = a.rounds ? a.rounds : (long)(a.seconds * 1e9 / (10 * unit_ns())) + 1;

  static struct worker ws[MAX_THREADS];
  int64_t w0 = clock_ns(CLOCK_MONOTONIC);
  for (long i = 0; i < nthreads; i++) {
    ws[i].rounds = rounds;
    ws[i].stop_ns = stop_ms ? a.start_ns + stop_ms * 1000000 : 0;
    ws[i].rng = 2463534242u + (uint32_t)i * 0x9e3779b9u;
    ws[i].state = 1;
    if (i > 0 && pthread_create(&ws[i].tid, NULL, run, &ws[i]) != 0) {
      perror("split: pthread_create");
      return 1;
    }
  }
  run(&ws[0]);
  int64_t ns[3] = {0, 0, 0};
  long done = 0;
  uint64_t checksum = 0;
  for (long i = 0; i < nthreads; i++) {
    if (i > 0)
      pthread_join(ws[i].tid, NULL);
    for (int k = 0; k < 3; k++)
      ns[k] += ws[i].ns[k];
    done += ws[i].done;
    checksum ^= ws[i].state;
  }
  double wall = (double)(clock_ns(CLOCK_MONOTONIC) - w0) / 1e9;
  double total = (double)(ns[0] + ns[1] + ns[2]);
  static const char *names[3] = {"work_60", "work_30", "work_10"};
  /* thread_cpu_ns: all the main thread has run since main began, calibration included. */
  printf("split: rounds=%ld threads=%ld wall_s=%.3f elapsed_ms=%ld thread_cpu_ns=%lld "
         "checksum=%llx\n",
         done, nthreads, wall, bench_elapsed_ms(&a),
         (long long)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - a.start_cpu),
         (unsigned long long)checksum);
  for (int i = 0; i < 3; i++)
    printf("truth %s %lld %.3f\n", names[i], (long long)ns[i], 100.0 * (double)ns[i] / total);
  bench_linger(&a);
  return 0;
}
