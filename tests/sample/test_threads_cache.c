/* The repeated capture's cache (threads.h, the wall profile's): a thread
 * asleep where it was at the last capture keeps its stack (reused, the
 * same frames) and its name; a thread that moved to another call is
 * unwound afresh; a running one is asked every time; the call a thread
 * waits in is known; threads that exit between captures drop out; and the
 * descriptors the cache keeps open are all closed when it is freed. */
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stack_has.h"
#include "sample/threads.h"
#include "symbol/symbolize.h"

#define NOINLINE __attribute__((noinline))
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static int stop, pipe_a[2];
static pid_t sleeper_tid, spinner_tid, mover_tid, leaver_tid;
static __thread volatile uint64_t sink;

NOINLINE void cache_sleep(void) {
  struct timespec ts = {60, 0};
  nanosleep(&ts, NULL);
}
static void *sleeper(void *arg) {
  (void)arg;
  STORE(sleeper_tid, gettid());
  cache_sleep();
  return NULL;
}

NOINLINE void cache_spin(void) {
  while (!LOAD(stop)) {
    sink = sink * 33 + 1;
#ifdef __SANITIZE_THREAD__
    usleep(10); /* TSan delivers signals at intercepted calls only */
#endif
  }
}
static void *spinner(void *arg) {
  (void)arg;
  STORE(spinner_tid, gettid());
  cache_spin();
  return NULL;
}

/* First in read(2) on pipe_a (place A), then, once a byte comes, in poll(2)
 * with no descriptors (place B). */
NOINLINE void cache_place_a(void) {
  char c;
  if (read(pipe_a[0], &c, 1) != 1)
    abort();
}
#ifdef SYS_poll
#define POLL_NR SYS_poll
#else /* aarch64 has no poll(2): glibc's poll() calls ppoll */
#define POLL_NR SYS_ppoll
#endif
NOINLINE void cache_place_b(void) { poll(NULL, 0, 60000); }
static void *mover(void *arg) {
  (void)arg;
  STORE(mover_tid, gettid());
  cache_place_a();
  cache_place_b();
  return NULL;
}

static void *leaver(void *arg) {
  (void)arg;
  STORE(leaver_tid, gettid());
  while (!LOAD(stop))
    usleep(1000);
  return NULL;
}

static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  while (d && readdir(d))
    n++;
  if (d)
    closedir(d);
  return n;
}

/* The number of the call tid waits in now, from /proc; -1 when running. */
static long syscall_now(pid_t tid) {
  char path[64], buf[256] = "";
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -2;
  if (!fgets(buf, sizeof buf, f))
    buf[0] = '\0';
  fclose(f);
  return strncmp(buf, "running", 7) == 0 ? -1 : strtol(buf, NULL, 10);
}

static void wait_in(pid_t tid, long nr) {
  for (int i = 0; i < 2000 && syscall_now(tid) != nr; i++)
    usleep(1000);
}

int main(void) {
  int fds_before = open_fds();
  CHECK_EQ_INT(pipe(pipe_a), 0);
  pthread_t t[4];
  pthread_create(&t[0], NULL, sleeper, NULL);
  pthread_create(&t[1], NULL, spinner, NULL);
  pthread_create(&t[2], NULL, mover, NULL);
  pthread_create(&t[3], NULL, leaver, NULL);
  while (!LOAD(sleeper_tid) || !LOAD(spinner_tid) || !LOAD(mover_tid) || !LOAD(leaver_tid))
    usleep(1000);
  wait_in(sleeper_tid, SYS_clock_nanosleep);
  wait_in(mover_tid, SYS_read);

  cprof__threads_cache_t *c = cprof__threads_cache_new();
  CHECK(c != NULL);
  cprof__thread_dump_t d1, d2, d3;
  CHECK_EQ_INT(cprof__threads_capture_cached(CPROF_UNWIND_DWARF, 1000, c, &d1), 0);
  CHECK_EQ_INT(cprof__threads_capture_cached(CPROF_UNWIND_DWARF, 1000, c, &d2), 0);

  /* The sleeper: unwound at the first capture, reused at the second, the
   * same frames; its call is clock_nanosleep. */
  const cprof__thread_stack_t *s1 = cprof__threads_dump_find(&d1, sleeper_tid), *s2 = cprof__threads_dump_find(&d2, sleeper_tid);
  CHECK(s1 && s2);
  if (s1 && s2) {
    CHECK_EQ_INT(s1->reused, 0);
    CHECK_EQ_INT(s2->reused, 1);
    CHECK_EQ_INT(s2->depth, s1->depth);
    CHECK(s1->depth > 0 && memcmp(s1->pcs, s2->pcs, (size_t)s1->depth * sizeof *s1->pcs) == 0);
    CHECK(stack_has(s2, "cache_sleep"));
    CHECK_EQ_INT(s2->syscall_nr, SYS_clock_nanosleep);
    CHECK_EQ_INT(s2->state, 'S');
    CHECK_EQ_STR(s2->name, s1->name);
  }
  /* The spinner runs: asked each time, never reused, no call. (Under
   * ThreadSanitizer it pauses in usleep at every turn, so it is as often
   * asleep as running: only that it is there.) */
  const cprof__thread_stack_t *p2 = cprof__threads_dump_find(&d2, spinner_tid);
  CHECK(p2 != NULL);
#ifndef __SANITIZE_THREAD__
  CHECK(p2 && p2->reused == 0 && p2->syscall_nr == -1 && p2->state == 'R');
  CHECK(stack_has(p2, "cache_spin"));
#endif
  /* The mover, still in read at place A: reused. */
  const cprof__thread_stack_t *m2 = cprof__threads_dump_find(&d2, mover_tid);
  CHECK(m2 && m2->reused == 1 && m2->syscall_nr == SYS_read);
  CHECK(stack_has(m2, "cache_place_a"));

  /* The mover moves to place B, and the leaver ends. */
  CHECK_EQ_INT(write(pipe_a[1], "x", 1), 1);
  wait_in(mover_tid, POLL_NR);
  STORE(stop, 1);
  pthread_join(t[3], NULL);
  pthread_join(t[1], NULL);
  CHECK_EQ_INT(cprof__threads_capture_cached(CPROF_UNWIND_DWARF, 1000, c, &d3), 0);
  const cprof__thread_stack_t *m3 = cprof__threads_dump_find(&d3, mover_tid);
  CHECK(m3 && m3->reused == 0 && m3->syscall_nr == POLL_NR);
  CHECK(stack_has(m3, "cache_place_b") && !stack_has(m3, "cache_place_a"));
  CHECK(cprof__threads_dump_find(&d3, leaver_tid) == NULL);
  CHECK(cprof__threads_dump_find(&d3, spinner_tid) == NULL);
  const cprof__thread_stack_t *s3 = cprof__threads_dump_find(&d3, sleeper_tid);
  CHECK(s3 && s3->reused == 1);

  cprof__threads_dump_free(&d1);
  cprof__threads_dump_free(&d2);
  cprof__threads_dump_free(&d3);
  CHECK(open_fds() > fds_before + 2); /* the cache holds some: the syscall files, the task dir */
  cprof__threads_cache_free(c);
  CHECK_EQ_INT(open_fds(), fds_before + 2); /* the pipe's two, no more */

  pthread_cancel(t[0]);
  pthread_cancel(t[2]);
  pthread_join(t[0], NULL);
  pthread_join(t[2], NULL);
  return check_result("sample/test_threads_cache");
}
