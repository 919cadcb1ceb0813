/* CPU sampling: per-thread CPU timers, the SIGPROF handler, and the buffer
 * between them and the profile's owner.
 *
 * The buffer is an array of fixed-size records. A handler takes the next
 * index with a fetch-and-add and claims that record FREE -> WRITING by
 * compare-and-swap; if the record is still full (the owner has not drained
 * it yet) the sample is counted as lost, never silently dropped, and the
 * profile shows the count as a frame of its own, as Go's lostProfileEvent.
 * The owner drains every FULL record back to FREE.
 *
 * Linux checks CPU timers at the scheduler tick (CONFIG_HZ, 250 here), so
 * at 1000 Hz one signal arrives for every four expirations, the other three
 * counted in si_overrun (timer_getoverrun(2)). Each sample is weighted by
 * 1 + si_overrun periods: without that, CPU time would be undercounted
 * fourfold at 1000 Hz. The stack is the one at the signal, as for any
 * sampling profiler; only the weight changes.
 *
 * Nothing a handler may be using is freed under it. Handlers count
 * themselves in, on one of two counters chosen by the parity of `epoch`
 * (and check the epoch did not move meanwhile), before they load the
 * buffer or the snapshot of the address space. Whoever unpublishes one of
 * those moves the epoch and waits for the old parity's count to reach
 * zero (wait_for_handlers): only handlers older than itself, never a
 * stream of new ones, however many threads take signals. Stopping deletes
 * the timers, unpublishes the buffer and waits; a fresh snapshot replaces
 * the old one, which is freed after a wait, so one is held at a time. A
 * SIGPROF still queued after a stop finds no buffer and returns. Our
 * handler stays installed afterwards: SIGPROF's default action would end
 * the program if a late one arrived. A SIGPROF that is not from our timers
 * goes to the program's own action (signals.c).
 *
 * A thread that blocks SIGPROF has no running timer (see "Threads that
 * block SIGPROF" below): a program that reads SIGPROF itself, with
 * signalfd(2) or sigwaitinfo(2), never reads a tick of ours. The CPU time
 * it uses meanwhile is still counted, as is that of a thread no timer
 * could be made for (see "CPU time no timer samples").
 *
 * fork(2): the lock is taken in a pthread_atfork prepare handler and
 * released on both sides, so a child never inherits it held; the child
 * starts without a profile (timers are not inherited) and with no handler
 * counted in, whatever the parent's other threads were doing. */
#include "sample/cpu.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fds.h"
#include "core/hash.h"
#include "sample/altstack.h"
#include "core/guard.h"
#include "sample/signals.h"
#include "sample/threads.h"
#include "sample/trace.h"
#include "unwind/bounds.h"
#include "unwind/caller.h"
#include "unwind/maps.h"
#include "unwind/unload.h"

enum { FREE = 0, WRITING = 1, FULL = 2 };
#define RING 2048 /* records: drained every 50 ms, room for 400 busy threads at 100 Hz */

/* Each record's stack is an array of `max` frames, the depth set when the
 * profile started, in the same block after the records. */
typedef struct record {
  uint32_t state;
  int max;
  uint64_t ticket; /* the handler's draw from ring_next: when, among all samples */
  cprof__cpu_sample_t s;
} record_t;

/* Shared with the handler. */
static record_t *ring;
static uint64_t ring_next;
static uint64_t lost;
static uint64_t lost_total; /* lost, never reset: the metrics sampler's */
static unsigned epoch;
static int inside[2]; /* handlers in flight, by the epoch's parity they began in */
static cprof__unwinder_t unwinder;
static cprof__maps_t *stacks; /* the walkers' stack bounds, for threads that have none in TLS */

/* The owner's state, under lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int running;
static long period_ns; /* also read by the mask wrappers, while slots exist */
static int64_t maps_taken_ms;

/* ---- handlers in flight ---- */

static unsigned handler_enter_sigsafe(void) {
  for (;;) {
    unsigned e = __atomic_load_n(&epoch, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&inside[e & 1], 1, __ATOMIC_SEQ_CST);
    /* Counted under the epoch it still is: a wait that moves it from e
     * sees this count. Otherwise try again under the new one. */
    if (__atomic_load_n(&epoch, __ATOMIC_SEQ_CST) == e)
      return e & 1;
    __atomic_sub_fetch(&inside[e & 1], 1, __ATOMIC_SEQ_CST);
  }
}

static void handler_leave_sigsafe(unsigned e) {
  __atomic_sub_fetch(&inside[e], 1, __ATOMIC_SEQ_CST);
}

static void pause_briefly(void) {
  struct timespec ts = {0, 50 * 1000};
  nanosleep(&ts, NULL);
}

/* Under lock, after unpublishing something (the buffer, a snapshot):
 * returns once no handler that may have loaded it is still running. */
static void wait_for_handlers(void) {
  unsigned old = __atomic_fetch_add(&epoch, 1, __ATOMIC_SEQ_CST) & 1;
  while (__atomic_load_n(&inside[old], __ATOMIC_SEQ_CST) != 0)
    pause_briefly();
}

/* Our timers' signals carry, in si_value (sigevent(7)), a cookie in the
 * high 32 bits and the thread the timer is for in the low 32: the handler
 * knows its thread's id without the gettid system call, and tells our
 * signals from the program's. The cookie is the low bits of a static's
 * address, which no other timer of the program has reason to carry. */
static char cookie_home;
static uint64_t cookie(void) { return (uint64_t)(uint32_t)((uintptr_t)&cookie_home >> 3) << 32; }
static void *timer_value(pid_t tid) { return (void *)(uintptr_t)(cookie() | (uint32_t)tid); }

