/* All-thread stack capture.
 *
 * Which threads are signalled. A signal handler that runs while a thread
 * waits in a system call ends many waits with EINTR whatever SA_RESTART
 * says (signal(7): recv and accept with SO_RCVTIMEO, nanosleep, poll,
 * epoll_wait, System V IPC, io_uring_enter, restart_syscall after a stop
 * and a continue, ...), and a list of the calls that are safe would be
 * wrong on the next kernel. So the rule is:
 *
 * - A thread in a system call, or stopped in the kernel outside one (a page
 *   fault, a ptrace or job-control stop: /proc/self/task/TID/syscall says
 *   "-1 sp pc"), is never signalled: it is unwound from outside, from the
 *   registers that file shows (see src/unwind/outside.c).
 * - Only a thread known to be running is asked: that file says "running",
 *   or, where it cannot be read, /proc/self/task/TID/stat says state R.
 *   Both mean TASK_RUNNING, which is also a thread woken from a timed wait
 *   (a poll that timed out) but not yet back in user space: a signal sent
 *   then ends that call with EINTR (do_poll rescans, finds nothing, sees
 *   the signal and returns -ERESTARTNOHAND), and on a loaded machine a
 *   thread can stay so for milliseconds. No look at /proc, however close
 *   to the signal, closes that window. So a thread is not sent a signal:
 *   it is given a one-shot timer on its own CPU clock, due 1 ns of its CPU
 *   time later (timer_create(2), SIGEV_THREAD_ID). The kernel notices the
 *   expiry at a clock tick that finds the thread on a CPU, and, where CPU
 *   timers expire in task work (CONFIG_POSIX_CPU_TIMERS_TASK_WORK: x86-64
 *   and arm64 since Linux 5.11), generates the signal only on the thread's
 *   way back to user space, after any system call has returned: the
 *   signal never interrupts one. The cost is up to one tick of the
 *   thread's CPU time before it answers. A thread that goes back to sleep
 *   before such a tick would answer only when it next runs, so the
 *   collector looks again at the threads that have not answered, and one
 *   it finds asleep in the kernel is given up (its timer deleted) and
 *   unwound from outside where it now sleeps. Without task work (older
 *   kernels, other architectures) the timer's signal is sent from the
 *   tick itself, and may land in a system call the tick interrupted.
 * - A thread whose state cannot be read is never signalled, and is
 *   reported as unknown, with the file and the reason. That is every
 *   sleeping thread once a program has dropped root with setuid: the
 *   process is no longer dumpable, /proc/self/task/TID/syscall belongs to
 *   root (proc(5)), and nothing else shows a sleeping thread's registers.
 * - The thread that captures unwinds itself where it is.
 * - A kernel worker of the process (io_uring's iou-wrk) shows no user
 *   registers at all (sp and pc 0) and is reported as such.
 *
 * The protocol with a running thread, between the capturing thread (the
 * collector) and the signalled thread's handler:
 *
 * 1. The collector lists /proc/self/task, fills one slot per thread with its
 *    tid and state PENDING for a fresh generation, and gives each running
 *    thread a timer whose sigev_value carries the cookie and the slot
 *    index; the slot keeps the timer's id.
 * 2. The handler, on the target thread, checks the slot's timer is the one
 *    that expired (si_timerid), moves the slot PENDING -> WRITING with a
 *    compare-and-swap, unwinds into it, and marks it DONE.
 * 3. The collector waits until no slot is PENDING or the time is up,
 *    giving up the asks of threads found asleep again; then it moves every
 *    PENDING slot to ABANDONED (by compare-and-swap, so exactly one side
 *    wins), waits out any slot still WRITING, which is actively running
 *    and bounded, and deletes the timers.
 *
 * A signal delivered late (a thread that was preempted for the whole
 * second, or stopped just after we looked) finds its slot ABANDONED or of
 * another generation and does nothing. Slot arrays are never freed, only
 * replaced by larger ones, so a late handler never touches freed memory.
 *
 * Telling our signal from the program's. The program may send, queue or
 * be sent the same signal number, or have timers of its own on it. Ours
 * carry SI_TIMER and, in the high half of si_value, a secret drawn from
 * getrandom(2) at the first capture (a process may queue any SI_TIMER
 * siginfo to another of its user's, rt_sigqueueinfo(2), so the code alone
 * proves nothing). An arrival without both is the program's, and goes
 * where its own action says (signals.c): for SIG_DFL, the end of the
 * process. A late arrival of ours (a timer given up, whose signal was
 * already on its way) finds its slot's timer changed and does nothing. If
 * the program installs an action of its own on our signal, the program
 * wins (signals.c, CPROF_SHARE_YIELD): captures then ask nobody, and
 * running threads are reported as such.
 *
 * Labels. Each thread's labels (sample/labels.c) are read after every
 * stack is in, from the list of label blocks by thread id, not by the
 * handlers: most threads are unwound from outside and run no handler. They
 * are read after the capture lock is released, so that the labels' lock
 * never nests inside it (both are taken around fork).
 *
 * Real-time signals queue. A thread that blocks our signal would collect
 * one more queued signal per request until the process hits
 * RLIMIT_SIGPENDING. So a running thread whose /proc status shows our
 * signal blocked or already pending is not asked. */
