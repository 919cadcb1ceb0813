/* lockloop: a pthread_mutex_lock/unlock loop, for the cost of the lock
 * wrappers.
 *
 *   lockloop [--threads T] [--ops N] [--inside K] [--outside K] [--idle I] [--linger SECONDS]
 *
 * Each of T threads (the main thread is the first) does N rounds of:
 * pthread_mutex_lock of one shared mutex, K steps of a multiply-add chain
 * (4 cycles a step) and an increment of a shared counter, then
 * pthread_mutex_unlock, then K' steps outside (--outside). With T=1 every
 * lock is uncontended: the loop measures what a lock/unlock pair costs
 * (here about 12 ns plain; 5 ns in a process of one thread, see --idle).
 * With T=2 the threads contend: an acquisition may find the lock held, and
 * glibc's mutex then puts the thread to sleep in futex() (how often
 * depends on K and K': glibc's mutex is not fair, so with no work between
 * the calls a thread mostly takes the lock again before the woken one
 * runs). --idle starts I more threads that only sleep: glibc (2.34 and
 * later) locks and unlocks a private mutex without atomic instructions
 * while a process has a single thread, so a one-thread loop in a
 * one-thread process measures a path that no program with a second
 * thread takes. Defaults: T=1, N=2e7, K=0, K'=0, I=0.
 *
 * The threads start together (a barrier); what is timed is from there to
 * the last one's end. At exit it prints
 *   lockloop: threads=T idle=I ops=N_TOTAL wall_ns=W ns_per_op=X thread_cpu_ns=C
 *             process_cpu_ns=P counter=N_TOTAL checksum=X
 * ns_per_op is W x T / N_TOTAL (a thread's wall time per round);
 * thread_cpu_ns the threads' own CPU over their rounds, summed;
 * process_cpu_ns the whole process's CPU over the same span (adding any
 * thread a profiler runs); counter checks that the lock excluded. With
 * --linger it then sleeps SECONDS more (so a script can fetch profiles). */
#include "lock.h"

static const char usage[] =
    "lockloop [--threads T] [--ops N] [--inside K] [--outside K] [--idle I] [--linger SECONDS]";

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static pthread_barrier_t ready;

typedef struct worker {
  pthread_t tid;
  long ops, inside, outside;
  uint64_t x;
  int64_t t0, t1, cpu;
} worker_t;

BENCH_FN void lock_loop(worker_t *w) {
  uint64_t x = w->x;
  long inside = w->inside, outside = w->outside;
  for (long k = 0; k < w->ops; k++) {
    pthread_mutex_lock(&mu);
    x = chain(x, inside);
    counter++;
    pthread_mutex_unlock(&mu);
    x = chain(x, outside);
  }
  w->x = x;
}

static void run(worker_t *w) {
  w->t0 = clock_ns(CLOCK_MONOTONIC);
  int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  lock_loop(w);
  w->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
  w->t1 = clock_ns(CLOCK_MONOTONIC);
}

/* An idle thread: it sleeps until the process exits. */
static void *idle_thread(void *arg) {
  (void)arg;
  for (;;)
    sleep_ms(3600 * 1000);
  return NULL;
}

BENCH_FN void *lock_worker(void *arg) {
  pthread_barrier_wait(&ready);
  run(arg);
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 1, ops = 20000000, inside = 0, outside = 0, idle = 0;
  double linger = 0;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc)
      return number_arg(NULL, usage), 2;
    double v = number_arg(argv[i + 1], usage);
    if (strcmp(argv[i], "--threads") == 0 && v >= 1 && v <= 64)
      threads = (long)v;
    else if (strcmp(argv[i], "--ops") == 0 && v >= 1)
      ops = (long)v;
    else if (strcmp(argv[i], "--inside") == 0)
      inside = (long)v;
    else if (strcmp(argv[i], "--outside") == 0)
      outside = (long)v;
    else if (strcmp(argv[i], "--idle") == 0)
      idle = (long)v;
    else if (strcmp(argv[i], "--linger") == 0)
      linger = v;
    else
      return number_arg(NULL, usage), 2;
    i++;
  }
  for (long k = 0; k < idle; k++) {
    pthread_t tid;
    if (pthread_create(&tid, NULL, idle_thread, NULL) != 0) {
      fprintf(stderr, "lockloop: pthread_create failed\n");
      return 1;
    }
  }
  static worker_t w[64];
  pthread_barrier_init(&ready, NULL, (unsigned)threads);
  for (long t = 0; t < threads; t++)
    w[t] = (worker_t){.ops = ops, .inside = inside, .outside = outside, .x = (uint64_t)t + 1};
  for (long t = 1; t < threads; t++)
    if (pthread_create(&w[t].tid, NULL, lock_worker, &w[t]) != 0) {
      fprintf(stderr, "lockloop: pthread_create failed\n");
      return 1;
    }
  pthread_barrier_wait(&ready);
  int64_t p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  run(&w[0]);
  for (long t = 1; t < threads; t++)
    pthread_join(w[t].tid, NULL);
  int64_t p1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  int64_t t0 = w[0].t0, t1 = w[0].t1, cpu = 0;
  uint64_t x = 0;
  for (long t = 0; t < threads; t++) {
    if (w[t].t0 < t0)
      t0 = w[t].t0;
    if (w[t].t1 > t1)
      t1 = w[t].t1;
    cpu += w[t].cpu;
    x ^= w[t].x;
  }
  long total = ops * threads;
  printf("lockloop: threads=%ld idle=%ld ops=%ld wall_ns=%lld ns_per_op=%.3f thread_cpu_ns=%lld process_cpu_ns=%lld "
         "counter=%ld checksum=%llx\n",
         threads, idle, total, (long long)(t1 - t0), (double)(t1 - t0) * threads / (double)total, (long long)cpu,
         (long long)(p1 - p0), counter, (unsigned long long)x);
  fflush(stdout);
  if (counter != total) {
    fprintf(stderr, "lockloop: counter %ld, expected %ld: the mutex did not exclude\n", counter, total);
    return 1;
  }
  if (linger > 0)
    sleep_ms((long)(linger * 1000));
  return 0;
}