static void count_delivered_sigsafe(pid_t tid, int periods);

static void handler_sigsafe(int sig, siginfo_t *info, void *uctx) {
  int saved = errno;
  uint64_t value = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
  /* Only our timers carry the cookie; a SIGPROF from kill(1), setitimer or
   * elsewhere is the program's. */
  if (info->si_code != SI_TIMER || (value & ~(uint64_t)UINT32_MAX) != cookie()) {
    cprof__signal_forward_sigsafe(sig, info, uctx); /* errno is still the program's */
    return;
  }
  unsigned e = handler_enter_sigsafe();
  record_t *r = __atomic_load_n(&ring, __ATOMIC_SEQ_CST);
  if (r) {
    count_delivered_sigsafe((pid_t)(uint32_t)value,
                            1 + (info->si_overrun > 0 ? info->si_overrun : 0));
    uint64_t t = __atomic_fetch_add(&ring_next, 1, __ATOMIC_SEQ_CST), i = t % RING;
    uint32_t expect = FREE;
    if (__atomic_compare_exchange_n(&r[i].state, &expect, WRITING, 0, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED)) {
      cprof__cpu_sample_t *smp = &r[i].s;
      /* No clock here: the vDSO's reads the time stamp counter, which a
       * thread may have turned off (seccomp's strict mode, PR_SET_TSC),
       * and a system call is what a sandbox forbids first. The ticket
       * says when, and the drain turns it into a time ("Time stamps"). */
      r[i].ticket = t;
      /* Where among the thread's trace events: exact, where the time is
       * not. */
      smp->trace_seq = cprof__trace_appended_sigsafe();
      smp->tid = (pid_t)(uint32_t)value;
      smp->periods = 1 + (info->si_overrun > 0 ? info->si_overrun : 0);
      smp->depth = cprof__unwind_sigsafe(unwinder, (const ucontext_t *)uctx,
                                         __atomic_load_n(&stacks, __ATOMIC_SEQ_CST), smp->pcs,
                                         r[i].max);
      cprof__labels_copy_sigsafe(&smp->labels);
      __atomic_store_n(&r[i].state, FULL, __ATOMIC_RELEASE);
    } else {
      __atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
      __atomic_add_fetch(&lost_total, 1, __ATOMIC_RELAXED);
    }
  }
  handler_leave_sigsafe(e);
  errno = saved;
}

/* The buffer, records and their stacks in one block: RING records of
 * `depth` frames (2 MiB at the default depth, 16 MiB at the deepest). */
static record_t *new_ring(int depth) {
  size_t head = RING * sizeof(record_t);
  record_t *r = calloc(1, head + (size_t)RING * (size_t)depth * sizeof(uintptr_t));
  if (!r)
    return NULL;
  uintptr_t *pcs = (uintptr_t *)(void *)((char *)r + head);
  for (int i = 0; i < RING; i++) {
    r[i].max = depth;
    r[i].s.pcs = pcs + (size_t)i * (size_t)depth;
  }
  return r;
}

/* A fresh snapshot of the address space, so that the walkers know the
 * stacks of threads created since the last one that have not learnt their
 * own (bounds.h): threads made by clone(2) directly, or before the profile.
 * It replaces the last one, which is freed once no handler can be reading
 * it: one snapshot at a time, however long the profile. */
static void refresh_maps(void) {
  cprof__maps_t *m = calloc(1, sizeof *m);
  if (!m || cprof__maps_read(m) != 0) {
    free(m);
    return;
  }
  cprof__maps_t *old = __atomic_exchange_n(&stacks, m, __ATOMIC_SEQ_CST);
  maps_taken_ms = cprof__now_ms(CLOCK_MONOTONIC);
  if (old) {
    wait_for_handlers();
    cprof__maps_free(old);
    free(old);
  }
}

/* The CPU-time clock of one thread of this process: clock_getcpuclockid(3)
 * gives only processes', pthread_getcpuclockid(3) only pthread_t's, so we
 * build it as the kernel encodes it (include/linux/posix-timers.h):
 * CPUCLOCK_SCHED (2) | CPUCLOCK_PERTHREAD_MASK (4), the tid inverted above. */
static clockid_t thread_cpu_clock(pid_t tid) {
  return (clockid_t)((~(unsigned)tid << 3) | 6);
}

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
  return 1 + (long)(cprof__hash_avalanche(z) % (uint64_t)period_ns);
}

/* Starts (or restarts) a timer: the first expiry after `first` ns of the
 * thread's CPU, then every period. */