#include "sample/threads_internal.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "sample/signals.h"
#include "symbol/symbolize.h"
#include "unwind/modules.h"

/* The capture's own state (the others' is in threads_internal.h). */
cprof__threads_slot_t *cprof__threads_table_v[CPROF__THREADS_TABLES];
int cprof__threads_table_n[CPROF__THREADS_TABLES];
int cprof__threads_table_taken[CPROF__THREADS_TABLES];
static uint32_t generation;
const cprof__maps_t *cprof__threads_deferred_stacks;
cprof__unwinder_t cprof__threads_unwinder;

int cprof__threads_signo;
pthread_mutex_t cprof__threads_capture_lock = PTHREAD_MUTEX_INITIALIZER;
/* getpid(), set at init and before each capture's requests are sent: the
 * handler compares without a system call (glibc has not cached the pid
 * since 2.25), and a fork child's is its own. */
static pid_t self_pid;
uint32_t cprof__threads_cookie;

/* Takes the highest real-time signal the program leaves at SIG_DFL.
 * Programs that use real-time signals usually count up from SIGRTMIN. */
static int take_signal(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = cprof__threads_handler_sigsafe;
  /* SA_RESTART: never make the program's syscalls fail with EINTR.
   * SA_ONSTACK: on the thread's alternate signal stack, never on one the
   * program sized for itself (sample/altstack.c). */
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  /* No CPU sample inside this handler (it would show this handler's
   * frames), and one signal frame of ours at a time on that stack: the
   * SIGPROF handler blocks this signal likewise (cpu.c). */
  sigaddset(&sa.sa_mask, SIGPROF);
  if (cprof__threads_signo && cprof__signal_take(cprof__threads_signo, &sa, CPROF_SHARE_YIELD) == 0)
    return 0;
  for (int sig = SIGRTMAX - 1; sig >= SIGRTMIN + 2; sig--) {
    if (cprof__signal_take(sig, &sa, CPROF_SHARE_YIELD) == 0) {
      cprof__threads_signo = sig;
      return 0;
    }
  }
  return -EBUSY;
}

int cprof__threads_init(void) {
  pthread_mutex_lock(&cprof__threads_capture_lock);
  __atomic_store_n(&self_pid, getpid(), __ATOMIC_RELAXED);
  int err = take_signal();
  pthread_mutex_unlock(&cprof__threads_capture_lock);
  return err;
}

int cprof__threads_signal(void) { return cprof__threads_signo; }

/* Threads created since the process began (cprof__threads_born). */
static uint64_t births;

void cprof__threads_born(void) { __atomic_add_fetch(&births, 1, __ATOMIC_RELAXED); }

