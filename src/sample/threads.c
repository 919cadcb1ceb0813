/* All-thread stack capture.
 *
 * The protocol, between the capturing thread (the collector) and each
 * signalled thread's handler:
 *
 * 1. The collector lists /proc/self/task, fills one slot per thread with its
 *    tid and state PENDING for a fresh generation, and sends each thread our
 *    signal with rt_tgsigqueueinfo(2), whose si_value carries (generation,
 *    slot index).
 * 2. The handler, on the target thread, moves its slot PENDING -> WRITING
 *    with a compare-and-swap, unwinds into it, and marks it DONE.
 * 3. The collector waits until no slot is PENDING or the time is up; then it
 *    moves every PENDING slot to ABANDONED (by compare-and-swap, so exactly
 *    one side wins) and waits out any slot still WRITING, which is actively
 *    running and bounded.
 *
 * A signal delivered late (a thread that was stopped, or in a long
 * uninterruptible sleep) finds its slot ABANDONED or of another generation
 * and does nothing. Slot arrays are never freed, only replaced by larger
 * ones, so a late handler never touches freed memory.
 *
 * Threads that block our signal would leave it queued forever, and real-time
 * signals queue: asking again at every request would fill the process's
 * RLIMIT_SIGPENDING. So a thread whose /proc status shows our signal blocked
 * or already pending is not asked.
 *
 * Nor is a thread blocked in a system call that a signal handler would make
 * fail with EINTR (nanosleep, poll, epoll_wait, pause, ...; signal(7)):
 * asking it would end its sleep early, or return a main thread parked in
 * pause() into an exit. Such threads, and threads that block our signal
 * while they wait in any system call, are unwound from outside instead,
 * from the registers /proc/self/task/TID/syscall shows (see
 * src/symbol/blocked_unwind.c). Only a thread that blocks our signal while
 * it runs is reported without a stack. */
#include "sample/threads.h"

#include <linux/futex.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "symbol/symbolize.h"

enum { PENDING = 0, WRITING = 1, DONE = 2, ABANDONED = 3 };
#define STATE(gen, phase) (((uint64_t)(gen) << 2) | (phase))

typedef struct slot {
  uint64_t state; /* STATE(gen, phase), accessed atomically */
  pid_t tid;
  int depth;
  uintptr_t pcs[CPROF_MAX_DEPTH];
} slot_t;

/* Read by handlers: published with release stores, read with acquire loads. */
static slot_t *slots;
static int nslots;
static uint32_t generation;
static const cprof__maps_t *stacks;
static cprof__unwinder_t unwinder;

static int signo;
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
/* getpid(), set before each capture's requests are sent: the handler
 * compares without a system call (glibc has not cached the pid since 2.25). */
static pid_t self_pid;

/* The handler makes no system call. It does not check that it runs on the
 * slot's thread either: rt_tgsigqueueinfo(2) queues the signal for that one
 * thread, and only that thread can take it. A request from another process
 * would need the right generation and slot, and a process of our user, the
 * only kind the kernel lets queue such a signal to us, could as well
 * ptrace(2) us. */
