// cprof-host: -fno-omit-frame-pointer
/* A prefork server's process tree, as Apache prefork, php-fpm or nginx's
 * master and workers make it: a master that forks N workers (no exec) and
 * waits for them (issue 31).
 *
 *   host_prefork N idle|busy [SECONDS]
 *
 * idle: each worker waits in ppoll() on a pipe whose write end only the
 * master holds, and allocates nothing after it has started. busy: each
 * worker loops over worker_compute (CPU bound, about 1 ms a call) and
 * worker_allocate (malloc and free of 32 B, 512 B, 4 KiB and 64 KiB
 * blocks), both noinline so that a profile names them.
 *
 * Workers write nothing to stdout or stderr. Once all N are forked the
 * master writes their pids to stdout, one per line, and flushes. On SIGTERM
 * (or SIGINT) it sends each worker SIGTERM, on which a worker exits 0 (as a
 * server's worker shuts down gracefully), reaps them (SIGKILL for any still
 * there after 5 s) and exits 0. Whatever happens it does the same after
 * SECONDS (default 120), so a test that loses track of it cannot hang; a
 * worker whose master is gone (even killed with SIGKILL) exits too: idle
 * ones see the pipe hang up, busy ones see their parent change. If every worker exits
 * on its own, the master exits 1; usage errors exit 2. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 4096

static volatile sig_atomic_t stopping; /* a worker's SIGTERM */
static volatile unsigned long sink;

static void on_term(int sig) { stopping = 1; }

/* About 1 ms of arithmetic that the compiler cannot drop. */
__attribute__((noinline)) static unsigned long worker_compute(unsigned long seed) {
  unsigned long x = seed | 1;
  for (int i = 0; i < 400000; i++)
    x = x * 6364136223846793005ul + 1442695040888963407ul;
  sink += x;
  return x;
}

/* Replaces one block of each size, writing to it, so that every call
 * mallocs and frees (a pair the compiler could drop if nothing used it). */
__attribute__((noinline)) static void worker_allocate(void *slots[4], unsigned long seed) {
  static const size_t sizes[4] = {32, 512, 4096, 65536};
  for (int i = 0; i < 4; i++) {
    free(slots[i]);
    slots[i] = malloc(sizes[i]);
    if (slots[i]) {
      memset(slots[i], (int)seed, 16);
      sink += ((unsigned char *)slots[i])[seed % 16];
    }
  }
}

static void worker(int busy, int rd, pid_t master, const sigset_t *old) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != master) /* the master died before prctl */
    exit(0);
  if (!busy) {
    /* ppoll unblocks SIGTERM only while it waits, so a SIGTERM that comes
     * between the test of stopping and the wait is not lost. It returns
     * when the master is gone (POLLHUP: every write end is closed). */
    struct pollfd pfd = {.fd = rd, .events = POLLIN};
    while (!stopping && ppoll(&pfd, 1, NULL, old) < 0 && errno == EINTR)
      ;
    exit(0);
  }
  sigprocmask(SIG_SETMASK, old, NULL);
  close(rd);
  void *slots[4] = {NULL, NULL, NULL, NULL};
  for (unsigned long n = (unsigned long)getpid(); !stopping && getppid() == master; n++) {
    worker_compute(n);
    worker_allocate(slots, n);
  }
  for (int i = 0; i < 4; i++)
    free(slots[i]);
  exit(0);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Forgets pid in pids[0..*n) once it is reaped. */
static void forget(pid_t *pids, int *n, pid_t pid) {
  for (int i = 0; i < *n; i++)
    if (pids[i] == pid) {
      pids[i] = pids[--*n];
      return;
    }
}

/* SIGTERM to every worker left, then reaps them: SIGKILL after 5 s. */
static void stop_workers(pid_t *pids, int n) {
  for (int i = 0; i < n; i++)
    kill(pids[i], SIGTERM);
  double kill_at = now() + 5;
  while (n > 0) {
    pid_t pid = waitpid(-1, NULL, WNOHANG);
    if (pid > 0) {
      forget(pids, &n, pid);
      continue;
    }
    if (pid < 0 && errno == ECHILD)
      return;
    if (kill_at > 0 && now() > kill_at) {
      for (int i = 0; i < n; i++)
        kill(pids[i], SIGKILL);
      kill_at = 0;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 0;
  int busy = argc > 2 && strcmp(argv[2], "busy") == 0;
  int seconds = argc > 3 ? atoi(argv[3]) : 120;
  if (argc < 3 || n < 1 || n > MAX_WORKERS || (!busy && strcmp(argv[2], "idle") != 0) ||
      seconds < 1) {
    fprintf(stderr, "usage: %s N idle|busy [SECONDS]  (1 <= N <= %d)\n", argv[0], MAX_WORKERS);
    return 2;
  }
  double deadline = now() + seconds;

  /* The master takes its signals with sigtimedwait: blocked from here on,
   * restored in each worker. */
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, &old);

  int fds[2];
  if (pipe(fds) != 0) {
    perror("pipe");
    return 2;
  }
  static pid_t pids[MAX_WORKERS];
  pid_t master = getpid();
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[1]);
      worker(busy, fds[0], master, &old);
    }
    if (pid < 0) {
      perror("fork");
      stop_workers(pids, i);
      return 2;
    }
    pids[i] = pid;
  }
  close(fds[0]); /* fds[1] stays open until the master exits */
  for (int i = 0; i < n; i++)
    printf("%d\n", (int)pids[i]);
  fflush(stdout);

  int left = n;
  for (;;) {
    double rest = deadline - now();
    if (rest <= 0)
      break;
    struct timespec ts = {(time_t)rest, (long)((rest - (time_t)rest) * 1e9)};
    int sig = sigtimedwait(&set, NULL, &ts);
    if (sig == SIGTERM || sig == SIGINT)
      break;
    if (sig < 0 && errno != EAGAIN && errno != EINTR) {
      perror("sigtimedwait");
      break;
    }
    pid_t pid;
    while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
      forget(pids, &left, pid);
    if (left == 0)
      return 1;
  }
  stop_workers(pids, left);
  return 0;
}