static int arm(timer_t t, long first) {
  struct itimerspec its = {{period_ns / 1000000000, period_ns % 1000000000},
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

enum { SLOT_ARMED = 1, SLOT_PAUSED = 2, SLOT_FAILED = 3 };

typedef struct timer_slot {
  pid_t tid;      /* atomic: 0 when free; published after the rest */
  uint32_t state; /* SLOT_ARMED or SLOT_PAUSED; changed by its thread only, once published;
                     or SLOT_FAILED for good: no timer could be made */
  timer_t timer;  /* not for SLOT_FAILED */
  long left_ns; /* its thread's own: time left in the period when it paused */
  /* Atomic: the thread's CPU clock (ns) where its CPU time not yet counted
   * began, while no timer samples it; 0 while one does; and what the owner
   * counted for it and nobody has recorded yet (see "CPU time no timer
   * samples"). */
  int64_t unsampled_since, owed_ns;
  uint32_t why; /* SLOT_FAILED: CPROF_PC_UNSAMPLED_NO_TIMER's number; 0 otherwise */
  char name[16]; /* the owner's: the thread's name when it last counted for it */
  /* For "Expiries never delivered": the thread's CPU clock when its timer
   * was armed, the first expiry after that, the CPU it used before (a
   * thread born during the profile), and the periods its signals brought
   * (atomic: the handler's), all since the last arming or resume.
   * `due_off` when not counted so: a thread of cprof's, one that was
   * created blocking SIGPROF, or one that counted it already. */
  int64_t armed_at, first_ns, before_ns;
  uint64_t delivered;
  int due_off;
  pid_t end_tid; /* the stop's: the thread whose clock end_clock is */
  int64_t end_clock;
} timer_slot_t;

#define SLOTS_PER_CHUNK 256
#define MAX_CHUNKS 1024 /* 262,144 threads */
static timer_slot_t *chunks[MAX_CHUNKS];
static int nchunks; /* atomic: chunks[0..nchunks) are published */

static int masking;            /* wrappers between looking at their slot and their return */
static int excl;               /* the owner's exclusive section is on */
static pthread_t excl_owner;   /* valid while excl */
static __thread int mask_depth __attribute__((tls_model("initial-exec")));
static __thread pid_t my_tid __attribute__((tls_model("initial-exec")));
static __thread timer_slot_t *my_slot __attribute__((tls_model("initial-exec")));

static void excl_begin(void) {
  __atomic_store_n(&excl_owner, pthread_self(), __ATOMIC_RELAXED);
  __atomic_store_n(&excl, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&masking, __ATOMIC_SEQ_CST) != 0)
    pause_briefly();
}

static void excl_end(void) { __atomic_store_n(&excl, 0, __ATOMIC_SEQ_CST); }

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
      pause_briefly();
  }
}

void cprof__cpu_mask_leave(void) {
  if (--mask_depth == 0)
    __atomic_sub_fetch(&masking, 1, __ATOMIC_SEQ_CST);
}

static timer_slot_t *slot_at(int i) { return &chunks[i / SLOTS_PER_CHUNK][i % SLOTS_PER_CHUNK]; }

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

/* Records `ns` of CPU time that no timer sampled, as a sample whose frame
 * `mark` says why (pc.h); on the thread itself (`ret` not NULL), with its
 * labels and the stack of the call whose return address is `ret`; with the
 * thread's `name`, for a thread that may be gone by the drain. Returns 0,
 * or -1 when the buffer is full (the caller keeps the time for later, or
 * counts it lost). Async-signal-safe, as the handler: a mask wrapper may
 * run in a signal handler of the program's. */
static int record_unsampled(pid_t tid, uintptr_t mark, int64_t ns, const void *ret,
                            const char *name) {
  if (ns <= 0)
    return 0;
  int rc = 0;
  unsigned e = handler_enter_sigsafe();
  record_t *r = __atomic_load_n(&ring, __ATOMIC_SEQ_CST);
  uint64_t t = r ? __atomic_fetch_add(&ring_next, 1, __ATOMIC_SEQ_CST) : 0, i = t % RING;
  uint32_t expect = FREE;
  if (r && __atomic_compare_exchange_n(&r[i].state, &expect, WRITING, 0, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED)) {
    cprof__cpu_sample_t *smp = &r[i].s;
    r[i].ticket = t;
    smp->cpu_ns = ns;
    smp->ts = 0;
    if (name)
      memcpy(smp->name, name, sizeof smp->name);
    smp->tid = tid;
    smp->periods = 0;
    smp->pcs[0] = mark;
    smp->depth = 1;
    smp->labels.n = 0;
    if (!ret && tid == my_tid) /* the thread itself, at its end */
      cprof__labels_copy_sigsafe(&smp->labels);
    if (ret) {
      cprof__labels_copy_sigsafe(&smp->labels);
      /* cprof's own work on this thread (its guard up) may be in the
       * middle of a walk of its own, whose per-thread memo a walk from
       * here would disturb. */
      if (!cprof__guarded()) {
        cprof__guard_up();
        int n = cprof__unwind_caller(unwinder, smp->pcs + 1, r[i].max - 1, (uintptr_t)ret);
        cprof__guard_down();
        smp->pcs[1] += 1; /* a return address, as pcs[1..] are: the walk gives ret - 1 */
        smp->depth = 1 + n;
      }
    }
    __atomic_store_n(&r[i].state, FULL, __ATOMIC_RELEASE);
  } else if (r) {
    rc = -1;
  }
  handler_leave_sigsafe(e);
  return rc;
}

static uintptr_t unsampled_mark(const timer_slot_t *s) {
  return s->why ? CPROF_PC_MARK(CPROF_PC_NO_TIMER_KIND, s->why) : CPROF_PC_UNSAMPLED_BLOCKED;
}

/* Time that cannot be recorded any more (a full buffer at the end): lost,
 * in sampling periods, as the profile's "lost samples" frame counts it. */
static void lose(int64_t ns) {
  long period = __atomic_load_n(&period_ns, __ATOMIC_RELAXED);
  uint64_t n = period > 0 ? (uint64_t)((ns + period / 2) / period) : 1;
  __atomic_add_fetch(&lost, n ? n : 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&lost_total, n ? n : 1, __ATOMIC_RELAXED);
}

/* Under lock: records what the owner counted for a slot's thread, without
 * a stack (above). */
static void record_owed(timer_slot_t *s) {
  int64_t owed = __atomic_exchange_n(&s->owed_ns, 0, __ATOMIC_SEQ_CST);
  if (record_unsampled(s->tid, unsampled_mark(s), owed, NULL, s->name) != 0)
    lose(owed);
}