static void handler_sigsafe(int sig, siginfo_t *info, void *uctx) {
  int saved = errno;
  /* Only our own requests: a kill(1) of this signal from outside, or a
   * sigqueue from another process, carries no slot for us. */
  if (info->si_code != SI_QUEUE || info->si_pid != __atomic_load_n(&self_pid, __ATOMIC_RELAXED))
    goto out;
  uint64_t token = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
  uint32_t gen = (uint32_t)(token >> 32);
  uint32_t idx = (uint32_t)token;
  slot_t *v = __atomic_load_n(&slots, __ATOMIC_ACQUIRE);
  if (!v || idx >= (uint32_t)__atomic_load_n(&nslots, __ATOMIC_ACQUIRE))
    goto out;
  slot_t *s = &v[idx];
  uint64_t expect = STATE(gen, PENDING);
  if (!__atomic_compare_exchange_n(&s->state, &expect, STATE(gen, WRITING), 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    goto out;
  s->depth = cprof__unwind_sigsafe(unwinder, (const ucontext_t *)uctx,
                                   __atomic_load_n(&stacks, __ATOMIC_ACQUIRE), s->pcs,
                                   CPROF_MAX_DEPTH);
  __atomic_store_n(&s->state, STATE(gen, DONE), __ATOMIC_RELEASE);
out:
  errno = saved;
}

static int installed(void) {
  struct sigaction cur;
  return signo && sigaction(signo, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
         cur.sa_sigaction == handler_sigsafe;
}

int cprof__threads_init(void) {
  int err = 0;
  pthread_mutex_lock(&capture_lock);
  if (installed())
    goto done;
  /* Take the highest real-time signal nobody has claimed. Programs that use
   * real-time signals usually count up from SIGRTMIN. */
  for (int sig = SIGRTMAX - 1; sig >= SIGRTMIN + 2; sig--) {
    struct sigaction cur;
    if (sigaction(sig, NULL, &cur) != 0 || cur.sa_handler != SIG_DFL)
      continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler_sigsafe;
    sa.sa_flags = SA_SIGINFO | SA_RESTART; /* never make the program's syscalls fail with EINTR */
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) == 0) {
      signo = sig;
      goto done;
    }
  }
  err = -EBUSY;
done:
  pthread_mutex_unlock(&capture_lock);
  return err;
}

int cprof__threads_signal(void) { return signo; }

int cprof__threads_list(pid_t **out) {
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -errno;
  int n = 0, cap = 64;
  pid_t *v = malloc(cap * sizeof *v);
  struct dirent *e;
  while (v && (e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    if (n == cap) {
      pid_t *nv = realloc(v, (cap *= 2) * sizeof *v);
      if (!nv) {
        free(v);
        v = NULL;
        break;
      }
      v = nv;
    }
    v[n++] = (pid_t)atoi(e->d_name);
  }
  closedir(d);
  if (!v)
    return -ENOMEM;
  *out = v;
  return n;
}

int cprof__threads_count(void) {
  pid_t *v;
  int n = cprof__threads_list(&v);
  if (n >= 0)
    free(v);
  return n < 0 ? 0 : n;
}

static int read_small(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n < 0)
    return -1;
  buf[n] = '\0';
  return (int)n;
}

int cprof__thread_name(pid_t tid, char name[16]) {
  char path[64], buf[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
  if (read_small(path, buf, sizeof buf) < 0)
    return -1;
  size_t n = strcspn(buf, "\n");
  if (n > 15) /* comm is at most 15 bytes (prctl(2), PR_SET_NAME) */
    n = 15;
  memcpy(name, buf, n);
  name[n] = '\0';
  return 0;
}

/* Name and state of a thread; returns 0, or -1 when it has exited. */
static int thread_info(pid_t tid, char name[16], char *state) {
  char path[64], buf[512];
  if (cprof__thread_name(tid, name) != 0)
    return -1;
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
  if (read_small(path, buf, sizeof buf) < 0)
    return -1;
  /* The state follows the last ')': the name in parentheses may hold any byte. */
  const char *p = strrchr(buf, ')');
  *state = p && p[1] == ' ' ? p[2] : '?';
  return 0;
}

/* Whether our signal is blocked or already pending for this thread, from
 * the SigBlk and SigPnd masks of /proc/self/task/TID/status (proc(5)). */
static int cannot_ask(pid_t tid) {
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
  if (read_small(path, buf, sizeof buf) < 0)
    return 1;
  uint64_t bit = 1ULL << (signo - 1);
  const char *fields[] = {"\nSigBlk:\t", "\nSigPnd:\t", "\nShdPnd:\t"};
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
    const char *p = strstr(buf, fields[i]);
    if (p && (strtoull(p + strlen(fields[i]), NULL, 16) & bit))
      return 1;
  }
  return 0;
}

/* Where a thread is blocked, from /proc/self/task/TID/syscall (proc(5)):
 * "NR a1 a2 a3 a4 a5 a6 sp pc" while in a system call, "running" or
 * "-1 sp pc" otherwise. */
typedef struct in_syscall {
  long nr; /* -1: not in a system call */
  uint64_t args[6];
  uintptr_t sp, pc;
} in_syscall_t;

static int read_syscall(pid_t tid, in_syscall_t *out) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
  out->nr = -1;
  if (read_small(path, buf, sizeof buf) < 0 || strncmp(buf, "running", 7) == 0)
    return -1;
  unsigned long long a[6], sp, pc;
  if (sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &out->nr, &a[0], &a[1], &a[2],
             &a[3], &a[4], &a[5], &sp, &pc) != 9) {
    out->nr = -1;
    return -1;
  }
  for (int i = 0; i < 6; i++)
    out->args[i] = a[i];
  out->sp = (uintptr_t)sp;
  out->pc = (uintptr_t)pc;
  return 0;
}

