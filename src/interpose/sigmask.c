/* The calls that change a thread's signal mask, interposed for SIGPROF: a
 * thread that blocks SIGPROF has no running timer of ours, so a program
 * that reads SIGPROF itself (signalfd(2), sigwaitinfo(2)) never reads one
 * of our ticks (cpu_timers.c, "Threads that block SIGPROF", says how and why).
 *
 * Each wrapper is the real call and nothing else unless the call blocks or
 * opens SIGPROF. Then the calling thread's timer is stopped before the
 * real call blocks it, and started again after the real call has opened it.
 * The sigwait family waits for signals it may not block (Linux opens them
 * for the wait): a thread that waits for SIGPROF with it open has its timer
 * stopped for the wait.
 *
 * Not covered: masks changed without these functions (a raw rt_sigprocmask
 * system call; swapcontext(3) and setcontext(3), which make it directly),
 * and the BSD and System V relics (sigblock, sighold...). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include "core/next.h"
#include "cprof.h"
#include "sample/cpu.h"

#ifndef CPROF_NO_INTERPOSE

typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);

/* What a call with (how, set) does to SIGPROF: -1 blocks it, 1 opens it,
 * 0 leaves it (or fails, for a `how` it does not know). */
static int effect_on_sigprof(int how, const sigset_t *set) {
  if (!set)
    return 0;
  int member = sigismember(set, SIGPROF) == 1;
  switch (how) {
  case SIG_BLOCK: return member ? -1 : 0;
  case SIG_UNBLOCK: return member ? 1 : 0;
  case SIG_SETMASK: return member ? -1 : 1;
  default: return 0;
  }
}

/* The real call, with the calling thread's timer stopped before SIGPROF is
 * blocked, or started after it is opened; the CPU time in between is
 * counted, with the stack of the call that opened it (`ret`, the wrapper's
 * return address). The real call's result and errno are the caller's. */
static int change_mask(mask_fn real, int how, const sigset_t *set, sigset_t *old, const void *ret) {
  int effect = effect_on_sigprof(how, set);
  if (!effect)
    return real(how, set, old);
  cprof__cpu_mask_enter();
  int paused = effect < 0 && cprof__cpu_timer_pause(1, ret);
  int rc = real(how, set, old);
  int saved = errno;
  if (rc == 0 ? effect > 0 : paused) /* opened, or a failed call left it open */
    cprof__cpu_timer_resume(ret);
  cprof__cpu_mask_leave();
  errno = saved;
  return rc;
}

CPROF_EXTERN int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  static void *real;
  return change_mask((mask_fn)cprof__next(&real, "pthread_sigmask"), how, set, old,
                     __builtin_return_address(0));
}

CPROF_EXTERN int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  static void *real;
  return change_mask((mask_fn)cprof__next(&real, "sigprocmask"), how, set, old,
                     __builtin_return_address(0));
}

/* Before a wait for a set of signals: stops the timer if SIGPROF is in the
 * set and open (so running). Returns whether it did. The thread sleeps
 * meanwhile: no CPU time to count. */
static int pause_for_wait(const sigset_t *set) {
  if (!set || sigismember(set, SIGPROF) != 1)
    return 0;
  cprof__cpu_mask_enter();
  int paused = cprof__cpu_timer_pause(0, NULL);
  cprof__cpu_mask_leave();
  return paused;
}

static void resume_after_wait(int paused) {
  if (!paused)
    return;
  int saved = errno;
  cprof__cpu_mask_enter();
  cprof__cpu_timer_resume(NULL);
  cprof__cpu_mask_leave();
  errno = saved;
}

CPROF_EXTERN int sigtimedwait(const sigset_t *set, siginfo_t *info,
                              const struct timespec *timeout) {
  static void *real;
  int paused = pause_for_wait(set);
  int rc = ((int (*)(const sigset_t *, siginfo_t *, const struct timespec *))cprof__next(
      &real, "sigtimedwait"))(set, info, timeout);
  resume_after_wait(paused);
  return rc;
}

CPROF_EXTERN int sigwaitinfo(const sigset_t *set, siginfo_t *info) {
  static void *real;
  int paused = pause_for_wait(set);
  int rc = ((int (*)(const sigset_t *, siginfo_t *))cprof__next(&real, "sigwaitinfo"))(set, info);
  resume_after_wait(paused);
  return rc;
}

CPROF_EXTERN int sigwait(const sigset_t *set, int *sig) {
  static void *real;
  int paused = pause_for_wait(set);
  int rc = ((int (*)(const sigset_t *, int *))cprof__next(&real, "sigwait"))(set, sig);
  resume_after_wait(paused);
  return rc;
}

#endif
