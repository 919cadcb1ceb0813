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
#include "sample/threads.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "core/clock.h"
#include "sample/altstack.h"
#include "sample/signals.h"
#include "symbol/symbolize.h"
#include "unwind/modules.h"

enum { PENDING = 0, WRITING = 1, DONE = 2, ABANDONED = 3 };
#define STATE(gen, phase) (((uint64_t)(gen) << 2) | (phase))

typedef struct slot {
  uint64_t state; /* STATE(gen, phase), accessed atomically */
  int timer;      /* the kernel's id of the timer that asks, -1: none; atomic */
  int busy;       /* a deferring cache's slot in use for an ask; the collector's */
  pid_t tid;
  int depth;
  int max;        /* frames pcs holds, fixed when the slots were made */
  uintptr_t *pcs; /* in the same block, after the slots */
} slot_t;

/* Read by handlers: published with release stores, read with acquire loads.
 * Table 0 (slots, nslots) is the captures' own, a slot per thread listed;
 * the others belong to caches that defer (threads.h), whose asks outlive
 * a capture: a slot per ask. A request's token says which (see
 * TOKEN_TABLE). Tables are only ever replaced by larger ones, never
 * freed. */
static slot_t *slots;
static int nslots;
#define TABLES 16
#define TOKEN_TABLE(low) ((low) >> 24)
#define TOKEN_INDEX(low) ((low)&0xffffff)
static slot_t *table_v[TABLES]; /* [0] unused: slots */
static int table_n[TABLES];
static int table_taken[TABLES]; /* under the capture lock */
static int slots_depth; /* the frames each slot holds; the capture lock's */
static uint32_t generation;
static const cprof__maps_t *stacks;
/* Handlers of requests running now: whoever unpublishes maps that a
 * handler may be reading (publish_stacks) waits for it. */
static int handlers_in;
/* The maps a deferring cache's asks still out are unwound with between
 * captures (NULL: none); the capture lock's. */
static const cprof__maps_t *deferred_stacks;
static cprof__unwinder_t unwinder;

static int signo;
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
/* getpid(), set at init and before each capture's requests are sent: the
 * handler compares without a system call (glibc has not cached the pid
 * since 2.25), and a fork child's is its own. */
static pid_t self_pid;
/* The secret our requests carry in the high half of si_value (see the top of this file),
 * drawn before the first capture sends anything; 0 until then. */
static uint32_t cookie;

/* Publishes the maps handlers unwind with, and waits for the handlers
 * that may still read the ones before: once it returns, those may be
 * freed. Under the capture lock. */
static void publish_stacks(const cprof__maps_t *m) {
  __atomic_store_n(&stacks, m, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&handlers_in, __ATOMIC_SEQ_CST) > 0) {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
}

/* Whether an arrival of our signal is a request of ours: the expiry of
 * one of our timers, whose value carries the cookie in its high half and
 * the slot in its low half. A program's own timer on this signal carries
 * what the program put there; a signal queued from outside with SI_TIMER
 * would need the cookie. */
static int is_request_sigsafe(const siginfo_t *info) {
  uint32_t c = __atomic_load_n(&cookie, __ATOMIC_RELAXED);
  uint64_t token = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
  return c != 0 && info->si_code == SI_TIMER && (uint32_t)(token >> 32) == c;
}

/* The handler makes no system call for a request. It does not check that
 * it runs on the slot's thread either: the timer was made for that one
 * thread (SIGEV_THREAD_ID), and only that thread can take its signal. An
 * arrival whose timer is not the slot's (a late one, of an ask since
 * given up and its timer deleted) does nothing. */
