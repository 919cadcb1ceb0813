/* A program whose timeline is known, for tests/integration/trace.sh:
 *
 *   regions    regions "outer" (about 60 ms) holding "inner" (about 30 ms),
 *              over and over, with a log ("loop", "iteration N") each time
 *   task-a     begins a task "job" every 100 ms and hands its id to
 *   task-b     which ends it 40 ms later
 *   holder     holds the mutex 30 ms at a time, 10 ms apart
 *   contender  takes the same mutex every 5 ms: it waits
 *   brief      a thread started every 250 ms that lives 20 ms
 *   burner     computes in burn() 20 ms at a time, 20 ms apart
 *
 *   trace_target SECONDS
 *
 * Prints "ready" once every thread runs, "mutex 0xADDR", and for every
 * region it ends "region NAME TID BEGIN_NS DUR_NS" (CLOCK_MONOTONIC, as it
 * measured them). cprof's calls are weak, so it runs without cprof too. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__attribute__((weak)) void cprof_region_begin(const char *name);
__attribute__((weak)) void cprof_region_end(void);
__attribute__((weak)) uint64_t cprof_task_begin(const char *name);
__attribute__((weak)) void cprof_task_end(uint64_t id);
__attribute__((weak)) void cprof_trace_log(const char *category, const char *message);

static atomic_int stop;
static atomic_ullong handed; /* a task id from task-a to task-b; 0: none */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

/* A region around sleep_ms(ms) and, inside it, fn; printed as measured. */
static void region(const char *name, long ms, void (*inside)(void)) {
  long long t0 = now_ns();
  if (cprof_region_begin)
    cprof_region_begin(name);
  sleep_ms(ms);
  if (inside)
    inside();
  if (cprof_region_end)
    cprof_region_end();
  long long t1 = now_ns();
  pthread_mutex_lock(&out_mu);
  printf("region %s %ld %lld %lld\n", name, (long)syscall(SYS_gettid), t0, t1 - t0);
  fflush(stdout);
  pthread_mutex_unlock(&out_mu);
}

static void inner(void) { region("inner", 30, NULL); }

static void *regions(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "regions");
  char msg[64];
  for (int i = 0; !atomic_load(&stop); i++) {
    region("outer", 30, inner);
    snprintf(msg, sizeof msg, "iteration %d", i);
    if (cprof_trace_log)
      cprof_trace_log("loop", msg);
    sleep_ms(5);
  }
  return NULL;
}

static void *task_a(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "task-a");
  while (!atomic_load(&stop)) {
    uint64_t id = cprof_task_begin ? cprof_task_begin("job") : 0;
    if (id)
      atomic_store(&handed, id);
    sleep_ms(100);
  }
  return NULL;
}

static void *task_b(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "task-b");
  while (!atomic_load(&stop)) {
    uint64_t id = atomic_exchange(&handed, 0);
    if (id) {
      sleep_ms(40);
      cprof_task_end(id);
    }
    sleep_ms(5);
  }
  return NULL;
}

static void *holder(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "holder");
  while (!atomic_load(&stop)) {
    pthread_mutex_lock(&mu);
    sleep_ms(30);
    pthread_mutex_unlock(&mu);
    sleep_ms(10);
  }
  return NULL;
}

static void *contender(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "contender");
  while (!atomic_load(&stop)) {
    pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
    sleep_ms(5);
  }
  return NULL;
}

/* Spins for ms of CPU time: the function a trace's CPU samples name. */
__attribute__((noinline)) static unsigned long burn(long ms) {
  struct timespec t;
  long long until;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  until = t.tv_sec * 1000000000LL + t.tv_nsec + ms * 1000000LL;
  unsigned long x = 1;
  /* The clock read between rounds is a system call (a thread's CPU clock),
   * and the kernel delivers a tick that came during it on the way out: a
   * round long enough that such samples are few (1 in 25 at 10,000, more
   * on a loaded machine, where the 90 % check of trace.sh then failed). */
  for (;;) {
    for (int i = 0; i < 100000; i++)
      x = x * 6364136223846793005UL + 1442695040888963407UL;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    if (t.tv_sec * 1000000000LL + t.tv_nsec >= until)
      return x;
  }
}

static void *burner(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "burner");
  volatile unsigned long sink = 0;
  while (!atomic_load(&stop)) {
    sink += burn(20);
    sleep_ms(20);
  }
  return NULL;
}

static void *brief(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "brief");
  sleep_ms(20);
  return NULL;
}

int main(int argc, char **argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 10;
  void *(*fns[])(void *) = {regions, task_a, task_b, holder, contender, burner};
  pthread_t t[6];
  for (int i = 0; i < 6; i++)
    pthread_create(&t[i], NULL, fns[i], NULL);
  printf("mutex %p\nready\n", (void *)&mu);
  fflush(stdout);
  long long end = now_ns() + seconds * 1000000000LL;
  while (now_ns() < end) {
    pthread_t b;
    if (pthread_create(&b, NULL, brief, NULL) == 0)
      pthread_join(b, NULL);
    sleep_ms(230);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 6; i++)
    pthread_join(t[i], NULL);
  return 0;
}
