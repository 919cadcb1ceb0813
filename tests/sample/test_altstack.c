/* cprof's alternate signal stacks (sample/altstack.c): made for the main
 * thread and for every thread as it starts, gone (unmapped, off the list)
 * however the thread ends (return, pthread_exit, cancellation), kept by a
 * fork child's thread, never made for a thread started by clone(2)
 * directly; the program's view of sigaltstack; and cprof's signals in the
 * kernel's sa_mask of the program's SA_ONSTACK handlers (also those
 * installed before cprof took the signal), never in the mask the program
 * reads back. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sample/altstack.h"
#include "sample/cpu.h"
#include "unwind/bounds.h"
#include "unwind/caller.h"

static stack_t kernel_view(void) {
  stack_t ss;
  CHECK(syscall(SYS_sigaltstack, NULL, &ss) == 0);
  return ss;
}

static pid_t tid(void) { return (pid_t)syscall(SYS_gettid); }

/* Whether the page at p is mapped. */
static int mapped(void *p) {
  unsigned char v;
  return mincore((void *)((uintptr_t)p & ~(uintptr_t)4095), 4096, &v) == 0;
}

/* Whether /proc/self/maps has a mapping of the parts [lo, guard) and
 * [guard, hi) of cprof's stack, as it made them. */
static int has_mapping(const char *lo, const char *hi) {
  FILE *f = fopen("/proc/self/maps", "r");
  CHECK(f != NULL);
  char line[512];
  int found = 0;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long a, b;
    if (sscanf(line, "%lx-%lx", &a, &b) == 2 &&
        ((a == (uintptr_t)lo && b == (uintptr_t)lo + 4096) ||
         (a == (uintptr_t)lo + 4096 && b == (uintptr_t)hi)))
      found = 1;
  }
  if (f)
    fclose(f);
  return found;
}

/* ---- a thread's stack, from start to end ---- */

typedef struct seen {
  stack_t ss;   /* the kernel's, in the thread */
  stack_t view; /* the program's view */
  pid_t tid;
  int ready;
  int listed_in_maps; /* its two mappings, as made */
} seen_t;

static void look(seen_t *s) {
  s->ss = kernel_view();
  CHECK(cprof__altstack_program(NULL, &s->view) == 0);
  s->tid = tid();
  s->ready = cprof__altstack_ready(s->tid) && cprof__altstack_here();
  s->listed_in_maps = has_mapping((char *)s->ss.ss_sp - 4096, (char *)s->ss.ss_sp + s->ss.ss_size);
}

static void *returns(void *arg) {
  look(arg);
  return NULL;
}

static void *exits(void *arg) {
  look(arg);
  pthread_exit(NULL);
}

static void *cancelled(void *arg) {
  look(arg);
  for (;;)
    pause(); /* a cancellation point */
  return NULL;
}

static void thread_case(const char *how, void *(*fn)(void *)) {
  seen_t s;
  memset(&s, 0, sizeof s);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, fn, &s) == 0);
  if (fn == cancelled) {
    while (!__atomic_load_n(&s.tid, __ATOMIC_ACQUIRE))
      usleep(1000);
    usleep(10000);
    pthread_cancel(t);
  }
  pthread_join(t, NULL);
  fprintf(stderr, "%s: the thread's stack %p, %zu bytes; it read %s\n", how, s.ss.ss_sp,
          s.ss.ss_size, s.view.ss_flags & SS_DISABLE ? "SS_DISABLE" : "a stack");
  CHECK(!(s.ss.ss_flags & SS_DISABLE));
  CHECK(s.ss.ss_size == cprof__altstack_size());
  CHECK(s.view.ss_flags & SS_DISABLE);
  CHECK(s.view.ss_sp == NULL && s.view.ss_size == 0);
  CHECK(s.ready);
  CHECK(s.listed_in_maps);
  /* Gone with the thread: unmapped, guard page and all (the address may be
   * another mapping's by now: the heap sampler's tables, say), and off the
   * list. */
  CHECK(!has_mapping((char *)s.ss.ss_sp - 4096, (char *)s.ss.ss_sp + s.ss.ss_size));
  CHECK(!cprof__altstack_ready(s.tid));
}

