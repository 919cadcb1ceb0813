/* The capture's real-time signal stays the program's (threads.c, signals.c):
 * - the program reads SIG_DFL back for it, as without cprof;
 * - a signal the program queues to itself on that number is the program's,
 *   even from its own pid with SI_QUEUE and the value a request of ours
 *   carried: with the action at SIG_DFL it ends the process;
 * - once the program installs a handler there, its handler gets its
 *   signals and none of our requests, and captures go on;
 * - with every real-time signal the program's, captures still unwind the
 *   threads in system calls, and report running threads as unaskable. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sample/threads.h"

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static int stop;
static pid_t spinner_tid, sleeper_tid;
static long got, got_other;

static void *spin(void *arg) {
  STORE(spinner_tid, gettid());
  volatile uint64_t x = 0;
  while (!LOAD(stop))
    x = x * 33 + 1;
  return NULL;
}

static void *nap(void *arg) {
  STORE(sleeper_tid, gettid());
  struct timespec ts = {30, 0};
  while (!LOAD(stop))
    nanosleep(&ts, NULL); /* woken by pthread_kill at the end */
  return NULL;
}

static void on_signal(int sig, siginfo_t *info, void *uctx) {
  if (info->si_code == SI_QUEUE && info->si_pid == getpid() && info->si_value.sival_int == 42)
    __atomic_add_fetch(&got, 1, __ATOMIC_RELAXED);
  else
    __atomic_add_fetch(&got_other, 1, __ATOMIC_RELAXED);
}
static void on_wake(int sig) {}

static void capture(cprof__thread_dump_t *d) {
  CHECK_EQ_INT(cprof__threads_capture(CPROF_UNWIND_DWARF, 1000, d), 0);
}

/* In a child: one capture, then the program's own sigqueue on our signal
 * with what a request of that capture carried (generation 1, slot 0..7). */
static void queue_lookalikes(int sig) {
  cprof__thread_dump_t d;
  capture(&d);
  cprof__threads_dump_free(&d);
  for (uint32_t idx = 0; idx < 8; idx++) {
    union sigval v = {.sival_ptr = (void *)(uintptr_t)(((uint64_t)1 << 32) | idx)};
    sigqueue(getpid(), sig, v);
  }
  _exit(0);
}

int main(void) {
  CHECK_EQ_INT(cprof__threads_init(), 0);
  int sig = cprof__threads_signal();
  CHECK(sig >= SIGRTMIN && sig <= SIGRTMAX);

  struct sigaction cur;
  CHECK_EQ_INT(sigaction(sig, NULL, &cur), 0);
#ifndef CPROF_NO_INTERPOSE
  CHECK(cur.sa_handler == SIG_DFL && !(cur.sa_flags & SA_SIGINFO));
#endif

  pid_t child = fork();
  if (child == 0)
    queue_lookalikes(sig);
  int status = 0;
  CHECK(child > 0 && waitpid(child, &status, 0) == child);
#ifndef __SANITIZE_THREAD__
  /* ThreadSanitizer keeps the signals' actions itself and delivers them
   * later, at a call it intercepts: the child may exit first. */
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sig);
#endif

  pthread_t spinner, sleeper;
  pthread_create(&spinner, NULL, spin, NULL);
  pthread_create(&sleeper, NULL, nap, NULL);
  while (!LOAD(spinner_tid) || !LOAD(sleeper_tid))
    usleep(1000);
  usleep(20000);
  signal(SIGUSR1, on_wake);

  /* The program takes our signal: its handler gets its own signal, and
   * none of the requests of the captures that follow. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  CHECK_EQ_INT(sigaction(sig, &sa, &cur), 0);
#ifndef CPROF_NO_INTERPOSE
  CHECK(cur.sa_handler == SIG_DFL); /* what it had, as far as it can tell */
#endif
  CHECK_EQ_INT(sigaction(sig, NULL, &cur), 0);
  CHECK((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal);
  union sigval v = {.sival_int = 42};
  CHECK_EQ_INT(sigqueue(getpid(), sig, v), 0);
  for (int k = 0; k < 5; k++) {
    cprof__thread_dump_t d;
    capture(&d);
    const cprof__thread_stack_t *s = cprof__threads_dump_find(&d, LOAD(spinner_tid));
    CHECK(s && s->status == CPROF_THREAD_OK && s->depth >= 2);
    cprof__threads_dump_free(&d);
  }
  CHECK(cprof__threads_signal() != sig); /* another free one */
  CHECK_EQ_INT(LOAD(got), 1);
  CHECK_EQ_INT(LOAD(got_other), 0);

  /* Every real-time signal the program's: nobody is asked, and threads in
   * system calls are still unwound from outside. */
  for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
    sigaction(s, &sa, NULL);
  cprof__thread_dump_t d;
  capture(&d);
  const cprof__thread_stack_t *s = cprof__threads_dump_find(&d, LOAD(spinner_tid));
  CHECK(s && s->status == CPROF_THREAD_NO_SIGNAL);
  const cprof__thread_stack_t *z = cprof__threads_dump_find(&d, LOAD(sleeper_tid));
  CHECK(z && z->status == CPROF_THREAD_OK && z->depth >= 2);
  const cprof__thread_stack_t *self = cprof__threads_dump_find(&d, gettid());
  CHECK(self && self->status == CPROF_THREAD_OK && self->depth >= 2);
  cprof__threads_dump_free(&d);
  CHECK_EQ_INT(LOAD(got_other), 0);

  STORE(stop, 1);
  pthread_kill(sleeper, SIGUSR1);
  pthread_join(spinner, NULL);
  pthread_join(sleeper, NULL);
  return check_result("test_capture_signal");
}
