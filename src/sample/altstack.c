/* Alternate signal stacks for cprof's signals.
 *
 * The kernel pushes its signal frame (the registers and the xsave area: 1.4
 * KiB on an older CPU, 3.4 to 3.7 KiB with AVX-512, past 11 KiB once a
 * thread uses AMX) on the stack the interrupted code runs on, unless the
 * handler was installed with SA_ONSTACK and the thread has an alternate
 * stack (sigaltstack(2)). No diet of cprof's handlers makes that frame fit
 * on a thread that has used most of a PTHREAD_STACK_MIN stack, on a
 * coroutine's small heap stack, or below a program's handler busy on its
 * own 8 KiB alternate stack. So, as Go gives each thread a signal stack of
 * its own, cprof's handlers run SA_ONSTACK, and every thread of the
 * program's has an alternate stack:
 *
 * - its own, when the program set one: cprof's handlers run there, as the
 *   program's do (a handler of the program's busy there is not interrupted
 *   by cprof's signals: signals.c adds them to the sa_mask of the
 *   program's SA_ONSTACK handlers);
 * - otherwise cprof's: mmap'd when the thread starts (the pthread_create
 *   wrapper; the main thread from a constructor), AT_MINSIGSTKSZ plus
 *   cprof's handlers' bound plus room for a handler of the program's
 *   (altstack.h), with a guard page below, and unmapped when the thread
 *   ends (a key destructor, which runs for a return, pthread_exit and
 *   cancellation alike).
 *
 * A thread cprof did not see start has no stack of cprof's, and none is
 * made for it from another thread (the sigaltstack settings are a
 * thread's own). cpu.c gives such a thread no running timer, and shows its
 * CPU time as "[thread not sampled: no signal stack]". The threads that
 * have one are listed, by thread id, in a lock-free table, for that check
 * from the profile's owner.
 *
 * The program sees its own settings (cprof__altstack_program): what the
 * kernel has, unless that is cprof's stack, which reads as SS_DISABLE.
 * That is a comparison with the kernel's current settings rather than a
 * record of the program's calls, so it stays right whatever changed them:
 * sigreturn(2) puts back the settings a signal frame saved (so a stack set
 * in a handler is undone when it returns, with cprof as without), SS_ONSTACK
 * comes from the kernel, and SS_AUTODISARM works as the kernel makes it.
 *
 * fork(2): the child's thread keeps its stack (the child has a copy of the
 * mapping and the kernel keeps the settings); the other threads' mappings
 * stay in the child unused, as their thread stacks do. execve(2) clears the
 * settings, and the new program's cprof starts afresh. */
#include "sample/altstack.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sample/signals.h"
#include "unwind/bounds.h"

/* The page size: 4 KiB on x86-64, up to 64 KiB on arm64 kernels. */
static size_t page(void) {
  unsigned long p = getauxval(AT_PAGESZ);
  return p ? (size_t)p : 4096;
}
#ifndef SS_AUTODISARM /* linux/signal.h; glibc does not define it */
#define SS_AUTODISARM (1U << 31)
#endif

/* The calling thread's stack of cprof's, initial-exec: a handler and the
 * interposed sigaltstack read it without a call. map == NULL: none. */
typedef struct mine {
  char *map;     /* the mapping, guard page first */
  size_t size;   /* its length */
  stack_t ss;    /* the stack, as installed */
  pid_t *listed; /* its entry in the table of threads with a stack */
} mine_t;
static __thread mine_t mine __attribute__((tls_model("initial-exec")));

/* The system call itself: glibc's sigaltstack is ours when libcprof is
 * preloaded (interpose/sigaltstack.c). */
static int real_sigaltstack(const stack_t *ss, stack_t *old) {
  return (int)syscall(SYS_sigaltstack, ss, old);
}

