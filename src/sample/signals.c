/* Signals cprof shares with the program.
 *
 * cprof handles two signals a program may want as well: SIGPROF, for the
 * CPU profile's timers (cpu.c), and one real-time
 * signal, with which the all-thread capture asks running threads for their
 * stacks (threads.c). Neither may change what the program sees of its own
 * signals. So sigaction and signal are interposed (interpose/sigaction.c)
 * for the signals we hold: the program reads back its own action, as if
 * ours were not there, and what it sets either waits aside (KEEP) or
 * replaces ours for real (YIELD).
 * Every arrival our handler finds is not ours goes where the program's
 * action says (cprof__signal_forward_sigsafe): to its handler, nowhere for
 * SIG_IGN, and for SIG_DFL to the default action, re-raised with it, which
 * for SIGPROF and the real-time signals ends the process as it would have
 * ended without us.
 *
 * KEEP is SIGPROF's. Once the CPU profiler has installed its handler,
 * SIGPROF is ours for the rest of the process: a signal of a deleted timer
 * may still be queued, and the default action would end the program. But
 * programs install SIGPROF handlers of their own at any time: GNU sort, for
 * one, catches it to remove its temporary files and then re-raises it, so
 * that the next tick of our timer killed it. Its handler waits aside and is
 * called from ours for every SIGPROF that is not from our timers.
 *
 * YIELD is the capture signal's. A program that installs a handler on a
 * real-time signal, or ignores it, means to use it, and a handler called
 * from ours would not behave as its own: it may rely on interrupting a
 * blocking call (no SA_RESTART), on its sa_mask, its sigaltstack, or on an
 * ignored signal never waking anything. So the program's action is
 * installed for real, and the capture does without a signal (threads.c).
 * Requests already sent must not reach the program's handler: the capture
 * marks the time it sends and waits for answers (use_begin ... use_end),
 * and the program's sigaction waits for that to end, a second at most.
 *
 * The handler reads the program's action as one word (function pointer
 * and SA_SIGINFO flag packed), so it never sees half of an update. Every
 * other signal passes through our sigaction to the real one.
 *
 * Handlers on the program's alternate stack. cprof's handlers run
 * SA_ONSTACK (altstack.c), so on a thread where the program set a stack of
 * its own, they run on it: below a handler of the program's that is busy
 * there, in what is left of a stack the program sized for its own handler.
 * So a program's handler installed with SA_ONSTACK gets cprof's signals
 * added to its sa_mask, as if the program had put them there: they wait
 * until it returns (a timer's expirations meanwhile are counted in the
 * tick's si_overrun, and weigh the sample taken then). The program reads
 * back its own mask: what we added is taken out again (`added`, per
 * signal). A signal cprof takes later is added to the handlers already in
 * place, once, when it is taken. A handler installed past our sigaction (a
 * raw system call) is not covered: a handler of ours that finds itself
 * nested on an alternate stack walks nothing there (unwind/fp.c). */
#include "sample/signals.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
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

typedef struct shared {
  int held;                 /* atomic: our action is installed */
  int in_use;               /* atomic: captures between use_begin and use_end */
  cprof__share_t how;       /* under lock */
  uintptr_t ours;           /* under lock: our handler, to know it again */
  struct sigaction program; /* under lock: the program's action */
  uint64_t program_word;    /* atomic: its handler, bit 63 for SA_SIGINFO */
} shared_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static shared_t shared[NSIG];
/* Atomic: bit sig - 1 for each signal cprof holds; and, per signal, the
 * bits of those that our sigaction added to the program's sa_mask. */
static uint64_t ours_bits;
static uint64_t added[NSIG];
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

#define SIGINFO_BIT (1ull << 63)

static uint64_t pack(const struct sigaction *sa) {
  uint64_t fn = (uint64_t)(uintptr_t)sa->sa_handler; /* sa_sigaction shares the word */
  return sa->sa_flags & SA_SIGINFO ? fn | SIGINFO_BIT : fn;
}

