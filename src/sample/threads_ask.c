/* Asking running threads for their stacks: the slot tables a request's
 * handler writes into, the maps the handlers unwind with, the one-shot
 * timers that ask, and the wait for the answers (threads.c's comment tells
 * the protocol). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "sample/threads_internal.h"

cprof__threads_slot_t *cprof__threads_slots;
int cprof__threads_nslots;
static int slots_depth; /* the frames each slot holds; the capture lock's */
const cprof__maps_t *cprof__threads_stacks;
int cprof__threads_handlers_in;

/* Publishes the maps handlers unwind with, and waits for the handlers
 * that may still read the ones before: once it returns, those may be
 * freed. Under the capture lock. */
void cprof__threads_publish_stacks(const cprof__maps_t *m) {
  __atomic_store_n(&cprof__threads_stacks, m, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&cprof__threads_handlers_in, __ATOMIC_SEQ_CST) > 0) {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
}

/* A secret the program cannot guess: never 0, and with the top bit set,
 * so that it is not the high half of a pointer a program's own timer
 * would carry in its value. */
uint32_t cprof__threads_draw_cookie(void) {
  uint32_t c = 0;
  if (getrandom(&c, sizeof c, GRND_NONBLOCK) != (ssize_t)sizeof c) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    c = (uint32_t)(ts.tv_nsec ^ (uintptr_t)&ts ^ ((uint64_t)ts.tv_sec << 20));
  }
  return c | 0x80000000u;
}

/* Asks thread tid for its stack into slot idx: a one-shot timer on the
 * thread's own CPU clock (timer_create(2), SIGEV_THREAD_ID), due 1 ns of
 * its CPU time from now. The kernel notices the expiry at a clock tick
 * that finds the thread on a CPU, and sends the signal as the thread goes
 * back to user space: never in the middle of a system call (see the top
 * of threads.c). Returns 0, or -1 with errno set and *call the call that
 * was refused (ESRCH: the thread has exited). */
int cprof__threads_send_request(cprof__threads_slot_t *slot, uint32_t low, pid_t tid,
                                const char **call) {
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = cprof__threads_signo;
  sev.sigev_value.sival_ptr = (void *)(uintptr_t)(((uint64_t)cprof__threads_cookie << 32) | low);
  sev._sigev_un._tid = tid;
  int id = -1;
  if (syscall(SYS_timer_create, cprof__thread_cpu_clock(tid), &sev, &id) != 0) {
    int err = errno;
    char state;
    /* EINVAL is also what a clock of a thread that has gone gets. */
    if (err == EINVAL && cprof__thread_state(tid, &state) == -ENOENT)
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
void cprof__threads_drop_timer(cprof__threads_slot_t *slot) {
  int id = __atomic_exchange_n(&slot->timer, -1, __ATOMIC_ACQ_REL);
  if (id >= 0)
    syscall(SYS_timer_delete, id);
}

/* cap slots of `depth` frames each, all abandoned and without a timer, in
 * one block; NULL without memory. */
cprof__threads_slot_t *cprof__threads_new_slots(int cap, int depth) {
  size_t head = (size_t)cap * sizeof(cprof__threads_slot_t);
  cprof__threads_slot_t *v = calloc(1, head + (size_t)cap * (size_t)depth * sizeof(uintptr_t));
  if (!v)
    return NULL;
  uintptr_t *pcs = (uintptr_t *)(void *)((char *)v + head);
  for (int i = 0; i < cap; i++) {
    v[i].state = CPROF__SLOT_STATE(0, CPROF__SLOT_ABANDONED);
    v[i].timer = -1;
    v[i].max = depth;
    v[i].pcs = pcs + (size_t)i * (size_t)depth;
  }
  return v;
}

/* Slots for n threads of `depth` frames each, in one block. */
int cprof__threads_ensure_slots(int n, int depth) {
  if (n <= cprof__threads_nslots && depth == slots_depth)
    return 0;
  int cap = cprof__threads_nslots ? cprof__threads_nslots : 64;
  while (cap < n)
    cap *= 2;
  cprof__threads_slot_t *v = cprof__threads_new_slots(cap, depth);
  if (!v)
    return -ENOMEM;
  slots_depth = depth;
  /* The old array is left in place for any late handler still reading it. */
  __atomic_store_n(&cprof__threads_slots, v, __ATOMIC_RELEASE);
  __atomic_store_n(&cprof__threads_nslots, cap, __ATOMIC_RELEASE);
  return 0;
}

/* Waits until every thread asked has answered, or has been seen back
 * asleep in the kernel (RELOOK: its ask is given up, and it is looked at
 * afresh), or until deadline_ms (CLOCK_MONOTONIC); then the threads that
 * never started to answer are LATE. Returns how long that took (ns).
 *
 * An ask is answered at the first clock tick that finds the thread on a
 * CPU (cprof__threads_send_request), a few milliseconds at most for a thread that keeps
 * running; a thread that goes to sleep first would answer only when it
 * next runs, so the threads that have not answered are looked at again
 * at every pause. The first pause is hint_ns when given (the last
 * capture's wait, say): each pause is a context switch, which on a VM
 * costs as much as asking a thread. */
int64_t cprof__threads_await_answers(const pid_t *tids, int *fds, int n, unsigned char *mode,
                                     int64_t deadline_ms, int64_t hint_ns) {
  int64_t start = cprof__now_ns(CLOCK_MONOTONIC);
  long pause_ns = hint_ns > 50000 ? (long)(hint_ns < 5000000 ? hint_ns : 5000000) : 50000;
  for (int first = 1;; first = 0) {
    int waiting = 0;
    for (int i = 0; i < n; i++) {
      if (mode[i] != CPROF__HOW_ASK)
        continue;
      uint64_t st = __atomic_load_n(&cprof__threads_slots[i].state, __ATOMIC_ACQUIRE);
      if ((st & 3) == CPROF__SLOT_PENDING && !first) {
        cprof__in_kernel_t k;
        cprof__thread_stack_t scratch = {0};
        int where = cprof__threads_where_is(tids[i], &k, &scratch, fds ? &fds[i] : NULL);
        if (where != CPROF__WHERE_RUNNING && where != CPROF__WHERE_UNREADABLE &&
            __atomic_compare_exchange_n(&cprof__threads_slots[i].state, &st,
                                        (st & ~(uint64_t)3) | CPROF__SLOT_ABANDONED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
          mode[i] = CPROF__HOW_RELOOK;
          continue;
        }
      }
      if ((st & 3) == CPROF__SLOT_PENDING || (st & 3) == CPROF__SLOT_WRITING)
        waiting++;
    }
    if (!waiting)
      return cprof__now_ns(CLOCK_MONOTONIC) - start;
    if (cprof__now_ms(CLOCK_MONOTONIC) >= deadline_ms) {
      for (int i = 0; i < n; i++) {
        uint64_t expect = __atomic_load_n(&cprof__threads_slots[i].state, __ATOMIC_ACQUIRE);
        if (mode[i] == CPROF__HOW_ASK && (expect & 3) == CPROF__SLOT_PENDING &&
            __atomic_compare_exchange_n(&cprof__threads_slots[i].state, &expect,
                                        (expect & ~(uint64_t)3) | CPROF__SLOT_ABANDONED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
          mode[i] = CPROF__HOW_LATE;
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
