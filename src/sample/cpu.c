/* CPU sampling: the buffer between the SIGPROF handler and the profile's
 * owner, and the owner's side: start, the look at the threads, drain and
 * stop. The handler is in cpu_sigsafe.c, the per-thread CPU timers in
 * cpu_timers.c; what the three share, in cpu_internal.h.
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
 * block SIGPROF" in cpu_timers.c): a program that reads SIGPROF itself, with
 * signalfd(2) or sigwaitinfo(2), never reads a tick of ours. The CPU time
 * it uses meanwhile is still counted, as is that of a thread no timer
 * could be made for (see "CPU time no timer samples" there).
 *
 * fork(2): the lock is taken in a pthread_atfork prepare handler and
 * released on both sides, so a child never inherits it held; the child
 * starts without a profile (timers are not inherited) and with no handler
 * counted in, whatever the parent's other threads were doing. */
#include "sample/cpu_internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fds.h"
#include "core/guard.h"
#include "sample/altstack.h"
#include "sample/signals.h"
#include "sample/threads.h"
#include "unwind/bounds.h"
#include "unwind/maps.h"
#include "unwind/unload.h"

/* Shared with the handler (cpu_internal.h). */
cprof__cpu_record_t *cprof__cpu_ring;
uint64_t cprof__cpu_ring_next;
uint64_t cprof__cpu_lost;
uint64_t cprof__cpu_lost_total;
unsigned cprof__cpu_epoch;
int cprof__cpu_inside[2];
cprof__unwinder_t cprof__cpu_unwinder;
cprof__maps_t *cprof__cpu_stacks;

/* The owner's state, under lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int running;
long cprof__cpu_period_ns; /* also read by the mask wrappers, while slots exist */
static int64_t maps_taken_ms;

/* Under lock, after unpublishing something (the buffer, a snapshot):
 * returns once no handler that may have loaded it is still running. */
static void wait_for_handlers(void) {
  unsigned old = __atomic_fetch_add(&cprof__cpu_epoch, 1, __ATOMIC_SEQ_CST) & 1;
  while (__atomic_load_n(&cprof__cpu_inside[old], __ATOMIC_SEQ_CST) != 0)
    cprof__cpu_pause_briefly();
}

/* The buffer, records and their stacks in one block: RING records of
 * `depth` frames (3.7 MiB at the default depth, 16 MiB at the deepest).
 * Mapped, not malloc'd: glibc, when a block it mapped is freed, raises
 * the process's mmap threshold to that block's size and its trim
 * threshold to twice that (mallopt(3), M_MMAP_THRESHOLD: "dynamic
 * adjustment"), for good. After one CPU profile the program's own blocks
 * up to 3.7 MiB came from its heaps, which were no longer trimmed below
 * 7.4 MiB of free top: a tree member kept 0.2 MiB of freed arena for
 * good (issue 31). calloc made the same mmap. */
static size_t ring_bytes(int depth) {
  return CPROF__CPU_RING * sizeof(cprof__cpu_record_t) +
         (size_t)CPROF__CPU_RING * (size_t)depth * sizeof(uintptr_t);
}

static void free_ring(cprof__cpu_record_t *r) {
  if (r)
    munmap(r, ring_bytes(r[0].max));
}

