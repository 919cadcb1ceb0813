/* A daemon that hides itself: started as root, it drops to uid and gid
 * 65534 and sets PR_SET_DUMPABLE to 0, as ssh-agent and many servers do.
 * /proc/self/auxv, /proc/self/mem and /proc/self/task/TID/syscall then
 * belong to root (proc(5)) and cannot be read; /proc/self/maps still can.
 *
 * Then it works in functions with known names: one thread sorts, without
 * end, in libc's qsort with a comparator of its own (spin_in_qsort ->
 * qsort -> compare_ints), another sleeps in nap_in_thread, and main waits
 * in pthread_join. Prints "ready" once both threads run. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define N 4096

static int started;

__attribute__((noinline)) static int compare_ints(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

__attribute__((noinline)) static void *spin_in_qsort(void *arg) {
  static int v[N];
  unsigned seed = 1;
  __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
  for (;;) {
    for (int i = 0; i < N; i++)
      v[i] = rand_r(&seed);
    qsort(v, N, sizeof v[0], compare_ints);
  }
  return NULL;
}

__attribute__((noinline)) static void *nap_in_thread(void *arg) {
  __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
  for (;;) {
    struct timespec ts = {60, 0};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

int main(void) {
  if (getuid() != 0) {
    puts("skipped: not root");
    return 0;
  }
  if (setgid(65534) != 0 || setuid(65534) != 0 || prctl(PR_SET_DUMPABLE, 0) != 0) {
    perror("dropping privileges");
    return 1;
  }
  printf("uid %d, dumpable %d\n", (int)getuid(), prctl(PR_GET_DUMPABLE));
  pthread_t spin, nap;
  pthread_create(&spin, NULL, spin_in_qsort, NULL);
  pthread_create(&nap, NULL, nap_in_thread, NULL);
  while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 2)
    usleep(1000);
  puts("ready");
  fflush(stdout);
  pthread_join(spin, NULL);
  return 0;
}