static void handler_sigsafe(int sig, siginfo_t *info, void *uctx) {
  if (!is_request_sigsafe(info)) {
    cprof__signal_forward_sigsafe(sig, info, uctx);
    return;
  }
  int saved = errno;
  __atomic_add_fetch(&handlers_in, 1, __ATOMIC_SEQ_CST);
  uint32_t low = (uint32_t)(uint64_t)(uintptr_t)info->si_value.sival_ptr;
  uint32_t tab = TOKEN_TABLE(low), idx = TOKEN_INDEX(low);
  if (tab >= TABLES)
    goto out;
  slot_t *v = __atomic_load_n(tab ? &table_v[tab] : &slots, __ATOMIC_ACQUIRE);
  if (!v || idx >= (uint32_t)__atomic_load_n(tab ? &table_n[tab] : &nslots, __ATOMIC_ACQUIRE))
    goto out;
  slot_t *s = &v[idx];
  uint64_t expect = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  if ((expect & 3) != PENDING || __atomic_load_n(&s->timer, __ATOMIC_ACQUIRE) != info->si_timerid)
    goto out;
  if (!__atomic_compare_exchange_n(&s->state, &expect, (expect & ~(uint64_t)3) | WRITING, 0,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    goto out;
  s->depth = cprof__unwind_sigsafe(unwinder, (const ucontext_t *)uctx,
                                   __atomic_load_n(&stacks, __ATOMIC_ACQUIRE), s->pcs, s->max);
  __atomic_store_n(&s->state, (expect & ~(uint64_t)3) | DONE, __ATOMIC_RELEASE);
out:
  __atomic_sub_fetch(&handlers_in, 1, __ATOMIC_SEQ_CST);
  errno = saved;
}

/* A secret the program cannot guess: never 0, and with the top bit set,
 * so that it is not the high half of a pointer a program's own timer
 * would carry in its value. */
static uint32_t draw_cookie(void) {
  uint32_t c = 0;
  if (getrandom(&c, sizeof c, GRND_NONBLOCK) != (ssize_t)sizeof c) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    c = (uint32_t)(ts.tv_nsec ^ (uintptr_t)&ts ^ ((uint64_t)ts.tv_sec << 20));
  }
  return c | 0x80000000u;
}

/* Takes the highest real-time signal the program leaves at SIG_DFL.
 * Programs that use real-time signals usually count up from SIGRTMIN. */
static int take_signal(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler_sigsafe;
  /* SA_RESTART: never make the program's syscalls fail with EINTR.
   * SA_ONSTACK: on the thread's alternate signal stack, never on one the
   * program sized for itself (sample/altstack.c). */
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  /* No CPU sample inside this handler (it would show this handler's
   * frames), and one signal frame of ours at a time on that stack: the
   * SIGPROF handler blocks this signal likewise (cpu.c). */
  sigaddset(&sa.sa_mask, SIGPROF);
  if (signo && cprof__signal_take(signo, &sa, CPROF_SHARE_YIELD) == 0)
    return 0;
  for (int sig = SIGRTMAX - 1; sig >= SIGRTMIN + 2; sig--) {
    if (cprof__signal_take(sig, &sa, CPROF_SHARE_YIELD) == 0) {
      signo = sig;
      return 0;
    }
  }
  return -EBUSY;
}

int cprof__threads_init(void) {
  pthread_mutex_lock(&capture_lock);
  __atomic_store_n(&self_pid, getpid(), __ATOMIC_RELAXED);
  int err = take_signal();
  pthread_mutex_unlock(&capture_lock);
  return err;
}

int cprof__threads_signal(void) { return signo; }

/* Threads created since the process began (cprof__threads_born). */
static uint64_t births;

void cprof__threads_born(void) { __atomic_add_fetch(&births, 1, __ATOMIC_RELAXED); }

/* The ids in d, read from its start. */
static int list_dir(DIR *d, pid_t **out) {
  rewinddir(d);
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
  if (!v)
    return -ENOMEM;
  *out = v;
  return n;
}

int cprof__threads_list(pid_t **out) {
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -errno;
  int n = list_dir(d, out);
  closedir(d);
  return n;
}

int cprof__threads_count(void) {
  pid_t *v;
  int n = cprof__threads_list(&v);
  if (n >= 0)
    free(v);
  return n < 0 ? 0 : n;
}

/* Reads a small /proc file; returns its length, or a negative errno. */
static int read_small(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  ssize_t n = read(fd, buf, size - 1);
  int err = errno;
  close(fd);
  if (n < 0)
    return -err;
  buf[n] = '\0';
  return (int)n;
}

int cprof__thread_name(pid_t tid, char name[16]) {
  char path[64], buf[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
  int got = read_small(path, buf, sizeof buf);
  if (got < 0)
    return -1;
  /* The kernel writes the name as it is, then one newline: a name may
   * hold newlines of its own (any byte but NUL), so only the last one
   * goes. */
  size_t n = (size_t)got;
  if (n > 0 && buf[n - 1] == '\n')
    n--;
  if (n > 15) /* comm is at most 15 bytes (prctl(2), PR_SET_NAME) */
    n = 15;
  memcpy(name, buf, n);
  name[n] = '\0';
  return 0;
}

/* A thread's state letter from /proc/self/task/TID/stat, readable by
 * everyone (proc(5)); returns 0, or a negative errno. */
static int thread_state(pid_t tid, char *state) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
  int n = read_small(path, buf, sizeof buf);
  if (n < 0)
    return n;
  /* The state follows the last ')': the name in parentheses may hold any byte. */
  const char *p = strrchr(buf, ')');
  *state = p && p[1] == ' ' ? p[2] : '?';
  return 0;
}

/* Name and state of a thread; returns 0, or -1 when it has exited. */
static int thread_info(pid_t tid, char name[16], char *state) {
  return cprof__thread_name(tid, name) == 0 && thread_state(tid, state) == 0 ? 0 : -1;
}

int cprof__thread_signal_masks(pid_t tid, uint64_t *blocked, uint64_t *pending) {
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
  int n = read_small(path, buf, sizeof buf);
  if (n < 0)
    return n;
  const char *fields[] = {"\nSigBlk:\t", "\nSigPnd:\t"};
  uint64_t *out[] = {blocked, pending};
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
    const char *p = strstr(buf, fields[i]);
    if (!p)
      return -EPROTO;
    *out[i] = strtoull(p + strlen(fields[i]), NULL, 16);
  }
  return 0;
}

/* Whether our signal is blocked or already pending for this thread: 1 if
 * so, 0 if not, or a negative errno. */
static int blocked_or_pending(pid_t tid) {
  uint64_t blocked, pending, bit = 1ULL << (signo - 1);
  int err = cprof__thread_signal_masks(tid, &blocked, &pending);
  return err < 0 ? err : ((blocked | pending) & bit) != 0;
}

/* Where a thread is blocked, from /proc/self/task/TID/syscall (proc(5)):
 * "NR a1 a2 a3 a4 a5 a6 sp pc" while in a system call, "-1 sp pc" while
 * stopped in the kernel outside one, "running" otherwise. */
typedef struct in_kernel {
  long nr; /* -1: not in a system call */
  uintptr_t sp, pc;
} in_kernel_t;

enum { RUNNING, IN_KERNEL, NO_USER, UNREADABLE, EXITED };

static int same_place(const in_kernel_t *a, const in_kernel_t *b) {
  return a->nr == b->nr && a->sp == b->sp && a->pc == b->pc;
}

/* The numbers of a syscall file, "NR a0 .. a5 SP PC" or "-1 SP PC": how
 * many were read (at most max). By hand: sscanf was a tenth of a tick. */
static int parse_numbers(const char *s, long long *v, int max) {
  int n = 0;
  while (n < max) {
    while (*s == ' ')
      s++;
    char *end;
    errno = 0;
    v[n] = n == 0 ? strtoll(s, &end, 10) : (long long)strtoull(s, &end, 16);
    if (end == s || errno)
      break;
    n++;
    s = end;
  }
  return n;
}

/* Where a thread is now (one of the above); for IN_KERNEL, *k says where,
 * for UNREADABLE, t says why. */
static int where_is(pid_t tid, in_kernel_t *k, cprof__thread_stack_t *t, int *fd) {
  char path[64], buf[256];
  path[0] = '\0';
  int n = -EBADF;
  if (fd && *fd < 0) {
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
  }
  if (fd && *fd >= 0) { /* read again from the start, the file made anew */
    ssize_t got = pread(*fd, buf, sizeof buf - 1, 0);
    n = got < 0 ? -errno : (int)got;
    if (n >= 0)
      buf[n] = '\0';
  }
  if (n == -EBADF) { /* none kept, or it went (the program closed it) */
    if (!path[0])
      snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    n = read_small(path, buf, sizeof buf);
  }
  if (n >= 0 && strncmp(buf, "running", 7) == 0)
    return RUNNING;
  if (n >= 0) {
    long long v[9];
    int got = parse_numbers(buf, v, 9);
    k->nr = got > 0 ? (long)v[0] : 0;
    if (got == 3 && k->nr == -1) { /* "-1 sp pc" */
      k->sp = (uintptr_t)v[1];
      k->pc = (uintptr_t)v[2];
    } else if (got == 9) {
      k->sp = (uintptr_t)v[7];
      k->pc = (uintptr_t)v[8];
    } else {
      n = -EPROTO;
    }
    if (n >= 0)
      return k->sp == 0 && k->pc == 0 ? NO_USER : IN_KERNEL;
  }
  if (n == -ENOENT || n == -ESRCH)
    return EXITED;
  /* The file is there but cannot be read (EACCES after setuid): the state
   * in stat, which everyone may read, still tells a running thread. */
  char state;
  int err = thread_state(tid, &state);
  if (err == -ENOENT || err == -ESRCH)
    return EXITED;
  if (err == 0 && state == 'R')
    return RUNNING;
  t->unreadable = "syscall";
  t->err = -n;
  return UNREADABLE;
}