/* The calls a signal handler makes fail with EINTR whatever SA_RESTART
 * says (signal(7), "Interruption of system calls and library functions by
 * signal handlers"), by x86-64 number. A timed futex wait belongs here too:
 * the kernel resumes it through a restart block that a handler cancels. */
static int eintr_prone(const in_syscall_t *c) {
  switch (c->nr) {
  case SYS_poll:
  case SYS_select:
  case SYS_pause:
  case SYS_nanosleep:
  case SYS_semop:
  case SYS_msgsnd:
  case SYS_msgrcv:
  case SYS_rt_sigtimedwait:
  case SYS_rt_sigsuspend:
  case SYS_io_getevents:
  case SYS_semtimedop:
  case SYS_clock_nanosleep:
  case SYS_epoll_wait:
  case SYS_pselect6:
  case SYS_ppoll:
  case SYS_epoll_pwait:
  case SYS_io_pgetevents:
  case 441: /* epoll_pwait2, newer than some headers */
    return 1;
  case SYS_futex: {
    int cmd = (int)(c->args[1] & FUTEX_CMD_MASK);
    return c->args[3] != 0 &&
           (cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET || cmd == FUTEX_WAIT_REQUEUE_PI);
  }
  default:
    return 0;
  }
}

/* How a thread's stack is got. */
enum { ASK, OUTSIDE, NONE, LATE };

/* Decides how to get one thread's stack, and gets it when that means
 * unwinding from outside, which must happen while the thread stays where
 * /proc says it is: the registers are read again after the walk, and a
 * thread that has moved on is looked at afresh, three times at most (after
 * that, the exact pc it was last seen at is all we keep). Returns OUTSIDE
 * with t filled in, ASK when the thread may be signalled now, or NONE when
 * it blocks our signal while running, or is gone. *sym is the symbolizer,
 * acquired on first need and released by the caller. */
static int outside_or_ask(pid_t tid, cprof__thread_stack_t *t, cprof__symbolizer_t **sym) {
  int blocked = cannot_ask(tid);
  in_syscall_t c;
  for (int attempt = 0; attempt < 3; attempt++) {
    if (read_syscall(tid, &c) != 0 || c.nr < 0 || (!blocked && !eintr_prone(&c)))
      return blocked ? NONE : ASK;
    if (!*sym)
      *sym = cprof__symbolizer_acquire();
    t->depth = cprof__symbolizer_unwind_blocked(*sym, tid, c.sp, c.pc, t->pcs, CPROF_MAX_DEPTH);
    in_syscall_t after;
    if (read_syscall(tid, &after) == 0 && after.nr == c.nr && after.sp == c.sp &&
        after.pc == c.pc)
      return OUTSIDE;
  }
  t->pcs[0] = c.pc;
  t->depth = 1;
  return OUTSIDE;
}

static int send_request(pid_t tid, uint32_t gen, uint32_t idx) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = signo;
  si.si_code = SI_QUEUE;
  si.si_pid = self_pid;
  si.si_uid = getuid();
  si.si_value.sival_ptr = (void *)(uintptr_t)(((uint64_t)gen << 32) | idx);
  return (int)syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, signo, &si);
}

static int ensure_slots(int n) {
  if (n <= nslots)
    return 0;
  int cap = nslots ? nslots : 64;
  while (cap < n)
    cap *= 2;
  slot_t *v = calloc((size_t)cap, sizeof *v);
  if (!v)
    return -ENOMEM;
  for (int i = 0; i < cap; i++)
    v[i].state = STATE(0, ABANDONED);
  /* The old array is left in place for any late handler still reading it. */
  __atomic_store_n(&slots, v, __ATOMIC_RELEASE);
  __atomic_store_n(&nslots, cap, __ATOMIC_RELEASE);
  return 0;
}