static cprof__cpu_record_t *new_ring(int depth) {
  size_t head = CPROF__CPU_RING * sizeof(cprof__cpu_record_t);
  void *block =
      mmap(NULL, ring_bytes(depth), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED)
    return NULL;
  cprof__cpu_record_t *r = block;
  uintptr_t *pcs = (uintptr_t *)(void *)((char *)r + head);
  for (int i = 0; i < CPROF__CPU_RING; i++) {
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
  cprof__maps_t *old = __atomic_exchange_n(&cprof__cpu_stacks, m, __ATOMIC_SEQ_CST);
  maps_taken_ms = cprof__now_ms(CLOCK_MONOTONIC);
  if (old) {
    wait_for_handlers();
    cprof__maps_free(old);
    free(old);
  }
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

static void name_of_ended(cprof__cpu_record_t *r) {
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
  uint32_t why; /* the first failure, as cprof__cpu_slot_t's */
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
    cprof__cpu_count_unsampled(0);
    return tr;
  }
  /* The thread that runs the profile, when it is one of cprof's: a
   * request's thread of cprof's server. (The output collector got its slot
   * as one of cprof's when it started; a program's thread that serves the
   * profile through cprof_handle_request is the program's.) */
  pid_t me = cprof__fds_in_own_table() ? cprof__cpu_self_tid() : 0;
  for (int i = 0; i < n; i++) {
    if (cprof__cpu_find_slot(now[i]))
      continue;
    if (!in_excl++)
      cprof__cpu_excl_begin();
    int blocked = cprof__cpu_blocks_sigprof(now[i]);
    int rc = blocked >= 0 ? cprof__cpu_add_timer(now[i], blocked, 1, now[i] == me, !first) : 0;
    if (rc == 1)
      tr.added++;
    cprof__cpu_slot_t *s = rc < 0 ? cprof__cpu_find_slot(now[i]) : NULL;
    if (s && s->why && !tr.failed++)
      tr.why = s->why;
  }
  /* Timers of threads that exited never fire again; give them back. */
  int slots = cprof__cpu_nchunks * CPROF__CPU_SLOTS_PER_CHUNK;
  for (int i = 0; i < slots; i++) {
    cprof__cpu_slot_t *s = cprof__cpu_slot_at(i);
    if (!s->tid || listed(now, n, s->tid))
      continue;
    if (!in_excl++)
      cprof__cpu_excl_begin();
    cprof__cpu_remove_timer(s);
  }
  if (in_excl)
    cprof__cpu_excl_end();
  free(now);
  if (tr.added && cprof__now_ms(CLOCK_MONOTONIC) - maps_taken_ms > 1000)
    refresh_maps();
  cprof__cpu_count_unsampled(0);
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
  sa.sa_sigaction = cprof__cpu_handler_sigsafe;
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
  cprof__cpu_record_t *r = new_ring(cprof__max_depth());
  if (!r) {
    err = -ENOMEM;
    goto out;
  }
  cprof__cpu_unwinder = how;
  cprof__cpu_period_ns = 1000000000L / hz;
  cprof__cpu_lost = 0;
  refresh_maps();
  put_mark(); /* every sample of this profile is above it */
  __atomic_store_n(&cprof__cpu_ring, r, __ATOMIC_SEQ_CST);
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
    cprof__cpu_slot_t *stale = cprof__cpu_find_slot(tid);
    if (stale)
      cprof__cpu_remove_timer(stale);
    /* A thread that cannot make its own timer (a seccomp filter of its
     * own) leaves it to the owner, whose next look may. */
    cprof__cpu_add_timer(tid, sigismember(&cur, SIGPROF), 0, own, 1);
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
  cprof__cpu_timer_end(name);
  lock_cpu();
  if (running) {
    struct ended *e = &ended[nended++ % ENDED];
    e->tid = cprof__cpu_self_tid();
    e->ticket = __atomic_load_n(&cprof__cpu_ring_next, __ATOMIC_SEQ_CST);
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
  uint64_t n = __atomic_load_n(&cprof__cpu_ring_next, __ATOMIC_SEQ_CST);
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

static void drain(cprof__cpu_record_t *r, cprof__cpu_sink_fn sink, void *arg) {
  uint64_t upto = put_mark();
  for (int i = 0; i < CPROF__CPU_RING; i++) {
    if (__atomic_load_n(&r[i].state, __ATOMIC_ACQUIRE) != CPROF__CPU_FULL)
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
     * a record is a timer's sample unless cprof__cpu_record_unsampled_sigsafe says otherwise. */
    r[i].s.cpu_ns = 0;
    r[i].s.name[0] = '\0';
    __atomic_store_n(&r[i].state, CPROF__CPU_FREE, __ATOMIC_RELEASE);
  }
}

void cprof__cpu_drain(cprof__cpu_sink_fn sink, void *arg) {
  lock_cpu();
  cprof__cpu_record_t *r = __atomic_load_n(&cprof__cpu_ring, __ATOMIC_SEQ_CST);
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
  cprof__cpu_timers_stop();
  cprof__cpu_record_t *r = __atomic_exchange_n(&cprof__cpu_ring, NULL, __ATOMIC_SEQ_CST);
  cprof__maps_t *m = __atomic_exchange_n(&cprof__cpu_stacks, NULL, __ATOMIC_SEQ_CST);
  wait_for_handlers();
  drain(r, sink, arg);
  /* Every delivered period counted now: the rest, without a stack. */
  cprof__cpu_timers_undelivered(sink, arg);
  nended = 0;
  free_ring(r);
  if (m) {
    cprof__maps_free(m);
    free(m);
  }
  __atomic_store_n(&running, 0, __ATOMIC_RELEASE);
  return __atomic_exchange_n(&cprof__cpu_lost, 0, __ATOMIC_RELAXED);
}

void cprof__cpu_atfork_child(void) {
  /* The child has one thread, the one that forked, which holds the lock
   * (fork_prepare) when our own handler calls this; start.c's calls it
   * too. POSIX timers are not inherited (timer_create(2)): the child
   * starts without a profile. What the parent's buffer and snapshot hold
   * stays the parent's (not freed here: that would be system calls the
   * child never asked for). Handlers and wrappers that were in flight on
   * the parent's other threads will never leave: their counts go. */
  __atomic_store_n(&cprof__cpu_ring, NULL, __ATOMIC_SEQ_CST);
  __atomic_store_n(&cprof__cpu_stacks, NULL, __ATOMIC_SEQ_CST);
  __atomic_store_n(&cprof__cpu_inside[0], 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&cprof__cpu_inside[1], 0, __ATOMIC_SEQ_CST);
  running = 0;
  cprof__cpu_timers_atfork_child();
  cprof__unload_atfork_child();
}

void cprof__cpu_totals(uint64_t *taken, uint64_t *dropped) {
  *taken = __atomic_load_n(&cprof__cpu_ring_next, __ATOMIC_RELAXED);
  *dropped = __atomic_load_n(&cprof__cpu_lost_total, __ATOMIC_RELAXED);
}