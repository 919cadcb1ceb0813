/* Sharing SIGPROF with the program: the CPU profiler's side of signals.c.
 *
 * Once the CPU profiler has installed its handler, SIGPROF is ours for the
 * rest of the process (a signal of a deleted timer may still be queued, and
 * the default action would end the program), and the program's own SIGPROF
 * action is kept aside: it reads it back through sigaction and signal as if
 * installed, and it gets every SIGPROF that is not from our timers
 * (setitimer's, kill's). See signals.c, CPROF_SHARE_KEEP. */
#include "sample/sigprof.h"

#include "sample/signals.h"

int cprof__sigprof_take(const struct sigaction *ours) {
  return cprof__signal_take(SIGPROF, ours, CPROF_SHARE_KEEP);
}

void cprof__sigprof_forward_sigsafe(int sig, siginfo_t *info, void *uctx) {
  cprof__signal_forward_sigsafe(sig, info, uctx);
}
