/* The CPU profiler, as Go's on Linux since 1.18: a timer on each thread's
 * own CPU clock delivers SIGPROF to that thread (SIGEV_THREAD_ID) after
 * every 1/hz seconds of CPU it uses, so samples fall where the CPU time went
 * (a process-wide setitimer hands the signal to whichever thread happens to
 * run). The handler records the stack into a preallocated lock-free buffer;
 * the profile's owner drains it. One CPU profile at a time. */
#ifndef CPROF_SAMPLE_CPU_H
#define CPROF_SAMPLE_CPU_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample/labels.h"
#include "unwind/unwind.h"

/* One drained sample: the thread, its stack, its labels (cprof_do)
 * when the sample was taken, and how many sampling periods of CPU it stands
 * for (more than 1 when the kernel delivered several expirations as one
 * signal).
 *
 * Or CPU time that no timer sampled (cpu_timers.c, "CPU time no timer samples"):
 * cpu_ns is then that time, periods 0, and pcs[0] a reserved pc
 * (unwind/pc.h) that says why, followed by the return addresses of the
 * place the thread unblocked SIGPROF, when known. Or, the same way, the
 * expiries of a thread's timer that came due and were never delivered
 * (cpu_timers.c, "Expiries never delivered"): pcs[0] is CPROF_PC_UNDELIVERED. */
typedef struct cprof__cpu_sample {
  int64_t cpu_ns; /* 0 for a sample of the timer */
  int64_t ts;     /* CLOCK_MONOTONIC ns of the timer's signal (a trace's timeline), as the drain
                     places it (cpu.c, "Time stamps"): within a drain's interval; 0 for cpu_ns */
  uint64_t trace_seq; /* the thread's trace events when sampled (sample/trace.h) */
  char name[16];  /* "", or the thread's name where it may have exited before the drain */
  pid_t tid;
  int depth;
  int periods;
  uintptr_t *pcs; /* cprof__max_depth() when the profile started, at most */
  cprof__labels_t labels;
} cprof__cpu_sample_t;

typedef void (*cprof__cpu_sink_fn)(void *arg, const cprof__cpu_sample_t *s);

/* Starts sampling every thread at hz. Returns 0; -EALREADY when a CPU
 * profile is already running; -EBUSY when the program uses SIGPROF itself
 * (its own handler, or an ITIMER_PROF of its own); -ENOMEM; or, when not
 * one thread could be given a timer (the program's threads cannot be
 * listed without /proc; timer_create is refused, as by a seccomp filter),
 * the errno of the call that failed, with a line saying which in why (when
 * why is not NULL; "" for the other errors). */
int cprof__cpu_start_why(int hz, cprof__unwinder_t how, char *why, size_t why_size);
int cprof__cpu_start(int hz, cprof__unwinder_t how);
/* Gives timers to threads created since the last call and forgets those
 * that exited. Call every few milliseconds while profiling. */
void cprof__cpu_track_threads(void);
/* Hands every sample recorded so far to sink, and frees their slots. */
void cprof__cpu_drain(cprof__cpu_sink_fn sink, void *arg);
/* Stops sampling, waits out handlers in flight, hands the last samples to
 * sink. Returns how many samples were lost because the buffer was full. */
uint64_t cprof__cpu_stop(cprof__cpu_sink_fn sink, void *arg);

/* Whether a CPU profile is running (a plain load). */
int cprof__cpu_running(void);
/* Samples taken (every timer signal of ours) and dropped, since the
 * process started: for the metrics sampler. */
void cprof__cpu_totals(uint64_t *taken, uint64_t *dropped);
/* Gives the calling thread its timer, if a CPU profile is running: called
 * first thing in threads created while one runs (src/interpose/thread_start.c). */
void cprof__cpu_thread_started(void);

/* Called on a thread of the program's as it exits, while a CPU profile
 * may run (src/interpose/thread_start.c): stops its timer and records the
 * CPU time no timer sampled up to its end, and the expiries that came due
 * undelivered, which the owner could no longer read; and keeps its name
 * for its samples that are drained after it is gone. */
void cprof__cpu_thread_ending(void);

/* Takes a fresh snapshot of the address space for the walkers now, as the
 * look at threads does (at most once a second) when it finds threads that
 * have not learnt their stacks; the last one is freed once no handler can
 * be reading it. For tests. */
void cprof__cpu_refresh_stacks(void);

/* A thread that blocks SIGPROF has no running timer (cpu_timers.c,
 * "Threads that block SIGPROF"). The wrappers of the calls that change a thread's signal
 * mask (sigmask.c) bracket their work with mask_enter and mask_leave, and
 * in between pause the calling thread's timer before SIGPROF becomes
 * blocked and resume it once it is open again. Each does nothing for a
 * thread without a timer, or whose timer is already so.
 *
 * The CPU time a thread uses while it blocks SIGPROF is counted all the
 * same (cpu_timers.c, "CPU time no timer samples") when pause is told it
 * will run on (`runs`: 1 for a mask that blocks SIGPROF, 0 for a wait,
 * which sleeps); resume records it with the stack of the call whose return
 * address is `ret`. Pause records the expiries that came due and were not
 * delivered with the stack of the call whose return address is `ret`
 * (NULL: none). Both are async-signal-safe (the program may change its
 * mask in a signal handler). */
void cprof__cpu_mask_enter(void);
void cprof__cpu_mask_leave(void);
/* Returns 1 when it stopped a running timer. */
int cprof__cpu_timer_pause(int runs, const void *ret);
void cprof__cpu_timer_resume(const void *ret);

/* Resets the profiler's state in a forked child (idempotent; cpu.c also
 * registers fork handlers of its own, which call it). */
void cprof__cpu_atfork_child(void);

/* Registers cpu.c's fork handlers (idempotent; the first use of its lock
 * does it anyway). Its lock is a leaf: nothing holding it waits for
 * another lock of cprof's. So its prepare handler must take it after the
 * prepare handlers of locks held while calling in here (output.c's), and
 * pthread_atfork runs prepare handlers in the reverse order of
 * registration: call this before registering those. */
void cprof__cpu_atfork_register(void);

#endif
