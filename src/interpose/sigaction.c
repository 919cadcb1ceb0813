/* sigaction and signal, interposed: for a signal cprof holds (SIGPROF, the
 * capture's real-time signal) the program reads and sets its own action
 * through sample/signals.c, as if ours were not there; every other signal
 * goes to the real call, with cprof's signals in the sa_mask of a handler
 * that runs on the alternate stack (SA_ONSTACK), which the program does
 * not read back (signals.c). */
#include <signal.h>
#include <string.h>

#include "core/next.h"
#include "cprof.h"
#include "sample/signals.h"

#ifndef CPROF_NO_INTERPOSE

CPROF_EXTERN int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  return cprof__signal_sigaction(sig, act, old);
}

/* glibc's signal() calls its internal sigaction, not ours: interposed too,
 * with its BSD semantics (SA_RESTART, the handler stays). */
CPROF_EXTERN __sighandler_t signal(int sig, __sighandler_t handler) {
  if (!cprof__signal_held(sig)) {
    static void *real;
    __sighandler_t was =
        ((__sighandler_t(*)(int, __sighandler_t))cprof__next(&real, "signal"))(sig, handler);
    if (was != SIG_ERR)
      cprof__signal_set_plain(sig);
    return was;
  }
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, sig);
  if (cprof__signal_program_action(sig, &sa, &old) != 0)
    return SIG_ERR;
  return old.sa_handler;
}

#endif
