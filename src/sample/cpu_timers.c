/* The CPU sampler's per-thread timers: one POSIX timer on each thread's
 * CPU clock, in slots the mask wrappers, the SIGPROF handler and the owner
 * all look at; the timers stopped while a thread blocks SIGPROF; the CPU
 * time no timer samples; and the expiries that came due and were never
 * delivered. The buffer they record into, and the owner that starts,
 * tracks and stops them, are cpu.c's; the handler is cpu_sigsafe.c's. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/guard.h"
#include "core/hash.h"
#include "sample/altstack.h"
#include "sample/cpu_internal.h"
#include "sample/threads.h"
#include "unwind/pc.h"

/* A uniform draw in [1, period_ns], lock-free: a counter, offset by a
 * seed drawn once per process, through a finaliser. The seed matters: with
 * the counter alone, each thread's phase was the same in every process, a
 * light thread's rounding then leaned the same way profile after profile
 * (the same sign in 24 of 24 runs of bench/cpu/duty_sweep.sh), and
 * repeated profiles did not average it out. The mask wrappers draw too. */
static long first_expiry_ns(void) {
  static uint64_t draws, seed;
  uint64_t k = __atomic_load_n(&seed, __ATOMIC_RELAXED);
  if (!k) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t mine =
        ((uint64_t)ts.tv_nsec << 20 ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid() << 40) | 1;
    if (!__atomic_compare_exchange_n(&seed, &k, mine, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      mine = k; /* another thread's came first */
    k = mine;
  }
  uint64_t z = __atomic_add_fetch(&draws, 0x9e3779b97f4a7c15ULL, __ATOMIC_RELAXED) + k;
  return 1 + (long)(cprof__hash_avalanche(z) % (uint64_t)cprof__cpu_period_ns);
}

/* Starts (or restarts) a timer: the first expiry after `first` ns of the
 * thread's CPU, then every period. */
static int arm(timer_t t, long first) {
  struct itimerspec its = {{cprof__cpu_period_ns / 1000000000, cprof__cpu_period_ns % 1000000000},
                           {first / 1000000000, first % 1000000000}};
  return timer_settime(t, 0, &its, NULL);
}

/* ---- threads that block SIGPROF ----
 *
 * A program may block SIGPROF in a thread and read it there itself, with
 * signalfd(2) or sigwaitinfo(2). A tick of our timer pending on that thread
 * would be read by the program as its own. So a thread that blocks SIGPROF
 * has no running timer:
 *
 * - A thread that blocks it with pthread_sigmask or sigprocmask
 *   (interposed, sigmask.c) has its timer stopped before the real call
 *   makes the signal blocked: a tick that was already pending is then
 *   delivered to our handler on the way out of timer_settime, while
 *   SIGPROF is still open. The time left in its period is kept, and the
 *   timer goes on from there when the thread unblocks SIGPROF again.
 * - A thread that starts with SIGPROF blocked (inherited from its creator)
 *   gets its timer stopped, from its own mask (cprof__cpu_thread_started).
 * - Any other thread is given a timer by the owner, which reads whether it
 *   blocks SIGPROF in /proc/self/task/TID/status (SigBlk, proc(5)).
 *
 * That last look could race with the thread blocking SIGPROF just after
 * it: each mask wrapper counts itself in (`masking`) from before it looks
 * for its timer until its real call has returned, and the owner arms other
 * threads' timers only in an exclusive section (`excl`), entered once no
 * wrapper is inside and during which new wrappers wait. Either the wrapper
 * comes first and /proc shows SIGPROF blocked, or the owner does and the
 * wrapper finds the timer to stop. Deleting timers (threads that exited,
 * the profile's stop) happens in the same section, so that no wrapper
 * ever acts on a timer that is being given to another thread.
 *
 * The timers live in slots that are never freed (a wrapper may look at one
 * any time), in chunks allocated as the number of threads grows. */

cprof__cpu_slot_t *cprof__cpu_chunks[CPROF__CPU_MAX_CHUNKS];
int cprof__cpu_nchunks;

static int masking;          /* wrappers between looking at their slot and their return */
static int excl;             /* the owner's exclusive section is on */
static pthread_t excl_owner; /* valid while excl */
static __thread int mask_depth __attribute__((tls_model("initial-exec")));
__thread pid_t cprof__cpu_my_tid __attribute__((tls_model("initial-exec")));
__thread cprof__cpu_slot_t *cprof__cpu_my_slot __attribute__((tls_model("initial-exec")));

void cprof__cpu_excl_begin(void) {
  __atomic_store_n(&excl_owner, pthread_self(), __ATOMIC_RELAXED);
  __atomic_store_n(&excl, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&masking, __ATOMIC_SEQ_CST) != 0)
    cprof__cpu_pause_briefly();
}