static int is_default(const struct sigaction *sa) { return sa->sa_handler == SIG_DFL; }
static int is_handler(const struct sigaction *sa) {
  return sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

static shared_t *entry(int sig) { return sig > 0 && sig < NSIG ? &shared[sig] : NULL; }

/* Whether our handler is the one installed for sig: something may have
 * replaced it past our sigaction (a raw system call; glibc's sigset, whose
 * sigaction is internal; a sanitizer build, which does not interpose). */
static int installed(int sig, uintptr_t ours) {
  struct sigaction cur;
  return real_sigaction()(sig, NULL, &cur) == 0 && (uintptr_t)cur.sa_handler == ours;
}

/* fork(2) copies the lock as another thread may hold it; and no capture
 * runs in the child, whose only thread is the one that forked. */
static void atfork_prepare(void) { pthread_mutex_lock(&lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&lock); }
static void atfork_child(void) {
  for (int sig = 1; sig < NSIG; sig++)
    shared[sig].in_use = 0;
  pthread_mutex_unlock(&lock);
}
static void register_atfork(void) { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }
void cprof__signal_atfork_register(void) { pthread_once(&atfork_once, register_atfork); }

static uint64_t bit(int sig) { return 1ull << (sig - 1); }

/* The program's handlers for the other signals: whether they run on the
 * alternate stack. Under lock. */
static int on_altstack(int sig, const struct sigaction *sa) {
  return sa && is_handler(sa) && (sa->sa_flags & SA_ONSTACK) &&
         !__atomic_load_n(&shared[sig].held, __ATOMIC_ACQUIRE);
}

/* A signal newly ours, into the sa_mask of every handler of the program's
 * already installed with SA_ONSTACK (see the top of this file). Under
 * lock. A program's sigaction on one of those signals at the same moment
 * may be undone: this runs once per signal, when cprof first takes it. */
static void mask_in_place(int sig) {
  for (int other = 1; other < NSIG && other <= 64; other++) {
    struct sigaction cur;
    if (other == sig || real_sigaction()(other, NULL, &cur) != 0 || !on_altstack(other, &cur) ||
        sigismember(&cur.sa_mask, sig) == 1)
      continue;
    sigaddset(&cur.sa_mask, sig);
    if (real_sigaction()(other, &cur, NULL) == 0)
      __atomic_or_fetch(&added[other], bit(sig), __ATOMIC_ACQ_REL);
  }
}

void cprof__signal_ours(sigset_t *set) {
  sigemptyset(set);
  uint64_t b = __atomic_load_n(&ours_bits, __ATOMIC_ACQUIRE);
  for (int sig = 1; sig <= 64 && sig < NSIG; sig++)
    if (b & bit(sig))
      sigaddset(set, sig);
}

int cprof__signal_take(int sig, const struct sigaction *ours, cprof__share_t how) {
  shared_t *s = entry(sig);
  if (!s)
    return -EINVAL;
  pthread_once(&atfork_once, register_atfork);
  pthread_mutex_lock(&lock);
  int rc = 0;
  uintptr_t fn = (uintptr_t)ours->sa_handler;
  struct sigaction cur;
  if (real_sigaction()(sig, NULL, &cur) != 0) {
    rc = -errno;
    goto out;
  }
  if ((uintptr_t)cur.sa_handler == fn) {
    /* Ours already. A program's SIGPROF handler kept aside means the
     * program profiles itself: not ours to take. */
    __atomic_store_n(&s->held, 1, __ATOMIC_RELEASE);
    rc = how == CPROF_SHARE_KEEP && is_handler(&s->program) ? -EBUSY : 0;
    goto out;
  }
  __atomic_store_n(&s->held, 0, __ATOMIC_RELEASE);
  if (how == CPROF_SHARE_KEEP ? is_handler(&cur) : !is_default(&cur)) {
    rc = -EBUSY;
    goto out;
  }
  s->how = how;
  s->ours = fn;
  s->program = cur;
  __atomic_store_n(&s->program_word, pack(&cur), __ATOMIC_RELEASE);
  if (real_sigaction()(sig, ours, NULL) != 0) {
    rc = -errno;
    goto out;
  }
  __atomic_store_n(&s->held, 1, __ATOMIC_RELEASE);
  if (!(__atomic_fetch_or(&ours_bits, bit(sig), __ATOMIC_ACQ_REL) & bit(sig)))
    mask_in_place(sig);
out:
  pthread_mutex_unlock(&lock);
  return rc;
}

int cprof__signal_use_begin(int sig) {
  shared_t *s = entry(sig);
  if (!s)
    return 0;
  pthread_mutex_lock(&lock);
  int ours = __atomic_load_n(&s->held, __ATOMIC_ACQUIRE) && installed(sig, s->ours);
  if (ours)
    __atomic_add_fetch(&s->in_use, 1, __ATOMIC_ACQ_REL);
  else /* replaced behind our back: the action in place is the program's */
    __atomic_store_n(&s->held, 0, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lock);
  return ours;
}

void cprof__signal_use_end(int sig) {
  shared_t *s = entry(sig);
  if (s)
    __atomic_sub_fetch(&s->in_use, 1, __ATOMIC_ACQ_REL);
}

void cprof__signal_forward_sigsafe(int sig, siginfo_t *info, void *uctx) {
  shared_t *s = entry(sig);
  if (!s)
    return;
  uint64_t w = __atomic_load_n(&s->program_word, __ATOMIC_ACQUIRE);
  uintptr_t fn = (uintptr_t)(w & ~SIGINFO_BIT);
  if (fn == (uintptr_t)SIG_IGN)
    return;
  if (fn == (uintptr_t)SIG_DFL) {
    /* What the signal would have done without us. It is blocked while we
     * run, so the one raised here is delivered, to the default action, as
     * soon as this handler returns. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    __atomic_store_n(&s->held, 0, __ATOMIC_RELEASE);
    real_sigaction()(sig, &dfl, NULL);
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
    return;
  }
  if (w & SIGINFO_BIT)
    ((void (*)(int, siginfo_t *, void *))fn)(sig, info, uctx);
  else
    ((void (*)(int))fn)(sig);
}

/* The program hands a YIELD signal's action to itself: once no request of
 * ours is on its way, its action goes in for real. Under lock. */
static int yield(shared_t *s, int sig, const struct sigaction *act, struct sigaction *old) {
  __atomic_store_n(&s->held, 0, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&s->in_use, __ATOMIC_SEQ_CST) > 0) {
    struct timespec ts = {0, 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  struct sigaction prev = s->program;
  if (real_sigaction()(sig, act, NULL) != 0) {
    __atomic_store_n(&s->held, 1, __ATOMIC_RELEASE); /* nothing changed */
    return -1;
  }
  __atomic_and_fetch(&ours_bits, ~bit(sig), __ATOMIC_ACQ_REL);
  if (old)
    *old = prev;
  return 0;
}

int cprof__signal_held(int sig) {
  shared_t *s = entry(sig);
  return s && __atomic_load_n(&s->held, __ATOMIC_ACQUIRE);
}

int cprof__signal_program_action(int sig, const struct sigaction *act, struct sigaction *old) {
  shared_t *s = entry(sig);
  if (!s)
    return real_sigaction()(sig, act, old);
  /* act and old may be the same struct. */
  struct sigaction next;
  if (act)
    next = *act;
  pthread_mutex_lock(&lock);
  int rc = 0;
  if (!__atomic_load_n(&s->held, __ATOMIC_ACQUIRE))
    rc = real_sigaction()(sig, act ? &next : NULL, old);
  else if (act && s->how == CPROF_SHARE_YIELD && !is_default(&next))
    rc = yield(s, sig, &next, old);
  else {
    if (old)
      *old = s->program;
    if (act) {
      s->program = next;
      __atomic_store_n(&s->program_word, pack(&next), __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

int cprof__signal_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (sig <= 0 || sig >= NSIG || sig > 64)
    return cprof__signal_held(sig) ? cprof__signal_program_action(sig, act, old)
                                   : real_sigaction()(sig, act, old);
  /* act and old may be the same struct. */
  struct sigaction next;
  uint64_t adding = 0;
  if (act) {
    next = *act;
    if (is_handler(&next) && (next.sa_flags & SA_ONSTACK)) {
      uint64_t b = __atomic_load_n(&ours_bits, __ATOMIC_ACQUIRE) & ~bit(sig);
      for (int s = 1; s <= 64 && s < NSIG; s++)
        if ((b & bit(s)) && sigismember(&next.sa_mask, s) != 1) {
          sigaddset(&next.sa_mask, s);
          adding |= bit(s);
        }
    }
  }
  uint64_t had = __atomic_load_n(&added[sig], __ATOMIC_ACQUIRE);
  int rc = cprof__signal_held(sig) ? cprof__signal_program_action(sig, act ? &next : NULL, old)
                                   : real_sigaction()(sig, act ? &next : NULL, old);
  if (rc != 0)
    return rc;
  if (old) /* the mask as the program set it */
    for (int s = 1; s <= 64 && s < NSIG; s++)
      if (had & bit(s))
        sigdelset(&old->sa_mask, s);
  if (act)
    __atomic_store_n(&added[sig], adding, __ATOMIC_RELEASE);
  return 0;
}

void cprof__signal_set_plain(int sig) {
  if (sig > 0 && sig < NSIG && sig <= 64)
    __atomic_store_n(&added[sig], 0, __ATOMIC_RELEASE);
}
