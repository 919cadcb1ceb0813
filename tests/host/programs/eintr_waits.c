/* Threads waiting in calls that a signal handler makes fail with EINTR
 * whatever SA_RESTART says (signal(7)), or that are never restarted: recv
 * and accept on sockets with SO_RCVTIMEO, msgrcv, semtimedop, io_uring_enter
 * waiting for a completion with a timeout, epoll_wait, nanosleep. Each waits
 * its full WAIT seconds (msgrcv until a message comes after WAIT seconds)
 * and the program prints what each call returned, in a fixed order. Under
 * cprof, with /goroutine fetched meanwhile, the output must be the same:
 * no call may fail with EINTR or end early.
 *
 * "ready" is printed once every thread is about to enter its call. */
#include <errno.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WAIT 5
#define NOINLINE __attribute__((noinline))

static int entered;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void enter(void) { __atomic_add_fetch(&entered, 1, __ATOMIC_SEQ_CST); }

/* What a call returned, and whether it came back before its time: a call
 * that waited less than 90 % of WAIT was cut short. */
static void result(char *out, long rc, int err, double t0) {
  double took = now() - t0;
  snprintf(out, 128, "%ld%s%s%s", rc, rc < 0 ? " " : "", rc < 0 ? strerrorname_np(err) : "",
           took < WAIT * 0.9 ? " (early)" : "");
}

static const struct timeval rcvtimeo = {WAIT, 0};

NOINLINE static void wait_in_recv(char *out) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    snprintf(out, 128, "socketpair failed");
    enter();
    return;
  }
  setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &rcvtimeo, sizeof rcvtimeo);
  char c;
  double t0 = now();
  enter();
  long rc = recv(sv[0], &c, 1, 0);
  result(out, rc, errno, t0);
  close(sv[0]);
  close(sv[1]);
}

NOINLINE static void wait_in_accept(char *out) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 1) != 0) {
    snprintf(out, 128, "listen failed");
    enter();
    return;
  }
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &rcvtimeo, sizeof rcvtimeo);
  double t0 = now();
  enter();
  long rc = accept(s, NULL, NULL);
  result(out, rc, errno, t0);
  close(s);
}

static int queue = -1;
struct msg {
  long type;
  char text[8];
};

NOINLINE static void wait_in_msgrcv(char *out) {
  struct msg m;
  double t0 = now();
  enter();
  long rc = msgrcv(queue, &m, sizeof m.text, 0, 0);
  result(out, rc, errno, t0);
}

/* Sends the message msgrcv waits for, after WAIT seconds. */
NOINLINE static void send_later(char *out) {
  struct timespec ts = {WAIT, 0};
  double t0 = now();
  enter();
  long rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
  result(out, rc ? -1 : 0, rc, t0);
  struct msg m = {1, "hi"};
  msgsnd(queue, &m, sizeof m.text, 0);
}

NOINLINE static void wait_in_semtimedop(char *out) {
  int sem = semget(IPC_PRIVATE, 1, 0600);
  struct sembuf op = {0, -1, 0};
  struct timespec ts = {WAIT, 0};
  double t0 = now();
  enter();
  long rc = semtimedop(sem, &op, 1, &ts);
  result(out, rc, errno, t0);
  semctl(sem, 0, IPC_RMID);
}

/* Raw system calls: io_uring_setup, then io_uring_enter waiting for one
 * completion that never comes, with a timeout (IORING_ENTER_EXT_ARG). */
NOINLINE static void wait_in_io_uring(char *out) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  int fd = (int)syscall(__NR_io_uring_setup, 4, &p);
  if (fd < 0) {
    snprintf(out, 128, "skipped: io_uring_setup: %s", strerrorname_np(errno));
    enter();
    return;
  }
  struct __kernel_timespec ts = {WAIT, 0};
  struct io_uring_getevents_arg arg = {.ts = (uint64_t)(uintptr_t)&ts};
  double t0 = now();
  enter();
  long rc = syscall(__NR_io_uring_enter, fd, 0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
                    &arg, sizeof arg);
  result(out, rc, errno, t0);
  close(fd);
}

NOINLINE static void wait_in_epoll(char *out) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev;
  double t0 = now();
  enter();
  long rc = epoll_wait(ep, &ev, 1, WAIT * 1000);
  result(out, rc, errno, t0);
  close(ep);
}

NOINLINE static void wait_in_nanosleep(char *out) {
  struct timespec ts = {WAIT, 0};
  double t0 = now();
  enter();
  long rc = nanosleep(&ts, NULL);
  result(out, rc, errno, t0);
}

typedef struct call {
  const char *name;
  void (*fn)(char *out);
  char out[128];
  pthread_t thread;
} call_t;

static call_t calls[] = {
    {.name = "recv (SO_RCVTIMEO)", .fn = wait_in_recv},
    {.name = "accept (SO_RCVTIMEO)", .fn = wait_in_accept},
    {.name = "msgrcv", .fn = wait_in_msgrcv},
    {.name = "clock_nanosleep before msgsnd", .fn = send_later},
    {.name = "semtimedop", .fn = wait_in_semtimedop},
    {.name = "io_uring_enter", .fn = wait_in_io_uring},
    {.name = "epoll_wait", .fn = wait_in_epoll},
    {.name = "nanosleep", .fn = wait_in_nanosleep},
};
#define NCALLS (sizeof calls / sizeof calls[0])

static void *call_main(void *p) {
  call_t *c = p;
  c->fn(c->out);
  return NULL;
}

int main(void) {
  queue = msgget(IPC_PRIVATE, 0600);
  for (size_t i = 0; i < NCALLS; i++)
    pthread_create(&calls[i].thread, NULL, call_main, &calls[i]);
  while (__atomic_load_n(&entered, __ATOMIC_SEQ_CST) < (int)NCALLS)
    usleep(1000);
  puts("ready");
  fflush(stdout);
  for (size_t i = 0; i < NCALLS; i++) {
    pthread_join(calls[i].thread, NULL);
    printf("%s: %s\n", calls[i].name, calls[i].out);
  }
  msgctl(queue, IPC_RMID, NULL);
  return 0;
}