/* A thread as the last capture with a cache left it (threads.h). */
typedef struct cached {
  pid_t tid;
  in_kernel_t place; /* where it slept with this stack; nr -1: not kept */
  int depth;
  uintptr_t *pcs;
  char name[16];
  int fd; /* its /proc/self/task/TID/syscall, kept open (-1: none) */
  /* CLOCK_MONOTONIC ns when it was last seen neither blocking nor holding
   * our signal pending (0: never); believed for a second. */
  int64_t mask_ok;
  int ask;          /* a deferring cache's ask still out: its slot in the table, or -1 */
  int64_t asked_ns; /* CLOCK_MONOTONIC when that ask was made */
  /* A deferring cache's: its CPU time at the last capture (-1: unknown),
   * and the last place it was seen asleep with an exact stack. */
  int64_t cpu_ns;
  in_kernel_t wake_place;
  int64_t wake_ns; /* CLOCK_MONOTONIC when seen asleep there */
  int wake_depth;
  uintptr_t *wake_pcs;
} cached_t;

struct cprof__threads_cache {
  cached_t *v; /* by tid */
  int n;
  /* The process's maps, read at most once a second: the signalled
   * threads' walks read them (stack bounds, modules), and reading them is
   * most of a tick's cost in a program of many mappings. Read again when
   * a thread is new (its stack is a new mapping) or a module came or went. */
  cprof__maps_t *maps; /* NULL: none yet */
  DIR *task;         /* /proc/self/task, kept open: read from its start each time */
  uint64_t births;   /* cprof__threads_born's count when it was last read */
  int64_t listed_ns; /* CLOCK_MONOTONIC when it was last read */
  int64_t answers_ns; /* how long the running threads took to answer, last time */
  int64_t maps_ns;   /* CLOCK_MONOTONIC when read */
  int depth;         /* frames each entry holds */
  uint32_t modules;  /* the module generation the stacks are of */
  uintptr_t *frames; /* the entries' stacks, one block */
  /* Deferring (cprof__threads_cache_defer): its slot table, the asks out,
   * and whether it holds the capture signal's use (signals.c) for them. */
  int defer;
  int table; /* 0: none yet */
  int out;
  int holding;
};

/* An ask still out after this long is given up: the thread has not been
 * on a CPU at a clock tick since (it went back to sleep). */
#define ASK_GIVE_UP_NS 1000000000LL

/* How a thread's stack is got, or why it is not. */
enum {
  ASK,
  OUTSIDE,
  SELF,
  BLOCKED,
  UNKNOWN,
  NO_SIGNAL,
  UNSENT,
  KERNEL,
  GONE,
  LATE,
  RELOOK,
  DEFERRED,
  NO_STACK
};

/* Walks a thread in the kernel from outside into t. Returns 1 when it
 * stayed where *k says throughout (the registers are read again after the
 * walk); otherwise 0, with *where (and *k) saying where it is now. */
static int walk_outside(pid_t tid, in_kernel_t *k, int *where, cprof__thread_stack_t *t, int max,
                        cprof__symbolizer_t **sym, int *fd) {
  if (!*sym)
    *sym = cprof__symbolizer_acquire();
  t->depth = cprof__symbolizer_unwind_blocked(*sym, tid, k->sp, k->pc, t->pcs, max);
  in_kernel_t after;
  *where = where_is(tid, &after, t, fd);
  if (*where == IN_KERNEL && same_place(&after, k))
    return 1;
  if (*where == IN_KERNEL)
    *k = after;
  return 0;
}

/* The CPU-time clock of one thread of this process, as the kernel encodes
 * it (include/linux/posix-timers.h): CPUCLOCK_SCHED (2) |
 * CPUCLOCK_PERTHREAD_MASK (4), the tid inverted above. */
static clockid_t thread_cpu_clock(pid_t tid) { return (clockid_t)((~(unsigned)tid << 3) | 6); }

