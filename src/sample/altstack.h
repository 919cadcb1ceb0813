/* cprof's alternate signal stacks (altstack.c): every thread of the
 * program's that cprof saw start has one, so that cprof's signals
 * (SIGPROF, the capture's real-time signal; both installed SA_ONSTACK)
 * never land on a stack the program sized for itself: a PTHREAD_STACK_MIN
 * thread, a coroutine's heap stack, the program's own 8 KiB sigaltstack.
 * The program still sees and sets its own sigaltstack(2) as without cprof
 * (interpose/sigaltstack.c). */
#ifndef CPROF_SAMPLE_ALTSTACK_H
#define CPROF_SAMPLE_ALTSTACK_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

/* The most stack cprof's handlers use beyond the kernel's signal frame,
 * with either unwinder, from a cold rule cache, with a margin: measured by
 * tests/sample/test_handler_stack.c, which asserts it (984 bytes with the
 * DWARF walker, 920 with frame pointers, 400 and 488 for the capture's;
 * doc/internals.md, "Signal handlers: stack"). */
#define CPROF_HANDLER_STACK_BOUND 1536
/* Room on cprof's stack for a handler of the program's that runs there:
 * the program's SIGPROF handler, which cprof's calls, and a handler the
 * program installed with SA_ONSTACK on a thread where it set no stack of
 * its own (without cprof it would run on the thread's stack). Go's signal
 * stacks, on which cgo programs' handlers run, are 32 KiB. */
#define CPROF_ALTSTACK_PROGRAM_ROOM 32768

/* Bytes of cprof's stack above its guard page: getauxval(AT_MINSIGSTKSZ)
 * (the kernel's signal frame on this CPU, xsave area included), plus the
 * two figures above, rounded up to pages. */
size_t cprof__altstack_size(void);

/* On a thread as it starts (interpose/thread_start.c; the main thread from
 * a constructor): maps its stack (a guard page below) and installs it,
 * unless the program has set one of its own already. Outside signal
 * context. */
void cprof__altstack_thread_start(void);
/* On a thread of the program's as it ends, however it ends (a key's
 * destructor): blocks cprof's signals on it for the little it still runs,
 * takes its stack off and unmaps it. */
void cprof__altstack_thread_end(void);

/* Whether the calling thread has a stack for cprof's signals (its own or
 * cprof's); and whether thread `tid` has, for a thread asking about
 * another (a lock-free scan of the threads that have one). A thread cprof
 * did not see start (made by clone(2) directly, or before libcprof was
 * loaded) has none, and gets no running CPU timer. Builds that interpose
 * nothing (the sanitizers') make no stacks, and say yes. */
int cprof__altstack_here(void);
int cprof__altstack_ready(pid_t tid);

/* sigaltstack(2) as the program sees it (interpose/sigaltstack.c): `old`
 * is the program's own stack, or SS_DISABLE while cprof's is the one in
 * place; a stack the program sets replaces cprof's; one it disables gives
 * cprof's back. Returns what sigaltstack returns, errno set. */
int cprof__altstack_program(const stack_t *ss, stack_t *old);

#endif
