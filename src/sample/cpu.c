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
 * Stopping must not free memory a handler is using. Timers are deleted
 * first; then the buffer pointer is cleared and we wait until no handler is
 * inside (handlers count themselves in before they load the pointer). A
 * SIGPROF still queued after that finds no buffer and returns. Our handler
 * stays installed afterwards: SIGPROF's default action would end the
 * program if a late one arrived. A SIGPROF that is not from our timers goes
 * to the program's own action (sigprof.c). */
#include "sample/cpu.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "sample/heap.h"
#include "sample/sigprof.h"
#include "sample/threads.h"
#include "symbol/maps.h"
#include "unwind/bounds.h"

enum { FREE = 0, WRITING = 1, FULL = 2 };
#define RING 2048 /* records: drained every 50 ms, room for 400 busy threads at 100 Hz */

typedef struct record {
  uint32_t state;
  cprof__cpu_sample_t s;
} record_t;

/* Shared with the handler. */
static record_t *ring;
static uint64_t ring_next;
static uint64_t lost;
static int inside; /* handlers between their first and last line */
static cprof__unwinder_t unwinder;
static cprof__maps_t *stacks; /* the walkers' stack bounds, for threads that have none in TLS */

/* The owner's state, under lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int running;
static long period_ns;
typedef struct timer_entry {
  pid_t tid;
  timer_t timer;
} timer_entry_t;
static timer_entry_t *timers;
static int ntimers, timers_cap;
static cprof__maps_t **old_maps; /* snapshots a handler may still read: freed at stop */
static int nold_maps;
static int64_t maps_taken_ms;

/* Our timers' signals carry, in si_value (sigevent(7)), a cookie in the
 * high 32 bits and the thread the timer is for in the low 32: the handler
 * knows its thread's id without the gettid system call, and tells our
 * signals from the program's. The cookie is the low bits of a static's
 * address, which no other timer of the program has reason to carry. */
static char cookie_home;
static uint64_t cookie(void) { return (uint64_t)(uint32_t)((uintptr_t)&cookie_home >> 3) << 32; }
static void *timer_value(pid_t tid) { return (void *)(uintptr_t)(cookie() | (uint32_t)tid); }

static void handler_sigsafe(int sig, siginfo_t *info, void *uctx) {
  int saved = errno;
  __atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST);
  record_t *r = __atomic_load_n(&ring, __ATOMIC_SEQ_CST);
  uint64_t value = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
  /* Only our timers carry the cookie; a SIGPROF from kill(1), setitimer or
   * elsewhere is the program's. */
  if (info->si_code != SI_TIMER || (value & ~(uint64_t)UINT32_MAX) != cookie()) {
    __atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
    errno = saved;
    cprof__sigprof_forward_sigsafe(sig, info, uctx);
    return;
  }
  if (r) {
    uint64_t i = __atomic_fetch_add(&ring_next, 1, __ATOMIC_RELAXED) % RING;
    uint32_t expect = FREE;
    if (__atomic_compare_exchange_n(&r[i].state, &expect, WRITING, 0, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED)) {
      cprof__cpu_sample_t *smp = &r[i].s;
      smp->tid = (pid_t)(uint32_t)value;
      smp->periods = 1 + (info->si_overrun > 0 ? info->si_overrun : 0);
      smp->depth = cprof__unwind_sigsafe(unwinder, (const ucontext_t *)uctx,
                                         __atomic_load_n(&stacks, __ATOMIC_ACQUIRE), smp->pcs,
                                         CPROF_MAX_DEPTH);
      cprof__labels_copy_sigsafe(&smp->labels);
      __atomic_store_n(&r[i].state, FULL, __ATOMIC_RELEASE);
    } else {
      __atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
    }
  }
  __atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
  errno = saved;
}

/* A fresh snapshot of the address space, so that the walkers know the
 * stacks of threads created since the last one that have not learnt their
 * own (bounds.h): threads made by clone(2) directly, or before the profile.
 * The old snapshot is kept until stop: a handler may be reading it. */
static void refresh_maps(void) {
  cprof__maps_t *m = calloc(1, sizeof *m);
  cprof__maps_t **v = realloc(old_maps, (size_t)(nold_maps + 1) * sizeof *v);
  if (!m || !v || cprof__maps_read(m) != 0) {
    free(m);
    if (v)
      old_maps = v;
    return;
  }
  old_maps = v;
  old_maps[nold_maps++] = m;
  __atomic_store_n(&stacks, m, __ATOMIC_RELEASE);
  maps_taken_ms = cprof__now_ms(CLOCK_MONOTONIC);
}

