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

int cprof__threads_capture(cprof__unwinder_t how, int timeout_ms, cprof__thread_dump_t *out) {
  return cprof__threads_capture_cached(how, timeout_ms, NULL, out);
}

static int pid_cmp(const void *a, const void *b) {
  pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
  return x < y ? -1 : x > y;
}

/* One capture's work: its threads, sorted, and, aligned with them, how
 * each stack is got (mode), where each slept (places), and what a cache
 * lends (each thread's syscall file kept open, its mask's last look, a
 * deferring cache's ask still out), moved back to the cache after. */
typedef struct capture {
  cprof__threads_cache_t *c; /* NULL: none */
  cprof__unwinder_t how;
  pid_t *tids;
  int n;
  int64_t now; /* CLOCK_MONOTONIC ns when the threads were listed */
  const cprof__maps_t *maps;
  int depth;
  uint32_t modules; /* the module generation the stacks are of */
  uint32_t gen;
  int defer;      /* asks go out through the cache's table, and stay out */
  int holds;      /* the cache held the signal's use already */
  int can_signal; /* running threads may be asked */
  pid_t me;
  cprof__symbolizer_t *sym; /* acquired on first need */
  cprof__thread_stack_t *res;
  unsigned char *mode;
  cprof__in_kernel_t *places;
  int *fds;
  int64_t *oks;
  int *asks;
  int64_t *askeds;
} capture_t;

/* The threads to capture, sorted by id (the dump's order, and the
 * cache's), into w->tids and w->n: a cache's last ones when no thread was
 * born since and that list is under a second old; otherwise those of
 * /proc/self/task. The capturing thread is left out for a cache (see
 * threads.h). Returns 0, or a negative errno. */
static int list_threads(capture_t *w) {
  cprof__threads_cache_t *c = w->c;
  pid_t *tids = NULL;
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
  if (c) {
    pid_t me = (pid_t)syscall(SYS_gettid);
    int kept = 0;
    for (int i = 0; i < n; i++)
      if (tids[i] != me)
        tids[kept++] = tids[i];
    n = kept;
  }
  qsort(tids, (size_t)n, sizeof *tids, pid_cmp);
  w->tids = tids;
  w->n = n;
  w->now = now;
  return 0;
}

/* The maps the walks read, into w->maps: the cache's, while under a
 * second old and no module or thread is new to them; otherwise read now,
 * into *fresh. Returns 0, or a negative errno. */
static int maps_for(capture_t *w, cprof__maps_t **fresh) {
  cprof__threads_cache_t *c = w->c;
  int err = 0;
  if (c && c->maps && cprof__now_ns(CLOCK_MONOTONIC) - c->maps_ns < 1000000000LL &&
      c->modules == cprof__modules_generation_sigsafe() &&
      cprof__threads_cache_knows_all(c, w->tids, w->n))
    w->maps = c->maps;
  else if ((*fresh = calloc(1, sizeof **fresh)) == NULL || (err = cprof__maps_read(*fresh)) != 0)
    err = err ? err : -ENOMEM;
  else
    w->maps = *fresh;
  return err;
}

static void capture_free(capture_t *w) {
  free(w->mode);
  free(w->places);
  free(w->fds);
  free(w->oks);
  free(w->asks);
  free(w->askeds);
}

/* Under the capture lock: w's entries and arrays, with what the cache
 * lends moved in, and slots for every thread. A cache's stacks of another
 * depth, or of modules since unloaded, are not reused, and its asks out go
 * when a program that takes the signal waits. Returns 0, or a negative
 * errno with nothing kept (the cache's asks given up). */
