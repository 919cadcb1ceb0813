/* pthread_create, interposed, for what a thread must have before it runs a
 * line of its own, and for knowing when the program's last thread ends:
 * - created while a CPU profile runs, its CPU timer, as Go's threads set
 *   theirs when they start. Without this, the profile's periodic look at
 *   /proc/self/task would miss threads that live less than that.
 * - created by cprof's own work (the HTTP server's threads, the output
 *   collector), the heap sampler's guard: what cprof's threads allocate is
 *   never sampled. And every signal blocked, from its first instruction:
 *   signals sent to the process are the program's, and the kernel hands
 *   one to any thread that does not block it.
 * - created by the program, a count of the program's threads. The process
 *   ends when its last thread does, and cprof's threads would keep it alive
 *   for ever after a main that calls pthread_exit. When the count reaches
 *   zero, cprof ends its threads (start.c), and glibc ends the process as
 *   it would without us: exit(0) on the last thread out.
 * - created by the program, an alternate signal stack on which cprof's
 *   signals land (sample/altstack.c), before its CPU timer starts, and
 *   unmapped as it ends.
 * - created by the program, its creator's labels (cprof_label_set,
 *   cprof_do), installed before its start routine runs, as a goroutine
 *   starts with the labels of the goroutine that made it (sample/labels.c).
 * And, once it is made, the threadcreate profile counts the creating stack
 * (cprof's own threads are not counted). While a trace records, a
 * program's thread's start is an event of the trace (its end is too,
 * from sample/trace.c's thread-exit destructor).
 *
 * The wrapper is exported from libcprof, so it comes first in the lookup
 * order both under LD_PRELOAD and when a program links -lcprof; the real
 * function is the next one, found with dlsym(RTLD_NEXT). */
#include "interpose/thread_start.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/next.h"
#include "cprof.h"
#include "sample/altstack.h"
#include "sample/contention.h"
#include "sample/cpu.h"
#include "core/guard.h"
#include "sample/labels.h"
#include "sample/threads.h"
#include "sample/trace.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

typedef struct start {
  void *(*fn)(void *);
  void *arg;
  int internal; /* started by cprof: guarded for life */
  cprof__labels_t labels; /* the creator's, for a program's thread */
} start_t;

static create_fn real_create(void) {
  static void *real;
  return (create_fn)cprof__next(&real, "pthread_create");
}

/* The program's threads alive: main, and every thread it made with
 * pthread_create that has not ended. A thread's end is seen by the
 * destructor of a thread-specific key, which runs however it ends (return,
 * pthread_exit, cancellation) and only for threads that set it. */
static int program_threads = 1;
static pthread_key_t ended_key;
static int have_key;

void (*cprof__last_program_thread_hook)(void);

static void program_thread_ended(void *unused) {
  /* What it owes the CPU profile, then its stack for cprof's signals
   * (which are blocked on it from there). */
  cprof__cpu_thread_ending();
  cprof__altstack_thread_end();
  void (*hook)(void) = __atomic_load_n(&cprof__last_program_thread_hook, __ATOMIC_ACQUIRE);
  if (__atomic_sub_fetch(&program_threads, 1, __ATOMIC_ACQ_REL) == 0 && hook)
    hook();
}

/* Before main: the constructors of libraries loaded at start run on the
 * main thread. (Loaded later with dlopen, the count would be wrong; a
 * thread that ends with the count at zero only ends cprof's threads.) */
__attribute__((constructor(101))) static void count_main_thread(void) {
  if (pthread_key_create(&ended_key, program_thread_ended) == 0) {
    have_key = 1;
    pthread_setspecific(ended_key, &program_threads);
  }
}

int cprof__program_thread_count(void) {
  return __atomic_load_n(&program_threads, __ATOMIC_ACQUIRE);
}

void cprof__thread_count_atfork_child(void) {
  /* Only the thread that forked lives on in the child; its key is set. */
  program_threads = 1;
}

/* Every signal, but the two glibc needs on every thread: SIGCANCEL (32)
 * for pthread_cancel, and SIGSETXID (33), with which setuid and friends
 * change the credentials of all threads; blocking that one would hang the
 * program's setuid. A raw system call: sigprocmask itself may be
 * interposed, and glibc's would not let us name the set exactly. */
#define ALL_BUT_GLIBCS (~((1ull << (32 - 1)) | (1ull << (33 - 1))))

static void block_signals(uint64_t *old) {
  uint64_t all = ALL_BUT_GLIBCS;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, old, sizeof all);
}

static void restore_signals(const uint64_t *old) {
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, sizeof *old);
}

/* A thread's start, into the trace, with the thread's name now. */
__attribute__((noinline, cold)) static void trace_thread(int kind) {
  char name[17] = "";
  prctl(PR_GET_NAME, name);
  cprof__trace_emit(kind, 0, 0, 0, name, NULL);
}

/* The first frame of every thread. */
static void *cprof_thread_start(void *p) {
  start_t *in = p;
  int internal = in->internal;
  void *(*fn)(void *) = in->fn;
  void *arg = in->arg;
  if (in->internal) {
    cprof__guard_enter();
  } else {
    if (have_key)
      pthread_setspecific(ended_key, &program_threads);
    /* Before the CPU timer starts, so that the first sample has them. */
    cprof__labels_install(&in->labels);
  }
  cprof__guard_enter();
  free(p);
  cprof__guard_leave();
  /* A program's thread: a stack for cprof's signals before its CPU timer
   * can start (cprof's own block every signal for life). */
  if (!internal)
    cprof__altstack_thread_start();
  cprof__cpu_thread_started();
  if (cprof__trace_recording() && !internal) /* a program's thread, into the trace */
    trace_thread(CPROF__TRACE_THREAD_START);
  /* A tail call: the program's stacks do not show this frame. (Its end
   * goes into the trace from sample/trace.c, at thread exit.) */
  return fn(arg);
}

CPROF_EXTERN int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                                void *(*fn)(void *), void *arg) {
  create_fn real = real_create();
  if (!real)
    return EAGAIN; /* no pthread_create below us: cannot happen with glibc */
  int internal = cprof__guarded();
  cprof__guard_enter();
  start_t *s = malloc(sizeof *s);
  cprof__guard_leave();
  if (!s)
    return EAGAIN;
  s->fn = fn;
  s->arg = arg;
  s->internal = internal;
  s->labels.n = 0;
  if (!internal)
    cprof__labels_copy_sigsafe(&s->labels);
  uint64_t mask;
  int rc;
  if (internal) {
    /* The new thread starts with the mask its creator has. */
    block_signals(&mask);
    rc = real(thread, attr, cprof_thread_start, s);
    restore_signals(&mask);
  } else {
    __atomic_add_fetch(&program_threads, 1, __ATOMIC_ACQ_REL);
    rc = real(thread, attr, cprof_thread_start, s);
    if (rc != 0)
      __atomic_sub_fetch(&program_threads, 1, __ATOMIC_ACQ_REL);
    else
      cprof__threadcreate_event((uintptr_t)__builtin_return_address(0));
  }
  if (rc != 0) {
    cprof__guard_enter();
    free(s);
    cprof__guard_leave();
  } else {
    cprof__threads_born();
  }
  return rc;
}
