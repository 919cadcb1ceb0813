/* Stacks of every thread of the process, for /debug/pprof/goroutine.
 *
 * A thread in a system call (or otherwise stopped in the kernel) is unwound
 * from outside, from the registers /proc shows; a thread known to be running
 * is given a one-shot timer on its own CPU clock, whose real-time signal
 * comes on its way back to user space, never inside a system call, and
 * unwinds itself into a slot prepared for it; the caller waits a bounded
 * time and reports the threads that did not answer instead of waiting for
 * them. A thread whose state cannot be read is never signalled. */
#ifndef CPROF_SAMPLE_THREADS_H
#define CPROF_SAMPLE_THREADS_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "sample/labels.h"
#include "unwind/unwind.h"

typedef enum cprof__thread_status {
  CPROF_THREAD_OK = 0,    /* the stack is in pcs */
  CPROF_THREAD_TIMEOUT,   /* signalled, did not answer in time */
  CPROF_THREAD_BLOCKED,   /* runs with cprof's signal blocked, so was not asked */
  CPROF_THREAD_UNKNOWN,   /* its state could not be read (unreadable, err): never signalled */
  CPROF_THREAD_NO_SIGNAL, /* runs, and the program has taken cprof's signal for itself */
  CPROF_THREAD_KERNEL,    /* a kernel worker of the process (io_uring's): no user stack */
  CPROF_THREAD_UNSENT,    /* runs, and the signal could not be sent to it (err) */
  CPROF_THREAD_DEFERRED,  /* runs, and was asked: its stack comes with a later capture's
                           * answer (a cache that defers, cprof__threads_cache_defer) */
  CPROF_THREAD_NO_STACK,  /* runs, without an alternate signal stack for cprof's signal */
} cprof__thread_status_t;

typedef struct cprof__thread_stack {
  pid_t tid;
  char name[16];  /* /proc/self/task/TID/comm */
  char state;     /* R, S, D, ... from /proc/self/task/TID/stat */
  cprof__thread_status_t status;
  long syscall_nr; /* the system call it waits in, else -1 (running, or stopped outside one) */
  int reused;      /* the stack is the cache's: asleep where it was at the last capture */
  char region[CPROF_MAX_TRACE_NAME + 1]; /* its innermost open region (the wall profile's), or "" */
  const char *unreadable;                /* UNKNOWN: the file of /proc/self/task/TID/ that was not;
                                          * UNSENT: the call refused (timer_create, timer_settime) */
  int err;                /* UNKNOWN, UNSENT: why, an errno */
  int depth;
  uintptr_t *pcs; /* cprof__max_depth() when the capture began, at most */
  /* Its labels (cprof_label_set, cprof_do), read just after the stacks
   * were taken; n = 0 when it has none. */
  cprof__labels_t labels;
  /* A cache that defers: the answer to this thread's ask of an earlier
   * capture, which every DEFERRED entry of it since then stands for. 1: the
   * stack it answered with, answer_depth frames in answer_pcs; -1: the ask
   * was given up (the thread did not run on a clock tick within a second,
   * or exited, or the program took the signal); 0: none came. */
  int answered;
  int answer_depth;
  uintptr_t *answer_pcs;
  /* A cache that defers: the thread's CPU time at the capture (-1:
   * unknown), and where it was last seen asleep in a call with an exact
   * stack (sleep_depth 0: never): the stack and the call's number. */
  int64_t cpu_ns;
  int64_t sleep_ns; /* CLOCK_MONOTONIC when it was seen asleep there */
  int sleep_depth;
  long sleep_nr;
  uintptr_t *sleep_pcs;
} cprof__thread_stack_t;

typedef struct cprof__thread_dump {
  cprof__thread_stack_t *v; /* in tid order */
  int n;
} cprof__thread_dump_t;

/* Installs the signal handler on a free real-time signal (one the program
 * leaves at SIG_DFL), shared with the program as signals.c's
 * CPROF_SHARE_YIELD says. Idempotent. Returns 0 or a negative errno (no
 * free signal: -EBUSY; captures then ask no thread, see threads.c). */
int cprof__threads_init(void);

/* Captures every thread's stack, waiting at most timeout_ms for answers.
 * Serialised internally. Returns 0 or a negative errno (no memory, /proc
 * unreadable); free with cprof__threads_dump_free(). */
int cprof__threads_capture(cprof__unwinder_t how, int timeout_ms, cprof__thread_dump_t *out);
void cprof__threads_dump_free(cprof__thread_dump_t *d);
/* The entry of thread tid in d (a binary search: d is in tid order), or
 * NULL. */
