/* Sharing SIGPROF with the program.
 *
 * Once the CPU profiler has installed its handler, SIGPROF is ours for the
 * rest of the process: a signal of a deleted timer may still be queued, and
 * the default action would end the program. But programs install SIGPROF
 * handlers of their own at any time: GNU sort, for one, catches it to
 * remove its temporary files and then re-raises it, so that the next tick
 * of our timer killed it. So sigaction and signal are interposed for
 * SIGPROF: while we hold it, the program's action is kept aside (and
 * reported back to it, as if installed), our handler stays, and every
 * SIGPROF that is not from our timers (setitimer's, kill's) is handed to
 * the program's action. Other signals pass straight through.
 *
 * The handler reads the program's action as one word (function pointer
 * and SA_SIGINFO flag packed), so it never sees half of an update. */
#include "sample/sigprof.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/next.h"
#include "cprof.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction(void) {
#ifdef CPROF_NO_INTERPOSE
  return sigaction;
#else
  static void *real;
  return (sigaction_fn)cprof__next(&real, "sigaction");
#endif
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int held;                  /* atomic: our handler is installed */
static struct sigaction program;  /* under lock: the program's action */
static uint64_t program_word;     /* atomic: the handler, bit 63 for SA_SIGINFO */

#define SIGINFO_BIT (1ull << 63)

static uint64_t pack(const struct sigaction *sa) {
  if (sa->sa_flags & SA_SIGINFO)
    return (uint64_t)(uintptr_t)sa->sa_sigaction | SIGINFO_BIT;
  return (uint64_t)(uintptr_t)sa->sa_handler;
}

static int is_handler(const struct sigaction *sa) {
  return (sa->sa_flags & SA_SIGINFO) ||
         (sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN);
}

int cprof__sigprof_take(const struct sigaction *ours) {
  pthread_mutex_lock(&lock);
  int rc = 0;
  struct sigaction cur;
  if (real_sigaction()(SIGPROF, NULL, &cur) != 0) {
    rc = -errno;
    goto out;
  }
  /* Still ours, unless something replaced it past our sigaction (a raw
   * system call; a sanitizer build, which does not interpose). */
  if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == ours->sa_sigaction) {
    rc = is_handler(&program) ? -EBUSY : 0;
    goto out;
  }
  __atomic_store_n(&held, 0, __ATOMIC_RELEASE);
  if (is_handler(&cur)) {
    rc = -EBUSY;
    goto out;
  }
  program = cur;
  __atomic_store_n(&program_word, pack(&cur), __ATOMIC_RELEASE);
  if (real_sigaction()(SIGPROF, ours, NULL) != 0) {
    rc = -errno;
    goto out;
  }
  __atomic_store_n(&held, 1, __ATOMIC_RELEASE);
out:
  pthread_mutex_unlock(&lock);
  return rc;
}

void cprof__sigprof_forward_sigsafe(int sig, siginfo_t *info, void *uctx) {
  uint64_t w = __atomic_load_n(&program_word, __ATOMIC_ACQUIRE);
  uintptr_t fn = (uintptr_t)(w & ~SIGINFO_BIT);
  if (fn == (uintptr_t)SIG_IGN)
    return;
  if (fn == (uintptr_t)SIG_DFL) {
    /* What the signal would have done without us: end the program. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    real_sigaction()(SIGPROF, &dfl, NULL);
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGPROF);
    return;
  }
  if (w & SIGINFO_BIT)
    ((void (*)(int, siginfo_t *, void *))fn)(sig, info, uctx);
  else
    ((void (*)(int))fn)(sig);
}

#ifndef CPROF_NO_INTERPOSE

CPROF_EXTERN int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  sigaction_fn real = real_sigaction();
  if (sig != SIGPROF || !__atomic_load_n(&held, __ATOMIC_ACQUIRE))
    return real(sig, act, old);
  pthread_mutex_lock(&lock);
  if (old)
    *old = program;
  if (act) {
    program = *act;
    __atomic_store_n(&program_word, pack(act), __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

/* glibc's signal() calls its internal sigaction, not ours: interposed too,
 * with its BSD semantics for SIGPROF (SA_RESTART, the handler stays). */
CPROF_EXTERN __sighandler_t signal(int sig, __sighandler_t handler) {
  static void *real;
  if (sig != SIGPROF || !__atomic_load_n(&held, __ATOMIC_ACQUIRE))
    return ((__sighandler_t(*)(int, __sighandler_t))cprof__next(&real, "signal"))(sig, handler);
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, sig);
  sigaction(sig, &sa, &old);
  return old.sa_handler;
}

#endif