size_t cprof__altstack_size(void) {
  static size_t size; /* atomic; every thread computes the same */
  size_t s = __atomic_load_n(&size, __ATOMIC_RELAXED);
  if (s)
    return s;
  /* The kernel's figure for this CPU (x86 since Linux 5.14), or where it
   * gives none, the old constant (glibc's MINSIGSTKSZ is now a sysconf,
   * 4 times that figure, under _GNU_SOURCE). */
  unsigned long frame = getauxval(AT_MINSIGSTKSZ);
  if (frame < 2048)
    frame = 2048;
  size_t pg = page();
  s = (frame + CPROF_HANDLER_STACK_BOUND + CPROF_ALTSTACK_PROGRAM_ROOM + pg - 1) & ~(pg - 1);
  __atomic_store_n(&size, s, __ATOMIC_RELAXED);
  return s;
}

static int is_ours(const stack_t *cur) {
  return mine.map && !(cur->ss_flags & SS_DISABLE) && cur->ss_sp == mine.ss.ss_sp &&
         cur->ss_size == mine.ss.ss_size;
}

#ifndef CPROF_NO_INTERPOSE

/* ---- the threads that have a stack ----
 *
 * Thread ids in chunks that are never freed: a thread takes a free entry
 * (0) by compare-and-swap and clears it as it ends; the profile's owner
 * scans. Chunks are mapped, not malloc'd: a thread starting must not reach
 * the program's allocator for this, nor a lock a fork could leave held. */
#define PER_CHUNK 1024
#define MAX_CHUNKS 256 /* 262,144 threads, cpu.c's limit too */
static pid_t *chunks[MAX_CHUNKS];

