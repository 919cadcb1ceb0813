/* SIGPROF shared with the program (sigprof.c): once the CPU profiler holds
 * it, the program's own SIGPROF action is kept aside and still gets every
 * SIGPROF that is not from our timers. */
#ifndef CPROF_SAMPLE_SIGPROF_H
#define CPROF_SAMPLE_SIGPROF_H

#include <signal.h>

/* Installs `ours` as SIGPROF's action, keeping the program's aside; if we
 * hold it already, leaves it. -EBUSY when the program has a handler of its
 * own (it profiles itself, or cares about SIGPROF): not ours to take. */
int cprof__sigprof_take(const struct sigaction *ours);

/* For our handler, with a SIGPROF that was not our timers': does what the
 * program's action says. Async-signal-safe. */
void cprof__sigprof_forward_sigsafe(int sig, siginfo_t *info, void *uctx);

#endif
