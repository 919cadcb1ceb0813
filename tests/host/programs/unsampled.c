/* CPU time that a thread's SIGPROF timer cannot sample, and a thread the
 * capture signal cannot reach:
 *
 *   unsampled blocked SECONDS    "toggler" burns CPU and blocks every
 *                                signal for every other 50 ms of its CPU
 *                                (block_phase); "walled" starts with every
 *                                signal blocked (its creator's mask) and
 *                                burns with them blocked throughout.
 *   unsampled sandboxed SECONDS  "early" burns from the start; 1 s after
 *                                "ready" the process puts every thread
 *                                under a seccomp filter that denies
 *                                timer_create (SECCOMP_FILTER_FLAG_TSYNC,
 *                                as a server that sandboxes itself once
 *                                started), and then "late" burns.
 *   unsampled spin SECONDS       "spinner" burns, main sleeps.
 *
 * Prints "ready" once its threads run (in sandboxed, before the filter),
 * and at the end each burning thread's CPU time: "NAME CPU_SECONDS". */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../seccomp_deny.h"

static double seconds;
static double start_wall;
static volatile uint64_t sink;

static double now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int over(void) { return now(CLOCK_MONOTONIC) - start_wall >= seconds; }

/* Burns `cpu` seconds of this thread's CPU, or until the run is over. */
__attribute__((noinline)) static void burn(double cpu) {
  double until = now(CLOCK_THREAD_CPUTIME_ID) + cpu;
  while (now(CLOCK_THREAD_CPUTIME_ID) < until && !over())
    for (int i = 0; i < 10000; i++)
      sink = sink * 33 + 1;
}

__attribute__((noinline)) static void block_phase(void) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  burn(0.05);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

typedef struct worker {
  const char *name;
  void (*work)(void);
  pthread_t thread;
  double cpu;
} worker_t;

static void toggle(void) {
  while (!over()) {
    block_phase();
    burn(0.05);
  }
}

static void spin(void) {
  while (!over())
    burn(0.05);
}

static void *run(void *arg) {
  worker_t *w = arg;
  pthread_setname_np(pthread_self(), w->name);
  w->work();
  w->cpu = now(CLOCK_THREAD_CPUTIME_ID);
  return NULL;
}

static void start(worker_t *w) {
  if (pthread_create(&w->thread, NULL, run, w) != 0) {
    perror("pthread_create");
    exit(1);
  }
}

static void finish(worker_t *w) {
  pthread_join(w->thread, NULL);
  printf("%s %.3f\n", w->name, w->cpu);
}

static void ready(void) {
  puts("ready");
  fflush(stdout);
}

/* Every thread of the process under a filter that denies timer_create. */
static void sandbox(void) {
  seccomp_denial_t d[] = {{SYS_timer_create, EPERM}};
  if (seccomp_deny(d, 1, SECCOMP_FILTER_FLAG_TSYNC) != 0) {
    perror("seccomp");
    exit(77);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s blocked|sandboxed|spin SECONDS\n", argv[0]);
    return 2;
  }
  seconds = atof(argv[2]);
  start_wall = now(CLOCK_MONOTONIC);
  if (strcmp(argv[1], "blocked") == 0) {
    worker_t toggler = {.name = "toggler", .work = toggle},
             walled = {.name = "walled", .work = spin};
    start(&toggler);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    start(&walled);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    ready();
    finish(&toggler);
    finish(&walled);
  } else if (strcmp(argv[1], "sandboxed") == 0) {
    worker_t early = {.name = "early", .work = spin}, late = {.name = "late", .work = spin};
    /* Before "ready": cprof restarts its server on a change of privileges
     * (src/interpose/creds.c), which would end a profile being fetched. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
      perror("prctl");
      return 77;
    }
    start(&early);
    ready();
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL);
    sandbox();
    start(&late);
    finish(&early);
    finish(&late);
  } else {
    worker_t spinner = {.name = "spinner", .work = spin};
    start(&spinner);
    ready();
    finish(&spinner);
  }
  return 0;
}
