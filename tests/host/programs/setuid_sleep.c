/* A daemon's privilege drop: started as root, it calls setgid and setuid
 * (65534) and then sleeps, in sleep(3) on the main thread and nanosleep on
 * another. After the drop the process is no longer dumpable, so
 * /proc/self/task/TID/syscall belongs to root and cannot be read
 * (proc(5)); neither sleep may end early because of that.
 *
 * Prints "ready" once both are about to sleep. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT 5

static int sleeping;
static char thread_result[64];

__attribute__((noinline)) static void *nap_in_thread(void *arg) {
  struct timespec ts = {WAIT, 0};
  __atomic_store_n(&sleeping, 1, __ATOMIC_SEQ_CST);
  int rc = nanosleep(&ts, NULL);
  snprintf(thread_result, sizeof thread_result, "%s", rc ? strerrorname_np(errno) : "0");
  return NULL;
}

__attribute__((noinline)) static unsigned sleep_in_main(void) { return sleep(WAIT); }

int main(void) {
  if (getuid() != 0) {
    puts("skipped: not root");
    return 0;
  }
  int g = setgid(65534), u = setuid(65534);
  printf("setgid: %d, setuid: %d, uid now %d\n", g, u, (int)getuid());
  pthread_t t;
  pthread_create(&t, NULL, nap_in_thread, NULL);
  while (!__atomic_load_n(&sleeping, __ATOMIC_SEQ_CST))
    usleep(1000);
  puts("ready");
  fflush(stdout);
  unsigned left = sleep_in_main();
  pthread_join(t, NULL);
  printf("sleep left: %u\n", left);
  printf("nanosleep in a thread: %s\n", thread_result);
  return 0;
}
