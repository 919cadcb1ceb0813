/* A program that takes SIGPROF for itself the patient way: it blocks the
 * signal and reads it, with signalfd(2) or sigtimedwait(2), while it burns
 * CPU. It counts what it reads and prints the count; under cprof it must
 * read exactly what it reads without (none of cprof's timer ticks).
 *
 *   sigprof_wait signalfd|sigwaitinfo [SECONDS]
 *     main blocks SIGPROF, then a thread started with it blocked and a
 *     thread that blocks it only after 200 ms of CPU (when a whole-run
 *     profile has long given it a timer) both read for SECONDS (default 2)
 *     while burning CPU: "received 0".
 *   sigprof_wait kill N
 *     main blocks SIGPROF, sends itself N with kill(2) and reads each
 *     back: "received N". */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

static int use_signalfd;
static double seconds = 2;
static volatile uint64_t sink;

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void burn(int n) {
  for (int i = 0; i < n; i++)
    sink = sink * 6364136223846793005ULL + 1;
}

static void block_sigprof(void) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPROF);
  if (pthread_sigmask(SIG_BLOCK, &s, NULL) != 0)
    abort();
}

/* Polls for SIGPROF without waiting: one read of the signalfd, or one
 * sigtimedwait with a zero timeout. Returns how many it took. */
static int poll_sigprof(int fd) {
  if (use_signalfd) {
    struct signalfd_siginfo si;
    return read(fd, &si, sizeof si) == (ssize_t)sizeof si;
  }
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPROF);
  struct timespec zero = {0, 0};
  siginfo_t si;
  return sigtimedwait(&s, &si, &zero) == SIGPROF;
}

static int open_fd(void) {
  if (!use_signalfd)
    return -1;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPROF);
  int fd = signalfd(-1, &s, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0)
    abort();
  return fd;
}

/* Burns CPU for `seconds` of wall time, reading SIGPROF all along. */
static long read_while_burning(void) {
  int fd = open_fd();
  long got = 0;
  double end = wall_now() + seconds;
  while (wall_now() < end) {
    burn(20000);
    got += poll_sigprof(fd);
  }
  if (fd >= 0)
    close(fd);
  return got;
}

static void *born_blocked(void *arg) {
  *(long *)arg = read_while_burning();
  return NULL;
}

static void *blocks_later(void *arg) {
  /* 200 ms of CPU with SIGPROF open (a profiler's ticks are its own
   * business then), then blocked. */
  double start = cpu_now();
  while (cpu_now() - start < 0.2)
    burn(20000);
  block_sigprof();
  *(long *)arg = read_while_burning();
  return NULL;
}

static int waiting(void) {
  pthread_t later;
  long got_later = 0, got_born = 0;
  /* Started before main blocks the signal: inherits it open. */
  if (pthread_create(&later, NULL, blocks_later, &got_later) != 0)
    return 1;
  block_sigprof();
  pthread_t born;
  if (pthread_create(&born, NULL, born_blocked, &got_born) != 0)
    return 1;
  long got_main = read_while_burning();
  pthread_join(born, NULL);
  pthread_join(later, NULL);
  printf("received %ld\n", got_main + got_born + got_later);
  return 0;
}

static int sending(int n) {
  block_sigprof();
  use_signalfd = 1;
  int fd = open_fd();
  long got = 0;
  for (int i = 0; i < n; i++) {
    kill(getpid(), SIGPROF);
    /* Until it is read: whoever has SIGPROF open gets a process-directed
     * signal, but nobody here has it open. */
    double end = wall_now() + 5;
    int took = 0;
    while (!took && wall_now() < end) {
      burn(20000);
      took = poll_sigprof(fd);
    }
    got += took;
  }
  /* And nothing more, however long we burn. */
  double end = wall_now() + 0.5;
  while (wall_now() < end) {
    burn(20000);
    got += poll_sigprof(fd);
  }
  printf("received %ld\n", got);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  if (argc > 2)
    seconds = atof(argv[2]);
  if (strcmp(argv[1], "kill") == 0)
    return sending(argc > 2 ? atoi(argv[2]) : 3);
  use_signalfd = strcmp(argv[1], "signalfd") == 0;
  if (!use_signalfd && strcmp(argv[1], "sigwaitinfo") != 0)
    return 2;
  return waiting();
}
