/* The CPU sampler's signal-context code: the SIGPROF handler, and the
 * records of CPU time no timer sampled, which a mask wrapper may make in a
 * signal handler of the program's. Nothing here allocates, locks, or makes
 * a system call: the handler counts itself in (cpu.c's comment says why),
 * claims a record by compare-and-swap, unwinds into it and marks it full. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "core/guard.h"
#include "sample/cpu_internal.h"
#include "sample/signals.h"
#include "sample/trace.h"
#include "unwind/caller.h"

/* ---- handlers in flight ---- */

static unsigned handler_enter_sigsafe(void) {
  for (;;) {
    unsigned e = __atomic_load_n(&cprof__cpu_epoch, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&cprof__cpu_inside[e & 1], 1, __ATOMIC_SEQ_CST);
    /* Counted under the epoch it still is: a wait that moves it from e
     * sees this count. Otherwise try again under the new one. */
    if (__atomic_load_n(&cprof__cpu_epoch, __ATOMIC_SEQ_CST) == e)
      return e & 1;
    __atomic_sub_fetch(&cprof__cpu_inside[e & 1], 1, __ATOMIC_SEQ_CST);
  }
}

static void handler_leave_sigsafe(unsigned e) {
  __atomic_sub_fetch(&cprof__cpu_inside[e], 1, __ATOMIC_SEQ_CST);
}

/* Our timers' signals carry, in si_value (sigevent(7)), a cookie in the
 * high 32 bits and the thread the timer is for in the low 32: the handler
 * knows its thread's id without the gettid system call, and tells our
 * signals from the program's. The cookie is the low bits of a static's
 * address, which no other timer of the program has reason to carry. */
static char cookie_home;
static uint64_t cookie(void) { return (uint64_t)(uint32_t)((uintptr_t)&cookie_home >> 3) << 32; }
void *cprof__cpu_timer_value(pid_t tid) { return (void *)(uintptr_t)(cookie() | (uint32_t)tid); }

/* The periods a signal of tid's timer brought, for "Expiries never
 * delivered" (cpu_timers.c). */
static void count_delivered_sigsafe(pid_t tid, int periods) {
  cprof__cpu_slot_t *s = cprof__cpu_my_slot;
  if (!s || __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) != tid) {
    s = cprof__cpu_find_slot(tid);
    if (!s)
      return;
    cprof__cpu_my_slot = s; /* the handler runs on the thread the timer is for */
  }
  __atomic_add_fetch(&s->delivered, (uint64_t)periods, __ATOMIC_RELAXED);
}

void cprof__cpu_handler_sigsafe(int sig, siginfo_t *info, void *uctx) {
  int saved = errno;
  uint64_t value = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
  /* Only our timers carry the cookie; a SIGPROF from kill(1), setitimer or
   * elsewhere is the program's. */
  if (info->si_code != SI_TIMER || (value & ~(uint64_t)UINT32_MAX) != cookie()) {
    cprof__signal_forward_sigsafe(sig, info, uctx); /* errno is still the program's */
    return;
  }
  unsigned e = handler_enter_sigsafe();
  cprof__cpu_record_t *r = __atomic_load_n(&cprof__cpu_ring, __ATOMIC_SEQ_CST);
  if (r) {
    count_delivered_sigsafe((pid_t)(uint32_t)value,
                            1 + (info->si_overrun > 0 ? info->si_overrun : 0));
    uint64_t t = __atomic_fetch_add(&cprof__cpu_ring_next, 1, __ATOMIC_SEQ_CST),
             i = t % CPROF__CPU_RING;
    uint32_t expect = CPROF__CPU_FREE;
    if (__atomic_compare_exchange_n(&r[i].state, &expect, CPROF__CPU_WRITING, 0, __ATOMIC_ACQUIRE,
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
      smp->depth = cprof__unwind_sigsafe(cprof__cpu_unwinder, (const ucontext_t *)uctx,
                                         __atomic_load_n(&cprof__cpu_stacks, __ATOMIC_SEQ_CST),
                                         smp->pcs, r[i].max);
      cprof__labels_copy_sigsafe(&smp->labels);
      __atomic_store_n(&r[i].state, CPROF__CPU_FULL, __ATOMIC_RELEASE);
    } else {
      __atomic_add_fetch(&cprof__cpu_lost, 1, __ATOMIC_RELAXED);
      __atomic_add_fetch(&cprof__cpu_lost_total, 1, __ATOMIC_RELAXED);
    }
  }
  handler_leave_sigsafe(e);
  errno = saved;
}

/* Records `ns` of CPU time that no timer sampled, as a sample whose frame
 * `mark` says why (pc.h); on the thread itself (`ret` not NULL), with its
 * labels and the stack of the call whose return address is `ret`; with the
 * thread's `name`, for a thread that may be gone by the drain. Returns 0,
 * or -1 when the buffer is full (the caller keeps the time for later, or
 * counts it lost). Async-signal-safe, as the handler: a mask wrapper may
 * run in a signal handler of the program's. */
int cprof__cpu_record_unsampled_sigsafe(pid_t tid, uintptr_t mark, int64_t ns, const void *ret,
                                        const char *name) {
  if (ns <= 0)
    return 0;
  int rc = 0;
  unsigned e = handler_enter_sigsafe();
  cprof__cpu_record_t *r = __atomic_load_n(&cprof__cpu_ring, __ATOMIC_SEQ_CST);
  uint64_t t = r ? __atomic_fetch_add(&cprof__cpu_ring_next, 1, __ATOMIC_SEQ_CST) : 0,
           i = t % CPROF__CPU_RING;
  uint32_t expect = CPROF__CPU_FREE;
  if (r && __atomic_compare_exchange_n(&r[i].state, &expect, CPROF__CPU_WRITING, 0,
                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
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
    if (!ret && tid == cprof__cpu_my_tid) /* the thread itself, at its end */
      cprof__labels_copy_sigsafe(&smp->labels);
    if (ret) {
      cprof__labels_copy_sigsafe(&smp->labels);
      /* cprof's own work on this thread (its guard up) may be in the
       * middle of a walk of its own, whose per-thread memo a walk from
       * here would disturb. */
      if (!cprof__guarded()) {
        cprof__guard_up();
        int n =
            cprof__unwind_caller(cprof__cpu_unwinder, smp->pcs + 1, r[i].max - 1, (uintptr_t)ret);
        cprof__guard_down();
        smp->pcs[1] += 1; /* a return address, as pcs[1..] are: the walk gives ret - 1 */
        smp->depth = 1 + n;
      }
    }
    __atomic_store_n(&r[i].state, CPROF__CPU_FULL, __ATOMIC_RELEASE);
  } else if (r) {
    rc = -1;
  }
  handler_leave_sigsafe(e);
  return rc;
}