/* The CPU time of thread tid (its CPU clock), or -1. */
static int64_t thread_cpu(pid_t tid) {
  struct timespec ts;
  if (clock_gettime(thread_cpu_clock(tid), &ts) != 0)
    return -1;
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Decides how to get one thread's stack, and gets it when that means
 * unwinding from outside. A thread that moves on while we look is looked
 * at afresh, a few times at most; after that, a thread last seen in the
 * kernel keeps the exact pc it was seen at. Returns ASK when the thread
 * may be signalled now. *sym is the symbolizer, acquired on first need and
 * released by the caller. */
static int classify(pid_t tid, int can_signal, cprof__thread_stack_t *t, int max,
                    cprof__symbolizer_t **sym, const cached_t *prev, in_kernel_t *place, int *fd,
                    int64_t *mask_ok) {
  in_kernel_t k = {-1, 0, 0};
  int where = where_is(tid, &k, t, fd);
  *place = (in_kernel_t){-1, 0, 0};
  for (int look = 0;; look++) {
    switch (where) {
    case EXITED:
      return GONE;
    case NO_USER:
      return KERNEL;
    case UNREADABLE:
      return UNKNOWN;
    case IN_KERNEL:
      t->syscall_nr = k.nr;
      if (look == 0 && prev && prev->depth > 0 && same_place(&k, &prev->place)) {
        t->depth = prev->depth;
        memcpy(t->pcs, prev->pcs, (size_t)prev->depth * sizeof t->pcs[0]);
        t->reused = 1;
        *place = k;
        return OUTSIDE;
      }
      if (walk_outside(tid, &k, &where, t, max, sym, fd)) {
        *place = k; /* an exact stack, there: worth keeping */
        return OUTSIDE;
      }
      if (look >= 2 && where == IN_KERNEL) {
        t->pcs[0] = k.pc;
        t->depth = cprof__modules_mark_sigsafe(t->pcs, 1, cprof__modules_generation_sigsafe());
        return OUTSIDE;
      }
      break;
    default: { /* RUNNING */
      /* Nor one without an alternate stack for our signal (one cprof did
       * not see start: sample/altstack.h), which would take it on a stack
       * the program sized for itself. */
      if (!can_signal)
        return NO_SIGNAL;
      if (!cprof__altstack_ready(tid))
        return NO_STACK;
      /* Its signal mask is read from /proc (a page of text) at most once a
       * second for a thread a cache knows: a thread that blocks our signal
       * meanwhile collects at most a second of requests, which the next
       * look sees pending. */
      int64_t now = mask_ok ? cprof__now_ns(CLOCK_MONOTONIC) : 0;
      int fresh = mask_ok && *mask_ok && now - *mask_ok < 1000000000LL;
      int m = fresh ? 0 : blocked_or_pending(tid);
      if (mask_ok && m == 0 && !fresh)
        *mask_ok = now;
      if (m == -ENOENT || m == -ESRCH)
        return GONE;
      if (m < 0) {
        t->unreadable = "status";
        t->err = -m;
        return UNKNOWN;
      }
      if (m > 0)
        return BLOCKED;
      /* The mask believed from before: the look above was microseconds
       * ago, as close to the signal as a second look would be. */
      if (fresh)
        return ASK;
      /* The last look, just before the signal goes: reading the mask took
       * a while. */
      where = where_is(tid, &k, t, fd);
      if (where == RUNNING)
        return ASK;
      if (look >= 2 && where == IN_KERNEL) {
        t->pcs[0] = k.pc;
        t->depth = cprof__modules_mark_sigsafe(t->pcs, 1, cprof__modules_generation_sigsafe());
        return OUTSIDE;
      }
    }
    }
  }
}

/* The capturing thread's own stack, from here, by the walk the handlers
 * use. getcontext fills the registers but not uc_stack, which the walk
 * reads to bound the stack: this thread is on its own stack, not an
 * alternate signal stack. */
__attribute__((noinline)) static void unwind_self(cprof__unwinder_t how, const cprof__maps_t *maps,
                                                  cprof__thread_stack_t *t, int max) {
  ucontext_t uc;
  memset(&uc, 0, sizeof uc);
  t->depth = 0;
  if (getcontext(&uc) != 0)
    return;
  uc.uc_stack.ss_sp = NULL;
  uc.uc_stack.ss_size = 0;
  uc.uc_stack.ss_flags = SS_DISABLE;
  t->depth = cprof__unwind_sigsafe(how, &uc, maps, t->pcs, max);
}

/* Asks thread tid for its stack into slot idx: a one-shot timer on the
 * thread's own CPU clock (timer_create(2), SIGEV_THREAD_ID), due 1 ns of
 * its CPU time from now. The kernel notices the expiry at a clock tick
 * that finds the thread on a CPU, and sends the signal as the thread goes
 * back to user space: never in the middle of a system call (see the top
 * of this file). Returns 0, or -1 with errno set and *call the call that
 * was refused (ESRCH: the thread has exited). */
static int send_request(slot_t *slot, uint32_t low, pid_t tid, const char **call) {
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = signo;
  sev.sigev_value.sival_ptr = (void *)(uintptr_t)(((uint64_t)cookie << 32) | low);
  sev._sigev_un._tid = tid;
  int id = -1;
  if (syscall(SYS_timer_create, thread_cpu_clock(tid), &sev, &id) != 0) {
    int err = errno;
    char state;
    /* EINVAL is also what a clock of a thread that has gone gets. */
    if (err == EINVAL && thread_state(tid, &state) == -ENOENT)
      err = ESRCH;
    *call = "timer_create";
    errno = err;
    return -1;
  }
  __atomic_store_n(&slot->timer, id, __ATOMIC_RELEASE);
  struct itimerspec due = {{0, 0}, {0, 1}};
  if (syscall(SYS_timer_settime, id, 0, &due, NULL) != 0) {
    int err = errno;
    __atomic_store_n(&slot->timer, -1, __ATOMIC_RELEASE);
    syscall(SYS_timer_delete, id);
    *call = "timer_settime";
    errno = err;
    return -1;
  }
  return 0;
}

/* Deletes slot i's timer, once its slot is no longer PENDING: a timer that
 * has not expired never will, and a signal of it still on its way finds
 * the slot's timer changed. */
static void drop_timer(slot_t *slot) {
  int id = __atomic_exchange_n(&slot->timer, -1, __ATOMIC_ACQ_REL);
  if (id >= 0)
    syscall(SYS_timer_delete, id);
}

/* cap slots of `depth` frames each, all abandoned and without a timer, in
 * one block; NULL without memory. */
static slot_t *new_slots(int cap, int depth) {
  size_t head = (size_t)cap * sizeof(slot_t);
  slot_t *v = calloc(1, head + (size_t)cap * (size_t)depth * sizeof(uintptr_t));
  if (!v)
    return NULL;
  uintptr_t *pcs = (uintptr_t *)(void *)((char *)v + head);
  for (int i = 0; i < cap; i++) {
    v[i].state = STATE(0, ABANDONED);
    v[i].timer = -1;
    v[i].max = depth;
    v[i].pcs = pcs + (size_t)i * (size_t)depth;
  }
  return v;
}

/* Slots for n threads of `depth` frames each, in one block. */
static int ensure_slots(int n, int depth) {
  if (n <= nslots && depth == slots_depth)
    return 0;
  int cap = nslots ? nslots : 64;
  while (cap < n)
    cap *= 2;
  slot_t *v = new_slots(cap, depth);
  if (!v)
    return -ENOMEM;
  slots_depth = depth;
  /* The old array is left in place for any late handler still reading it. */
  __atomic_store_n(&slots, v, __ATOMIC_RELEASE);
  __atomic_store_n(&nslots, cap, __ATOMIC_RELEASE);
  return 0;
}

/* ---- Caches that defer (threads.h) ----
 *
 * A deferring cache asks a running thread and does not wait: the ask stays
 * out, in a slot of the cache's own table, from capture to capture, and
 * the answer is handed out with the thread's entry of the first capture
 * that finds it in. While asks are out the cache holds the capture
 * signal's use (signals.c), so that a program that takes the signal waits
 * for the next capture, which gives them all up first; and the maps the
 * answers unwind with stay published (deferred_stacks). All under the
 * capture lock. */

/* Gives up an ask: its answer, if it comes, finds the slot abandoned. */
static void give_up(slot_t *sl) {
  uint64_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
  while ((st & 3) == PENDING &&
         !__atomic_compare_exchange_n(&sl->state, &st, (st & ~(uint64_t)3) | ABANDONED, 0,
                                      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    ;
  while ((__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) & 3) == WRITING) /* microseconds */
    ;
  drop_timer(sl);
  sl->busy = 0;
}

static void give_up_all(cprof__threads_cache_t *c) {
  for (int i = 0; i < c->n; i++) {
    if (c->v[i].ask >= 0)
      give_up(&table_v[c->table][c->v[i].ask]);
    c->v[i].ask = -1;
  }
  c->out = 0;
  if (c->holding)
    cprof__signal_use_end(signo);
  c->holding = 0;
}

/* A table for the cache with room for `want` asks of `depth` frames; one
 * made anew gives up the asks out. Returns 0, or -1 (no table free, or no
 * memory: the cache then waits for answers as other captures do). */
static int defer_table(cprof__threads_cache_t *c, int want, int depth) {
  if (!c->table) {
    for (int t = 1; t < TABLES && !c->table; t++)
      if (!table_taken[t])
        c->table = t;
    if (!c->table)
      return -1;
    table_taken[c->table] = 1;
  }
  slot_t *old = table_v[c->table];
  if (old && want <= table_n[c->table] && old[0].max == depth)
    return 0;
  give_up_all(c);
  int cap = 64;
  while (cap < 2 * want)
    cap *= 2;
  if (old && cap < table_n[c->table] && old[0].max == depth)
    cap = table_n[c->table];
  slot_t *v = new_slots(cap, depth);
  if (!v)
    return -1;
  /* The old table is left in place for any late handler still reading it. */
  __atomic_store_n(&table_v[c->table], v, __ATOMIC_RELEASE);
  __atomic_store_n(&table_n[c->table], cap, __ATOMIC_RELEASE);
  return 0;
}

/* A free slot of the cache's table, or -1. */
static int defer_slot(cprof__threads_cache_t *c) {
  for (int k = 0; k < table_n[c->table]; k++)
    if (!table_v[c->table][k].busy)
      return k;
  return -1;
}

/* The answer to thread i's ask still out (prev: its cache entry), if it
 * came, into t; asks[i] and askeds[i] say what is still out after. */
static void harvest(cprof__threads_cache_t *c, cached_t *prev, cprof__thread_stack_t *t, int *ask,
                    int64_t *asked, int64_t now) {
  *ask = -1;
  if (!prev || prev->ask < 0)
    return;
  slot_t *sl = &table_v[c->table][prev->ask];
  uint64_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
  if ((st & 3) == DONE) {
    t->answered = 1;
    t->answer_depth = sl->depth < sl->max ? sl->depth : sl->max;
    memcpy(t->answer_pcs, sl->pcs, (size_t)t->answer_depth * sizeof *t->answer_pcs);
  } else if ((st & 3) != PENDING || now - prev->asked_ns < ASK_GIVE_UP_NS) {
    *ask = prev->ask; /* still out (or being written: in at the next capture) */
    *asked = prev->asked_ns;
    prev->ask = -1;
    return;
  } else {
    t->answered = -1;
  }
  give_up(sl);
  prev->ask = -1;
  c->out--;
}

/* Asks thread tid, deferring: its slot into *ask. Returns 0, or -1 with
 * errno and *call as send_request's. */
static int defer_ask(cprof__threads_cache_t *c, pid_t tid, uint32_t gen, int *ask, int64_t *asked,
                     const char **call) {
  int k = defer_slot(c);
  if (k < 0) {
    *call = "timer_create";
    errno = EAGAIN;
    return -1;
  }
  slot_t *sl = &table_v[c->table][k];
  sl->busy = 1;
  sl->tid = tid;
  sl->depth = 0;
  __atomic_store_n(&sl->state, STATE(gen, PENDING), __ATOMIC_RELEASE);
  if (send_request(sl, ((uint32_t)c->table << 24) | (uint32_t)k, tid, call) != 0) {
    int err = errno;
    give_up(sl);
    errno = err;
    return -1;
  }
  *ask = k;
  *asked = cprof__now_ns(CLOCK_MONOTONIC);
  c->out++;
  return 0;
}

/* Waits until every thread asked has answered, or has been seen back
 * asleep in the kernel (RELOOK: its ask is given up, and it is looked at
 * afresh), or until deadline_ms (CLOCK_MONOTONIC); then the threads that
 * never started to answer are LATE. Returns how long that took (ns).
 *
 * An ask is answered at the first clock tick that finds the thread on a
 * CPU (send_request), a few milliseconds at most for a thread that keeps
 * running; a thread that goes to sleep first would answer only when it
 * next runs, so the threads that have not answered are looked at again
 * at every pause. The first pause is hint_ns when given (the last
 * capture's wait, say): each pause is a context switch, which on a VM
 * costs as much as asking a thread. */
static int64_t await_answers(const pid_t *tids, int *fds, int n, unsigned char *mode,
                             int64_t deadline_ms, int64_t hint_ns) {
  int64_t start = cprof__now_ns(CLOCK_MONOTONIC);
  long pause_ns = hint_ns > 50000 ? (long)(hint_ns < 5000000 ? hint_ns : 5000000) : 50000;
  for (int first = 1;; first = 0) {
    int waiting = 0;
    for (int i = 0; i < n; i++) {
      if (mode[i] != ASK)
        continue;
      uint64_t st = __atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE);
      if ((st & 3) == PENDING && !first) {
        in_kernel_t k;
        cprof__thread_stack_t scratch = {0};
        int where = where_is(tids[i], &k, &scratch, fds ? &fds[i] : NULL);
        if (where != RUNNING && where != UNREADABLE &&
            __atomic_compare_exchange_n(&slots[i].state, &st, (st & ~(uint64_t)3) | ABANDONED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
          mode[i] = RELOOK;
          continue;
        }
      }
      if ((st & 3) == PENDING || (st & 3) == WRITING)
        waiting++;
    }
    if (!waiting)
      return cprof__now_ns(CLOCK_MONOTONIC) - start;
    if (cprof__now_ms(CLOCK_MONOTONIC) >= deadline_ms) {
      for (int i = 0; i < n; i++) {
        uint64_t expect = __atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE);
        if (mode[i] == ASK && (expect & 3) == PENDING &&
            __atomic_compare_exchange_n(&slots[i].state, &expect,
                                        (expect & ~(uint64_t)3) | ABANDONED, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
          mode[i] = LATE;
      }
      /* What is left is WRITING: running, and done within microseconds. */
      deadline_ms = INT64_MAX;
    }
    /* A pause that grows from 50 µs to 5 ms: answers come within a clock
     * tick from threads on a CPU, but threads waiting their turn to run
     * may take many milliseconds, and looking often costs. */
    struct timespec ts = {0, pause_ns};
    nanosleep(&ts, NULL);
    if (first)
      pause_ns = 50000;
    pause_ns = pause_ns * 2 < 5000000 ? pause_ns * 2 : 5000000;
  }
}

/* One thread's entry in the dump, from how its stack was got. */
static void collect(int mode, const slot_t *slot, const cprof__thread_stack_t *got,
                    cprof__thread_stack_t *t) {
  t->status = CPROF_THREAD_OK;
  switch (mode) {
  case ASK:
    t->depth = slot->depth;
    memcpy(t->pcs, slot->pcs, (size_t)t->depth * sizeof t->pcs[0]);
    return;
  case OUTSIDE:
  case SELF:
    if (t != got) {
      t->depth = got->depth;
      memcpy(t->pcs, got->pcs, (size_t)t->depth * sizeof t->pcs[0]);
    }
    return;
  case UNKNOWN:
    t->status = CPROF_THREAD_UNKNOWN;
    t->unreadable = got->unreadable;
    t->err = got->err;
    break;
  case BLOCKED:
    t->status = CPROF_THREAD_BLOCKED;
    break;
  case NO_SIGNAL:
    t->status = CPROF_THREAD_NO_SIGNAL;
    break;
  case NO_STACK:
    t->status = CPROF_THREAD_NO_STACK;
    break;
  case UNSENT:
    t->status = CPROF_THREAD_UNSENT;
    t->unreadable = got->unreadable;
    t->err = got->err;
    break;
  case KERNEL:
    t->status = CPROF_THREAD_KERNEL;
    break;
  case DEFERRED:
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
static cprof__thread_stack_t *new_dump(int n, int depth, int answers) {
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

/* The cache's entry for tid, or NULL. */
static cached_t *cache_find(const cprof__threads_cache_t *c, pid_t tid) {
  int lo = 0, hi = c ? c->n : 0;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (c->v[mid].tid < tid)
      lo = mid + 1;
    else
      hi = mid;
  }
  return c && lo < c->n && c->v[lo].tid == tid ? &c->v[lo] : NULL;
}

/* Makes c what this capture saw: every thread of d with its name, and,
 * when its stack is exact where it slept (places[i], aligned with d's
 * entries; nr -1 and sp 0 for none), that stack. */
static void cache_keep(cprof__threads_cache_t *c, const cprof__thread_dump_t *d,
                       const in_kernel_t *places, int *fds, const int64_t *oks, const int *asks,
                       const int64_t *askeds) {
  int depth = cprof__max_depth();
  int64_t now = cprof__now_ns(CLOCK_MONOTONIC);
  cached_t *v = malloc((size_t)(d->n ? d->n : 1) * sizeof *v);
  uintptr_t *frames = malloc((size_t)(d->n ? d->n : 1) * 2 * (size_t)depth * sizeof *frames);
  if (!v || !frames) { /* the next capture unwinds everyone */
    free(v);
    free(frames);
    for (int i = 0; i < d->n; i++) {
      if (fds[i] >= 0)
        close(fds[i]);
      if (asks[i] >= 0) {
        give_up(&table_v[c->table][asks[i]]);
        c->out--;
      }
    }
    give_up_all(c);
    for (int i = 0; i < c->n; i++)
      if (c->v[i].fd >= 0)
        close(c->v[i].fd);
    c->n = 0;
    return;
  }
  for (int i = 0; i < d->n; i++) {
    const cprof__thread_stack_t *t = &d->v[i];
    cached_t *e = &v[i];
    e->tid = t->tid;
    e->pcs = frames + (size_t)i * 2 * (size_t)depth;
    e->wake_pcs = e->pcs + depth;
    memcpy(e->name, t->name, sizeof e->name);
    e->place = places[i];
    e->fd = fds[i];
    e->mask_ok = oks[i];
    e->ask = asks[i];
    e->asked_ns = askeds[i];
    e->depth = t->status == CPROF_THREAD_OK && (places[i].sp || places[i].pc) ? t->depth : 0;
    if (e->depth > depth)
      e->depth = depth;
    memcpy(e->pcs, t->pcs, (size_t)e->depth * sizeof *e->pcs);
    e->cpu_ns = t->cpu_ns;
    const cached_t *o = cache_find(c, t->tid);
    if (e->depth > 0) { /* asleep here, exactly: where it is, if found woken */
      e->wake_place = e->place;
      e->wake_ns = now;
      e->wake_depth = e->depth;
      memcpy(e->wake_pcs, e->pcs, (size_t)e->depth * sizeof *e->pcs);
    } else if (o && o->wake_depth > 0 && c->depth == depth) {
      e->wake_place = o->wake_place;
      e->wake_ns = o->wake_ns;
      e->wake_depth = o->wake_depth;
      memcpy(e->wake_pcs, o->wake_pcs, (size_t)o->wake_depth * sizeof *e->pcs);
    } else {
      e->wake_depth = 0;
    }
  }
  for (int i = 0; i < c->n; i++) { /* threads gone before this capture listed them */
    if (c->v[i].fd >= 0)
      close(c->v[i].fd);
    if (c->v[i].ask >= 0) {
      give_up(&table_v[c->table][c->v[i].ask]);
      c->out--;
    }
  }
  free(c->v);
  free(c->frames);
  c->v = v;
  c->frames = frames;
  c->n = d->n;
  c->depth = depth;
}

/* Whether every thread of tids (sorted) was seen by the capture before. */
static int knows_all(const cprof__threads_cache_t *c, const pid_t *tids, int n) {
  for (int i = 0; i < n; i++)
    if (!cache_find(c, tids[i]))
      return 0;
  return 1;
}

cprof__threads_cache_t *cprof__threads_cache_new(void) {
  return calloc(1, sizeof(cprof__threads_cache_t));
}

void cprof__threads_cache_defer(cprof__threads_cache_t *c) { c->defer = 1; }

void cprof__threads_cache_yield(cprof__threads_cache_t *c) {
  if (!c || !__atomic_load_n(&c->holding, __ATOMIC_RELAXED) || cprof__signal_held(signo))
    return;
  pthread_mutex_lock(&capture_lock);
  if (c->holding && !cprof__signal_held(signo))
    give_up_all(c);
  pthread_mutex_unlock(&capture_lock);
}

void cprof__threads_cache_free(cprof__threads_cache_t *c) {
  if (!c)
    return;
  pthread_mutex_lock(&capture_lock);
  if (c->table) {
    give_up_all(c);
    table_taken[c->table] = 0;
  }
  if (c->maps && deferred_stacks == c->maps) {
    deferred_stacks = NULL;
    publish_stacks(NULL);
  }
  pthread_mutex_unlock(&capture_lock);
  if (c->maps) {
    cprof__maps_free(c->maps);
    free(c->maps);
  }
  if (c->task)
    closedir(c->task);
  for (int i = 0; i < c->n; i++)
    if (c->v[i].fd >= 0)
      close(c->v[i].fd);
  free(c->v);
  free(c->frames);
  free(c);
}

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
    n = c && c->task ? list_dir(c->task, &tids) : cprof__threads_list(&tids);
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
      c->modules == cprof__modules_generation_sigsafe() && knows_all(c, tids, n))
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

  pthread_mutex_lock(&capture_lock);
  int depth = cprof__max_depth();
  cprof__thread_stack_t *res = new_dump(n, depth, c && c->defer);
  unsigned char *mode = calloc((size_t)n, 1);
  in_kernel_t *places = calloc((size_t)(n ? n : 1), sizeof *places);
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
    cached_t *e = cache_find(c, tids[i]);
    fds[i] = e ? e->fd : -1;
    oks[i] = e ? e->mask_ok : 0;
    if (e)
      e->fd = -1;
  }
  /* Stacks of another depth, or of modules since unloaded, are not reused. */
  uint32_t modules = cprof__modules_generation_sigsafe();
  if (c && (c->depth != depth || c->modules != modules)) {
    if (c->table)
      give_up_all(c);
    c->n = 0;
  }
  /* A program that takes the signal waits for this: the asks out go. */
  if (c && c->holding && !cprof__signal_held(signo))
    give_up_all(c);
  int defer = c && c->defer && defer_table(c, n, depth) == 0;
  if (!res || !mode || !places || (c && (!fds || !oks || !asks || !askeds)) ||
      (err = ensure_slots(n, depth)) != 0) {
    for (int i = 0; fds && oks && i < n; i++)
      if (fds[i] >= 0)
        close(fds[i]);
    if (c && c->table)
      give_up_all(c);
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
  if (!cookie) /* at the first capture, not at start: a profile never asked for costs no call */
    __atomic_store_n(&cookie, draw_cookie(), __ATOMIC_RELAXED);
  unwinder = how;
  __atomic_store_n(&self_pid, getpid(), __ATOMIC_RELAXED);
  publish_stacks(maps);
  for (int i = 0; i < n; i++) {
    slots[i].tid = tids[i];
    slots[i].depth = 0;
    __atomic_store_n(&slots[i].state, STATE(gen, PENDING), __ATOMIC_RELEASE);
  }
  /* The answers to asks of captures before, in first. */
  for (int i = 0; defer && i < n; i++)
    harvest(c, cache_find(c, tids[i]), &res[i], &asks[i], &askeds[i], now);

  /* From here until the answers are in, the program's sigaction of our
   * signal waits (signals.c), so no request reaches a handler of its. A
   * cache that holds the use already takes no more: use_begin takes the
   * lock under which a program's sigaction waits for the uses to end, and
   * would wait for that sigaction in turn. */
  int holds = c && c->holding;
  int can_signal =
      holds ? signo && cprof__signal_held(signo) : signo && cprof__signal_use_begin(signo);
  pid_t me = (pid_t)syscall(SYS_gettid);
  cprof__symbolizer_t *sym = NULL;
  int64_t deadline = cprof__now_ms(CLOCK_MONOTONIC) + timeout_ms;
  /* Rounds: a thread asked that goes back to sleep before it answers is
   * looked at afresh (RELOOK), unwound from outside where it now sleeps,
   * and asked again if it runs again; three rounds at most. */
  for (int round = 0; round < 3; round++) {
    int asking = 0;
    for (int i = 0; i < n; i++) {
      if (round > 0 && mode[i] != RELOOK)
        continue;
      if (tids[i] == me) {
        mode[i] = SELF;
        unwind_self(how, maps, &res[i], depth);
      } else {
        res[i].depth = 0;
        mode[i] = (unsigned char)classify(tids[i], can_signal, &res[i], depth, &sym,
                                          round ? NULL : cache_find(c, tids[i]), &places[i],
                                          fds ? &fds[i] : NULL, oks ? &oks[i] : NULL);
      }
      if (defer && round == 0 && tids[i] != me) {
        /* Its CPU time, to split the tick's time between running and not
         * (wall.c); and where it last slept. One that ran since the last
         * capture but is asleep now is asked too, for its running stack. */
        cached_t *e = cache_find(c, tids[i]);
        res[i].cpu_ns = thread_cpu(tids[i]);
        if (e && e->wake_depth > 0) {
          res[i].sleep_depth = e->wake_depth < depth ? e->wake_depth : depth;
          memcpy(res[i].sleep_pcs, e->wake_pcs, (size_t)res[i].sleep_depth * sizeof *res[i].pcs);
          res[i].sleep_nr = e->wake_place.nr;
          res[i].sleep_ns = e->wake_ns;
        }
        const char *ignored;
        if (can_signal && mode[i] == OUTSIDE && asks[i] < 0 && e && e->cpu_ns >= 0 &&
            res[i].cpu_ns > e->cpu_ns)
          defer_ask(c, tids[i], gen, &asks[i], &askeds[i], &ignored);
      }
      const char *call = NULL;
      if (mode[i] == ASK && defer) { /* asked, or joining the ask still out */
        if (asks[i] >= 0 || defer_ask(c, tids[i], gen, &asks[i], &askeds[i], &call) == 0) {
          mode[i] = DEFERRED;
        } else {
          res[i].err = errno;
          res[i].unreadable = call;
          mode[i] = errno == ESRCH ? GONE : UNSENT;
        }
      }
      if (mode[i] == ASK) {
        if (round > 0) /* the slot again, for a timer of its own */
          __atomic_store_n(&slots[i].state, STATE(gen, PENDING), __ATOMIC_RELEASE);
        if (send_request(&slots[i], (uint32_t)i, tids[i], &call) == 0) {
          asking++;
          continue;
        }
        /* ESRCH: it exited. Anything else is the call refused (a seccomp
         * filter's EPERM, EAGAIN at RLIMIT_SIGPENDING): said as such. */
        res[i].err = errno;
        res[i].unreadable = call;
        mode[i] = errno == ESRCH ? GONE : UNSENT;
      }
      uint64_t expect = STATE(gen, PENDING);
      __atomic_compare_exchange_n(&slots[i].state, &expect, STATE(gen, ABANDONED), 0,
                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    if (!asking)
      break;
    int64_t took = await_answers(tids, fds, n, mode, deadline, c ? c->answers_ns * 3 / 4 : 0);
    if (c && round == 0)
      c->answers_ns = took;
    for (int i = 0; i < n; i++)
      drop_timer(&slots[i]);
  }
  for (int i = 0; i < n; i++)
    if (mode[i] == RELOOK) /* asleep, or running again, at the last look: not asked again */
      mode[i] = LATE;
  if (sym)
    cprof__symbolizer_release(sym);
  /* The signal's use stays held while a deferring cache has asks out. */
  if (can_signal && !holds && c && c->out > 0)
    c->holding = 1;
  else if (can_signal && !holds)
    cprof__signal_use_end(signo);

  /* Collect, in place: threads that exited meanwhile are left out. */
  for (int i = 0; i < n; i++) {
    cprof__thread_stack_t *t = &res[out->n];
    long nr = res[i].syscall_nr;
    int reused = res[i].reused;
    const cached_t *prev = cache_find(c, tids[i]);
    int fd = fds ? fds[i] : -1;
    if (prev) { /* a thread seen before keeps its name; its state is what we saw */
      memcpy(t->name, prev->name, sizeof t->name);
      t->state = mode[i] == ASK || mode[i] == SELF || mode[i] == DEFERRED ? 'R'
                 : mode[i] == OUTSIDE                                     ? 'S'
                                                                          : '?';
    }
    if (mode[i] == GONE || (!prev && thread_info(tids[i], t->name, &t->state) != 0)) {
      if (fd >= 0)
        close(fd);
      if (asks && asks[i] >= 0) {
        give_up(&table_v[c->table][asks[i]]);
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
    collect(mode[i], &slots[i], &res[i], t);
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
    cache_keep(c, out, places, fds, oks, asks, askeds);
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
    cprof__signal_use_end(signo);
  }
  if (c && c->out > 0)
    deferred_stacks = c->maps;
  else if (c && (deferred_stacks == c->maps || deferred_stacks == old))
    deferred_stacks = NULL;
  publish_stacks(deferred_stacks);
  pthread_mutex_unlock(&capture_lock);
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

int cprof__threads_cache_settle(cprof__threads_cache_t *c, int timeout_ms,
                                cprof__thread_dump_t *out) {
  memset(out, 0, sizeof *out);
  int depth = cprof__max_depth();
  int64_t deadline = cprof__now_ms(CLOCK_MONOTONIC) + timeout_ms;
  pthread_mutex_lock(&capture_lock);
  cprof__thread_stack_t *res = new_dump(c->n ? c->n : 1, depth, 1);
  if (!res) {
    if (c->table)
      give_up_all(c);
    pthread_mutex_unlock(&capture_lock);
    return -ENOMEM;
  }
  for (int i = 0; i < c->n; i++) { /* their CPU time now, at the end */
    res[i].tid = c->v[i].tid;
    res[i].cpu_ns = thread_cpu(c->v[i].tid);
  }
  out->n = c->n;
  for (;;) {
    int waiting = 0;
    for (int i = 0; c->table && i < c->n; i++)
      if (c->v[i].ask >= 0 &&
          (__atomic_load_n(&table_v[c->table][c->v[i].ask].state, __ATOMIC_ACQUIRE) & 3) != DONE)
        waiting++;
    if (!waiting || cprof__now_ms(CLOCK_MONOTONIC) >= deadline)
      break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  for (int i = 0; c->table && i < c->n; i++) {
    cached_t *e = &c->v[i];
    if (e->ask < 0)
      continue;
    int ask;
    int64_t asked;
    e->asked_ns = INT64_MIN / 2; /* given up now if not in */
    harvest(c, e, &res[i], &ask, &asked, cprof__now_ns(CLOCK_MONOTONIC));
    if (ask >= 0) { /* being written this very moment: not waited for */
      give_up(&table_v[c->table][ask]);
      c->out--;
      res[i].answered = -1;
    }
  }
  out->v = res;
  give_up_all(c);
  if (deferred_stacks == c->maps) {
    deferred_stacks = NULL;
    publish_stacks(NULL);
  }
  pthread_mutex_unlock(&capture_lock);
  return 0;
}

void cprof__threads_dump_free(cprof__thread_dump_t *d) {
  free(d->v);
  d->v = NULL;
  d->n = 0;
}

/* The lock is held across fork (start.c's handlers): the child finds it
 * its own, and releases it. */
void cprof__threads_atfork_prepare(void) { pthread_mutex_lock(&capture_lock); }
void cprof__threads_atfork_parent(void) { pthread_mutex_unlock(&capture_lock); }

void cprof__threads_atfork_child(void) {
  __atomic_store_n(&self_pid, getpid(), __ATOMIC_RELAXED);
  /* The parent's samplers, their asks (timers are not inherited, nor are
   * pending signals) and handlers in flight on its other threads are not
   * the child's. */
  __atomic_store_n(&handlers_in, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&stacks, NULL, __ATOMIC_RELAXED);
  deferred_stacks = NULL;
  memset(table_taken, 0, sizeof table_taken);
  pthread_mutex_unlock(&capture_lock);
}