void cprof__cpu_excl_end(void) { __atomic_store_n(&excl, 0, __ATOMIC_SEQ_CST); }

void cprof__cpu_mask_enter(void) {
  /* A wrapper in a signal handler that interrupted a wrapper, or the
   * owner's own section, on this thread: already counted, or the one the
   * section is for. It must not wait for itself. */
  if (mask_depth++ > 0)
    return;
  for (;;) {
    __atomic_add_fetch(&masking, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&excl, __ATOMIC_SEQ_CST) ||
        pthread_equal(__atomic_load_n(&excl_owner, __ATOMIC_RELAXED), pthread_self()))
      return;
    __atomic_sub_fetch(&masking, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&excl, __ATOMIC_SEQ_CST))
      cprof__cpu_pause_briefly();
  }
}

void cprof__cpu_mask_leave(void) {
  if (--mask_depth == 0)
    __atomic_sub_fetch(&masking, 1, __ATOMIC_SEQ_CST);
}

/* ---- CPU time no timer samples ----
 *
 * Two kinds of thread use CPU that no timer of ours sees: a thread that
 * blocks SIGPROF (its timer is stopped, above), and a thread no timer
 * could be made for (timer_create refused, as by a seccomp filter that a
 * program put on every thread after the profile began). A profile whose
 * total fell short of the CPU the program used, without a word, would
 * mislead; so that time is counted from the threads' own CPU clocks and
 * shown as samples of its own, whose first frame names the reason (pc.h):
 * "[thread blocked SIGPROF]", "[thread not sampled: timer_create: ...]".
 *
 * A slot's unsampled_since holds the thread's CPU clock where its
 * uncounted time began: set when its timer stops for a mask that blocks
 * SIGPROF (not for a sigwait, which sleeps), when it is found blocking
 * SIGPROF without a timer, and when no timer can be made for it. Two sides
 * count it, and a compare-and-swap against an exchange on unsampled_since
 * gives each nanosecond to exactly one of them:
 *
 * - the thread itself, when it opens SIGPROF again (cprof__cpu_timer_resume):
 *   it exchanges the value for 0, then reads its clock, and adds the
 *   difference to owed_ns, which the owner adds to as well. Once that
 *   holds a sampling period or more, the thread records it all with its
 *   stack from the call that opened SIGPROF: where the code that ran
 *   blocked returns to. (Not when it is inside cprof's own work, whose
 *   guard is up: the time alone then.) So a thread that blocks SIGPROF
 *   for a few microseconds at a time, a hundred thousand times a second,
 *   makes a record per period of such time, as its timer would have made
 *   a sample, and each stack is chosen in proportion to the time blocked
 *   before it, as a timer's would be; a record for each unblocking would
 *   flood the buffer. A buffer that is full leaves the time owed.
 * - the profile's owner, every time it looks at the threads (every 250 ms)
 *   and at the stop: it reads the clock of each thread so counted, moves
 *   unsampled_since up to it by compare-and-swap, and adds the difference
 *   to owed_ns. A thread that resumed meanwhile made the swap fail and
 *   counted the time itself; one that resumes after it counts from the new
 *   value, read after the owner's. The owner records what is owed only for
 *   a thread that exited (its clock is gone with it: the owner's last read
 *   is as far as it goes) and at the stop, without a stack (another
 *   thread's cannot be walked from here); until then, a thread that resumes
 *   takes its owed time with its own stack.
 *
 * cprof's own threads (the request's, which runs the profile, and those
 * cprof starts while one runs) block every signal; their time is cprof's,
 * not the program's, and is not counted.
 *
 * A thread of the program's made with pthread_create counts its own time
 * as it exits, as a resume does (cprof__cpu_thread_ending, from
 * thread_start.c's key destructor), with its name, for a drain that comes
 * after it is gone.
 *
 * What remains unsampled: the CPU of another thread (main, one made with
 * clone) that exits while blocked or without a timer, since the owner's
 * last look (at most 250 ms of it); and that of threads that block SIGPROF
 * by a means the wrappers do not see (sigmask.c), whose timers run on. */

