/* The time now on a clock, in one unit, for the few places that measure
 * (deadlines, durations, profile timestamps). */
#ifndef CPROF_CORE_CLOCK_H
#define CPROF_CORE_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static inline int64_t cprof__now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t cprof__now_ms(clockid_t clock) { return cprof__now_ns(clock) / 1000000; }

/* The absolute time ms from now on a clock, as pthread_cond_timedwait
 * takes it. */
static inline struct timespec cprof__deadline_ms(clockid_t clock, long ms) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

/* Initializes c so that its timed waits run on CLOCK_MONOTONIC: a change
 * of the wall clock neither stretches nor cuts them. (Deadlines for it come
 * from cprof__now_ns(CLOCK_MONOTONIC).) */
static inline void cprof__cond_init_monotonic(pthread_cond_t *c) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(c, &attr);
  pthread_condattr_destroy(&attr);
}

/* Whether the calling thread turned its time stamp counter off
 * (prctl(PR_SET_TSC, PR_TSC_SIGSEGV), seen by the interposed prctl,
 * interpose/creds.c). The vDSO's clocks execute rdtsc, which then raises
 * SIGSEGV: in such a thread, cprof's own reads of the clock on the
 * program's behalf (a lock wait timed, a trace's event) take the system
 * call instead. A thread created by one inherits the setting, but not
 * this mark: only the thread that called prctl is known. */
extern __thread int cprof__tsc_off __attribute__((tls_model("initial-exec")));

/* The time now, read on one of the program's threads: through the vDSO,
 * or by the system call in a thread without the TSC. Never in a signal
 * handler, which reads no clock at all. */
int64_t cprof__now_ns_program(clockid_t clock);

#endif