/* Under lock: counts, for every thread with uncounted CPU time, the time
 * up to now; records it all when `final` (above). */
static void count_unsampled(int final) {
  int slots = nchunks * SLOTS_PER_CHUNK;
  for (int i = 0; i < slots; i++) {
    timer_slot_t *s = slot_at(i);
    pid_t tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
    if (!tid)
      continue;
    int64_t since = __atomic_load_n(&s->unsampled_since, __ATOMIC_ACQUIRE);
    int64_t now = since ? cpu_ns_of(thread_cpu_clock(tid)) : 0;
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

static timer_slot_t *find_slot(pid_t tid) {
  int n = __atomic_load_n(&nchunks, __ATOMIC_ACQUIRE) * SLOTS_PER_CHUNK;
  for (int i = 0; i < n; i++)
    if (__atomic_load_n(&slot_at(i)->tid, __ATOMIC_ACQUIRE) == tid)
      return slot_at(i);
  return NULL;
}

/* Under lock: a free slot, allocating a chunk when all are taken. */
static timer_slot_t *free_slot(void) {
  timer_slot_t *s = find_slot(0);
  if (s || nchunks == MAX_CHUNKS)
    return s;
  timer_slot_t *c = calloc(SLOTS_PER_CHUNK, sizeof *c);
  if (!c)
    return NULL;
  chunks[nchunks] = c;
  __atomic_store_n(&nchunks, nchunks + 1, __ATOMIC_RELEASE);
  return c;
}

static pid_t self_tid(void) {
  if (!my_tid)
    my_tid = (pid_t)syscall(SYS_gettid);
  return my_tid;
}

/* The calling thread's slot, if it has a timer (between mask_enter and
 * mask_leave: the slot cannot change hands meanwhile). */
static timer_slot_t *mine(void) {
  if (__atomic_load_n(&nchunks, __ATOMIC_ACQUIRE) == 0)
    return NULL; /* never profiled: no system call for the tid */
  self_tid();
  timer_slot_t *s = my_slot;
  if (s && __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) == my_tid)
    return s;
  return my_slot = find_slot(my_tid);
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

static void count_delivered_sigsafe(pid_t tid, int periods) {
  timer_slot_t *s = my_slot;
  if (!s || __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) != tid) {
    s = find_slot(tid);
    if (!s)
      return;
    my_slot = s; /* the handler runs on the thread the timer is for */
  }
  __atomic_add_fetch(&s->delivered, (uint64_t)periods, __ATOMIC_RELAXED);
}

/* The expiries of s's timer due by its thread's clock `now`. */
static int64_t due_by(const timer_slot_t *s, int64_t now) {
  int64_t run = now - s->armed_at;
  return run >= s->first_ns ? (run - s->first_ns) / period_ns + 1 : 0;
}

/* The CPU, in ns, of the expiries of s's timer due by its thread's clock
 * `now` and not delivered, with that used before it was armed. */
static int64_t undelivered_ns(const timer_slot_t *s, int64_t now) {
  if (s->due_off || s->state != SLOT_ARMED || now <= 0)
    return 0;
  int64_t due = due_by(s, now);
  int64_t missing = due - (int64_t)__atomic_load_n(&s->delivered, __ATOMIC_ACQUIRE);
  return (missing > 0 ? missing * period_ns : 0) + s->before_ns;
}

/* The names of threads that exited during the profile, for their samples
 * that the drain hands out after /proc has forgotten them: each with the
 * ticket count at its end, above every sample it took. Under lock. */
#define ENDED 256
static struct ended {
  pid_t tid;
  uint64_t ticket;
  char name[16];
} ended[ENDED];
static unsigned nended;

static void name_of_ended(record_t *r) {
  unsigned kept = nended < ENDED ? nended : ENDED;
  const struct ended *best = NULL;
  for (unsigned k = 0; k < kept; k++) {
    const struct ended *e = &ended[k];
    if (e->tid == r->s.tid && e->ticket > r->ticket && (!best || e->ticket < best->ticket))
      best = e;
  }
  if (best)
    memcpy(r->s.name, best->name, sizeof r->s.name);
}

int cprof__cpu_timer_pause(int runs, const void *ret) {
  timer_slot_t *s = mine();
  if (!s || s->state != SLOT_ARMED)
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
    s->left_ns = (long)(s->armed_at + s->first_ns + due_by(s, now) * period_ns - now);
    s->before_ns = 0;
    if (ns > 0 && record_unsampled(my_tid, CPROF_PC_UNDELIVERED, ns, ret, NULL) != 0)
      lose(ns);
  } else {
    s->left_ns = (long)was.it_value.tv_sec * 1000000000 + was.it_value.tv_nsec;
    s->due_off = 1;
  }
  s->state = SLOT_PAUSED;
  if (runs)
    __atomic_store_n(&s->unsampled_since, now, __ATOMIC_SEQ_CST);
  return 1;
}

