/* cprof_do in a program, for labels_do.sh: a thread created inside two
 * nested cprof_do calls (it inherits both levels), a thread that waits
 * inside two nested calls of its own, and one that burns CPU inside one.
 * Prints "ready" when all three are in place. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include <cprof.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

NOINLINE static void wait_forever(void) {
  for (;;)
    pause();
}

NOINLINE static void *inherited_main(void *arg) {
  pthread_setname_np(pthread_self(), "inherited");
  wait_forever();
  return NULL;
}

static void create_inherited(void *arg) {
  pthread_t t;
  pthread_create(&t, NULL, inherited_main, NULL);
}

static void outer(void *arg) {
  static const char *const kv[] = {"step", "pay", NULL};
  cprof_do(kv, create_inherited, NULL);
}

NOINLINE static void nested_wait(void *arg) { wait_forever(); }

static void nested_outer(void *arg) {
  static const char *const kv[] = {"request", "refund", "tenant", "acme", NULL};
  cprof_do(kv, nested_wait, NULL);
}

static void *nested_main(void *arg) {
  pthread_setname_np(pthread_self(), "nested");
  static const char *const kv[] = {"request", "search", NULL};
  cprof_do(kv, nested_outer, NULL);
  return NULL;
}

NOINLINE static void burn(void *arg) {
  for (;;)
    sink = sink * 33 + 1;
}

static void *hot_main(void *arg) {
  pthread_setname_np(pthread_self(), "hot");
  static const char *const kv[] = {"work", "hot", NULL};
  cprof_do(kv, burn, NULL);
  return NULL;
}

int main(void) {
  cprof_start(NULL);
  static const char *const kv[] = {"request", "checkout", NULL};
  if (cprof_do(kv, outer, NULL) != 0)
    return 1;
  pthread_t n, h;
  pthread_create(&n, NULL, nested_main, NULL);
  pthread_create(&h, NULL, hot_main, NULL);
  sleep(1);
  printf("ready\n");
  fflush(stdout);
  wait_forever();
}
