/* For tests/host/cpu_truth.sh: threads whose CPU a profile must account,
 * with the truth measured here from each thread's own CPU clock. After
 * "ready", the work starts on SIGUSR1 (the profile is running by then) and
 * lasts WORK_MS; then each thread's CPU over the work is printed as
 * "cpu NAME NS", their sum as "total NS", and the program waits to be
 * killed. Threads wait for the work asleep, and sleep after it.
 *   cpu_truth duty N WORK_MS: N threads named "dutyK", each burning
 *     20-160 us every 10 ms (0.2-1.6 % duty), idle after the work.
 *   cpu_truth short MS WORK_MS: threads named "shortK", two at a time,
 *     each burning MS ms of CPU and exiting.
 *   cpu_truth toggle N WORK_MS: N threads named "toggleK", each burning
 *     200 us with SIGPROF open, then 200 us with it blocked, then sleeping
 *     2 ms, over and over: pausing their timers 400 times a second. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t go;
static volatile int done;
static long work_ms, burn_us;
static long long short_total;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t started = PTHREAD_COND_INITIALIZER;
static int started_flag;
static pthread_key_t end_key;

static long long ns_of(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile unsigned long sink;
static void burn(long us) {
  long long end = ns_of(CLOCK_THREAD_CPUTIME_ID) + us * 1000LL;
  while (ns_of(CLOCK_THREAD_CPUTIME_ID) < end)
    for (int i = 0; i < 200; i++)
      sink += (unsigned long)i * 7;
}

typedef struct {
  int k;
  long long cpu;
} duty_t;

/* Blocks or opens SIGPROF, as a program's critical sections do. */
static void sigprof(int how) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPROF);
  pthread_sigmask(how, &set, NULL);
}

/* A thread named PREFIXk, asleep until the work starts (no CPU outside
 * the truth), then working until it is done, its CPU over the work kept
 * in d->cpu. duty: burns 20-160 us every 10 ms; toggle: 200 us with
 * SIGPROF open, 200 us with it blocked, then sleeps 2 ms. */
static void work(duty_t *d, int toggles) {
  char name[16];
  snprintf(name, sizeof name, "%s%d", toggles ? "toggle" : "duty", d->k);
  pthread_setname_np(pthread_self(), name);
  pthread_mutex_lock(&lock);
  while (!started_flag)
    pthread_cond_wait(&started, &lock);
  pthread_mutex_unlock(&lock);
  long us = 20 + (d->k * 140L) / 127 % 141;
  long long c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
  while (!done) {
    if (toggles) {
      burn(200);
      sigprof(SIG_BLOCK);
      burn(200);
      sigprof(SIG_UNBLOCK);
      usleep(2000);
    } else {
      burn(us);
      usleep(10000);
    }
  }
  d->cpu = ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
  for (;;)
    pause();
}

static void *duty(void *p) {
  work(p, 0);
  return NULL;
}

static void *toggle(void *p) {
  work(p, 1);
  return NULL;
}

static void *short_one(void *p) {
  char name[16];
  snprintf(name, sizeof name, "short%d", (int)(long)p);
  pthread_setname_np(pthread_self(), name);
  pthread_setspecific(end_key, (char *)p + 1);
  burn(burn_us);
  return NULL;
}

/* A key made after libcprof's: its destructor runs after cprof's at the
 * thread's exit, and reads the CPU of the thread's whole life but the
 * last of its exit. */
static void short_ended(void *k) {
  long long c = ns_of(CLOCK_THREAD_CPUTIME_ID);
  pthread_mutex_lock(&lock);
  printf("cpu short%d %lld\n", (int)((char *)k - (char *)0) - 1, c);
  short_total += c;
  pthread_mutex_unlock(&lock);
}

static void on_usr1(int sig) { go = 1; }

int main(int argc, char **argv) {
  if (argc != 4)
    return 2;
  signal(SIGUSR1, on_usr1);
  pthread_key_create(&end_key, short_ended);
  int n = atoi(argv[2]);
  work_ms = atol(argv[3]);
  duty_t *d = calloc((size_t)n, sizeof *d);
  pthread_t *t = calloc((size_t)n, sizeof *t);
  int is_toggle = strcmp(argv[1], "toggle") == 0,
      is_duty = is_toggle || strcmp(argv[1], "duty") == 0;
  if (is_duty)
    for (int i = 0; i < n; i++) {
      d[i].k = i;
      pthread_create(&t[i], NULL, is_toggle ? toggle : duty, &d[i]);
    }
  printf("ready\n");
  fflush(stdout);
  while (!go)
    usleep(1000);
  long long end = ns_of(CLOCK_MONOTONIC) + work_ms * 1000000LL;
  pthread_mutex_lock(&lock);
  started_flag = 1;
  pthread_cond_broadcast(&started);
  pthread_mutex_unlock(&lock);
  if (is_duty) {
    usleep((useconds_t)(work_ms * 1000));
    done = 1;
    usleep(100000);
    long long total = 0;
    for (int i = 0; i < n; i++) {
      printf("cpu %s%d %lld\n", is_toggle ? "toggle" : "duty", i, d[i].cpu);
      total += d[i].cpu;
    }
    printf("total %lld\n", total);
  } else {
    burn_us = n * 1000L;
    for (int k = 0; ns_of(CLOCK_MONOTONIC) < end; k += 2) {
      pthread_t a, b;
      pthread_create(&a, NULL, short_one, (void *)(long)k);
      pthread_create(&b, NULL, short_one, (void *)(long)(k + 1));
      pthread_join(a, NULL);
      pthread_join(b, NULL);
    }
    usleep(50000);
    pthread_mutex_lock(&lock);
    printf("total %lld\n", short_total);
    pthread_mutex_unlock(&lock);
  }
  fflush(stdout);
  for (;;)
    pause();
}