void cprof__cpu_timer_resume(const void *ret) {
  timer_slot_t *s = mine();
  if (!s || s->state != SLOT_PAUSED)
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
    s->state = SLOT_FAILED;
    return;
  }
  /* The exchange first, then the clock: see "CPU time no timer samples". */
  int64_t since = __atomic_exchange_n(&s->unsampled_since, 0, __ATOMIC_SEQ_CST);
  int64_t now = cpu_ns_of(CLOCK_THREAD_CPUTIME_ID);
  if (since) {
    int64_t ns = now - since;
    if (__atomic_add_fetch(&s->owed_ns, ns, __ATOMIC_SEQ_CST) >= period_ns) {
      int64_t owed = __atomic_exchange_n(&s->owed_ns, 0, __ATOMIC_SEQ_CST);
      if (record_unsampled(my_tid, CPROF_PC_UNSAMPLED_BLOCKED, owed, ret, NULL) != 0)
        __atomic_add_fetch(&s->owed_ns, owed, __ATOMIC_SEQ_CST); /* for a later one */
    }
  }
  long first = s->left_ns > 0 && s->left_ns <= period_ns ? s->left_ns : first_expiry_ns();
  if (!s->due_off) { /* the schedule, from here */
    s->armed_at = now;
    s->first_ns = first;
    __atomic_store_n(&s->delivered, 0, __ATOMIC_SEQ_CST);
  }
  if (arm(s->timer, first) == 0)
    s->state = SLOT_ARMED;
}

/* Whether a thread blocks SIGPROF: 1 or 0, or -1 when it has exited. */
static int blocks_sigprof(pid_t tid) {
  uint64_t blocked, pending;
  if (cprof__thread_signal_masks(tid, &blocked, &pending) != 0)
    return -1;
  return (int)((blocked >> (SIGPROF - 1)) & 1);
}

/* A timer for tid's CPU clock, into s->timer, started unless `blocked`.
 * Returns 0, or a negative errno with s->why saying which call failed. */
static int make_timer(timer_slot_t *s, pid_t tid, int blocked) {
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev.sigev_value.sival_ptr = timer_value(tid);
  sev._sigev_un._tid = tid;
  timer_t t;
  s->why = 0;
  if (timer_create(thread_cpu_clock(tid), &sev, &t) != 0) {
    s->why = CPROF_CALL_TIMER_CREATE << 16 | (uint16_t)errno;
    return -errno; /* EINVAL: the thread exited meanwhile */
  }
  /* Every thread's CPU clock starts at 0: a first expiry a whole period
   * away would never sample a thread that lives on less CPU than that. A
   * first expiry drawn uniformly within the period (as Go's runtime does)
   * samples each thread in proportion to the CPU it uses, however short
   * its life. */
  s->first_ns = first_expiry_ns();
  s->armed_at = cpu_ns_of(thread_cpu_clock(tid));
  if (!blocked && arm(t, s->first_ns) != 0) {
    int err = errno;
    timer_delete(t);
    s->why = CPROF_CALL_TIMER_SETTIME << 16 | (uint16_t)err;
    return err == EINVAL ? -EIO : -err; /* not the EINVAL of a thread gone */
  }
  s->timer = t;
  return 0;
}

