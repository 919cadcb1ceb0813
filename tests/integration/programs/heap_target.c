/* A program whose heap is known, for tests/integration/heap.sh. Requested
 * bytes, by the function that asked for them:
 *
 *   leak_big      3 MiB in use: 96 blocks of 32 KiB, never freed
 *   leak_small    1 MiB in use: 1024 blocks of 1 KiB, never freed
 *   churn         8 MiB allocated in 4 KiB blocks, each freed at once
 *   realloc_grow  2 MiB in use: 32 blocks that realloc_start made 4 KiB
 *                 long, grown to 64 KiB (realloc_start keeps nothing)
 *   aligned_site  512 KiB in use through posix_memalign, aligned_alloc,
 *                 memalign and valloc (2 blocks of 64 KiB each)
 *   calloc_site   512 KiB in use: 8 zeroed blocks of 64 KiB
 *   thread_alloc  1 MiB in use: 8 threads that keep 128 KiB each and exit
 *
 * Then it prints "ready" and waits. On SIGUSR1, late_alloc keeps 2 MiB
 * more (256 blocks of 8 KiB) and it prints "late done". With --fork it
 * also forks a child that allocates and frees under the sampler and exits,
 * and prints "child ok" when the child did. Functions are noinline so each
 * is a frame of its own. */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink; /* every block is stored somewhere: never optimised away */
static void *kept[8192];
static int nkept;

static void keep(void *p) {
  if (!p)
    abort();
  memset(p, 1, 1);
  kept[nkept++] = p;
}

NOINLINE static void leak_big(void) {
  for (int i = 0; i < 96; i++)
    keep(malloc(32 << 10));
}

NOINLINE static void leak_small(void) {
  for (int i = 0; i < 1024; i++)
    keep(malloc(1 << 10));
}

NOINLINE static void churn(void) {
  for (int i = 0; i < 2048; i++) {
    sink = malloc(4 << 10);
    free(sink);
  }
}

NOINLINE static void *realloc_start(void) { return malloc(4096); }

NOINLINE static void realloc_grow(void) {
  for (int i = 0; i < 32; i++) {
    void *p = realloc_start();
    keep(realloc(p, 64 << 10));
  }
}

NOINLINE static void aligned_site(void) {
  for (int i = 0; i < 2; i++) {
    void *p;
    if (posix_memalign(&p, 64, 64 << 10) != 0)
      abort();
    keep(p);
    keep(aligned_alloc(4096, 64 << 10));
    keep(memalign(256, 64 << 10));
    keep(valloc(64 << 10));
  }
}

NOINLINE static void calloc_site(void) {
  for (int i = 0; i < 8; i++)
    keep(calloc(64, 1 << 10));
}

NOINLINE static void *thread_alloc(void *arg) {
  void **mine = arg;
  for (int i = 0; i < 8; i++)
    mine[i] = malloc(16 << 10);
  return NULL;
}

static void *thread_blocks[8][8];

static void threads(void) {
  for (int i = 0; i < 8; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, thread_alloc, thread_blocks[i]) != 0)
      abort();
    pthread_join(t, NULL);
  }
}

NOINLINE static void late_alloc(void) {
  for (int i = 0; i < 256; i++)
    keep(malloc(8 << 10));
}

static volatile sig_atomic_t late;
static void on_usr1(int sig) { late = 1; }

/* The child runs with the table it inherited: allocations and frees of
 * blocks sampled before and after the fork. */
static int fork_child(void) {
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    churn();
    leak_small();
    for (int i = 0; i < nkept; i++)
      free(kept[i]);
    _exit(0);
  }
  int st;
  return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  signal(SIGUSR1, on_usr1);
  leak_big();
  leak_small();
  churn();
  realloc_grow();
  aligned_site();
  calloc_site();
  threads();
  if (argc > 1 && strcmp(argv[1], "--fork") == 0)
    puts(fork_child() == 0 ? "child ok" : "child failed");
  puts("ready");
  fflush(stdout);
  for (;;) {
    if (late) {
      late = 0;
      late_alloc();
      puts("late done");
      fflush(stdout);
    }
    usleep(20000);
  }
}