static int64_t cpu_ns_of(clockid_t clock) {
  struct timespec ts;
  if (clock_gettime(clock, &ts) != 0)
    return 0; /* a thread that exited */
  int64_t ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  return ns > 0 ? ns : 1; /* 0 means "not counting" */
}

static uintptr_t unsampled_mark(const cprof__cpu_slot_t *s) {
  return s->why ? CPROF_PC_MARK(CPROF_PC_NO_TIMER_KIND, s->why) : CPROF_PC_UNSAMPLED_BLOCKED;
}

/* Time that cannot be recorded any more (a full buffer at the end): lost,
 * in sampling periods, as the profile's "lost samples" frame counts it. */
static void lose(int64_t ns) {
  long period = __atomic_load_n(&cprof__cpu_period_ns, __ATOMIC_RELAXED);
  uint64_t n = period > 0 ? (uint64_t)((ns + period / 2) / period) : 1;
  __atomic_add_fetch(&cprof__cpu_lost, n ? n : 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&cprof__cpu_lost_total, n ? n : 1, __ATOMIC_RELAXED);
}

/* Under lock: records what the owner counted for a slot's thread, without
 * a stack (above). */
static void record_owed(cprof__cpu_slot_t *s) {
  int64_t owed = __atomic_exchange_n(&s->owed_ns, 0, __ATOMIC_SEQ_CST);
  if (cprof__cpu_record_unsampled_sigsafe(s->tid, unsampled_mark(s), owed, NULL, s->name) != 0)
    lose(owed);
}

/* Under lock: counts, for every thread with uncounted CPU time, the time
 * up to now; records it all when `final` (above). */
void cprof__cpu_count_unsampled(int final) {
  int slots = cprof__cpu_nchunks * CPROF__CPU_SLOTS_PER_CHUNK;
  for (int i = 0; i < slots; i++) {
    cprof__cpu_slot_t *s = cprof__cpu_slot_at(i);
    pid_t tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
    if (!tid)
      continue;
    int64_t since = __atomic_load_n(&s->unsampled_since, __ATOMIC_ACQUIRE);
    int64_t now = since ? cpu_ns_of(cprof__thread_cpu_clock(tid)) : 0;
    if (now && __atomic_compare_exchange_n(&s->unsampled_since, &since, now, 0, __ATOMIC_SEQ_CST,
                                           __ATOMIC_SEQ_CST)) {
      __atomic_add_fetch(&s->owed_ns, now - since, __ATOMIC_SEQ_CST);
      /* Its name while it lives: what is owed may be recorded after it
       * exits, when /proc no longer knows it. Once: a thread is named, if
       * ever, as it starts. */
      if (!s->name[0])
        cprof__thread_name(tid, s->name);
    }
    if (final)
      record_owed(s);
  }
}

/* Under lock: a free slot, allocating a chunk when all are taken. */
static cprof__cpu_slot_t *free_slot(void) {
  cprof__cpu_slot_t *s = cprof__cpu_find_slot(0);
  if (s || cprof__cpu_nchunks == CPROF__CPU_MAX_CHUNKS)
    return s;
  cprof__cpu_slot_t *c = calloc(CPROF__CPU_SLOTS_PER_CHUNK, sizeof *c);
  if (!c)
    return NULL;
  cprof__cpu_chunks[cprof__cpu_nchunks] = c;
  __atomic_store_n(&cprof__cpu_nchunks, cprof__cpu_nchunks + 1, __ATOMIC_RELEASE);
  return c;
}