cprof__thread_stack_t *cprof__threads_dump_find(const cprof__thread_dump_t *d, pid_t tid);

/* What a repeated capture keeps of each thread from one to the next (the
 * wall profile's, 50 times a second): where it waited, its stack there,
 * its name. A thread asleep in the same system call at the same place (the
 * call's number, sp and pc as /proc shows them) as at the last capture
 * keeps its last stack without being unwound again, and a thread seen
 * before keeps its name: one read of /proc/self/task/TID/syscall is then
 * all it costs. A thread that was not asleep, or that moved, is captured
 * as cprof__threads_capture does. For one capturing thread at a time.
 *
 * The capturing thread is left out (it would be the same stack, the
 * capture's, every time, and unwinding it costs).
 *
 * The list of threads is kept too: /proc/self/task is read again only when
 * a thread was created since (cprof__threads_born) or a second has passed
 * (threads made by clone(2) directly are not counted). A thread that
 * exited is seen at its first look. */
typedef struct cprof__threads_cache cprof__threads_cache_t;
cprof__threads_cache_t *cprof__threads_cache_new(void);
void cprof__threads_cache_free(cprof__threads_cache_t *c);
/* cprof__threads_capture with a cache (may be NULL: none). Threads known
 * from the cache have state 'S' when asleep and 'R' when running, not
 * /proc's letter. */
int cprof__threads_capture_cached(cprof__unwinder_t how, int timeout_ms, cprof__threads_cache_t *c,
                                  cprof__thread_dump_t *out);

/* Makes the cache's captures defer (the wall profile's): a running thread,
 * or one asleep that has run since the capture before, is asked
 * (threads.c) but not waited for, and a running one is DEFERRED in the
 * dump; the answer, which comes at the first clock tick that finds it on
 * a CPU, is in its entry of a later capture (answered). A capture then
 * waits for nobody. Entries also carry the thread's CPU time and where it
 * last slept (cpu_ns, sleep_pcs). */
void cprof__threads_cache_defer(cprof__threads_cache_t *c);
/* For a cache that defers, between captures: when the program has asked
 * for the capture signal for itself (signals.c), gives up the asks out, so
 * that its sigaction, which waits for them, goes through. */
void cprof__threads_cache_yield(cprof__threads_cache_t *c);
/* For a cache that defers, at the end: waits up to timeout_ms for the
 * asks still out, and gives out the answers: an entry for every thread
 * of the last capture with only tid, cpu_ns (now) and answered set (the
 * asks not in are given up). Returns 0 or a negative errno. */
int cprof__threads_cache_settle(cprof__threads_cache_t *c, int timeout_ms,
                                cprof__thread_dump_t *out);

/* A thread was created: called by the pthread_create wrapper
 * (interpose/thread_start.c) once the thread exists. Async-signal-safe. */
void cprof__threads_born(void);

/* The ids of the process's threads now, from /proc/self/task: returns the
 * count and a malloc'd array in *out, or a negative errno (and no array:
 * a partial list would look like threads that exited). */
int cprof__threads_list(pid_t **out);
/* A thread's name (/proc/self/task/TID/comm, at most 15 bytes). Returns 0,
 * or -1 when the thread has exited. */
int cprof__thread_name(pid_t tid, char name[16]);

/* A thread's blocked and pending signals, from the SigBlk and SigPnd masks
 * of /proc/self/task/TID/status (proc(5)), bit n-1 for signal n. Returns 0,
 * or a negative errno (the thread has exited). */
int cprof__thread_signal_masks(pid_t tid, uint64_t *blocked, uint64_t *pending);

/* The number of threads in the process now (for the index page). */
int cprof__threads_count(void);

/* The CPU-time clock of one thread of this process: clock_getcpuclockid(3)
 * gives only processes', pthread_getcpuclockid(3) only pthread_t's, so we
 * build it as the kernel encodes it (include/linux/posix-timers.h):
 * CPUCLOCK_SCHED (2) | CPUCLOCK_PERTHREAD_MASK (4), the tid inverted above. */
static inline clockid_t cprof__thread_cpu_clock(pid_t tid) {
  return (clockid_t)((~(unsigned)tid << 3) | 6);
}

/* The signal number chosen, or 0 before init (or when none was free). */
int cprof__threads_signal(void);

void cprof__threads_atfork_prepare(void);
void cprof__threads_atfork_parent(void);
void cprof__threads_atfork_child(void);

#endif