static int capture_begin(capture_t *w) {
  cprof__threads_cache_t *c = w->c;
  int n = w->n, one = n ? n : 1;
  w->depth = cprof__max_depth();
  w->res = cprof__threads_new_dump(n, w->depth, c && c->defer);
  w->mode = calloc((size_t)n, 1);
  w->places = calloc((size_t)one, sizeof *w->places);
  /* Each thread's syscall file kept open from the capture before, moved
   * here from the cache (whose entry then owns none), and back after. */
  w->fds = c ? malloc((size_t)one * sizeof *w->fds) : NULL;
  w->oks = c ? calloc((size_t)one, sizeof *w->oks) : NULL;
  /* A deferring cache's asks out, by thread: moved here, and back after. */
  w->asks = c ? malloc((size_t)one * sizeof *w->asks) : NULL;
  w->askeds = c ? calloc((size_t)one, sizeof *w->askeds) : NULL;
  for (int i = 0; w->asks && i < n; i++)
    w->asks[i] = -1;
  for (int i = 0; w->fds && w->oks && i < n; i++) {
    cprof__threads_cached_t *e = cprof__threads_cache_find(c, w->tids[i]);
    w->fds[i] = e ? e->fd : -1;
    w->oks[i] = e ? e->mask_ok : 0;
    if (e)
      e->fd = -1;
  }
  w->modules = cprof__modules_generation_sigsafe();
  if (c && (c->depth != w->depth || c->modules != w->modules)) {
    if (c->table)
      cprof__threads_give_up_all(c);
    c->n = 0;
  }
  if (c && c->holding && !cprof__signal_held(cprof__threads_signo))
    cprof__threads_give_up_all(c);
  w->defer = c && c->defer && cprof__threads_defer_table(c, n, w->depth) == 0;
  int err = 0;
  if (!w->res || !w->mode || !w->places || (c && (!w->fds || !w->oks || !w->asks || !w->askeds)) ||
      (err = cprof__threads_ensure_slots(n, w->depth)) != 0) {
    for (int i = 0; w->fds && w->oks && i < n; i++)
      if (w->fds[i] >= 0)
        close(w->fds[i]);
    if (c && c->table)
      cprof__threads_give_up_all(c);
    capture_free(w);
    free(w->res);
    return err ? err : -ENOMEM;
  }
  return 0;
}

/* Under the capture lock: a fresh generation of slots, one per thread, so
 * that an answer to a capture before finds its slot stale; the maps the
 * handlers unwind with; and the answers to asks of captures before, in
 * first. */
static void capture_publish(capture_t *w) {
  uint32_t gen = ++generation;
  if (gen == 0)
    gen = ++generation;
  w->gen = gen;
  /* At the first capture, not at start: a profile never asked for costs no call. */
  if (!cprof__threads_cookie)
    __atomic_store_n(&cprof__threads_cookie, cprof__threads_draw_cookie(), __ATOMIC_RELAXED);
  /* Atomic: a handler answering an ask of an earlier capture (a wall
   * recording's, still out) may be reading it. */
  __atomic_store_n(&cprof__threads_unwinder, w->how, __ATOMIC_RELAXED);
  __atomic_store_n(&self_pid, getpid(), __ATOMIC_RELAXED);
  cprof__threads_publish_stacks(w->maps);
  for (int i = 0; i < w->n; i++) {
    cprof__threads_slots[i].tid = w->tids[i];
    cprof__threads_slots[i].depth = 0;
    __atomic_store_n(&cprof__threads_slots[i].state, CPROF__SLOT_STATE(gen, CPROF__SLOT_PENDING),
                     __ATOMIC_RELEASE);
  }
  for (int i = 0; w->defer && i < w->n; i++)
    cprof__threads_harvest(w->c, cprof__threads_cache_find(w->c, w->tids[i]), &w->res[i],
                           &w->asks[i], &w->askeds[i], w->now);
}

/* For a deferring cache, at the first round: thread i's CPU time, to split
 * the tick's time between running and not (wall.c); and where it last
 * slept. One that ran since the last capture but is asleep now is asked
 * too, for its running stack. */
static void note_cpu_and_sleep(capture_t *w, int i) {
  cprof__thread_stack_t *t = &w->res[i];
  cprof__threads_cached_t *e = cprof__threads_cache_find(w->c, w->tids[i]);
  t->cpu_ns = cprof__thread_cpu(w->tids[i]);
  if (e && e->wake_depth > 0) {
    t->sleep_depth = e->wake_depth < w->depth ? e->wake_depth : w->depth;
    memcpy(t->sleep_pcs, e->wake_pcs, (size_t)t->sleep_depth * sizeof *t->pcs);
    t->sleep_nr = e->wake_place.nr;
    t->sleep_ns = e->wake_ns;
  }
  const char *ignored;
  if (w->can_signal && w->mode[i] == CPROF__HOW_OUTSIDE && w->asks[i] < 0 && e && e->cpu_ns >= 0 &&
      t->cpu_ns > e->cpu_ns)
    cprof__threads_defer_ask(w->c, w->tids[i], w->gen, &w->asks[i], &w->askeds[i], &ignored);
}

/* Looks at thread i in the given round: decides how its stack is got, and
 * gets it, or asks the thread. Returns 1 when a request went to it, to be
 * waited for; otherwise its slot is given up. */