/* One thread's entry in the dump, from how its stack was got. */
static void collect(int mode, const cprof__threads_slot_t *slot, const cprof__thread_stack_t *got,
                    cprof__thread_stack_t *t) {
  t->status = CPROF_THREAD_OK;
  switch (mode) {
  case CPROF__HOW_ASK:
    t->depth = slot->depth;
    memcpy(t->pcs, slot->pcs, (size_t)t->depth * sizeof t->pcs[0]);
    return;
  case CPROF__HOW_OUTSIDE:
  case CPROF__HOW_SELF:
    if (t != got) {
      t->depth = got->depth;
      memcpy(t->pcs, got->pcs, (size_t)t->depth * sizeof t->pcs[0]);
    }
    return;
  case CPROF__HOW_UNKNOWN:
    t->status = CPROF_THREAD_UNKNOWN;
    t->unreadable = got->unreadable;
    t->err = got->err;
    break;
  case CPROF__HOW_BLOCKED:
    t->status = CPROF_THREAD_BLOCKED;
    break;
  case CPROF__HOW_NO_SIGNAL:
    t->status = CPROF_THREAD_NO_SIGNAL;
    break;
  case CPROF__HOW_NO_STACK:
    t->status = CPROF_THREAD_NO_STACK;
    break;
  case CPROF__HOW_UNSENT:
    t->status = CPROF_THREAD_UNSENT;
    t->unreadable = got->unreadable;
    t->err = got->err;
    break;
  case CPROF__HOW_KERNEL:
    t->status = CPROF_THREAD_KERNEL;
    break;
  case CPROF__HOW_DEFERRED:
    t->status = CPROF_THREAD_DEFERRED;
    break;
  default: /* LATE */
    t->status = CPROF_THREAD_TIMEOUT;
  }
  t->depth = 0;
}

/* The dump's entries and their stacks of `depth` frames, in one block
 * (freed with the entries); with room for the answers of earlier asks
 * when `answers`. */
cprof__thread_stack_t *cprof__threads_new_dump(int n, int depth, int answers) {
  size_t head = (size_t)n * sizeof(cprof__thread_stack_t);
  size_t per = (size_t)depth * (answers ? 3 : 1);
  cprof__thread_stack_t *v = calloc(1, head + (size_t)n * per * sizeof(uintptr_t));
  if (!v)
    return NULL;
  uintptr_t *pcs = (uintptr_t *)(void *)((char *)v + head);
  for (int i = 0; i < n; i++) {
    v[i].pcs = pcs + (size_t)i * per;
    v[i].answer_pcs = answers ? v[i].pcs + depth : NULL;
    v[i].sleep_pcs = answers ? v[i].pcs + 2 * depth : NULL;
    v[i].syscall_nr = -1;
    v[i].sleep_nr = -1;
    v[i].cpu_ns = -1;
  }
  return v;
}

cprof__thread_stack_t *cprof__threads_dump_find(const cprof__thread_dump_t *d, pid_t tid) {
  int lo = 0, hi = d->n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (d->v[mid].tid < tid)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < d->n && d->v[lo].tid == tid ? &d->v[lo] : NULL;
}

/* Fills the labels of dump entries by thread id, looked up once per
 * labelled thread. */
static void fill_one(pid_t tid, const cprof__labels_t *l, void *ctx) {
  cprof__thread_stack_t *t = cprof__threads_dump_find(ctx, tid);
  if (t)
    t->labels = *l;
}

static void fill_labels(cprof__thread_dump_t *d) { cprof__labels_each(fill_one, d); }

int cprof__threads_capture(cprof__unwinder_t how, int timeout_ms, cprof__thread_dump_t *out) {
  return cprof__threads_capture_cached(how, timeout_ms, NULL, out);
}

static int pid_cmp(const void *a, const void *b) {
  pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
  return x < y ? -1 : x > y;
}

