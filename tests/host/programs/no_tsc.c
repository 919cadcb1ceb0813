/* Threads without the time stamp counter: one in seccomp's strict mode
 * (which, on x86, also disables the TSC: rdtsc then raises SIGSEGV, and
 * every system call but read, write, _exit and rt_sigreturn kills it), one
 * that turns the TSC off with prctl(PR_SET_TSC, PR_TSC_SIGSEGV). Both
 * compute until the main thread tells them to stop, after argv[1] seconds
 * (default 4). The strict one leaves by a raw exit system call, the only
 * way out it has (the kernel still clears its tid: pthread_join returns);
 * the other returns as threads do. Meanwhile, every 50 ms, the main thread
 * starts a short-lived thread that turns the TSC off, computes a little,
 * waits for a mutex the main thread holds (a contended lock, which the
 * mutex and block profiles time, and a trace records) and returns (a
 * thread's exit, which a trace records too).
 *
 * Prints "ready" once both compute, then what each did. A thread that was
 * killed never says it finished, and a SIGSEGV ends the whole program. */
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static int stop, strict_up, notsc_up, strict_done, notsc_done;
static int strict_err, notsc_err;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static int brief_started, brief_done, brief_err;

__attribute__((noinline)) static uint64_t compute(uint64_t x) {
  for (int i = 0; i < 100000; i++)
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

static void *strict_worker(void *arg) {
  (void)arg;
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0) != 0) {
    STORE(strict_err, 1);
    STORE(strict_up, 1);
    return NULL;
  }
  /* From here on: no clock, no allocation, only atomics and computing. */
  STORE(strict_up, 1);
  uint64_t x = 1;
  unsigned long rounds = 0;
  while (!LOAD(stop)) {
    x = compute(x);
    rounds++;
  }
  STORE(strict_done, rounds > 0 && x != 0 ? 1 : 2);
  syscall(SYS_exit, 0);
  return NULL;
}

static void *notsc_worker(void *arg) {
  (void)arg;
  if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) {
    STORE(notsc_err, 1);
    STORE(notsc_up, 1);
    return NULL;
  }
  STORE(notsc_up, 1);
  uint64_t x = 2;
  unsigned long rounds = 0;
  while (!LOAD(stop)) {
    x = compute(x);
    rounds++;
  }
  STORE(notsc_done, rounds > 0 && x != 0 ? 1 : 2);
  return NULL;
}

static void *brief_worker(void *arg) {
  (void)arg;
  if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) {
    __atomic_add_fetch(&brief_err, 1, __ATOMIC_RELAXED);
    return NULL;
  }
  __atomic_add_fetch(&brief_started, 1, __ATOMIC_RELEASE);
  uint64_t x = compute(3);
  pthread_mutex_lock(&held); /* the main thread holds it: a wait */
  pthread_mutex_unlock(&held);
  if (x != 0)
    __atomic_add_fetch(&brief_done, 1, __ATOMIC_RELAXED);
  return NULL;
}

/* One short-lived thread: started while the main thread holds `held`,
 * which it lets go once the thread has turned its TSC off. */
static void brief_one(void) {
  pthread_t t;
  int before = LOAD(brief_started);
  pthread_mutex_lock(&held);
  if (pthread_create(&t, NULL, brief_worker, NULL) != 0) {
    pthread_mutex_unlock(&held);
    __atomic_add_fetch(&brief_err, 1, __ATOMIC_RELAXED);
    return;
  }
  while (LOAD(brief_started) == before && !LOAD(brief_err))
    usleep(1000);
  usleep(2000); /* it computes, then waits for the mutex */
  pthread_mutex_unlock(&held);
  pthread_join(t, NULL);
}

int main(int argc, char **argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 4;
  pthread_t a, b;
  if (pthread_create(&a, NULL, strict_worker, NULL) != 0 ||
      pthread_create(&b, NULL, notsc_worker, NULL) != 0) {
    puts("pthread_create failed");
    return 1;
  }
  while (!LOAD(strict_up) || !LOAD(notsc_up))
    usleep(1000);
  if (LOAD(strict_err) || LOAD(notsc_err)) {
    printf("cannot disable the TSC here: strict %d, prctl %d\n", strict_err, notsc_err);
    return 2;
  }
  puts("ready");
  fflush(stdout);
  int briefs = 0;
  for (struct timespec end, now = {0, 0}; briefs == 0 || now.tv_sec < end.tv_sec ||
                                          (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec);
       briefs++) {
    if (briefs == 0) {
      clock_gettime(CLOCK_MONOTONIC, &end);
      end.tv_sec += seconds;
    }
    brief_one();
    usleep(50000);
    clock_gettime(CLOCK_MONOTONIC, &now);
  }
  STORE(stop, 1);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("strict-mode thread: %s\n", LOAD(strict_done) == 1 ? "ran to the end" : "did not finish");
  printf("thread without the TSC: %s\n",
         LOAD(notsc_done) == 1 ? "ran to the end" : "did not finish");
  const char *briefly = LOAD(brief_err)              ? "could not run"
                        : LOAD(brief_done) == briefs ? "all ran to the end"
                                                     : "some did not finish";
  printf("short-lived threads without the TSC: %s\n", briefly);
  return 0;
}
