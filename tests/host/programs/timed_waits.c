/* Threads that wait with a short timeout, over and over, in every call a
 * signal handler would end with EINTR whatever SA_RESTART says (signal(7)):
 * poll, select, epoll_wait, nanosleep, a raw FUTEX_WAIT with a timeout,
 * sigtimedwait, recv with SO_RCVTIMEO and sem_timedwait; THREADS of each
 * kind, each wait 1 ms. Two more threads burn CPU, so that a woken waiter
 * may wait its turn for a CPU. For tests/host/wall_eintr.sh.
 *
 *   timed_waits SECONDS
 *
 * Prints "ready" once every thread waits, and after SECONDS, or at
 * SIGUSR1 if that comes first (only main takes it: the other threads
 * block it, so no wait of theirs is cut by it), one line per
 * kind, "KIND waits N eintr E other O" (E: the waits that failed with
 * EINTR; O: those that failed otherwise, or ended before their time), and
 * "eintr TOTAL". Without a handler of anyone's, E is 0. Each kind waits in
 * a function of its own, wait_in_KIND, for the profiles to show. */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define FRAME_STAYS() __asm__ volatile("" ::: "memory")
#define THREADS 3
#define WAIT_NS 1000000L

enum { POLL, SELECT, EPOLL, NANOSLEEP, FUTEX, SIGTIMEDWAIT, RECV, SEM, KINDS };
static const char *names[KINDS] = {"poll",  "select",       "epoll_wait", "nanosleep",
                                   "futex", "sigtimedwait", "recv",       "sem_timedwait"};
static atomic_long waits[KINDS], eintrs[KINDS], others[KINDS];
static atomic_int stop, started;

static void wake_main(int sig) { (void)sig; }
static int pipefd[2], sockfd[2], epfd;
static sem_t sem;
static int futex_word;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* One wait's end: rc is the call's result (-1 with errno, or what it
 * returns on its timeout), t0 when it began. */
static void count(int kind, int failed, int err, long long t0) {
  waits[kind]++;
  if (failed && err == EINTR)
    eintrs[kind]++;
  else if (failed || now_ns() - t0 < WAIT_NS)
    others[kind]++;
}

NOINLINE static void wait_in_poll(void) {
  struct pollfd p = {pipefd[0], POLLIN, 0};
  long long t0 = now_ns();
  int rc = poll(&p, 1, WAIT_NS / 1000000);
  count(POLL, rc != 0, errno, t0);
  FRAME_STAYS();
}

NOINLINE static void wait_in_select(void) {
  fd_set r;
  FD_ZERO(&r);
  FD_SET(pipefd[0], &r);
  struct timeval tv = {0, WAIT_NS / 1000};
  long long t0 = now_ns();
  int rc = select(pipefd[0] + 1, &r, NULL, NULL, &tv);
  count(SELECT, rc != 0, errno, t0);
  FRAME_STAYS();
}

NOINLINE static void wait_in_epoll_wait(void) {
  struct epoll_event ev;
  long long t0 = now_ns();
  int rc = epoll_wait(epfd, &ev, 1, WAIT_NS / 1000000);
  count(EPOLL, rc != 0, errno, t0);
  FRAME_STAYS();
}

NOINLINE static void wait_in_nanosleep(void) {
  struct timespec ts = {0, WAIT_NS};
  long long t0 = now_ns();
  int rc = nanosleep(&ts, NULL);
  count(NANOSLEEP, rc != 0, errno, t0);
  FRAME_STAYS();
}

NOINLINE static void wait_in_futex(void) {
  struct timespec ts = {0, WAIT_NS};
  long long t0 = now_ns();
  long rc = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
  count(FUTEX, !(rc == -1 && errno == ETIMEDOUT), errno, t0);
  FRAME_STAYS();
}

NOINLINE static void wait_in_sigtimedwait(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2); /* blocked in this thread, and never sent */
  struct timespec ts = {0, WAIT_NS};
  long long t0 = now_ns();
  int rc = sigtimedwait(&set, NULL, &ts);
  count(SIGTIMEDWAIT, !(rc == -1 && errno == EAGAIN), errno, t0);
  FRAME_STAYS();
}

NOINLINE static void wait_in_recv(void) {
  char c;
  long long t0 = now_ns();
  ssize_t rc = recv(sockfd[0], &c, 1, 0);
  count(RECV, !(rc == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)), errno, t0);
  FRAME_STAYS();
}

NOINLINE static void wait_in_sem_timedwait(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += WAIT_NS;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  long long t0 = now_ns();
  int rc = sem_timedwait(&sem, &ts);
  count(SEM, !(rc == -1 && errno == ETIMEDOUT), errno, t0);
  FRAME_STAYS();
}

static void (*const waiters[KINDS])(void) = {
    wait_in_poll,  wait_in_select,       wait_in_epoll_wait, wait_in_nanosleep,
    wait_in_futex, wait_in_sigtimedwait, wait_in_recv,       wait_in_sem_timedwait};

static void *waiter(void *arg) {
  int kind = (int)(long)arg;
  char name[16];
  snprintf(name, sizeof name, "w-%.13s", names[kind]);
  pthread_setname_np(pthread_self(), name);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  started++;
  while (!stop)
    waiters[kind]();
  return NULL;
}

NOINLINE static void burn(void) {
  volatile unsigned long x = 1;
  while (!stop)
    for (int i = 0; i < 100000; i++)
      x = x * 2654435761u + 1;
  FRAME_STAYS();
}

static void *burner(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "burner");
  burn();
  return NULL;
}

int main(int argc, char **argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 10;
  if (pipe(pipefd) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sockfd) != 0 ||
      sem_init(&sem, 0, 0) != 0 || (epfd = epoll_create1(0)) < 0)
    return 1;
  struct epoll_event ev = {.events = EPOLLIN};
  struct timeval tv = {0, WAIT_NS / 1000};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, pipefd[0], &ev) != 0 ||
      setsockopt(sockfd[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
    return 1;
  /* SIGUSR1 blocked in the threads made from here, and taken by main. */
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  struct sigaction sa = {.sa_handler = wake_main};
  sigemptyset(&sa.sa_mask);
  pthread_sigmask(SIG_BLOCK, &usr1, NULL);
  pthread_t t[KINDS * THREADS + 2];
  int n = 0;
  for (int k = 0; k < KINDS; k++)
    for (int i = 0; i < THREADS; i++)
      pthread_create(&t[n++], NULL, waiter, (void *)(long)k);
  for (int i = 0; i < 2; i++)
    pthread_create(&t[n++], NULL, burner, NULL);
  while (started < KINDS * THREADS)
    usleep(1000);
  sigaction(SIGUSR1, &sa, NULL);
  pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
  printf("ready\n");
  fflush(stdout);
  sleep((unsigned)seconds); /* ends early at SIGUSR1 */
  stop = 1;
  for (int i = 0; i < n; i++)
    pthread_join(t[i], NULL);
  long total = 0;
  for (int k = 0; k < KINDS; k++) {
    printf("%s waits %ld eintr %ld other %ld\n", names[k], (long)waits[k], (long)eintrs[k],
           (long)others[k]);
    total += eintrs[k];
  }
  printf("eintr %ld\n", total);
  return 0;
}