/* The CPU-time clock of one thread of this process: clock_getcpuclockid(3)
 * gives only processes', pthread_getcpuclockid(3) only pthread_t's, so we
 * build it as the kernel encodes it (include/linux/posix-timers.h):
 * CPUCLOCK_SCHED (2) | CPUCLOCK_PERTHREAD_MASK (4), the tid inverted above. */
static clockid_t thread_cpu_clock(pid_t tid) {
  return (clockid_t)((~(unsigned)tid << 3) | 6);
}

/* A uniform draw in [1, period_ns] (xorshift64*, under lock). */
static long first_expiry_ns(void) {
  static uint64_t x;
  if (!x) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    x = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ 0x9e3779b97f4a7c15ULL;
  }
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  return 1 + (long)((x * 0x2545f4914f6cdd1dULL) % (uint64_t)period_ns);
}

/* Arms a timer for tid, unless it has one: the look at /proc and a new
 * thread's own start (thread_start.c) may both get to a thread created
 * during a profile, and two timers would count its CPU twice. */
static int add_timer(pid_t tid) {
  for (int j = 0; j < ntimers; j++)
    if (timers[j].tid == tid)
      return 0;
  if (ntimers == timers_cap) {
    int cap = timers_cap ? timers_cap * 2 : 64;
    timer_entry_t *v = realloc(timers, (size_t)cap * sizeof *v);
    if (!v)
      return -ENOMEM;
    timers = v;
    timers_cap = cap;
  }
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev.sigev_value.sival_ptr = timer_value(tid);
  sev._sigev_un._tid = tid;
  timer_t t;
  if (timer_create(thread_cpu_clock(tid), &sev, &t) != 0)
    return -errno; /* the thread exited meanwhile */
  /* Every thread's CPU clock starts at 0: a first expiry a whole period
   * away would never sample a thread that lives on less CPU than that. A
   * first expiry drawn uniformly within the period (as Go's runtime does)
   * samples each thread in proportion to the CPU it uses, however short
   * its life. */
  long first = first_expiry_ns();
  struct itimerspec its = {{period_ns / 1000000000, period_ns % 1000000000},
                           {first / 1000000000, first % 1000000000}};
  if (timer_settime(t, 0, &its, NULL) != 0) {
    timer_delete(t);
    return -errno;
  }
  timers[ntimers].tid = tid;
  timers[ntimers].timer = t;
  ntimers++;
  return 0;
}

static int listed(const pid_t *tids, int n, pid_t tid) {
  for (int i = 0; i < n; i++)
    if (tids[i] == tid)
      return 1;
  return 0;
}

static void track_locked(void) {
  pid_t *now;
  int n = cprof__threads_list(&now), added = 0;
  if (n < 0)
    return; /* try again next time: no list is better than a partial one */
  for (int i = 0; i < n; i++) {
    int had = ntimers;
    if (add_timer(now[i]) == 0 && ntimers > had)
      added++;
  }
  /* Timers of threads that exited never fire again; give them back. */
  for (int j = 0; j < ntimers;) {
    if (!listed(now, n, timers[j].tid)) {
      timer_delete(timers[j].timer);
      timers[j] = timers[--ntimers];
    } else {
      j++;
    }
  }
  free(now);
  if (added && cprof__now_ms(CLOCK_MONOTONIC) - maps_taken_ms > 1000)
    refresh_maps();
}