/* ---- a thread cprof did not see start ---- */

static int clone_tid, clone_stop;

static int clone_main(void *arg) {
  (void)arg;
  pid_t t;
#if defined(__aarch64__)
  register long x8 __asm__("x8") = SYS_gettid;
  register long x0 __asm__("x0");
  __asm__ volatile("svc #0" : "=r"(x0) : "r"(x8) : "memory");
  t = (pid_t)x0;
#else
  __asm__ volatile("syscall" : "=a"(t) : "a"(SYS_gettid) : "rcx", "r11", "memory");
#endif
  __atomic_store_n(&clone_tid, t, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&clone_stop, __ATOMIC_ACQUIRE))
    ;
#if defined(__aarch64__)
  register long e8 __asm__("x8") = SYS_exit;
  register long e0 __asm__("x0") = 0;
  __asm__ volatile("svc #0" : : "r"(e8), "r"(e0) : "memory");
#else
  __asm__ volatile("syscall" : : "a"(SYS_exit), "D"(0) : "rcx", "r11", "memory");
#endif
  __builtin_unreachable();
}

static void clone_case(void) {
  char *stack = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(stack != MAP_FAILED);
  CHECK(clone(clone_main, stack + (1 << 16) - 64,
              CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM,
              NULL) > 0);
  while (!__atomic_load_n(&clone_tid, __ATOMIC_ACQUIRE))
    usleep(1000);
  CHECK(!cprof__altstack_ready(clone_tid));
  __atomic_store_n(&clone_stop, 1, __ATOMIC_RELEASE);
  usleep(50000); /* its exit: the stack is not unmapped, it may still be on it */
}

/* ---- masks ---- */

/* The kernel's sa_mask for sig (its first 64 signals), past every wrapper. */
static uint64_t kernel_mask(int sig) {
  struct {
    void *handler;
    unsigned long flags;
    void *restorer;
    uint64_t mask;
  } k;
  CHECK(syscall(SYS_rt_sigaction, sig, NULL, &k, sizeof k.mask) == 0);
  return k.mask;
}

#define BIT(sig) (1ull << ((sig)-1))

static void on_usr(int sig) {}
static void discard(void *arg, const cprof__cpu_sample_t *s) {}

/* ---- a walk from a handler of the program's on cprof's stack ----
 *
 * What the heap sampler and the lock wrappers do in a program's handler
 * that allocates: the walk from there goes through the signal frame to the
 * thread's own stack, with either unwinder. */

static uintptr_t into_outer; /* raiser's return address */
static int found[2], on_cprofs;

static void on_walk(int sig) {
  char here;
  stack_t ss = kernel_view();
  on_cprofs = &here >= (char *)ss.ss_sp && &here < (char *)ss.ss_sp + ss.ss_size;
  for (int how = 0; how < 2; how++) {
    uintptr_t pcs[64];
    int n = cprof__unwind_caller((cprof__unwinder_t)how, pcs, 64,
                                 (uintptr_t)__builtin_return_address(0));
    for (int i = 0; i < n; i++)
      found[how] |= pcs[i] == into_outer;
  }
}

__attribute__((noinline)) static void raiser(void) {
  into_outer = (uintptr_t)__builtin_return_address(0);
  raise(SIGUSR1);
  __asm__ volatile("");
}

__attribute__((noinline)) static void outer(void) {
  raiser();
  __asm__ volatile("");
}

static void walk_case(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_walk;
  sa.sa_flags = SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
  cprof__stack_bounds_learn();
  outer();
  CHECK(on_cprofs);
  CHECK(found[CPROF_UNWIND_DWARF]);
  CHECK(found[CPROF_UNWIND_FP]);
}

