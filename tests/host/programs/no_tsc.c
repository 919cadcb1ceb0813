/* Threads without the time stamp counter: one in seccomp's strict mode
 * (which, on x86, also disables the TSC: rdtsc then raises SIGSEGV, and
 * every system call but read, write, _exit and rt_sigreturn kills it), one
 * that turns the TSC off with prctl(PR_SET_TSC, PR_TSC_SIGSEGV). Both
 * compute until the main thread tells them to stop, after argv[1] seconds
 * (default 4). The strict one leaves by a raw exit system call, the only
 * way out it has (the kernel still clears its tid: pthread_join returns);
 * the other returns as threads do.
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
  struct timespec ts = {seconds, 0};
  while (nanosleep(&ts, &ts) != 0)
    ;
  STORE(stop, 1);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("strict-mode thread: %s\n", LOAD(strict_done) == 1 ? "ran to the end" : "did not finish");
  printf("thread without the TSC: %s\n",
         LOAD(notsc_done) == 1 ? "ran to the end" : "did not finish");
  return 0;
}