static pid_t self_tid(void);

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
static int add_timer(pid_t tid, int blocked, int keep_failed, int own, int born) {
  if (find_slot(tid))
    return 0;
  timer_slot_t *s = free_slot();
  if (!s)
    return -ENOMEM;
  /* A thread that would take our signal on a stack the program sized for
   * itself gets no timer that runs: one cprof did not see start, which has
   * no alternate stack of cprof's (altstack.h). Its CPU time is counted
   * as not sampled, as for a timer that could not be made. (One that
   * blocks SIGPROF gets its timer stopped, and no start while it has no
   * stack: cprof__cpu_timer_resume.) */
  int err;
  if (!blocked && !(tid == self_tid() ? cprof__altstack_here() : cprof__altstack_ready(tid))) {
    s->why = CPROF_CALL_SIGNAL_STACK << 16 | ENOTSUP;
    err = -ENOENT;
  } else {
    err = make_timer(s, tid, blocked);
  }
  if (err == -EINVAL || (err && !keep_failed))
    return err;
  int64_t now = (blocked || err) && !own ? cpu_ns_of(thread_cpu_clock(tid)) : 0;
  if (err && !now && !own)
    return err;
  if (now && born)
    now = 1; /* the clock's start: all its CPU is the profile's */
  s->state = err ? SLOT_FAILED : blocked ? SLOT_PAUSED : SLOT_ARMED;
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
static void remove_timer(timer_slot_t *s) {
  record_owed(s);
  if (s->state != SLOT_FAILED)
    timer_delete(s->timer);
  __atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
}

static int listed(const pid_t *tids, int n, pid_t tid) {
  for (int i = 0; i < n; i++)
    if (tids[i] == tid)
      return 1;
  return 0;
}

/* What a look at the threads found: for the start, which fails when no
 * thread could be given a timer. */
typedef struct tracked {
  int list_err; /* the threads could not be listed: a negative errno */
  int added;    /* threads given a timer */
  int failed;   /* threads no timer could be made for */
  uint32_t why; /* the first failure, as timer_slot_t's */
} tracked_t;

/* Under lock: timers for the threads that have none, and back from those
 * that exited; then the CPU time no timer sampled is counted. The
 * exclusive section only when there is something to do. After the `first`
 * look, the profile's start, a thread without a slot was born since the
 * last look: every earlier one got a slot, with a timer or without. */
static tracked_t track_locked(int first) {
  tracked_t tr = {0, 0, 0, 0};
  pid_t *now;
  int n = cprof__threads_list(&now), in_excl = 0;
  if (n < 0) { /* try again next time: no list is better than a partial one */
    tr.list_err = n;
    count_unsampled(0);
    return tr;
  }
  /* The thread that runs the profile, when it is one of cprof's: a
   * request's thread of cprof's server. (The output collector got its slot
   * as one of cprof's when it started; a program's thread that serves the
   * profile through cprof_handle_request is the program's.) */
  pid_t me = cprof__fds_in_own_table() ? self_tid() : 0;
  for (int i = 0; i < n; i++) {
    if (find_slot(now[i]))
      continue;
    if (!in_excl++)
      excl_begin();
    int blocked = blocks_sigprof(now[i]);
    int rc = blocked >= 0 ? add_timer(now[i], blocked, 1, now[i] == me, !first) : 0;
    if (rc == 1)
      tr.added++;
    timer_slot_t *s = rc < 0 ? find_slot(now[i]) : NULL;
    if (s && s->why && !tr.failed++)
      tr.why = s->why;
  }
  /* Timers of threads that exited never fire again; give them back. */
  int slots = nchunks * SLOTS_PER_CHUNK;
  for (int i = 0; i < slots; i++) {
    timer_slot_t *s = slot_at(i);
    if (!s->tid || listed(now, n, s->tid))
      continue;
    if (!in_excl++)
      excl_begin();
    remove_timer(s);
  }
  if (in_excl)
    excl_end();
  free(now);
  if (tr.added && cprof__now_ms(CLOCK_MONOTONIC) - maps_taken_ms > 1000)
    refresh_maps();
  count_unsampled(0);
  return tr;
}

/* ---- fork ---- */

static void fork_prepare(void) { pthread_mutex_lock(&lock); }
static void fork_parent(void) { pthread_mutex_unlock(&lock); }
static void fork_child(void) {
  cprof__cpu_atfork_child();
  pthread_mutex_unlock(&lock);
}
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

void cprof__cpu_atfork_register(void) { pthread_once(&atfork_once, register_atfork); }

/* Every use of the lock comes here: the fork handlers are in place before
 * the lock is ever held. */
static void lock_cpu(void) {
  cprof__cpu_atfork_register();
  pthread_mutex_lock(&lock);
}

/* ---- the owner's interface ---- */

static void discard(void *arg, const cprof__cpu_sample_t *s) {}
static uint64_t stop_locked(cprof__cpu_sink_fn sink, void *arg);
static uint64_t put_mark(void);

/* Under lock, just started: fails the start when not one thread got a
 * timer, saying why. A partial success goes on: the threads without one
 * show their CPU time as not sampled, with the reason. */
static int check_started(const tracked_t *tr, char *why, size_t size) {
  int err = 0;
  char text[200];
  if (tr->list_err) {
    err = tr->list_err;
    snprintf(text, sizeof text, "cannot list the program's threads in /proc/self/task: %s%s",
             strerror(-err), err == -ENOENT ? " (is /proc mounted?)" : "");
  } else if (!tr->added && tr->failed) {
    err = -(int)(tr->why & 0xffff);
    if (tr->why >> 16 == CPROF_CALL_SIGNAL_STACK)
      snprintf(text, sizeof text,
               "no thread has an alternate signal stack of cprof's (threads cprof did not see "
               "start: made before libcprof was loaded, or by clone)");
    else
      snprintf(text, sizeof text, "no thread could be given a CPU timer: %s: %s",
               tr->why >> 16 == CPROF_CALL_TIMER_SETTIME ? "timer_settime" : "timer_create",
               strerror(-err));
  }
  if (!err)
    return 0;
  if (why)
    snprintf(why, size, "%s", text);
  stop_locked(discard, NULL);
  return err;
}

int cprof__cpu_start(int hz, cprof__unwinder_t how) {
  return cprof__cpu_start_why(hz, how, NULL, 0);
}

int cprof__cpu_start_why(int hz, cprof__unwinder_t how, char *why, size_t why_size) {
  if (why && why_size)
    why[0] = '\0';
  /* The program's own profiling timer: not ours to take. */
  struct itimerval it;
  if (getitimer(ITIMER_PROF, &it) == 0 && (it.it_value.tv_sec || it.it_value.tv_usec))
    return -EBUSY;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler_sigsafe;
  /* On the thread's alternate signal stack, never on a stack the program
   * sized for itself (sample/altstack.c). */
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  /* Not inside the thread-stack handler: a stack captured there would show
   * this handler's frames rather than the program's. */
  if (cprof__threads_signal())
    sigaddset(&sa.sa_mask, cprof__threads_signal());
  /* The program's own SIGPROF handler: not ours to take either. Once
   * taken, SIGPROF stays ours (a deleted timer's signal may still be
   * queued), and the program's action is kept aside for every SIGPROF not
   * from our timers (signals.c, CPROF_SHARE_KEEP). Taken before our lock,
   * which is never held while another lock of cprof's is taken: the fork
   * handlers take it last. */
  int err = cprof__signal_take(SIGPROF, &sa, CPROF_SHARE_KEEP);
  if (err != 0)
    return err;
  cprof__guard_enter();
  cprof__stack_bounds_learn();
  cprof__guard_leave();
  cprof__unwind_bind_now();

  lock_cpu();
  if (running) {
    err = -EALREADY;
    goto out;
  }
  record_t *r = new_ring(cprof__max_depth());
  if (!r) {
    err = -ENOMEM;
    goto out;
  }
  unwinder = how;
  period_ns = 1000000000L / hz;
  lost = 0;
  refresh_maps();
  put_mark(); /* every sample of this profile is above it */
  __atomic_store_n(&ring, r, __ATOMIC_SEQ_CST);
  __atomic_store_n(&running, 1, __ATOMIC_RELEASE);
  tracked_t tr = track_locked(1);
  err = check_started(&tr, why, why_size);
out:
  pthread_mutex_unlock(&lock);
  return err;
}

int cprof__cpu_running(void) { return __atomic_load_n(&running, __ATOMIC_ACQUIRE); }

void cprof__cpu_thread_started(void) {
  if (!cprof__cpu_running())
    return;
  /* One of cprof's threads: those run guarded for life (thread_start.c). */
  int own = cprof__guarded();
  /* Not the program's allocations (pthread_getattr_np's, a chunk of
   * slots): and under our lock, nothing may reach the heap sampler's. */
  cprof__guard_enter();
  /* Before its first sample: its walks need no snapshot that has it. */
  cprof__stack_bounds_learn();
  /* Its mask is its creator's: SIGPROF may be blocked from the start. */
  sigset_t cur;
  pthread_sigmask(SIG_BLOCK, NULL, &cur);
  pid_t tid = (pid_t)syscall(SYS_gettid);
  lock_cpu();
  if (running) {
    /* A slot with this tid is a thread's that exited before the look at
     * /proc noticed: the tid is ours now, and so is the slot. */
    timer_slot_t *stale = find_slot(tid);
    if (stale)
      remove_timer(stale);
    /* A thread that cannot make its own timer (a seccomp filter of its
     * own) leaves it to the owner, whose next look may. */
    add_timer(tid, sigismember(&cur, SIGPROF), 0, own, 1);
  }
  pthread_mutex_unlock(&lock);
  cprof__guard_leave();
}

void cprof__cpu_thread_ending(void) {
  if (!cprof__cpu_running())
    return;
  /* Its name while /proc still has it, for its samples the drain finds
   * after it is gone. */
  char name[17] = "";
  prctl(PR_GET_NAME, name);
  cprof__cpu_mask_enter();
  timer_slot_t *s = mine();
  if (s && s->state == SLOT_ARMED && !s->due_off) {
    /* Its timer stopped (a signal already queued comes in on the way out
     * of timer_settime), then what came due and never came: "Expiries
     * never delivered". */
    struct itimerspec zero;
    memset(&zero, 0, sizeof zero);
    if (timer_settime(s->timer, 0, &zero, NULL) == 0) {
      int64_t ns = undelivered_ns(s, cpu_ns_of(CLOCK_THREAD_CPUTIME_ID));
      s->state = SLOT_PAUSED;
      s->left_ns = 0;
      s->due_off = 1;
      if (record_unsampled(my_tid, CPROF_PC_UNDELIVERED, ns, NULL, name) != 0)
        lose(ns);
    }
  }
  /* As a resume does: the exchange first, then the clock; and what is
   * owed, however little. */
  int64_t since = s ? __atomic_exchange_n(&s->unsampled_since, 0, __ATOMIC_SEQ_CST) : 0;
  int64_t ns = since ? cpu_ns_of(CLOCK_THREAD_CPUTIME_ID) - since : 0;
  ns += s ? __atomic_exchange_n(&s->owed_ns, 0, __ATOMIC_SEQ_CST) : 0;
  if (ns > 0 && record_unsampled(my_tid, unsampled_mark(s), ns, NULL, name) != 0)
    lose(ns);
  cprof__cpu_mask_leave();
  lock_cpu();
  if (running) {
    struct ended *e = &ended[nended++ % ENDED];
    e->tid = self_tid();
    e->ticket = __atomic_load_n(&ring_next, __ATOMIC_SEQ_CST);
    memcpy(e->name, name, sizeof e->name);
  }
  pthread_mutex_unlock(&lock);
}

void cprof__cpu_refresh_stacks(void) {
  lock_cpu();
  if (running)
    refresh_maps();
  pthread_mutex_unlock(&lock);
}

/* How often to look at /proc/self/task for threads the pthread_create
 * interposer did not see (created by clone(2) directly, say) and for timers
 * of threads that exited. Reading the directory costs; new threads made
 * with pthread_create arm their own timers at once. */
#define TRACK_EVERY_MS 250

void cprof__cpu_track_threads(void) {
  static int64_t last;
  lock_cpu();
  int64_t now = cprof__now_ms(CLOCK_MONOTONIC);
  if (running && now - last >= TRACK_EVERY_MS) {
    track_locked(0);
    last = now;
  }
  pthread_mutex_unlock(&lock);
}

/* ---- Time stamps ----
 *
 * A sample's time (for a trace's timeline) is not read in the handler: the
 * vDSO's clock executes rdtsc, which faults in a thread that turned the
 * time stamp counter off (seccomp's strict mode does, and
 * prctl(PR_SET_TSC, PR_TSC_SIGSEGV)), and the system call behind it is
 * what a sandbox forbids. What the handler has instead is its ticket, its
 * draw from ring_next: the order of all samples. Each drain, before it
 * looks at the records, notes a mark: ring_next, read between two clock
 * readings. A sample whose ticket is below a mark's count was taken before
 * that mark's time; one at or above it, after. So every sample lies
 * between the last mark at or below its ticket and the first above it, and
 * its time is put between them in proportion to its ticket (samples come
 * at a steady rate while threads compute). A drain hands out only samples
 * older than its own mark; a sample taken during the drain waits for the
 * next, which then has a mark above it. The error is at most the time
 * between two drains, which a trace keeps short (registry/trace.c); the
 * marks are kept for the samples a drain misses (a handler that had its
 * ticket but was still writing). */
#define MARKS 256

typedef struct mark {
  uint64_t n; /* ring_next */
  int64_t ns; /* CLOCK_MONOTONIC */
} mark_t;

static mark_t marks[MARKS]; /* under lock */
static unsigned nmarks;     /* marks made; the last MARKS kept */

/* Under lock: a mark now. Returns its count. */
static uint64_t put_mark(void) {
  int64_t before = cprof__now_ns(CLOCK_MONOTONIC);
  uint64_t n = __atomic_load_n(&ring_next, __ATOMIC_SEQ_CST);
  int64_t after = cprof__now_ns(CLOCK_MONOTONIC);
  mark_t *m = &marks[nmarks++ % MARKS];
  m->n = n;
  m->ns = before + (after - before) / 2;
  return n;
}

/* Under lock: the time of the sample with this ticket, below the last
 * mark's count. */
static int64_t ticket_time(uint64_t ticket) {
  unsigned kept = nmarks < MARKS ? nmarks : MARKS;
  /* From the newest mark back: the first at or below the ticket, and the
   * one after it, which is above. */
  const mark_t *above = NULL;
  for (unsigned k = 0; k < kept; k++) {
    const mark_t *m = &marks[(nmarks - 1 - k) % MARKS];
    if (m->n > ticket) {
      above = m;
      continue;
    }
    if (!above) /* no mark above yet: a drain hands out no such sample */
      return m->ns;
    return m->ns + (int64_t)((double)(above->ns - m->ns) * (double)(ticket - m->n) /
                             (double)(above->n - m->n));
  }
  /* Older than every mark kept: no later than the oldest. */
  return above ? above->ns : cprof__now_ns(CLOCK_MONOTONIC);
}

static void drain(record_t *r, cprof__cpu_sink_fn sink, void *arg) {
  uint64_t upto = put_mark();
  for (int i = 0; i < RING; i++) {
    if (__atomic_load_n(&r[i].state, __ATOMIC_ACQUIRE) != FULL)
      continue;
    /* Taken since the mark: the next drain's, whose mark will be above it. */
    if (r[i].ticket >= upto)
      continue;
    if (!r[i].s.cpu_ns)
      r[i].s.ts = ticket_time(r[i].ticket);
    if (!r[i].s.name[0] && nended)
      name_of_ended(&r[i]);
    sink(arg, &r[i].s);
    /* The handler sets neither cpu_ns nor name (stores less on its path):
     * a record is a timer's sample unless record_unsampled says otherwise. */
    r[i].s.cpu_ns = 0;
    r[i].s.name[0] = '\0';
    __atomic_store_n(&r[i].state, FREE, __ATOMIC_RELEASE);
  }
}

void cprof__cpu_drain(cprof__cpu_sink_fn sink, void *arg) {
  lock_cpu();
  record_t *r = __atomic_load_n(&ring, __ATOMIC_SEQ_CST);
  if (running && r)
    drain(r, sink, arg);
  pthread_mutex_unlock(&lock);
}

uint64_t cprof__cpu_stop(cprof__cpu_sink_fn sink, void *arg) {
  lock_cpu();
  uint64_t n = running ? stop_locked(sink, arg) : 0;
  pthread_mutex_unlock(&lock);
  return n;
}

/* Under lock, while running. */
static uint64_t stop_locked(cprof__cpu_sink_fn sink, void *arg) {
  excl_begin();
  count_unsampled(1); /* the last of it, while the threads are still known */
  int slots = nchunks * SLOTS_PER_CHUNK;
  for (int i = 0; i < slots; i++) {
    timer_slot_t *s = slot_at(i);
    if (!s->tid)
      continue;
    /* Its clock just before its timer goes: "Expiries never delivered". */
    s->end_tid = 0;
    if (!s->due_off && s->state == SLOT_ARMED &&
        (s->end_clock = cpu_ns_of(thread_cpu_clock(s->tid))))
      s->end_tid = s->tid;
    remove_timer(s);
  }
  excl_end();
  record_t *r = __atomic_exchange_n(&ring, NULL, __ATOMIC_SEQ_CST);
  cprof__maps_t *m = __atomic_exchange_n(&stacks, NULL, __ATOMIC_SEQ_CST);
  wait_for_handlers();
  drain(r, sink, arg);
  /* Every delivered period counted now: the rest, without a stack. */
  for (int i = 0; i < slots; i++) {
    timer_slot_t *s = slot_at(i);
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
  nended = 0;
  free(r);
  if (m) {
    cprof__maps_free(m);
    free(m);
  }
  __atomic_store_n(&running, 0, __ATOMIC_RELEASE);
  return __atomic_exchange_n(&lost, 0, __ATOMIC_RELAXED);
}

void cprof__cpu_atfork_child(void) {
  /* The child has one thread, the one that forked, which holds the lock
   * (fork_prepare) when our own handler calls this; start.c's calls it
   * too. POSIX timers are not inherited (timer_create(2)): the child
   * starts without a profile. What the parent's buffer and snapshot hold
   * stays the parent's (not freed here: that would be system calls the
   * child never asked for). Handlers and wrappers that were in flight on
   * the parent's other threads will never leave: their counts go. */
  __atomic_store_n(&ring, NULL, __ATOMIC_SEQ_CST);
  __atomic_store_n(&stacks, NULL, __ATOMIC_SEQ_CST);
  __atomic_store_n(&inside[0], 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&inside[1], 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&masking, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&excl, 0, __ATOMIC_SEQ_CST);
  running = 0;
  int slots = nchunks * SLOTS_PER_CHUNK;
  for (int i = 0; i < slots; i++)
    __atomic_store_n(&slot_at(i)->tid, 0, __ATOMIC_RELEASE);
  mask_depth = 0;
  my_tid = 0;
  my_slot = NULL;
  cprof__unload_atfork_child();
}

void cprof__cpu_totals(uint64_t *taken, uint64_t *dropped) {
  *taken = __atomic_load_n(&ring_next, __ATOMIC_RELAXED);
  *dropped = __atomic_load_n(&lost_total, __ATOMIC_RELAXED);
}
