/* A program for tests/ui/ui_browser.sh, run under LD_PRELOAD: a thread
 * burning CPU in hot_spin, and a thread whose heap grows for as long as the
 * program runs (grow_heap keeps 16 KiB every 10 ms, up to 64 MiB), so that
 * any two heap snapshots a few seconds apart differ in grow_heap. Prints
 * "ready" once both run. Functions are noinline: each a frame of its own. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;
static void *volatile kept[4096];

NOINLINE static void hot_spin(void) {
  for (unsigned long i = 0; i < 50000000; i++)
    sink = sink + i;
}

static void *burner(void *arg) {
  (void)arg;
  for (;;)
    hot_spin();
  return NULL;
}

NOINLINE static void grow_heap(int i) {
  kept[i] = malloc(16384);
  memset(kept[i], 1, 16384);
}

static void *grower(void *arg) {
  (void)arg;
  for (int i = 0; i < 4096; i++) {
    grow_heap(i);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  for (;;)
    pause();
  return NULL;
}

int main(void) {
  pthread_t a, b;
  pthread_create(&a, NULL, burner, NULL);
  pthread_create(&b, NULL, grower, NULL);
  printf("ready\n");
  fflush(stdout);
  pthread_join(a, NULL);
  return 0;
}
