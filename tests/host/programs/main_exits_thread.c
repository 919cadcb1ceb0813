/* main ends with pthread_exit: the process ends when its last thread does,
 * with exit status 0 and its atexit handlers run. Prints what happened. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void at_exit(void) { puts("atexit handler ran"); }

static char *volatile keep[64]; /* volatile: the compiler may not drop the allocations */

static void *worker(void *arg) {
  for (int i = 0; i < 20000; i++) { /* some allocation, for the heap profile */
    int k = (int)(intptr_t)arg * 32 + i % 32;
    free(keep[k]);
    keep[k] = malloc(64 + (size_t)(i % 512));
    memset(keep[k], i, 64);
  }
  usleep(200 * 1000);
  printf("worker %ld done\n", (long)(intptr_t)arg);
  return NULL;
}

int main(void) {
  atexit(at_exit);
  pthread_t t[2];
  for (long i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
  pthread_detach(t[0]);
  pthread_detach(t[1]);
  printf("main calls pthread_exit\n");
  fflush(stdout);
  pthread_exit(NULL);
}
