/* A program whose wall-clock split is known, for tests/integration/wall.sh:
 *
 *   split      a thread that computes for 3 ms (compute_part) and sleeps
 *              7 ms (sleep_part, clock_nanosleep), over and over: about
 *              30 % running, 70 % sleeping; each in a region of that name
 *              ("compute", "sleep") when cprof is there to tell. It
 *              measures its own split: the wall time (CLOCK_MONOTONIC)
 *              spent in each part, and its CPU time
 *              (CLOCK_THREAD_CPUTIME_ID)
 *   napper-N   three threads that only sleep, 50 ms at a time (nap_part)
 *   waiter     a thread waiting on a condition variable nobody signals
 *              (wait_part)
 *   reader     a thread blocked in read(2) on a pipe nobody writes
 *              (read_part)
 *
 *   crowd      CROWD more threads (0 unless given) that wait on a
 *              condition variable nobody signals (crowd_part), for a
 *              profile of many threads
 *
 *   wall_target SECONDS [CROWD]
 *
 * Prints "ready" once every thread runs; from just before, every 50 ms "at T compute C
 * sleep S cpu U" (CLOCK_REALTIME now, as a profile's time is, and the
 * split thread's totals so
 * far, all in ns), so that a test can read the split over the very
 * seconds it profiled; and after SECONDS: "naps N early
 * E" (the nappers' sleeps, and how many ended before their time or with
 * an error: a signal would have cut them short) and "split_sleeps N early
 * E" for the split thread's. Functions are noinline and their calls not
 * tail calls, so each is a frame of its own. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define FRAME_STAYS() __asm__ volatile("" ::: "memory")

static atomic_int stop, naps, early_naps, split_sleeps, early_split;
static atomic_llong compute_ns, sleep_ns, split_cpu_ns;

/* cprof's regions, when the program runs under it (LD_PRELOAD): weak, so
 * that the program runs without it too. */
__attribute__((weak)) void cprof_region_begin(const char *name);
__attribute__((weak)) void cprof_region_end(void);

static void region_begin(const char *name) {
  if (cprof_region_begin)
    cprof_region_begin(name);
}

static void region_end(void) {
  if (cprof_region_end)
    cprof_region_end();
}
static int pipefd[2];

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Sleeps ms; returns 1 when the sleep ended early or failed. */
static int sleep_ms(long ms) {
  long long t0 = now_ns();
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  int rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
  return rc != 0 || now_ns() - t0 < ms * 1000000LL;
}

NOINLINE static void compute_part(long ms) {
  long long end = now_ns() + ms * 1000000LL;
  volatile unsigned long x = 1;
  while (now_ns() < end)
    for (int i = 0; i < 1000; i++)
      x = x * 2654435761u + 1;
  FRAME_STAYS();
}

NOINLINE static void sleep_part(long ms) {
  split_sleeps++;
  early_split += sleep_ms(ms);
  FRAME_STAYS();
}

static long long cpu_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *split(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "split");
  long long cpu0 = cpu_now_ns();
  while (!stop) {
    region_begin("compute");
    long long t0 = now_ns();
    compute_part(3);
    long long t1 = now_ns();
    region_end();
    region_begin("sleep");
    long long t2 = now_ns();
    sleep_part(7);
    long long t3 = now_ns();
    region_end();
    compute_ns += t1 - t0;
    sleep_ns += t3 - t2;
    split_cpu_ns = cpu_now_ns() - cpu0;
  }
  return NULL;
}

NOINLINE static void nap_part(void) {
  naps++;
  early_naps += sleep_ms(50);
  FRAME_STAYS();
}

static void *napper(void *arg) {
  char name[16];
  snprintf(name, sizeof name, "napper-%d", (int)(long)arg);
  pthread_setname_np(pthread_self(), name);
  while (!stop)
    nap_part();
  return NULL;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

NOINLINE static void wait_part(void) {
  pthread_mutex_lock(&lock);
  while (!stop)
    pthread_cond_wait(&never, &lock);
  pthread_mutex_unlock(&lock);
  FRAME_STAYS();
}

static void *waiter(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "waiter");
  wait_part();
  return NULL;
}

NOINLINE static void read_part(void) {
  char c;
  while (read(pipefd[0], &c, 1) < 0 && errno == EINTR)
    ;
  FRAME_STAYS();
}

NOINLINE static void crowd_part(void) {
  pthread_mutex_lock(&lock);
  while (!stop)
    pthread_cond_wait(&never, &lock);
  pthread_mutex_unlock(&lock);
  FRAME_STAYS();
}

static void *crowd(void *arg) {
  (void)arg;
  crowd_part();
  return NULL;
}

static void *reader(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "reader");
  read_part();
  return NULL;
}

int main(int argc, char **argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 10;
  int crowds = argc > 2 ? atoi(argv[2]) : 0;
  if (pipe(pipefd) != 0)
    return 1;
  pthread_t t[6];
  pthread_create(&t[0], NULL, split, NULL);
  for (long i = 1; i <= 3; i++)
    pthread_create(&t[i], NULL, napper, (void *)i);
  pthread_create(&t[4], NULL, waiter, NULL);
  pthread_create(&t[5], NULL, reader, NULL);
  pthread_t *many = calloc((size_t)crowds + 1, sizeof *many);
  pthread_attr_t small;
  pthread_attr_init(&small);
  pthread_attr_setstacksize(&small, 64 * 1024);
  for (int i = 0; i < crowds; i++)
    if (pthread_create(&many[i], &small, crowd, NULL) != 0)
      return 1;
  for (long long end = now_ns() + seconds * 1000000000LL, first = 1; now_ns() < end; first = 0) {
    struct timespec ts = {0, 50 * 1000000L};
    if (!first) /* the first line at once, before "ready": a profile may begin right after */
      nanosleep(&ts, NULL);
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    printf("at %lld compute %lld sleep %lld cpu %lld\n", real.tv_sec * 1000000000LL + real.tv_nsec,
           (long long)compute_ns, (long long)sleep_ns, (long long)split_cpu_ns);
    if (first)
      printf("ready\n");
    fflush(stdout);
  }
  stop = 1;
  pthread_mutex_lock(&lock);
  pthread_cond_broadcast(&never);
  pthread_mutex_unlock(&lock);
  if (write(pipefd[1], "x", 1) != 1)
    return 1;
  for (int i = 0; i < 6; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < crowds; i++)
    pthread_join(many[i], NULL);
  printf("naps %d early %d\nsplit_sleeps %d early %d\n", naps, early_naps, split_sleeps,
         early_split);
  return 0;
}