static pid_t *list_add(pid_t tid) {
  for (int c = 0; c < MAX_CHUNKS; c++) {
    pid_t *v = __atomic_load_n(&chunks[c], __ATOMIC_ACQUIRE);
    if (!v) {
      pid_t *fresh = mmap(NULL, PER_CHUNK * sizeof(pid_t), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (fresh == MAP_FAILED)
        return NULL;
      if (__atomic_compare_exchange_n(&chunks[c], &v, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        v = fresh;
      else /* another thread published this chunk first: v is its */
        munmap(fresh, PER_CHUNK * sizeof(pid_t));
    }
    for (int i = 0; i < PER_CHUNK; i++) {
      pid_t free_entry = 0;
      if (__atomic_load_n(&v[i], __ATOMIC_RELAXED) == 0 &&
          __atomic_compare_exchange_n(&v[i], &free_entry, tid, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED))
        return &v[i];
    }
  }
  return NULL;
}

/* In a fork child, whose only thread is the one that forked: its entry,
 * with the child's thread id; every other entry was a thread of the
 * parent's. */
static void atfork_child(void) {
  for (int c = 0; c < MAX_CHUNKS; c++) {
    pid_t *v = __atomic_load_n(&chunks[c], __ATOMIC_ACQUIRE);
    for (int i = 0; v && i < PER_CHUNK; i++)
      if (&v[i] != mine.listed)
        __atomic_store_n(&v[i], 0, __ATOMIC_RELAXED);
  }
  if (mine.listed)
    __atomic_store_n(mine.listed, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(NULL, NULL, atfork_child); }

int cprof__altstack_here(void) { return mine.listed != NULL; }

int cprof__altstack_ready(pid_t tid) {
  for (int c = 0; c < MAX_CHUNKS; c++) {
    pid_t *v = __atomic_load_n(&chunks[c], __ATOMIC_ACQUIRE);
    if (!v)
      return 0;
    for (int i = 0; i < PER_CHUNK; i++)
      if (__atomic_load_n(&v[i], __ATOMIC_ACQUIRE) == tid)
        return 1;
  }
  return 0;
}

void cprof__altstack_thread_start(void) {
  if (mine.map)
    return;
  pthread_once(&atfork_once, register_atfork);
  size_t size = cprof__altstack_size(), guard = page();
  /* Mapped without access, then opened above the guard: one call less
   * than a guard made afterwards would be if the second failed. */
  char *m = mmap(NULL, size + guard, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED)
    return;
  if (mprotect(m + guard, size, PROT_READ | PROT_WRITE) != 0) {
    munmap(m, size + guard);
    return;
  }
  mine.ss = (stack_t){.ss_sp = m + guard, .ss_size = size, .ss_flags = 0};
  mine.size = size + guard;
  mine.map = m;
  cprof__stack_bounds_signal_stack((uintptr_t)m + guard, (uintptr_t)m + guard + size);
  /* A new thread has none (clone(2) with CLONE_VM clears them); the main
   * thread may have the program's, set by a constructor before ours. */
  stack_t cur;
  if (real_sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE))
    real_sigaltstack(&mine.ss, NULL);
  mine.listed = list_add((pid_t)syscall(SYS_gettid));
}

void cprof__altstack_thread_end(void) {
  if (!mine.map)
    return;
  /* Off the list first: the profile's owner gives a thread that starts
   * with this id later no timer until it has a stack of its own. */
  if (mine.listed)
    __atomic_store_n(mine.listed, 0, __ATOMIC_RELEASE);
  mine.listed = NULL;
  /* Whatever else runs on this thread until it is gone (other keys'
   * destructors) runs without cprof's signals, and so without a stack for
   * them: a tick of its CPU timer meanwhile stays pending, and goes with
   * the thread. The system call itself: the interposed pthread_sigmask
   * (sigmask.c) would stop the timer and count the microseconds left as
   * time no timer sampled, a frame of their own in every profile. */
  sigset_t ours;
  cprof__signal_ours(&ours);
  syscall(SYS_rt_sigprocmask, SIG_BLOCK, &ours, NULL, sizeof(uint64_t));
  /* pthread_exit from a handler that runs on it: the stack is in use, and
   * stays mapped. */
  char here;
  if ((uintptr_t)&here - (uintptr_t)mine.map < mine.size)
    return;
  stack_t cur;
  if (real_sigaltstack(NULL, &cur) != 0)
    return;
  if (is_ours(&cur)) {
    stack_t off = {.ss_flags = SS_DISABLE};
    real_sigaltstack(&off, NULL);
  }
  cprof__stack_bounds_signal_stack(0, 0);
  munmap(mine.map, mine.size);
  mine.map = NULL;
}

/* The main thread's, before main (and before the program's constructors
 * that come after libcprof's). */
__attribute__((constructor(101))) static void main_thread_stack(void) {
  cprof__altstack_thread_start();
}

#else /* CPROF_NO_INTERPOSE: no sigaltstack wrapper to hide a stack of ours */

int cprof__altstack_here(void) { return 1; }
int cprof__altstack_ready(pid_t tid) { return 1; }
void cprof__altstack_thread_start(void) {}
void cprof__altstack_thread_end(void) {}

#endif

int cprof__altstack_program(const stack_t *ss, stack_t *old) {
  stack_t cur;
  if (real_sigaltstack(NULL, &cur) != 0)
    return -1;
  int ours = is_ours(&cur);
  /* As the kernel reports a stack that is off (kernel/signal.c). */
  stack_t seen = ours ? (stack_t){.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE} : cur;
  if (ss) {
    stack_t next = *ss; /* ss and old may be the same */
    int mode = next.ss_flags & ~SS_AUTODISARM;
    if (mode == SS_DISABLE && ours) {
      /* Off already, as the program sees it: nothing to do (and a handler
       * that runs on cprof's stack could not take it off). */
    } else {
      if (real_sigaltstack(&next, NULL) != 0)
        return -1;
      /* The program's stack is off: cprof's goes back in. */
      if (mode == SS_DISABLE && mine.map)
        real_sigaltstack(&mine.ss, NULL);
    }
  }
  if (old)
    *old = seen;
  return 0;
}
