/* How much of its alternate signal stack the SIGPROF handler uses,
 * measured: a thread gives itself an alternate stack painted with a
 * pattern (cprof's handlers run SA_ONSTACK, there as on one of cprof's:
 * sample/altstack.c), spins without calling anything while the handler
 * samples it at 1000 Hz (a walk through 30 frames without frame pointers,
 * the first ones missing the rule cache), and then looks for the lowest
 * byte that is no longer the pattern. The same thread interrupted by a
 * handler that does nothing gives what the kernel's signal frame takes by
 * itself (its size depends on the CPU's xsave area); the difference is
 * ours. It must stay under CPROF_HANDLER_STACK_BOUND (sample/altstack.h),
 * the figure doc/internals.md gives and cprof's stacks are sized with.
 * The capture handler's figure (thread stacks, threads_sigsafe.c) is printed too.
 * Each unwinder runs in a forked child, from a cold rule cache. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sample/altstack.h"
#include "sample/cpu.h"
#include "sample/threads.h"

#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

#define STACK_SIZE (1 << 20)
#define ALT_SIZE (256 << 10)
#define PATTERN 0xa5
#define DEPTH 30

static char *stack_lo, *alt;
static int stop, spinning;
static volatile uint64_t sink;
static long used; /* bytes below the spinning frame's stack pointer */

/* Spins on the thread's stack while the signals land on the painted
 * alternate stack; then measures how far down they reached. */
__attribute__((noinline)) static void spin_painted(void) {
  STORE(spinning, 1);
  uint64_t x = sink;
  while (!LOAD(stop))
    x = x * 6364136223846793005ULL + 1;
  sink = x;
  char *p = alt;
  while (p < alt + ALT_SIZE && (unsigned char)*p == PATTERN)
    p++;
  used = (long)(alt + ALT_SIZE - p);
}

NOFP static uint64_t descend(int d) {
  volatile char pad[24];
  pad[0] = (char)d;
  if (d == 0)
    spin_painted();
  else
    descend(d - 1);
  return (uint64_t)pad[0];
}

static void *worker(void *arg) {
  (void)arg;
  memset(alt, PATTERN, ALT_SIZE);
  stack_t ss = {.ss_sp = alt, .ss_size = ALT_SIZE, .ss_flags = 0};
  CHECK(sigaltstack(&ss, NULL) == 0);
  descend(DEPTH);
  stack_t off = {.ss_flags = SS_DISABLE};
  sigaltstack(&off, NULL);
  return NULL;
}

static void nothing(int sig, siginfo_t *si, void *uc) {}

typedef void (*sample_fn)(pthread_t th);

/* Runs the worker on a fresh painted stack while `sample` makes signals
 * land on it; returns how deep below the spinning frame they reached. */
static long measure(sample_fn sample) {
  stack_lo = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(stack_lo != MAP_FAILED);
  alt = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(alt != MAP_FAILED);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstack(&a, stack_lo, STACK_SIZE);
  STORE(stop, 0);
  STORE(spinning, 0);
  pthread_t th;
  CHECK(pthread_create(&th, &a, worker, NULL) == 0);
  while (!LOAD(spinning))
    usleep(1000);
  sample(th);
  STORE(stop, 1);
  pthread_join(th, NULL);
  pthread_attr_destroy(&a);
  munmap(stack_lo, STACK_SIZE);
  munmap(alt, ALT_SIZE);
  return used;
}

static int64_t cpu_ms(pthread_t th) {
  clockid_t c;
  struct timespec ts;
  pthread_getcpuclockid(th, &c);
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The kernel's frame alone: a timer on the worker's CPU clock at 1000 Hz
 * whose handler does nothing. */
static void with_nothing(pthread_t th) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = nothing;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGUSR1, &sa, NULL);
  clockid_t c;
  pthread_getcpuclockid(th, &c);
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_SIGNAL;
  sev.sigev_signo = SIGUSR1;
  timer_t t;
  CHECK(timer_create(c, &sev, &t) == 0);
  struct itimerspec its = {{0, 1000000}, {0, 1000000}};
  timer_settime(t, 0, &its, NULL);
  int64_t c0 = cpu_ms(th);
  while (cpu_ms(th) - c0 < 100)
    usleep(10000);
  timer_delete(t);
}

static long samples;
static void count(void *arg, const cprof__cpu_sample_t *s) { samples++; }

static cprof__unwinder_t how;
static void with_profile(pthread_t th) {
  samples = 0;
  CHECK_EQ_INT(cprof__cpu_start(1000, how), 0);
  int64_t c0 = cpu_ms(th);
  for (int i = 0; i < 2000 && cpu_ms(th) - c0 < 300; i++) {
    usleep(10000);
    cprof__cpu_track_threads();
    cprof__cpu_drain(count, NULL);
  }
  cprof__cpu_stop(count, NULL);
  CHECK(samples >= 50);
}

static void with_captures(pthread_t th) {
  for (int k = 0; k < 50; k++) {
    cprof__thread_dump_t d;
    if (cprof__threads_capture(how, 1000, &d) == 0)
      cprof__threads_dump_free(&d);
  }
}

/* One unwinder, in a process of its own so that its walks start with a
 * cold rule cache: the deepest path is a miss. */
static int measure_unwinder(long kernel, const char *name) {
  check_failures = 0;
  long prof = measure(with_profile);
  long capture = measure(with_captures);
  fprintf(stderr,
          "%s: SIGPROF handler %ld bytes (%ld beyond the kernel's frame); capture handler %ld "
          "(%ld beyond)\n",
          name, prof, prof - kernel, capture, capture - kernel);
  CHECK(prof > kernel);
  CHECK(prof - kernel <= CPROF_HANDLER_STACK_BOUND);
  CHECK(capture > kernel);
  CHECK(capture - kernel <= CPROF_HANDLER_STACK_BOUND);
  /* cprof's stacks hold the kernel's frame and our handlers, besides the
   * room they keep for a handler of the program's. */
  CHECK((long)(cprof__altstack_size() - CPROF_ALTSTACK_PROGRAM_ROOM) >= prof);
  fflush(stderr);
  return check_failures ? 1 : 0;
}

int main(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return check_skip("test_handler_stack", "sanitizers change every frame's size");
#endif
  long kernel = measure(with_nothing);
  fprintf(stderr,
          "a handler that does nothing: %ld bytes of its alternate stack (AT_MINSIGSTKSZ %lu); "
          "cprof's stacks: %zu bytes\n",
          kernel, getauxval(AT_MINSIGSTKSZ), cprof__altstack_size());
  CHECK(kernel > 0);
  CHECK_EQ_INT(cprof__threads_init(), 0);
  const char *names[2] = {"dwarf", "fp"};
  for (int i = 0; i < 2; i++) {
    how = (cprof__unwinder_t)i;
    fflush(stderr);
    pid_t child = fork();
    if (child == 0)
      _exit(measure_unwinder(kernel, names[i]));
    int status = -1;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return check_result("test_handler_stack");
}
