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
 * or already pending is not asked, and is reported as such. */
#include "sample/threads.h"

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

static void handler_sigsafe(int sig, siginfo_t *info, void *uctx) {
  int saved = errno;
  /* Only our own requests: a kill(1) of this signal from outside, or a
   * sigqueue from another process, carries no slot for us. */
  if (info->si_code != SI_QUEUE || info->si_pid != getpid())
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
  if (s->tid == (pid_t)syscall(SYS_gettid))
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

static int list_tids(pid_t **out) {
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
  int n = list_tids(&v);
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

/* Name and state of a thread; returns 0, or -1 when it has exited. */
static int thread_info(pid_t tid, char name[16], char *state) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
  if (read_small(path, buf, sizeof buf) < 0)
    return -1;
  size_t n = strcspn(buf, "\n");
  if (n > 15) /* comm is at most 15 bytes (prctl(2), PR_SET_NAME) */
    n = 15;
  memcpy(name, buf, n);
  name[n] = '\0';
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

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int send_request(pid_t tid, uint32_t gen, uint32_t idx) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = signo;
  si.si_code = SI_QUEUE;
  si.si_pid = getpid();
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
  int n = list_tids(&tids);
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
  __atomic_store_n(&stacks, &maps, __ATOMIC_RELEASE);

  cprof__thread_status_t *status = calloc((size_t)n, sizeof *status);
  if (!status) {
    err = -ENOMEM;
    goto unlock;
  }
  for (int i = 0; i < n; i++) {
    slots[i].tid = tids[i];
    slots[i].depth = 0;
    __atomic_store_n(&slots[i].state, STATE(gen, PENDING), __ATOMIC_RELEASE);
  }
  for (int i = 0; i < n; i++) {
    if (cannot_ask(tids[i]) || send_request(tids[i], gen, (uint32_t)i) != 0) {
      /* Blocked, or gone (ESRCH): either way, nobody will answer. */
      uint64_t expect = STATE(gen, PENDING);
      __atomic_compare_exchange_n(&slots[i].state, &expect, STATE(gen, ABANDONED), 0,
                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
      status[i] = CPROF_THREAD_BLOCKED;
    }
  }

  int64_t deadline = now_ms() + timeout_ms;
  for (;;) {
    int waiting = 0;
    for (int i = 0; i < n; i++) {
      uint64_t st = __atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE);
      if ((st & 3) == PENDING || (st & 3) == WRITING)
        waiting++;
    }
    if (!waiting)
      break;
    if (now_ms() >= deadline) {
      for (int i = 0; i < n; i++) {
        uint64_t expect = STATE(gen, PENDING);
        if (__atomic_compare_exchange_n(&slots[i].state, &expect, STATE(gen, ABANDONED), 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
          status[i] = CPROF_THREAD_TIMEOUT;
      }
      /* What is left is WRITING: running, and done within microseconds. */
      deadline = INT64_MAX;
    }
    struct timespec ts = {0, 200 * 1000};
    nanosleep(&ts, NULL);
  }
  __atomic_store_n(&stacks, NULL, __ATOMIC_RELEASE);

  out->v = calloc((size_t)n, sizeof *out->v);
  if (!out->v) {
    free(status);
    err = -ENOMEM;
    goto unlock;
  }
  for (int i = 0; i < n; i++) {
    cprof__thread_stack_t *t = &out->v[out->n];
    if (thread_info(tids[i], t->name, &t->state) != 0)
      continue; /* exited meanwhile: not part of the process any more */
    t->tid = tids[i];
    t->status = status[i];
    if (status[i] == CPROF_THREAD_OK) {
      t->depth = slots[i].depth;
      memcpy(t->pcs, slots[i].pcs, (size_t)t->depth * sizeof t->pcs[0]);
    }
    out->n++;
  }
  free(status);
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