static int look_at(capture_t *w, int i, int round) {
  pid_t tid = w->tids[i];
  cprof__thread_stack_t *t = &w->res[i];
  if (tid == w->me) {
    w->mode[i] = CPROF__HOW_SELF;
    cprof__threads_unwind_self(w->how, w->maps, t, w->depth);
  } else {
    t->depth = 0;
    w->mode[i] = (unsigned char)cprof__threads_classify(
        tid, w->can_signal, t, w->depth, &w->sym,
        round ? NULL : cprof__threads_cache_find(w->c, tid), &w->places[i],
        w->fds ? &w->fds[i] : NULL, w->oks ? &w->oks[i] : NULL);
  }
  if (w->defer && round == 0 && tid != w->me)
    note_cpu_and_sleep(w, i);
  const char *call = NULL;
  if (w->mode[i] == CPROF__HOW_ASK && w->defer) { /* asked, or joining the ask still out */
    if (w->asks[i] >= 0 ||
        cprof__threads_defer_ask(w->c, tid, w->gen, &w->asks[i], &w->askeds[i], &call) == 0) {
      w->mode[i] = CPROF__HOW_DEFERRED;
    } else {
      t->err = errno;
      t->unreadable = call;
      w->mode[i] = errno == ESRCH ? CPROF__HOW_GONE : CPROF__HOW_UNSENT;
    }
  }
  cprof__threads_slot_t *slot = &cprof__threads_slots[i];
  if (w->mode[i] == CPROF__HOW_ASK) {
    if (round > 0) /* the slot again, for a timer of its own */
      __atomic_store_n(&slot->state, CPROF__SLOT_STATE(w->gen, CPROF__SLOT_PENDING),
                       __ATOMIC_RELEASE);
    if (cprof__threads_send_request(slot, (uint32_t)i, tid, &call) == 0)
      return 1;
    /* ESRCH: it exited. Anything else is the call refused (a seccomp
     * filter's EPERM, EAGAIN at RLIMIT_SIGPENDING): said as such. */
    t->err = errno;
    t->unreadable = call;
    w->mode[i] = errno == ESRCH ? CPROF__HOW_GONE : CPROF__HOW_UNSENT;
  }
  uint64_t expect = CPROF__SLOT_STATE(w->gen, CPROF__SLOT_PENDING);
  __atomic_compare_exchange_n(&slot->state, &expect,
                              CPROF__SLOT_STATE(w->gen, CPROF__SLOT_ABANDONED), 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
  return 0;
}

/* Gets every thread's stack, asking the running ones, by timeout_ms.
 *
 * From the start until the answers are in, the program's sigaction of our
 * signal waits (signals.c), so no request reaches a handler of its. A
 * cache that holds the use already takes no more: use_begin takes the
 * lock under which a program's sigaction waits for the uses to end, and
 * would wait for that sigaction in turn. The use stays held after while
 * a deferring cache has asks out. */
static void capture_stacks(capture_t *w, int timeout_ms) {
  cprof__threads_cache_t *c = w->c;
  int sig = cprof__threads_signo;
  w->holds = c && c->holding;
  w->can_signal = w->holds ? sig && cprof__signal_held(sig) : sig && cprof__signal_use_begin(sig);
  w->me = (pid_t)syscall(SYS_gettid);
  w->sym = NULL;
  int64_t deadline = cprof__now_ms(CLOCK_MONOTONIC) + timeout_ms;
  /* Rounds: a thread asked that goes back to sleep before it answers is
   * looked at afresh (RELOOK), unwound from outside where it now sleeps,
   * and asked again if it runs again; three rounds at most. */
  for (int round = 0; round < 3; round++) {
    int asking = 0;
    for (int i = 0; i < w->n; i++)
      if (round == 0 || w->mode[i] == CPROF__HOW_RELOOK)
        asking += look_at(w, i, round);
    if (!asking)
      break;
    int64_t took = cprof__threads_await_answers(w->tids, w->fds, w->n, w->mode, deadline,
                                                c ? c->answers_ns * 3 / 4 : 0);
    if (c && round == 0)
      c->answers_ns = took;
    for (int i = 0; i < w->n; i++)
      cprof__threads_drop_timer(&cprof__threads_slots[i]);
  }
  /* Asleep, or running again, at the last look: not asked again. */
  for (int i = 0; i < w->n; i++)
    if (w->mode[i] == CPROF__HOW_RELOOK)
      w->mode[i] = CPROF__HOW_LATE;
  if (w->sym)
    cprof__symbolizer_release(w->sym);
  if (w->can_signal && !w->holds && c && c->out > 0)
    c->holding = 1;
  else if (w->can_signal && !w->holds)
    cprof__signal_use_end(sig);
}

/* The dump, in place over w's entries: threads that exited meanwhile are
 * left out, and w's arrays are kept aligned with what remains. */
static void capture_collect(capture_t *w, cprof__thread_dump_t *out) {
  cprof__thread_stack_t *res = w->res;
  for (int i = 0; i < w->n; i++) {
    cprof__thread_stack_t *t = &res[out->n];
    long nr = res[i].syscall_nr;
    int reused = res[i].reused;
    const cprof__threads_cached_t *prev = cprof__threads_cache_find(w->c, w->tids[i]);
    int fd = w->fds ? w->fds[i] : -1;
    int mode = w->mode[i];
    if (prev) { /* a thread seen before keeps its name */
      memcpy(t->name, prev->name, sizeof t->name);
      t->state = '?';
    }
    if (mode == CPROF__HOW_GONE ||
        (!prev && cprof__thread_info(w->tids[i], t->name, &t->state) != 0)) {
      if (fd >= 0)
        close(fd);
      if (w->asks && w->asks[i] >= 0) {
        cprof__threads_give_up(&cprof__threads_table_v[w->c->table][w->asks[i]]);
        w->c->out--;
      }
      continue;
    }
    /* Running or asleep is what we saw, not what the letter of /proc, read
     * after, says of a thread new to the cache: a thread unwound asleep may
     * run by then (one asleep at a wall profile's first tick, read as
     * running, gave the time it ran over the first 350 ms to where it
     * slept: 102 ms of its 1.8 s). Its kind of sleep (D, T, ...) stays. */
    if (mode == CPROF__HOW_ASK || mode == CPROF__HOW_SELF || mode == CPROF__HOW_DEFERRED)
      t->state = 'R';
    else if (mode == CPROF__HOW_OUTSIDE && (t->state == 'R' || t->state == '?'))
      t->state = 'S';
    t->tid = w->tids[i];
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
    cprof__threads_dump_entry(mode, &cprof__threads_slots[i], &res[i], t);
    t->syscall_nr = nr;
    t->reused = reused;
    w->places[out->n] = w->places[i];
    if (w->fds) {
      w->fds[out->n] = fd;
      w->oks[out->n] = w->oks[i];
      w->asks[out->n] = w->asks[i];
      w->askeds[out->n] = w->askeds[i];
    }
    out->n++;
  }
  out->v = res;
}

/* Under the capture lock, at the end: a cache keeps the maps read for
 * this capture (fresh) for the ticks to come, and between captures the
 * asks out unwind with their cache's maps. Returns the cache's maps
 * before, for the caller to free once the lock is released. */
static cprof__maps_t *capture_end(cprof__threads_cache_t *c, cprof__maps_t **fresh, int err) {
  cprof__maps_t *old = NULL;
  if (c && *fresh && err == 0) {
    old = c->maps;
    c->maps = *fresh;
    c->maps_ns = cprof__now_ns(CLOCK_MONOTONIC);
    *fresh = NULL;
  }
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
  return old;
}

static void maps_free(cprof__maps_t *m) {
  if (m) {
    cprof__maps_free(m);
    free(m);
  }
}

int cprof__threads_capture_cached(cprof__unwinder_t how, int timeout_ms, cprof__threads_cache_t *c,
                                  cprof__thread_dump_t *out) {
  memset(out, 0, sizeof *out);
  /* Without a signal of our own, running threads cannot be asked; the
   * others are still unwound from outside. */
  cprof__threads_init();
  capture_t w;
  memset(&w, 0, sizeof w);
  w.c = c;
  w.how = how;
  int err = list_threads(&w);
  if (err != 0)
    return err;
  cprof__maps_t *fresh = NULL; /* read for this capture */
  err = maps_for(&w, &fresh);
  if (err != 0) {
    free(fresh);
    free(w.tids);
    return err;
  }
  pthread_mutex_lock(&cprof__threads_capture_lock);
  err = capture_begin(&w);
  if (err == 0) {
    capture_publish(&w);
    capture_stacks(&w, timeout_ms);
    capture_collect(&w, out);
    if (c) {
      cprof__threads_cache_keep(c, out, w.places, w.fds, w.oks, w.asks, w.askeds);
      c->modules = w.modules;
    }
    capture_free(&w);
  }
  cprof__maps_t *old = capture_end(c, &fresh, err);
  pthread_mutex_unlock(&cprof__threads_capture_lock);
  if (err == 0)
    cprof__threads_dump_labels(out);
  maps_free(old);
  maps_free(fresh);
  free(w.tids);
  return err;
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