static void install(int sig, int flags, int with_sigprof) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  if (with_sigprof)
    sigaddset(&sa.sa_mask, SIGPROF);
  CHECK(sigaction(sig, &sa, NULL) == 0);
}

static int reads_back_sigprof(int sig) {
  struct sigaction old;
  CHECK(sigaction(sig, NULL, &old) == 0);
  return sigismember(&old.sa_mask, SIGPROF) == 1;
}

static void mask_case(void) {
  /* Before cprof takes SIGPROF: nothing added. */
  install(SIGUSR1, SA_ONSTACK, 0);
  install(SIGURG, 0, 0);
  CHECK(!(kernel_mask(SIGUSR1) & BIT(SIGPROF)));
  /* cprof takes SIGPROF: the SA_ONSTACK handler in place gets it. */
  CHECK_EQ_INT(cprof__cpu_start(100, CPROF_UNWIND_FP), 0);
  CHECK(kernel_mask(SIGUSR1) & BIT(SIGPROF));
  CHECK(!reads_back_sigprof(SIGUSR1));
  CHECK(!(kernel_mask(SIGURG) & BIT(SIGPROF))); /* not on the alternate stack: left alone */
  /* Installed after: added, and not read back. */
  install(SIGUSR2, SA_ONSTACK, 0);
  CHECK(kernel_mask(SIGUSR2) & BIT(SIGPROF));
  CHECK(!reads_back_sigprof(SIGUSR2));
  /* The program's own SIGPROF in its mask is its own: read back. */
  install(SIGUSR2, SA_ONSTACK, 1);
  CHECK(kernel_mask(SIGUSR2) & BIT(SIGPROF));
  CHECK(reads_back_sigprof(SIGUSR2));
  /* Replaced by a handler off the alternate stack: nothing of ours. */
  install(SIGUSR2, 0, 0);
  CHECK(!(kernel_mask(SIGUSR2) & BIT(SIGPROF)));
  CHECK(!reads_back_sigprof(SIGUSR2));
  /* A raise while the handler in place is ours: the handler is run, and
   * SIGPROF is blocked while it runs, then open again. */
  raise(SIGUSR1);
  sigset_t cur;
  pthread_sigmask(SIG_BLOCK, NULL, &cur);
  CHECK(sigismember(&cur, SIGPROF) == 0);
  cprof__cpu_stop(discard, NULL);
}

int main(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return check_skip("test_altstack", "a sanitizer build interposes nothing, and makes no stacks");
#endif
  /* The main thread's, from libcprof's constructor. */
  stack_t ss = kernel_view(), view;
  CHECK(!(ss.ss_flags & SS_DISABLE));
  CHECK(ss.ss_size == cprof__altstack_size());
  CHECK(cprof__altstack_program(NULL, &view) == 0);
  CHECK(view.ss_flags & SS_DISABLE);
  CHECK(cprof__altstack_ready(tid()));
  fprintf(stderr, "cprof's stacks: %zu bytes (AT_MINSIGSTKSZ and %d + %d), a guard page below\n",
          cprof__altstack_size(), CPROF_HANDLER_STACK_BOUND, CPROF_ALTSTACK_PROGRAM_ROOM);

  thread_case("return", returns);
  thread_case("pthread_exit", exits);
  thread_case("cancellation", cancelled);
  clone_case();

  /* A fork child's thread keeps its stack, and is on the list as itself. */
  pid_t child = fork();
  if (child == 0) {
    stack_t c = kernel_view();
    _exit(c.ss_sp == ss.ss_sp && !(c.ss_flags & SS_DISABLE) && mapped(c.ss_sp) &&
                  cprof__altstack_ready(tid()) && cprof__altstack_here()
              ? 0
              : 1);
  }
  int status = -1;
  CHECK(child > 0 && waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  mask_case();
  walk_case();
  return check_result("test_altstack");
}
