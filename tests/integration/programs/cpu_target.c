/* A CPU-bound program for the CPU profile tests. Knows nothing of cprof.
 *
 *   cpu_target            one thread, "worker", alternating heavy_work and
 *                         light_work: the same kernel, 3 calls against 1,
 *                         so a 75/25 split of its CPU time
 *   cpu_target --threads N  N threads named w00, w01, ... each in spin_worker
 *   cpu_target --short-threads  one thread after another, each burning
 *                         10 ms of CPU in short_lived_work and exiting
 *   cpu_target --own-itimer the program profiles itself with
 *                         setitimer(ITIMER_PROF) and its own SIGPROF handler
 *
 * Prints "ready" when its threads run; runs until killed. Built with
 * -fno-optimize-sibling-calls so that every function stays on the stack.
 * Built with LINK_CPROF (cpu_target_linked), it links cprof and labels its
 * work as a Go program would with pprof.Do: phase=heavy, phase=light. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#ifdef LINK_CPROF
#include <cprof.h>
#define LABEL(k, v) cprof_label_set(k, v)
#else
#define LABEL(k, v) ((void)0)
#endif

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;
static volatile uint64_t own_ticks;

NOINLINE void kernel_step(int n) {
  uint64_t x = sink;
  for (int i = 0; i < n; i++)
    x = x * 6364136223846793005ULL + (uint64_t)i;
  sink = x;
}

NOINLINE void heavy_work(void) {
  for (int k = 0; k < 3; k++)
    kernel_step(200000);
}

NOINLINE void light_work(void) { kernel_step(200000); }

static void *worker(void *arg) {
  pthread_setname_np(pthread_self(), "worker");
  for (;;) {
    LABEL("phase", "heavy");
    heavy_work();
    LABEL("phase", "light");
    light_work();
  }
  return NULL;
}

NOINLINE void spin_worker(void) {
  for (;;)
    kernel_step(50000);
}

static void *worker_main(void *arg) {
  char name[16];
  snprintf(name, sizeof name, "w%02d", (int)(intptr_t)arg);
  pthread_setname_np(pthread_self(), name);
  spin_worker();
  return NULL;
}

static void on_prof(int sig) { own_ticks++; }

NOINLINE void short_lived_work(void) {
  struct timespec t0, t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  do {
    kernel_step(20000);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 10000000L);
}

static void *short_lived(void *arg) {
  short_lived_work();
  return NULL;
}

static void *spawner(void *arg) {
  for (;;) {
    pthread_t t;
    if (pthread_create(&t, NULL, short_lived, NULL) == 0)
      pthread_join(t, NULL);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "--threads") == 0) {
    int n = atoi(argv[2]);
    for (int i = 0; i < n; i++) {
      pthread_t t;
      pthread_create(&t, NULL, worker_main, (void *)(intptr_t)i);
    }
  } else if (argc > 1 && strcmp(argv[1], "--short-threads") == 0) {
    pthread_t s;
    pthread_create(&s, NULL, spawner, NULL);
  } else {
    if (argc > 1 && strcmp(argv[1], "--own-itimer") == 0) {
      signal(SIGPROF, on_prof);
      struct itimerval it = {{0, 10000}, {0, 10000}};
      setitimer(ITIMER_PROF, &it, NULL);
    }
    pthread_t w;
    pthread_create(&w, NULL, worker, NULL);
  }
  printf("ready\n");
  fflush(stdout);
  for (;;)
    pause();
}