pid_t cprof__cpu_self_tid(void) {
  if (!cprof__cpu_my_tid)
    cprof__cpu_my_tid = (pid_t)syscall(SYS_gettid);
  return cprof__cpu_my_tid;
}

/* The calling thread's slot, if it has a timer (between mask_enter and
 * mask_leave: the slot cannot change hands meanwhile). */
static cprof__cpu_slot_t *mine(void) {
  if (__atomic_load_n(&cprof__cpu_nchunks, __ATOMIC_ACQUIRE) == 0)
    return NULL; /* never profiled: no system call for the tid */
  cprof__cpu_self_tid();
  cprof__cpu_slot_t *s = cprof__cpu_my_slot;
  if (s && __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) == cprof__cpu_my_tid)
    return s;
  return cprof__cpu_my_slot = cprof__cpu_find_slot(cprof__cpu_my_tid);
}

/* ---- Expiries never delivered ----
 *
 * Linux checks a thread's CPU timers only at a scheduler tick that finds
 * the thread running: an expiry comes due on the thread's CPU clock, and
 * is delivered at the next such tick, on average a tick's worth of the
 * thread's CPU later (more for a thread that runs in bursts shorter than a
 * tick). Expiries that came due but were not yet delivered when the timer
 * is deleted (the profile's stop, the thread's exit) are gone: about 4 ms
 * of CPU per thread and profile at CONFIG_HZ=250, a fifth of the CPU of
 * threads at 1 % duty in a 2 s profile.
 *
 * The timer's first expiry is drawn uniformly in [1, period] after the
 * thread's CPU clock read `armed_at`, and then comes every period; so by
 * the clock's value `now`, due = floor((now - armed_at - first) / period)
 * + 1 expiries (0 before the first) have come due, and due x period has
 * the expectation now - armed_at, the CPU used. The handler counts the
 * periods each thread's signals brought (`delivered`, overruns included);
 * at the stop (from the clock read just before its timer is deleted) and
 * at the thread's own exit (its timer stopped first), due - delivered
 * periods are recorded for it, plus the CPU a thread born during the
 * profile used before its timer was armed, as a sample whose frame is
 * "[CPU since the thread's last sample]": its stack was never taken.
 * Each thread's total is then unbiased: its expectation is the CPU its
 * clock counted over the profile. A thread whose timer pauses (it blocks
 * SIGPROF) has the expiries due and not delivered recorded then, with the
 * pausing call's stack, and its schedule starts again at the resume from
 * the first expiry not yet due; its CPU while paused is counted as "CPU
 * time no timer samples" says. */

/* The expiries of s's timer due by its thread's clock `now`. */
static int64_t due_by(const cprof__cpu_slot_t *s, int64_t now) {
  int64_t run = now - s->armed_at;
  return run >= s->first_ns ? (run - s->first_ns) / cprof__cpu_period_ns + 1 : 0;
}

/* The CPU, in ns, of the expiries of s's timer due by its thread's clock
 * `now` and not delivered, with that used before it was armed. */
static int64_t undelivered_ns(const cprof__cpu_slot_t *s, int64_t now) {
  if (s->due_off || s->state != CPROF__CPU_SLOT_ARMED || now <= 0)
    return 0;
  int64_t due = due_by(s, now);
  int64_t missing = due - (int64_t)__atomic_load_n(&s->delivered, __ATOMIC_ACQUIRE);
  return (missing > 0 ? missing * cprof__cpu_period_ns : 0) + s->before_ns;
}

