/* threads: two threads named "heavy" and "light"; per round heavy runs 3
 * units and light 1, and they meet at a barrier between rounds, so for as
 * long as the program runs heavy burns 3 times the CPU of light.
 *
 *   threads SECONDS [--wait-ms A] [--until-ms B]     calibrate, then run the
 *                                                    rounds that take about SECONDS
 *   threads -r ROUNDS [--wait-ms A] [--until-ms B]   run exactly ROUNDS rounds
 *
 * (--wait-ms and --until-ms: see work.h.) SECONDS is heavy's CPU time; the
 * run takes somewhat longer, since the threads wait for each other.
 *
 * The barrier sleeps in the kernel (futex), so the waiting thread burns no
 * CPU. The truth is each thread's own CLOCK_THREAD_CPUTIME_ID at its end,
 * printed at exit with its share of the two:
 *   truth heavy <ns> <percent> */
#include "work.h"

#include <pthread.h>

static const char usage[] = "threads SECONDS|-r ROUNDS [--wait-ms A] [--until-ms B]";
static long rounds;
static pthread_barrier_t barrier;

struct worker {
  const char *name;
  int units;
  uint64_t state;
  int64_t cpu_ns;
};

BENCH_FN void heavy_work(struct worker *w) {
  for (int k = 0; k < w->units; k++)
    w->state = unit_kernel(w->state);
}

BENCH_FN void light_work(struct worker *w) {
  for (int k = 0; k < w->units; k++)
    w->state = unit_kernel(w->state);
}

static void *run(void *arg) {
  struct worker *w = arg;
  pthread_setname_np(pthread_self(), w->name);
  int heavy = w->units > 1;
  pthread_barrier_wait(&barrier);
  for (long r = 0; r < rounds; r++) {
    if (heavy)
      heavy_work(w);
    else
      light_work(w);
    pthread_barrier_wait(&barrier);
  }
  w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  return NULL;
}

int main(int argc, char **argv) {
  bench_args_t a;
  bench_parse(argc, argv, usage, &a);
  rounds = a.rounds ? a.rounds : (long)(a.seconds * 1e9 / (3 * unit_ns())) + 1;

  struct worker w[2] = {{"heavy", 3, 1, 0}, {"light", 1, 2, 0}};
  pthread_t t[2];
  pthread_barrier_init(&barrier, NULL, 2);
  int64_t w0 = clock_ns(CLOCK_MONOTONIC);
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, run, &w[i]) != 0) {
      perror("pthread_create");
      return 1;
    }
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  double wall = (double)(clock_ns(CLOCK_MONOTONIC) - w0) / 1e9;
  double total = (double)(w[0].cpu_ns + w[1].cpu_ns);
  printf("threads: rounds=%ld wall_s=%.3f elapsed_ms=%ld main_cpu_ns=%lld checksum=%llx\n", rounds,
         wall, bench_elapsed_ms(&a), (long long)clock_ns(CLOCK_THREAD_CPUTIME_ID),
         (unsigned long long)(w[0].state ^ w[1].state));
  for (int i = 0; i < 2; i++)
    printf("truth %s %lld %.3f\n", w[i].name, (long long)w[i].cpu_ns,
           100.0 * (double)w[i].cpu_ns / total);
  bench_linger(&a);
  return 0;
}
