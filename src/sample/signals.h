/* Signals cprof handles and the program may want too (signals.c): SIGPROF
 * for the CPU profile, a real-time signal for the all-thread capture.
 * While cprof holds one, the program sees and sets its own action through
 * the interposed sigaction and signal, and every arrival that is not
 * cprof's goes where the program's action says. */
#ifndef CPROF_SAMPLE_SIGNALS_H
#define CPROF_SAMPLE_SIGNALS_H

#include <signal.h>

typedef enum cprof__share {
  /* Our handler stays whatever the program sets; the program's action is
   * kept aside and gets every arrival that is not ours (SIGPROF: a queued
   * tick of a deleted timer must never meet the default action). */
  CPROF_SHARE_KEEP,
  /* Ours only while the program leaves the signal at SIG_DFL: any other
   * action the program sets is installed for real, and we stop using the
   * signal (the capture's real-time signal). */
  CPROF_SHARE_YIELD,
} cprof__share_t;

/* Installs `ours` for sig, keeping the program's action (SIG_DFL) aside;
 * if we hold it already, leaves it. Returns 0, or -EBUSY when the program
 * has an action of its own there (KEEP: a handler; YIELD: anything but
 * SIG_DFL), or a negative errno from sigaction. */
int cprof__signal_take(int sig, const struct sigaction *ours, cprof__share_t how);
/* Registers this file's fork handlers (idempotent; the first take does it
 * anyway). Its lock is taken while callers hold theirs (registry/cpu.c's
 * through cprof__cpu_start), so they must register it before their own:
 * pthread_atfork runs prepare handlers in the reverse order of
 * registration. */
void cprof__signal_atfork_register(void);

/* For a YIELD signal, around sending it: begin returns 1 when the signal
 * is still ours (our action is installed) and then keeps it ours until
 * end: a program that sets its own action meanwhile waits until end, so
 * that no signal we sent reaches the program's handler. Returns 0, and
 * nothing to end, when the signal is not ours. */
int cprof__signal_use_begin(int sig);
void cprof__signal_use_end(int sig);

/* For our handler, with an arrival that is not ours: does what the
 * program's action says (SIG_DFL: what the kernel would have done, which
 * for SIGPROF and real-time signals ends the process; SIG_IGN: nothing).
 * Async-signal-safe. */
void cprof__signal_forward_sigsafe(int sig, siginfo_t *info, void *uctx);

/* For the interposed sigaction and signal (interpose/sigaction.c):
 * whether cprof holds sig now (one load), and, when it does, the program's
 * sigaction as the program must see it: it reads back its own action, and
 * what it sets waits aside (KEEP) or replaces ours for real (YIELD).
 * Returns what sigaction returns. */
int cprof__signal_held(int sig);
int cprof__signal_program_action(int sig, const struct sigaction *act, struct sigaction *old);

/* The interposed sigaction, whole: the above for a signal cprof holds, the
 * real call otherwise; and for a handler the program installs with
 * SA_ONSTACK, cprof's signals in its sa_mask, which the program does not
 * read back (signals.c, "Handlers on the program's alternate stack").
 * set_plain: the program set sig's action without a mask of ours (the
 * interposed signal(), never SA_ONSTACK). */
int cprof__signal_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
void cprof__signal_set_plain(int sig);

/* The signals cprof holds now, for a thread that must block them. */
void cprof__signal_ours(sigset_t *set);

#endif