int cprof__cpu_timer_pause(int runs, const void *ret) {
  cprof__cpu_slot_t *s = mine();
  if (!s || s->state != CPROF__CPU_SLOT_ARMED)
    return 0;
  struct itimerspec zero, was;
  memset(&zero, 0, sizeof zero);
  if (timer_settime(s->timer, 0, &zero, &was) != 0)
    return 0;
  int64_t now = cpu_ns_of(CLOCK_THREAD_CPUTIME_ID);
  if (!s->due_off && now > 0) {
    /* What came due and never came is recorded now, with the stack of the
     * call that pauses, and the timer goes on, at the resume, from the
     * first expiry not yet due: "Expiries never delivered". */
    int64_t ns = undelivered_ns(s, now);
    s->left_ns = (long)(s->armed_at + s->first_ns + due_by(s, now) * cprof__cpu_period_ns - now);
    s->before_ns = 0;
    if (ns > 0 && cprof__cpu_record_unsampled_sigsafe(cprof__cpu_my_tid, CPROF_PC_UNDELIVERED, ns,
                                                      ret, NULL) != 0)
      lose(ns);
  } else {
    s->left_ns = (long)was.it_value.tv_sec * 1000000000 + was.it_value.tv_nsec;
    s->due_off = 1;
  }
  s->state = CPROF__CPU_SLOT_PAUSED;
  if (runs)
    __atomic_store_n(&s->unsampled_since, now, __ATOMIC_SEQ_CST);
  return 1;
}