int cprof__cpu_start(int hz, cprof__unwinder_t how) {
  pthread_mutex_lock(&lock);
  int err = 0;
  if (running) {
    err = -EALREADY;
    goto out;
  }
  /* The program's own profiling timer: not ours to take. */
  struct itimerval it;
  if (getitimer(ITIMER_PROF, &it) == 0 && (it.it_value.tv_sec || it.it_value.tv_usec)) {
    err = -EBUSY;
    goto out;
  }
  record_t *r = calloc(RING, sizeof *r);
  if (!r) {
    err = -ENOMEM;
    goto out;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler_sigsafe;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  /* Not inside the thread-stack handler: a stack captured there would show
   * this handler's frames rather than the program's. */
  if (cprof__threads_signal())
    sigaddset(&sa.sa_mask, cprof__threads_signal());
  /* The program's own SIGPROF handler: not ours to take either. */
  if ((err = cprof__sigprof_take(&sa)) != 0) {
    free(r);
    goto out;
  }
  unwinder = how;
  period_ns = 1000000000L / hz;
  lost = 0;
  cprof__heap_guard_enter();
  cprof__stack_bounds_learn();
  cprof__heap_guard_leave();
  cprof__unwind_bind_now();
  refresh_maps();
  __atomic_store_n(&ring, r, __ATOMIC_SEQ_CST);
  __atomic_store_n(&running, 1, __ATOMIC_RELEASE);
  track_locked();
out:
  pthread_mutex_unlock(&lock);
  return err;
}

int cprof__cpu_running(void) { return __atomic_load_n(&running, __ATOMIC_ACQUIRE); }

void cprof__cpu_thread_started(void) {
  if (!cprof__cpu_running())
    return;
  /* Before its first sample: its walks need no snapshot that has it.
   * (pthread_getattr_np allocates: not the program's allocation.) */
  cprof__heap_guard_enter();
  cprof__stack_bounds_learn();
  cprof__heap_guard_leave();
  pthread_mutex_lock(&lock);
  if (running)
    add_timer((pid_t)syscall(SYS_gettid));
  pthread_mutex_unlock(&lock);
}

/* How often to look at /proc/self/task for threads the pthread_create
 * interposer did not see (created by clone(2) directly, say) and for timers
 * of threads that exited. Reading the directory costs; new threads made
 * with pthread_create arm their own timers at once. */
#define TRACK_EVERY_MS 250

void cprof__cpu_track_threads(void) {
  static int64_t last;
  pthread_mutex_lock(&lock);
  int64_t now = cprof__now_ms(CLOCK_MONOTONIC);
  if (running && now - last >= TRACK_EVERY_MS) {
    track_locked();
    last = now;
  }
  pthread_mutex_unlock(&lock);
}

static void drain(record_t *r, cprof__cpu_sink_fn sink, void *arg) {
  for (int i = 0; i < RING; i++) {
    if (__atomic_load_n(&r[i].state, __ATOMIC_ACQUIRE) != FULL)
      continue;
    sink(arg, &r[i].s);
    __atomic_store_n(&r[i].state, FREE, __ATOMIC_RELEASE);
  }
}

void cprof__cpu_drain(cprof__cpu_sink_fn sink, void *arg) {
  pthread_mutex_lock(&lock);
  record_t *r = __atomic_load_n(&ring, __ATOMIC_SEQ_CST);
  if (running && r)
    drain(r, sink, arg);
  pthread_mutex_unlock(&lock);
}

uint64_t cprof__cpu_stop(cprof__cpu_sink_fn sink, void *arg) {
  pthread_mutex_lock(&lock);
  if (!running) {
    pthread_mutex_unlock(&lock);
    return 0;
  }
  for (int j = 0; j < ntimers; j++)
    timer_delete(timers[j].timer);
  ntimers = 0;
  record_t *r = __atomic_exchange_n(&ring, NULL, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&inside, __ATOMIC_SEQ_CST) != 0) {
    struct timespec ts = {0, 100 * 1000};
    nanosleep(&ts, NULL);
  }
  drain(r, sink, arg);
  free(r);
  __atomic_store_n(&stacks, NULL, __ATOMIC_RELEASE);
  for (int i = 0; i < nold_maps; i++) {
    cprof__maps_free(old_maps[i]);
    free(old_maps[i]);
  }
  free(old_maps);
  old_maps = NULL;
  nold_maps = 0;
  __atomic_store_n(&running, 0, __ATOMIC_RELEASE);
  uint64_t n = __atomic_exchange_n(&lost, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&lock);
  return n;
}

void cprof__cpu_atfork_child(void) {
  /* POSIX timers are not inherited (timer_create(2)); the child starts
   * without a profile. What the parent's buffer holds stays its own. */
  pthread_mutex_init(&lock, NULL);
  __atomic_store_n(&ring, NULL, __ATOMIC_SEQ_CST);
  running = 0;
  ntimers = 0;
  timers = NULL;
  timers_cap = 0;
  old_maps = NULL;
  nold_maps = 0;
}
