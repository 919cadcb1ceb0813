/* fork(2) during a CPU profile, as a busy program does it: threads in the
 * SIGPROF handler at 1000 Hz, another holding the profiler's lock as it
 * drains, and children that start and stop a profile of their own. Each
 * child must finish: it once inherited the count of handlers in flight on
 * the parent's other threads, which never leave in the child, and waited
 * for them for ever when it stopped its profile; and it re-initialised a
 * lock another thread might hold (undefined by POSIX), where now the fork
 * handlers take it around the fork. A child that hangs is ended by its
 * alarm and counted. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sample/cpu.h"

#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#ifdef __SANITIZE_THREAD__
#define FORKS 60 /* ThreadSanitizer makes each fork of a threaded process slow */
#else
#define FORKS 400
#endif
#define BURNERS 3

static int stop;
static __thread volatile uint64_t sink;

/* Deep stacks without frame pointers: each handler walks 60 frames. */
NOFP static uint64_t descend(int d) {
  volatile char pad[16];
  pad[0] = (char)d;
  uint64_t x = sink;
  if (d == 0)
    for (int i = 0; i < 100000; i++)
      x = x * 6364136223846793005ULL + 1;
  else
    x += descend(d - 1);
  return x + (uint64_t)pad[0];
}

static void *burner(void *arg) {
  while (!LOAD(stop))
    sink = descend(60);
  return NULL;
}

static void discard(void *arg, const cprof__cpu_sample_t *s) {}

static void *drainer(void *arg) {
  while (!LOAD(stop)) {
    cprof__cpu_track_threads();
    cprof__cpu_drain(discard, NULL);
    struct timespec ts = {0, 200 * 1000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

/* What start.c's fork handler does in a program that called cprof_start. */
static void child_handler(void) { cprof__cpu_atfork_child(); }

int main(void) {
  pthread_atfork(NULL, NULL, child_handler);
  CHECK_EQ_INT(cprof__cpu_start(1000, CPROF_UNWIND_DWARF), 0);
  pthread_t th[BURNERS + 1];
  for (int i = 0; i < BURNERS; i++)
    pthread_create(&th[i], NULL, burner, NULL);
  pthread_create(&th[BURNERS], NULL, drainer, NULL);
  int hung = 0, failed = 0;
  for (int i = 0; i < FORKS; i++) {
    pid_t child = fork();
    if (child == 0) {
      alarm(10);
      int rc = cprof__cpu_start(1000, CPROF_UNWIND_DWARF);
      for (int k = 0; k < 200000; k++)
        sink = sink * 6364136223846793005ULL + 1;
      cprof__cpu_stop(discard, NULL);
      _exit(rc == 0 ? 0 : 1);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child)
      failed++;
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
      hung++;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      failed++;
  }
  STORE(stop, 1);
  for (int i = 0; i <= BURNERS; i++)
    pthread_join(th[i], NULL);
  cprof__cpu_stop(discard, NULL);
  fprintf(stderr, "%d forks: %d children hung, %d failed\n", FORKS, hung, failed);
  CHECK_EQ_INT(hung, 0);
  CHECK_EQ_INT(failed, 0);
  return check_result("test_cpu_fork");
}