int cprof__threads_capture_cached(cprof__unwinder_t how, int timeout_ms, cprof__threads_cache_t *c,
                                  cprof__thread_dump_t *out) {
  memset(out, 0, sizeof *out);
  /* Without a signal of our own, running threads cannot be asked; the
   * others are still unwound from outside. */
  cprof__threads_init();

  pid_t *tids = NULL;
  cprof__maps_t *fresh = NULL; /* read for this capture */
  const cprof__maps_t *maps = NULL;
  if (c && !c->task)
    c->task = opendir("/proc/self/task");
  int n = -1;
  uint64_t born = __atomic_load_n(&births, __ATOMIC_RELAXED);
  int64_t now = cprof__now_ns(CLOCK_MONOTONIC);
  if (c && c->n > 0 && born == c->births && now - c->listed_ns < 1000000000LL &&
      (tids = malloc((size_t)c->n * sizeof *tids)) != NULL) {
    /* No thread born since the last list: the threads of the last dump. */
    for (n = 0; n < c->n; n++)
      tids[n] = c->v[n].tid;
  } else {
    n = c && c->task ? cprof__threads_list_dir(c->task, &tids) : cprof__threads_list(&tids);
    if (n < 0)
      return n;
    if (c) {
      c->births = born;
      c->listed_ns = now;
    }
  }
  if (c) { /* the capturing thread is left out: see threads.h */
    pid_t me = (pid_t)syscall(SYS_gettid);
    int kept = 0;
    for (int i = 0; i < n; i++)
      if (tids[i] != me)
        tids[kept++] = tids[i];
    n = kept;
  }
  qsort(tids, (size_t)n, sizeof *tids, pid_cmp); /* the dump's order, and the cache's */
  int err = 0;
  if (c && c->maps && cprof__now_ns(CLOCK_MONOTONIC) - c->maps_ns < 1000000000LL &&
      c->modules == cprof__modules_generation_sigsafe() &&
      cprof__threads_cache_knows_all(c, tids, n))
    maps = c->maps;
  else if ((fresh = calloc(1, sizeof *fresh)) == NULL || (err = cprof__maps_read(fresh)) != 0)
    err = err ? err : -ENOMEM;
  else
    maps = fresh;
  if (err != 0) {
    free(fresh);
    free(tids);
    return err;
  }

  pthread_mutex_lock(&cprof__threads_capture_lock);
  int depth = cprof__max_depth();
  cprof__thread_stack_t *res = cprof__threads_new_dump(n, depth, c && c->defer);
  unsigned char *mode = calloc((size_t)n, 1);
  cprof__in_kernel_t *places = calloc((size_t)(n ? n : 1), sizeof *places);
  /* Each thread's syscall file kept open from the capture before, moved
   * here from the cache (whose entry then owns none), and back after. */
  int *fds = c ? malloc((size_t)(n ? n : 1) * sizeof *fds) : NULL;
  int64_t *oks = c ? calloc((size_t)(n ? n : 1), sizeof *oks) : NULL;
  /* A deferring cache's asks out, by thread: moved here, and back after. */
  int *asks = c ? malloc((size_t)(n ? n : 1) * sizeof *asks) : NULL;
  int64_t *askeds = c ? calloc((size_t)(n ? n : 1), sizeof *askeds) : NULL;
  for (int i = 0; asks && i < n; i++)
    asks[i] = -1;
  for (int i = 0; fds && oks && i < n; i++) {
    cprof__threads_cached_t *e = cprof__threads_cache_find(c, tids[i]);
    fds[i] = e ? e->fd : -1;
    oks[i] = e ? e->mask_ok : 0;
    if (e)
      e->fd = -1;
  }
  /* Stacks of another depth, or of modules since unloaded, are not reused. */
  uint32_t modules = cprof__modules_generation_sigsafe();
  if (c && (c->depth != depth || c->modules != modules)) {
    if (c->table)
      cprof__threads_give_up_all(c);
    c->n = 0;
  }
  /* A program that takes the signal waits for this: the asks out go. */
  if (c && c->holding && !cprof__signal_held(cprof__threads_signo))
    cprof__threads_give_up_all(c);
  int defer = c && c->defer && cprof__threads_defer_table(c, n, depth) == 0;
  if (!res || !mode || !places || (c && (!fds || !oks || !asks || !askeds)) ||
      (err = cprof__threads_ensure_slots(n, depth)) != 0) {
    for (int i = 0; fds && oks && i < n; i++)
      if (fds[i] >= 0)
        close(fds[i]);
    if (c && c->table)
      cprof__threads_give_up_all(c);
    free(fds);
    free(oks);
    free(asks);
    free(askeds);
    free(res);
    free(mode);
    free(places);
    err = err ? err : -ENOMEM;
    goto unlock;
  }
  uint32_t gen = ++generation;
  if (gen == 0)
    gen = ++generation;
  if (!cprof__threads_cookie) /* at the first capture, not at start: a profile never asked for costs
                                 no call */
    __atomic_store_n(&cprof__threads_cookie, cprof__threads_draw_cookie(), __ATOMIC_RELAXED);
  cprof__threads_unwinder = how;
  __atomic_store_n(&self_pid, getpid(), __ATOMIC_RELAXED);
  cprof__threads_publish_stacks(maps);
  for (int i = 0; i < n; i++) {
    cprof__threads_slots[i].tid = tids[i];
    cprof__threads_slots[i].depth = 0;
    __atomic_store_n(&cprof__threads_slots[i].state, CPROF__SLOT_STATE(gen, CPROF__SLOT_PENDING),
                     __ATOMIC_RELEASE);
  }
  /* The answers to asks of captures before, in first. */
  for (int i = 0; defer && i < n; i++)
    cprof__threads_harvest(c, cprof__threads_cache_find(c, tids[i]), &res[i], &asks[i], &askeds[i],
                           now);

  /* From here until the answers are in, the program's sigaction of our
   * signal waits (signals.c), so no request reaches a handler of its. A
   * cache that holds the use already takes no more: use_begin takes the
   * lock under which a program's sigaction waits for the uses to end, and
   * would wait for that sigaction in turn. */
  int holds = c && c->holding;
  int can_signal = holds ? cprof__threads_signo && cprof__signal_held(cprof__threads_signo)
                         : cprof__threads_signo && cprof__signal_use_begin(cprof__threads_signo);
  pid_t me = (pid_t)syscall(SYS_gettid);
  cprof__symbolizer_t *sym = NULL;
  int64_t deadline = cprof__now_ms(CLOCK_MONOTONIC) + timeout_ms;
  /* Rounds: a thread asked that goes back to sleep before it answers is
   * looked at afresh (RELOOK), unwound from outside where it now sleeps,
   * and asked again if it runs again; three rounds at most. */
  for (int round = 0; round < 3; round++) {
    int asking = 0;
    for (int i = 0; i < n; i++) {
      if (round > 0 && mode[i] != CPROF__HOW_RELOOK)
        continue;
      if (tids[i] == me) {
        mode[i] = CPROF__HOW_SELF;
        cprof__threads_unwind_self(how, maps, &res[i], depth);
      } else {
        res[i].depth = 0;
        mode[i] = (unsigned char)cprof__threads_classify(
            tids[i], can_signal, &res[i], depth, &sym,
            round ? NULL : cprof__threads_cache_find(c, tids[i]), &places[i], fds ? &fds[i] : NULL,
            oks ? &oks[i] : NULL);
      }
      if (defer && round == 0 && tids[i] != me) {
        /* Its CPU time, to split the tick's time between running and not
         * (wall.c); and where it last slept. One that ran since the last
         * capture but is asleep now is asked too, for its running stack. */
        cprof__threads_cached_t *e = cprof__threads_cache_find(c, tids[i]);
        res[i].cpu_ns = cprof__thread_cpu(tids[i]);
        if (e && e->wake_depth > 0) {
          res[i].sleep_depth = e->wake_depth < depth ? e->wake_depth : depth;
          memcpy(res[i].sleep_pcs, e->wake_pcs, (size_t)res[i].sleep_depth * sizeof *res[i].pcs);
          res[i].sleep_nr = e->wake_place.nr;
          res[i].sleep_ns = e->wake_ns;
        }
        const char *ignored;
        if (can_signal && mode[i] == CPROF__HOW_OUTSIDE && asks[i] < 0 && e && e->cpu_ns >= 0 &&
            res[i].cpu_ns > e->cpu_ns)
          cprof__threads_defer_ask(c, tids[i], gen, &asks[i], &askeds[i], &ignored);
      }
      const char *call = NULL;
      if (mode[i] == CPROF__HOW_ASK && defer) { /* asked, or joining the ask still out */
        if (asks[i] >= 0 ||
            cprof__threads_defer_ask(c, tids[i], gen, &asks[i], &askeds[i], &call) == 0) {
          mode[i] = CPROF__HOW_DEFERRED;
        } else {
          res[i].err = errno;
          res[i].unreadable = call;
          mode[i] = errno == ESRCH ? CPROF__HOW_GONE : CPROF__HOW_UNSENT;
        }
      }
      if (mode[i] == CPROF__HOW_ASK) {
        if (round > 0) /* the slot again, for a timer of its own */
          __atomic_store_n(&cprof__threads_slots[i].state,
                           CPROF__SLOT_STATE(gen, CPROF__SLOT_PENDING), __ATOMIC_RELEASE);
        if (cprof__threads_send_request(&cprof__threads_slots[i], (uint32_t)i, tids[i], &call) ==
            0) {
          asking++;
          continue;
        }
        /* ESRCH: it exited. Anything else is the call refused (a seccomp
         * filter's EPERM, EAGAIN at RLIMIT_SIGPENDING): said as such. */
        res[i].err = errno;
        res[i].unreadable = call;
        mode[i] = errno == ESRCH ? CPROF__HOW_GONE : CPROF__HOW_UNSENT;
      }
      uint64_t expect = CPROF__SLOT_STATE(gen, CPROF__SLOT_PENDING);
      __atomic_compare_exchange_n(&cprof__threads_slots[i].state, &expect,
                                  CPROF__SLOT_STATE(gen, CPROF__SLOT_ABANDONED), 0,
                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    if (!asking)
      break;
    int64_t took =
        cprof__threads_await_answers(tids, fds, n, mode, deadline, c ? c->answers_ns * 3 / 4 : 0);
    if (c && round == 0)
      c->answers_ns = took;
    for (int i = 0; i < n; i++)
      cprof__threads_drop_timer(&cprof__threads_slots[i]);
  }
  for (int i = 0; i < n; i++)
    if (mode[i] ==
        CPROF__HOW_RELOOK) /* asleep, or running again, at the last look: not asked again */
      mode[i] = CPROF__HOW_LATE;
  if (sym)
    cprof__symbolizer_release(sym);
  /* The signal's use stays held while a deferring cache has asks out. */
  if (can_signal && !holds && c && c->out > 0)
    c->holding = 1;
  else if (can_signal && !holds)
    cprof__signal_use_end(cprof__threads_signo);

  /* Collect, in place: threads that exited meanwhile are left out. */
  for (int i = 0; i < n; i++) {
    cprof__thread_stack_t *t = &res[out->n];
    long nr = res[i].syscall_nr;
    int reused = res[i].reused;
    const cprof__threads_cached_t *prev = cprof__threads_cache_find(c, tids[i]);
    int fd = fds ? fds[i] : -1;
    if (prev) { /* a thread seen before keeps its name; its state is what we saw */
      memcpy(t->name, prev->name, sizeof t->name);
      t->state =
          mode[i] == CPROF__HOW_ASK || mode[i] == CPROF__HOW_SELF || mode[i] == CPROF__HOW_DEFERRED
              ? 'R'
          : mode[i] == CPROF__HOW_OUTSIDE ? 'S'
                                          : '?';
    }
    if (mode[i] == CPROF__HOW_GONE ||
        (!prev && cprof__thread_info(tids[i], t->name, &t->state) != 0)) {
      if (fd >= 0)
        close(fd);
      if (asks && asks[i] >= 0) {
        cprof__threads_give_up(&cprof__threads_table_v[c->table][asks[i]]);
        c->out--;
      }
      continue;
    }
    t->tid = tids[i];
    int answered = res[i].answered, answer_depth = res[i].answer_depth;
    if (t != &res[i] && answered > 0)
      memcpy(t->answer_pcs, res[i].answer_pcs, (size_t)answer_depth * sizeof *t->answer_pcs);
    t->answered = answered;
    t->answer_depth = answered > 0 ? answer_depth : 0;
    int64_t cpu_ns = res[i].cpu_ns;
    int sleep_depth = res[i].sleep_depth;
    long sleep_nr = res[i].sleep_nr;
    if (t != &res[i] && sleep_depth > 0)
      memcpy(t->sleep_pcs, res[i].sleep_pcs, (size_t)sleep_depth * sizeof *t->sleep_pcs);
    t->sleep_ns = res[i].sleep_ns;
    t->cpu_ns = cpu_ns;
    t->sleep_depth = sleep_depth;
    t->sleep_nr = sleep_nr;
    collect(mode[i], &cprof__threads_slots[i], &res[i], t);
    t->syscall_nr = nr;
    t->reused = reused;
    places[out->n] = places[i];
    if (fds) {
      fds[out->n] = fd;
      oks[out->n] = oks[i];
      asks[out->n] = asks[i];
      askeds[out->n] = askeds[i];
    }
    out->n++;
  }
  out->v = res;
  if (c) {
    cprof__threads_cache_keep(c, out, places, fds, oks, asks, askeds);
    c->modules = modules;
  }
  free(mode);
  free(places);
  free(fds);
  free(oks);
  free(asks);
  free(askeds);
unlock:;
  cprof__maps_t *old = NULL;
  if (c && fresh && err == 0) { /* kept for the ticks to come */
    old = c->maps;
    c->maps = fresh;
    c->maps_ns = cprof__now_ns(CLOCK_MONOTONIC);
    fresh = NULL;
  }
  /* Between captures, the asks out unwind with their cache's maps. */
  if (c && c->holding && c->out == 0) {
    c->holding = 0;
    cprof__signal_use_end(cprof__threads_signo);
  }
  if (c && c->out > 0)
    cprof__threads_deferred_stacks = c->maps;
  else if (c &&
           (cprof__threads_deferred_stacks == c->maps || cprof__threads_deferred_stacks == old))
    cprof__threads_deferred_stacks = NULL;
  cprof__threads_publish_stacks(cprof__threads_deferred_stacks);
  pthread_mutex_unlock(&cprof__threads_capture_lock);
  if (err == 0)
    fill_labels(out);
  if (old) {
    cprof__maps_free(old);
    free(old);
  }
  if (fresh) {
    cprof__maps_free(fresh);
    free(fresh);
  }
  free(tids);
  return err;
}

void cprof__threads_dump_free(cprof__thread_dump_t *d) {
  free(d->v);
  d->v = NULL;
  d->n = 0;
}

/* The lock is held across fork (start.c's handlers): the child finds it
 * its own, and releases it. */
void cprof__threads_atfork_prepare(void) { pthread_mutex_lock(&cprof__threads_capture_lock); }
void cprof__threads_atfork_parent(void) { pthread_mutex_unlock(&cprof__threads_capture_lock); }

void cprof__threads_atfork_child(void) {
  __atomic_store_n(&self_pid, getpid(), __ATOMIC_RELAXED);
  /* The parent's samplers, their asks (timers are not inherited, nor are
   * pending signals) and handlers in flight on its other threads are not
   * the child's. */
  __atomic_store_n(&cprof__threads_handlers_in, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&cprof__threads_stacks, NULL, __ATOMIC_RELAXED);
  cprof__threads_deferred_stacks = NULL;
  memset(cprof__threads_table_taken, 0, sizeof cprof__threads_table_taken);
  pthread_mutex_unlock(&cprof__threads_capture_lock);
}