void cprof__cpu_timer_resume(const void *ret) {
  cprof__cpu_slot_t *s = mine();
  if (!s || s->state != CPROF__CPU_SLOT_PAUSED)
    return;
  if (!cprof__altstack_here()) {
    /* No stack for our signal (a thread cprof did not see start, found
     * blocking SIGPROF): its timer goes for good, and its CPU time is
     * counted as not sampled from here, saying why. */
    timer_delete(s->timer);
    s->why = CPROF_CALL_SIGNAL_STACK << 16 | ENOTSUP;
    int64_t zero = 0;
    __atomic_compare_exchange_n(&s->unsampled_since, &zero, cpu_ns_of(CLOCK_THREAD_CPUTIME_ID), 0,
                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    s->state = CPROF__CPU_SLOT_FAILED;
    return;
  }
  /* The exchange first, then the clock: see "CPU time no timer samples". */
  int64_t since = __atomic_exchange_n(&s->unsampled_since, 0, __ATOMIC_SEQ_CST);
  int64_t now = cpu_ns_of(CLOCK_THREAD_CPUTIME_ID);
  if (since) {
    int64_t ns = now - since;
    if (__atomic_add_fetch(&s->owed_ns, ns, __ATOMIC_SEQ_CST) >= cprof__cpu_period_ns) {
      int64_t owed = __atomic_exchange_n(&s->owed_ns, 0, __ATOMIC_SEQ_CST);
      if (cprof__cpu_record_unsampled_sigsafe(cprof__cpu_my_tid, CPROF_PC_UNSAMPLED_BLOCKED, owed,
                                              ret, NULL) != 0)
        __atomic_add_fetch(&s->owed_ns, owed, __ATOMIC_SEQ_CST); /* for a later one */
    }
  }
  long first =
      s->left_ns > 0 && s->left_ns <= cprof__cpu_period_ns ? s->left_ns : first_expiry_ns();
  if (!s->due_off) { /* the schedule, from here */
    s->armed_at = now;
    s->first_ns = first;
    __atomic_store_n(&s->delivered, 0, __ATOMIC_SEQ_CST);
  }
  if (arm(s->timer, first) == 0)
    s->state = CPROF__CPU_SLOT_ARMED;
}

/* Whether a thread blocks SIGPROF: 1 or 0, or -1 when it has exited. */
int cprof__cpu_blocks_sigprof(pid_t tid) {
  uint64_t blocked, pending;
  if (cprof__thread_signal_masks(tid, &blocked, &pending) != 0)
    return -1;
  return (int)((blocked >> (SIGPROF - 1)) & 1);
}

/* A timer for tid's CPU clock, into s->timer, started unless `blocked`.
 * Returns 0, or a negative errno with s->why saying which call failed. */
static int make_timer(cprof__cpu_slot_t *s, pid_t tid, int blocked) {
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev.sigev_value.sival_ptr = cprof__cpu_timer_value(tid);
  sev._sigev_un._tid = tid;
  timer_t t;
  s->why = 0;
  if (timer_create(cprof__thread_cpu_clock(tid), &sev, &t) != 0) {
    s->why = CPROF_CALL_TIMER_CREATE << 16 | (uint16_t)errno;
    return -errno; /* EINVAL: the thread exited meanwhile */
  }
  /* Every thread's CPU clock starts at 0: a first expiry a whole period
   * away would never sample a thread that lives on less CPU than that. A
   * first expiry drawn uniformly within the period (as Go's runtime does)
   * samples each thread in proportion to the CPU it uses, however short
   * its life. */
  s->first_ns = first_expiry_ns();
  s->armed_at = cpu_ns_of(cprof__thread_cpu_clock(tid));
  if (!blocked && arm(t, s->first_ns) != 0) {
    int err = errno;
    timer_delete(t);
    s->why = CPROF_CALL_TIMER_SETTIME << 16 | (uint16_t)err;
    return err == EINVAL ? -EIO : -err; /* not the EINVAL of a thread gone */
  }
  s->timer = t;
  return 0;
}

/* Under lock: gives tid a timer, unless it has one (the look at /proc and
 * a new thread's own start may both get to a thread created during a
 * profile, and two timers would count its CPU twice). Stopped when
 * `blocked`, running otherwise. For another thread than the caller, in the
 * exclusive section. Returns 1, 0 when it had one, or a negative errno.
 * When no timer can be made and `keep_failed`, the thread keeps a slot
 * without one, whose CPU time is counted as not sampled; a thread that
 * exited meanwhile (timer_create's EINVAL, or no clock) gets none. The
 * time of an `own` thread, one of cprof's, is never counted; that of a
 * thread `born` since the profile began is counted from its birth. */
int cprof__cpu_add_timer(pid_t tid, int blocked, int keep_failed, int own, int born) {
  if (cprof__cpu_find_slot(tid))
    return 0;
  cprof__cpu_slot_t *s = free_slot();
  if (!s)
    return -ENOMEM;
  /* A thread that would take our signal on a stack the program sized for
   * itself gets no timer that runs: one cprof did not see start, which has
   * no alternate stack of cprof's (altstack.h). Its CPU time is counted
   * as not sampled, as for a timer that could not be made. (One that
   * blocks SIGPROF gets its timer stopped, and no start while it has no
   * stack: cprof__cpu_timer_resume.) */
  int err;
  if (!blocked &&
      !(tid == cprof__cpu_self_tid() ? cprof__altstack_here() : cprof__altstack_ready(tid))) {
    s->why = CPROF_CALL_SIGNAL_STACK << 16 | ENOTSUP;
    err = -ENOENT;
  } else {
    err = make_timer(s, tid, blocked);
  }
  if (err == -EINVAL || (err && !keep_failed))
    return err;
  int64_t now = (blocked || err) && !own ? cpu_ns_of(cprof__thread_cpu_clock(tid)) : 0;
  if (err && !now && !own)
    return err;
  if (now && born)
    now = 1; /* the clock's start: all its CPU is the profile's */
  s->state = err       ? CPROF__CPU_SLOT_FAILED
             : blocked ? CPROF__CPU_SLOT_PAUSED
                       : CPROF__CPU_SLOT_ARMED;
  s->left_ns = 0;
  __atomic_store_n(&s->unsampled_since, now, __ATOMIC_RELAXED);
  __atomic_store_n(&s->owed_ns, 0, __ATOMIC_RELAXED);
  s->name[0] = '\0';
  __atomic_store_n(&s->delivered, 0, __ATOMIC_RELAXED);
  s->due_off = own || blocked || err || !s->armed_at;
  s->before_ns = born && !s->due_off ? s->armed_at : 0;
  s->end_tid = 0;
  __atomic_store_n(&s->tid, tid, __ATOMIC_RELEASE);
  return err ? err : 1;
}

/* In the exclusive section: the slot's timer is gone, the slot free, and
 * what its thread was owed recorded. */
void cprof__cpu_remove_timer(cprof__cpu_slot_t *s) {
  record_owed(s);
  if (s->state != CPROF__CPU_SLOT_FAILED)
    timer_delete(s->timer);
  __atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
}
void cprof__cpu_timer_end(const char *name) {
  cprof__cpu_mask_enter();
  cprof__cpu_slot_t *s = mine();
  if (s && s->state == CPROF__CPU_SLOT_ARMED && !s->due_off) {
    /* Its timer stopped (a signal already queued comes in on the way out
     * of timer_settime), then what came due and never came: "Expiries
     * never delivered". */
    struct itimerspec zero;
    memset(&zero, 0, sizeof zero);
    if (timer_settime(s->timer, 0, &zero, NULL) == 0) {
      int64_t ns = undelivered_ns(s, cpu_ns_of(CLOCK_THREAD_CPUTIME_ID));
      s->state = CPROF__CPU_SLOT_PAUSED;
      s->left_ns = 0;
      s->due_off = 1;
      if (cprof__cpu_record_unsampled_sigsafe(cprof__cpu_my_tid, CPROF_PC_UNDELIVERED, ns, NULL,
                                              name) != 0)
        lose(ns);
    }
  }
  /* As a resume does: the exchange first, then the clock; and what is
   * owed, however little. */
  int64_t since = s ? __atomic_exchange_n(&s->unsampled_since, 0, __ATOMIC_SEQ_CST) : 0;
  int64_t ns = since ? cpu_ns_of(CLOCK_THREAD_CPUTIME_ID) - since : 0;
  ns += s ? __atomic_exchange_n(&s->owed_ns, 0, __ATOMIC_SEQ_CST) : 0;
  if (ns > 0 && cprof__cpu_record_unsampled_sigsafe(cprof__cpu_my_tid, unsampled_mark(s), ns, NULL,
                                                    name) != 0)
    lose(ns);
  cprof__cpu_mask_leave();
}

void cprof__cpu_timers_stop(void) {
  cprof__cpu_excl_begin();
  cprof__cpu_count_unsampled(1); /* the last of it, while the threads are still known */
  int slots = cprof__cpu_nchunks * CPROF__CPU_SLOTS_PER_CHUNK;
  for (int i = 0; i < slots; i++) {
    cprof__cpu_slot_t *s = cprof__cpu_slot_at(i);
    if (!s->tid)
      continue;
    /* Its clock just before its timer goes: "Expiries never delivered". */
    s->end_tid = 0;
    if (!s->due_off && s->state == CPROF__CPU_SLOT_ARMED &&
        (s->end_clock = cpu_ns_of(cprof__thread_cpu_clock(s->tid))))
      s->end_tid = s->tid;
    cprof__cpu_remove_timer(s);
  }
  cprof__cpu_excl_end();
}

void cprof__cpu_timers_undelivered(cprof__cpu_sink_fn sink, void *arg) {
  int slots = cprof__cpu_nchunks * CPROF__CPU_SLOTS_PER_CHUNK;
  for (int i = 0; i < slots; i++) {
    cprof__cpu_slot_t *s = cprof__cpu_slot_at(i);
    if (!s->end_tid)
      continue;
    uintptr_t pc = CPROF_PC_UNDELIVERED;
    cprof__cpu_sample_t u;
    memset(&u, 0, sizeof u);
    u.cpu_ns = undelivered_ns(s, s->end_clock);
    u.tid = s->end_tid;
    u.pcs = &pc;
    u.depth = 1;
    s->end_tid = 0;
    if (u.cpu_ns > 0)
      sink(arg, &u);
  }
}

void cprof__cpu_timers_atfork_child(void) {
  /* Wrappers that were in flight on the parent's other threads will never
   * leave, and no slot's timer is the child's (cpu.c's atfork_child). */
  __atomic_store_n(&masking, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&excl, 0, __ATOMIC_SEQ_CST);
  int slots = cprof__cpu_nchunks * CPROF__CPU_SLOTS_PER_CHUNK;
  for (int i = 0; i < slots; i++)
    __atomic_store_n(&cprof__cpu_slot_at(i)->tid, 0, __ATOMIC_RELEASE);
  mask_depth = 0;
  cprof__cpu_my_tid = 0;
  cprof__cpu_my_slot = NULL;
}
