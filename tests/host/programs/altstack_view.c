/* What a program sees of its alternate signal stack (sigaltstack(2)) and
 * of its SA_ONSTACK handler's mask, on the main thread and on a thread it
 * makes, in the order Rust's runtime goes (ask, set its own, run a handler
 * there, take it off), and with the calls the kernel refuses. Prints on
 * stdout what the program sees, the same with cprof and without; and on
 * stderr, lines "raw ..." with what the kernel has (the system calls
 * themselves, past any wrapper), for the test to check cprof's stack:
 * none, own (the program's) or other (a stack that is not the program's).
 *
 *   altstack_view */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define OWN_SIZE (64 << 10)

static __thread char *own;
static __thread char seen_in_handler[160];
static __thread int sigprof_blocked_in_handler;

/* What sigaltstack(NULL, &old) says, relative to the program's own stack. */
static const char *describe(const stack_t *ss, char *buf, size_t size) {
  const char *where = ss->ss_sp == NULL ? "null" : ss->ss_sp == own ? "own" : "other";
  snprintf(buf, size, "sp %s, size %zu, flags%s%s%s", where, ss->ss_size,
           ss->ss_flags & SS_DISABLE ? " SS_DISABLE" : "",
           ss->ss_flags & SS_ONSTACK ? " SS_ONSTACK" : "",
           ss->ss_flags & ~(SS_DISABLE | SS_ONSTACK) ? " (more)" : "");
  return buf;
}

static void seen(const char *who, const char *when) {
  stack_t old;
  char buf[160];
  memset(&old, 0x5a, sizeof old);
  int rc = sigaltstack(NULL, &old);
  printf("%s, %s: rc %d, %s\n", who, when, rc, describe(&old, buf, sizeof buf));
  /* The kernel's own. */
  stack_t raw;
  syscall(SYS_sigaltstack, NULL, &raw);
  fprintf(stderr, "raw %s, %s: %s\n", who, when,
          raw.ss_flags & SS_DISABLE ? "none"
          : raw.ss_sp == own        ? "own"
                                    : "other");
}

static void on_usr1(int sig) {
  stack_t old;
  sigaltstack(NULL, &old);
  char here;
  int on_own = own && &here >= own && &here < own + OWN_SIZE;
  char buf[120];
  snprintf(seen_in_handler, sizeof seen_in_handler, "%s; running on own stack: %s",
           describe(&old, buf, sizeof buf), on_own ? "yes" : "no");
  sigset_t cur;
  pthread_sigmask(SIG_BLOCK, NULL, &cur);
  sigprof_blocked_in_handler = sigismember(&cur, SIGPROF) == 1;
}

static void set(const char *who, const char *what, const stack_t *ss) {
  stack_t old;
  char buf[160];
  memset(&old, 0x5a, sizeof old);
  errno = 0;
  int rc = sigaltstack(ss, &old);
  printf("%s, set %s: rc %d, errno %s, old %s\n", who, what, rc, rc ? strerror(errno) : "-",
         rc ? "-" : describe(&old, buf, sizeof buf));
}

static void walk(const char *who) {
  seen(who, "at start");
  own = malloc(OWN_SIZE);
  stack_t mine = {.ss_sp = own, .ss_size = OWN_SIZE, .ss_flags = 0};
  stack_t small = {.ss_sp = own, .ss_size = 256, .ss_flags = 0};
  stack_t bad = {.ss_sp = own, .ss_size = OWN_SIZE, .ss_flags = 5};
  stack_t off = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
  set(who, "too small", &small);
  set(who, "bad flags", &bad);
  set(who, "off while off", &off);
  seen(who, "after the refused calls");
  set(who, "own", &mine);
  seen(who, "with own");
  raise(SIGUSR1);
  printf("%s, in the handler: %s\n", who, seen_in_handler);
  fprintf(stderr, "raw %s, SIGPROF blocked in the SA_ONSTACK handler: %s\n", who,
          sigprof_blocked_in_handler ? "yes" : "no");
  set(who, "own again", &mine);
  set(who, "off", &off);
  seen(who, "after off");
  raise(SIGUSR1);
  printf("%s, in the handler, own off: %s\n", who, seen_in_handler);
  set(who, "off while off", &off);
  seen(who, "at the end");
  free(own);
  own = NULL;
}

static void *thread(void *arg) {
  walk("thread");
  return NULL;
}

int main(void) {
  struct sigaction sa, back;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  memset(&back, 0, sizeof back);
  sigaction(SIGUSR1, NULL, &back);
  int n = 0;
  for (int s = 1; s < 65; s++)
    n += sigismember(&back.sa_mask, s) == 1;
  printf("SIGUSR1's handler reads back: SA_ONSTACK %s, %d signals in its mask\n",
         back.sa_flags & SA_ONSTACK ? "yes" : "no", n);

  walk("main");
  pthread_t th;
  if (pthread_create(&th, NULL, thread, NULL) != 0)
    return 1;
  pthread_join(th, NULL);
  return 0;
}
