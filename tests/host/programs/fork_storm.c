/* Threads that start processes while they allocate and fight over a lock:
 * the shape behind issue 11's first deadlock (a thread in fork() holds
 * malloc's arena locks while the lock wrappers' slow path waits in malloc).
 *
 *   host_fork_storm fork|bare|spawn|vfork [THREADS [CHILDREN]]
 *
 * Each of THREADS threads (default 4) starts CHILDREN/THREADS children
 * (default 600 in all), and between two it allocates blocks of mixed sizes
 * and alignments, and takes a mutex every thread wants, allocating while it
 * holds it. `fork`: half the children exec /bin/true, the other half
 * allocate, lock and unlock a mutex and _exit. `spawn` (posix_spawn) and
 * `vfork` exec /bin/true each time. With `fork`, the program also has fork
 * handlers of its own that take the contended mutex, as programs do to fork
 * with it in a known state; `bare` forks as `fork` does without them (and
 * its children do not touch that mutex). Children run with an empty environment: what is tested is
 * this process, not its children's own profilers.
 *
 * Prints one line with the counts and exits 0 when every child exited 0. */
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum mode { FORK, SPAWN, VFORK };
static enum mode mode;
static int handlers; /* the program's own pthread_atfork handlers */
static int per_thread;
static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t counts = PTHREAD_MUTEX_INITIALIZER;
static long ok, failed;
static volatile unsigned long sink;

static char *const child_argv[] = {"/bin/true", NULL};
static char *const child_env[] = {NULL};

/* Blocks of many sizes, some page-aligned (the heap sampler keeps those in
 * a table under its lock), freed in another order. */
static void churn(unsigned seed) {
  void *p[16];
  for (int i = 0; i < 16; i++) {
    size_t n = 16 + (seed * 2654435761u >> (i % 20)) % 8192;
    if (i % 5 == 0) {
      if (posix_memalign(&p[i], 4096, n) != 0)
        p[i] = NULL;
    } else {
      p[i] = malloc(n);
    }
    if (p[i])
      memset(p[i], i, 16);
    seed = seed * 1103515245 + 12345;
  }
  for (int i = 15; i >= 0; i -= 2)
    free(p[i]);
  for (int i = 0; i < 16; i += 2)
    free(p[i]);
}

/* Held long enough, allocating inside, that the others wait for it. */
static void hold(unsigned seed) {
  pthread_mutex_lock(&contended);
  churn(seed);
  for (int i = 0; i < 2000; i++)
    sink += (unsigned long)i * seed;
  pthread_mutex_unlock(&contended);
}

/* The forked child that does not exec: allocates and locks, as the
 * parent's locks and allocator must be usable there. */
static void child_work(void) {
  static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&m);
  churn(7);
  pthread_mutex_unlock(&m);
  if (handlers) { /* else another thread may have held it at the fork */
    pthread_mutex_lock(&contended);
    pthread_mutex_unlock(&contended);
  }
  _exit(0);
}

static pid_t start_child(int i) {
  pid_t pid = -1;
  switch (mode) {
  case FORK:
    pid = fork();
    if (pid == 0) {
      if (i % 2)
        execve(child_argv[0], child_argv, child_env);
      else
        child_work();
      _exit(127);
    }
    break;
  case VFORK:
    pid = vfork();
    if (pid == 0) {
      execve(child_argv[0], child_argv, child_env);
      _exit(127);
    }
    break;
  case SPAWN:
    if (posix_spawn(&pid, child_argv[0], NULL, NULL, child_argv, child_env) != 0)
      pid = -1;
    break;
  }
  return pid;
}

static void *thread(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  for (int i = 0; i < per_thread; i++) {
    churn(seed + (unsigned)i);
    hold(seed ^ (unsigned)i);
    pid_t pid = start_child(i);
    int status = -1;
    int good = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
               WEXITSTATUS(status) == 0;
    pthread_mutex_lock(&counts);
    good ? ok++ : failed++;
    pthread_mutex_unlock(&counts);
  }
  return NULL;
}

static void prepare(void) { pthread_mutex_lock(&contended); }
static void release(void) { pthread_mutex_unlock(&contended); }

int main(int argc, char **argv) {
  const char *m = argc > 1 ? argv[1] : "";
  if (!strcmp(m, "fork") || !strcmp(m, "bare")) {
    mode = FORK;
  } else if (!strcmp(m, "spawn") || !strcmp(m, "vfork")) {
    mode = m[0] == 's' ? SPAWN : VFORK;
  } else {
    fprintf(stderr, "usage: %s fork|bare|spawn|vfork [THREADS [CHILDREN]]\n", argv[0]);
    return 2;
  }
  handlers = !strcmp(m, "fork");
  int threads = argc > 2 ? atoi(argv[2]) : 4;
  int children = argc > 3 ? atoi(argv[3]) : 600;
  if (threads < 1 || threads > 64 || children < threads)
    return 2;
  per_thread = children / threads;
  if (handlers)
    pthread_atfork(prepare, release, release);
  pthread_t t[64];
  for (int i = 0; i < threads; i++)
    if (pthread_create(&t[i], NULL, thread, (void *)(uintptr_t)(i * 7919 + 1)) != 0)
      return 3;
  for (int i = 0; i < threads; i++)
    pthread_join(t[i], NULL);
  printf("%s: %d threads, %ld children exited 0, %ld did not\n", argv[1], threads, ok, failed);
  return failed != 0;
}