int cprof__threads_capture(cprof__unwinder_t how, int timeout_ms, cprof__thread_dump_t *out) {
  memset(out, 0, sizeof *out);
  int err = cprof__threads_init();
  if (err)
    return err;

  pid_t *tids = NULL;
  cprof__maps_t maps = {0};
  int n = cprof__threads_list(&tids);
  if (n < 0)
    return n;
  if ((err = cprof__maps_read(&maps)) != 0) {
    free(tids);
    return err;
  }

  pthread_mutex_lock(&capture_lock);
  if (!installed()) {
    err = -EBUSY; /* the program took the signal over after we installed */
    goto unlock;
  }
  if ((err = ensure_slots(n)) != 0)
    goto unlock;
  uint32_t gen = ++generation;
  if (gen == 0)
    gen = ++generation;
  unwinder = how;
  __atomic_store_n(&self_pid, getpid(), __ATOMIC_RELAXED); /* a fork child's is its own */
  __atomic_store_n(&stacks, &maps, __ATOMIC_RELEASE);

  cprof__thread_stack_t *res = calloc((size_t)n, sizeof *res);
  unsigned char *mode = calloc((size_t)n, 1);
  if (!res || !mode) {
    free(res);
    free(mode);
    err = -ENOMEM;
    goto unlock;
  }
  for (int i = 0; i < n; i++) {
    slots[i].tid = tids[i];
    slots[i].depth = 0;
    __atomic_store_n(&slots[i].state, STATE(gen, PENDING), __ATOMIC_RELEASE);
  }
  cprof__symbolizer_t *sym = NULL;
  for (int i = 0; i < n; i++) {
    mode[i] = (unsigned char)outside_or_ask(tids[i], &res[i], &sym);
    if (mode[i] == ASK && send_request(tids[i], gen, (uint32_t)i) == 0)
      continue;
    if (mode[i] == ASK)
      mode[i] = NONE; /* gone (ESRCH) */
    uint64_t expect = STATE(gen, PENDING);
    __atomic_compare_exchange_n(&slots[i].state, &expect, STATE(gen, ABANDONED), 0,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  }
  if (sym)
    cprof__symbolizer_release(sym);

  int64_t deadline = cprof__now_ms(CLOCK_MONOTONIC) + timeout_ms;
  for (;;) {
    int waiting = 0;
    for (int i = 0; i < n; i++) {
      uint64_t st = __atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE);
      if ((st & 3) == PENDING || (st & 3) == WRITING)
        waiting++;
    }
    if (!waiting)
      break;
    if (cprof__now_ms(CLOCK_MONOTONIC) >= deadline) {
      for (int i = 0; i < n; i++) {
        uint64_t expect = STATE(gen, PENDING);
        if (__atomic_compare_exchange_n(&slots[i].state, &expect, STATE(gen, ABANDONED), 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
          mode[i] = LATE;
      }
      /* What is left is WRITING: running, and done within microseconds. */
      deadline = INT64_MAX;
    }
    struct timespec ts = {0, 200 * 1000};
    nanosleep(&ts, NULL);
  }
  __atomic_store_n(&stacks, NULL, __ATOMIC_RELEASE);

  /* Collect, in place: threads that exited meanwhile are left out. */
  for (int i = 0; i < n; i++) {
    cprof__thread_stack_t *t = &res[out->n];
    if (thread_info(tids[i], t->name, &t->state) != 0)
      continue;
    t->tid = tids[i];
    switch (mode[i]) {
    case ASK:
      t->status = CPROF_THREAD_OK;
      t->depth = slots[i].depth;
      memcpy(t->pcs, slots[i].pcs, (size_t)t->depth * sizeof t->pcs[0]);
      break;
    case OUTSIDE:
      t->status = CPROF_THREAD_OK;
      if (t != &res[i]) {
        t->depth = res[i].depth;
        memcpy(t->pcs, res[i].pcs, (size_t)t->depth * sizeof t->pcs[0]);
      }
      break;
    case NONE:
      t->status = CPROF_THREAD_BLOCKED;
      t->depth = 0;
      break;
    default:
      t->status = CPROF_THREAD_TIMEOUT;
      t->depth = 0;
    }
    out->n++;
  }
  out->v = res;
  free(mode);
unlock:
  pthread_mutex_unlock(&capture_lock);
  cprof__maps_free(&maps);
  free(tids);
  return err;
}

void cprof__threads_dump_free(cprof__thread_dump_t *d) {
  free(d->v);
  d->v = NULL;
  d->n = 0;
}

void cprof__threads_atfork_child(void) {
  /* The child has one thread; the lock may have been held by another
   * thread of the parent, which the child does not have. */
  pthread_mutex_init(&capture_lock, NULL);
}
