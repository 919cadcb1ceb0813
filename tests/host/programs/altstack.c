/* A program whose own signal handler runs on an alternate signal stack
 * (sigaltstack(2), SA_ONSTACK) and is busy in CPU there: a profiler's
 * signal lands on the alternate stack, below the program's handler. Two
 * threads, each with its own 8 KiB alternate stack (SIGSTKSZ), raise
 * SIGUSR1 at themselves ROUNDS times; the handler holds 2 KiB of its stack
 * and spins. Prints each thread's sum: the same with cprof and without.
 *
 *   altstack [ITERATIONS]   (per handler call, default 20 million) */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 8
#define ALT_SIZE 8192

static long iterations = 20000000;
static __thread uint64_t sum;

__attribute__((noinline)) static uint64_t spin(volatile char *buf) {
  uint64_t x = (uint64_t)buf[0];
  for (long i = 0; i < iterations; i++)
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

static void on_usr1(int sig) {
  volatile char buf[2048];
  for (int i = 0; i < (int)sizeof buf; i += 64)
    buf[i] = (char)i;
  sum += spin(buf) + (uint64_t)buf[1024];
}

static void *thread(void *arg) {
  stack_t ss = {.ss_sp = malloc(ALT_SIZE), .ss_size = ALT_SIZE, .ss_flags = 0};
  if (!ss.ss_sp || sigaltstack(&ss, NULL) != 0)
    abort();
  for (int i = 0; i < ROUNDS; i++)
    raise(SIGUSR1);
  *(uint64_t *)arg = sum;
  /* Off the alternate stack before it is freed. */
  stack_t off = {.ss_flags = SS_DISABLE};
  sigaltstack(&off, NULL);
  free(ss.ss_sp);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1)
    iterations = atol(argv[1]);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  uint64_t sums[2];
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&th[i], NULL, thread, &sums[i]) != 0)
      return 1;
  for (int i = 0; i < 2; i++) {
    pthread_join(th[i], NULL);
    printf("thread %d: %016llx\n", i, (unsigned long long)sums[i]);
  }
  return 0;
}
