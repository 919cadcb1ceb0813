/* duty: threads at duty cycles, or short-lived threads, whose CPU a profile
 * must account, with the truth measured by each thread from its own CPU
 * clock (for cpu/duty_sweep.sh; tests/host/programs/cpu_truth.c is the
 * test version).
 *
 *   duty WORK_MS DUTY%:THREADS...     e.g. duty 1500 0.2:16 1:8 5:4 25:2 100:1
 *   duty WORK_MS short BURN_MS
 *
 * After printing "ready" the program waits for SIGUSR1 (sent once the
 * profile is running); then the work lasts WORK_MS, and the threads sleep
 * before and after it (no CPU outside the truth).
 *   DUTY%:THREADS   THREADS threads named "dDUTY-K" (d0.2-3), each burning
 *                   DUTY % of every 10 ms period of its CPU clock and
 *                   sleeping to the period's end (100: never sleeping);
 *                   the periods of the threads are spread over the 10 ms.
 *   short BURN_MS   threads named "sK", two at a time, each burning BURN_MS
 *                   ms of its CPU clock and exiting; the next two start
 *                   when both have ended.
 * Then each thread's CPU over the work is printed as "cpu NAME NS" (a
 * short thread's from a thread-specific data destructor registered after
 * libcprof's, so cprof has seen the thread end), their sum as "total NS",
 * and the program waits to be killed. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common.h"

#define PERIOD_NS 10000000LL
#define MAX_THREADS 1024

static volatile sig_atomic_t go;
static volatile int done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t started = PTHREAD_COND_INITIALIZER;
static int started_flag;
static long long short_total, burn_ns;
static pthread_key_t end_key;

static volatile unsigned long sink;
static void burn_until(long long cpu_end) {
  while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < cpu_end)
    for (int i = 0; i < 200; i++)
      sink += (unsigned long)i * 7;
}

typedef struct {
  char name[16];
  double duty; /* a fraction */
  int k;
  long long cpu;
} worker_t;

static void *duty_thread(void *p) {
  worker_t *w = p;
  pthread_setname_np(pthread_self(), w->name);
  /* Read before the wait: the wake-up (31 threads taking one mutex) is
   * CPU inside the profile; what precedes the sleep, a few us, is not. */
  long long c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  pthread_mutex_lock(&lock);
  while (!started_flag)
    pthread_cond_wait(&started, &lock);
  pthread_mutex_unlock(&lock);
  long long on = (long long)(w->duty * PERIOD_NS);
  /* Spread the threads' periods over the 10 ms. */
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  long long t = (long long)next.tv_sec * 1000000000 + next.tv_nsec + (w->k * 1234567LL) % PERIOD_NS;
  while (!done) {
    if (w->duty >= 1) {
      burn_until(clock_ns(CLOCK_THREAD_CPUTIME_ID) + 1000000);
      continue;
    }
    next.tv_sec = t / 1000000000;
    next.tv_nsec = t % 1000000000;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    if (done)
      break;
    burn_until(clock_ns(CLOCK_THREAD_CPUTIME_ID) + on);
    t += PERIOD_NS;
    long long now = clock_ns(CLOCK_MONOTONIC);
    if (t < now) /* fell behind (the CPUs are busy): skip the periods missed */
      t += (now - t) / PERIOD_NS * PERIOD_NS + PERIOD_NS;
  }
  w->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
  for (;;)
    pause();
  return NULL;
}

static void *short_thread(void *p) {
  char name[16];
  snprintf(name, sizeof name, "s%ld", (long)p);
  pthread_setname_np(pthread_self(), name);
  pthread_setspecific(end_key, (char *)p + 1);
  burn_until(clock_ns(CLOCK_THREAD_CPUTIME_ID) + burn_ns);
  return NULL;
}

/* Made after libcprof's key: runs after cprof's at the thread's exit. */
static void short_ended(void *k) {
  long long c = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  pthread_mutex_lock(&lock);
  printf("cpu s%ld %lld\n", (long)((char *)k - (char *)0) - 1, c);
  short_total += c;
  pthread_mutex_unlock(&lock);
}

static void on_usr1(int sig) {
  (void)sig;
  go = 1;
}

static const char usage[] = "duty WORK_MS DUTY%:THREADS... | duty WORK_MS short BURN_MS";

int main(int argc, char **argv) {
  if (argc < 3)
    return number_arg(NULL, usage), 2;
  signal(SIGUSR1, on_usr1);
  pthread_key_create(&end_key, short_ended);
  long work_ms = (long)number_arg(argv[1], usage);
  int is_short = strcmp(argv[2], "short") == 0;
  static worker_t w[MAX_THREADS];
  static pthread_t tid[MAX_THREADS];
  int n = 0;
  if (is_short) {
    if (argc != 4)
      return number_arg(NULL, usage), 2;
    burn_ns = (long long)(number_arg(argv[3], usage) * 1e6);
  } else {
    for (int a = 2; a < argc; a++) {
      char *colon = strchr(argv[a], ':');
      if (!colon)
        return number_arg(NULL, usage), 2;
      *colon = 0;
      double d = number_arg(argv[a], usage);
      int k = (int)number_arg(colon + 1, usage);
      for (int i = 0; i < k && n < MAX_THREADS; i++, n++) {
        snprintf(w[n].name, sizeof w[n].name, "d%s-%d", argv[a], i);
        w[n].duty = d / 100;
        w[n].k = n;
        if (pthread_create(&tid[n], NULL, duty_thread, &w[n]) != 0) {
          perror("pthread_create");
          return 1;
        }
      }
    }
  }
  printf("ready\n");
  fflush(stdout);
  while (!go)
    usleep(1000);
  long long end = clock_ns(CLOCK_MONOTONIC) + work_ms * 1000000LL;
  pthread_mutex_lock(&lock);
  started_flag = 1;
  pthread_cond_broadcast(&started);
  pthread_mutex_unlock(&lock);
  if (!is_short) {
    sleep_ms(work_ms);
    done = 1;
    sleep_ms(100);
    long long total = 0;
    for (int i = 0; i < n; i++) {
      printf("cpu %s %lld\n", w[i].name, w[i].cpu);
      total += w[i].cpu;
    }
    printf("total %lld\n", total);
  } else {
    for (long k = 0; clock_ns(CLOCK_MONOTONIC) < end; k += 2) {
      pthread_t a, b;
      pthread_create(&a, NULL, short_thread, (void *)k);
      pthread_create(&b, NULL, short_thread, (void *)(k + 1));
      pthread_join(a, NULL);
      pthread_join(b, NULL);
    }
    sleep_ms(50);
    pthread_mutex_lock(&lock);
    printf("total %lld\n", short_total);
    pthread_mutex_unlock(&lock);
  }
  fflush(stdout);
  for (;;)
    pause();
}
