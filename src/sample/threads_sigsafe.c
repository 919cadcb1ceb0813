/* The all-thread capture's signal handler: on the thread a request's timer
 * was made for, it unwinds into the request's slot (threads.c's comment,
 * "The protocol with a running thread"). No system call, no lock, no
 * allocation. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

#include "sample/signals.h"
#include "sample/threads_internal.h"

/* Whether an arrival of our signal is a request of ours: the expiry of
 * one of our timers, whose value carries the cookie in its high half and
 * the slot in its low half. A program's own timer on this signal carries
 * what the program put there; a signal queued from outside with SI_TIMER
 * would need the cookie. */
static int is_request_sigsafe(const siginfo_t *info) {
  uint32_t c = __atomic_load_n(&cprof__threads_cookie, __ATOMIC_RELAXED);
  uint64_t token = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
  return c != 0 && info->si_code == SI_TIMER && (uint32_t)(token >> 32) == c;
}

/* The handler makes no system call for a request. It does not check that
 * it runs on the slot's thread either: the timer was made for that one
 * thread (SIGEV_THREAD_ID), and only that thread can take its signal. An
 * arrival whose timer is not the slot's (a late one, of an ask since
 * given up and its timer deleted) does nothing. */
void cprof__threads_handler_sigsafe(int sig, siginfo_t *info, void *uctx) {
  if (!is_request_sigsafe(info)) {
    cprof__signal_forward_sigsafe(sig, info, uctx);
    return;
  }
  int saved = errno;
  __atomic_add_fetch(&cprof__threads_handlers_in, 1, __ATOMIC_SEQ_CST);
  uint32_t low = (uint32_t)(uint64_t)(uintptr_t)info->si_value.sival_ptr;
  uint32_t tab = CPROF__TOKEN_TABLE(low), idx = CPROF__TOKEN_INDEX(low);
  if (tab >= CPROF__THREADS_TABLES)
    goto out;
  cprof__threads_slot_t *v =
      __atomic_load_n(tab ? &cprof__threads_table_v[tab] : &cprof__threads_slots, __ATOMIC_ACQUIRE);
  if (!v ||
      idx >= (uint32_t)__atomic_load_n(tab ? &cprof__threads_table_n[tab] : &cprof__threads_nslots,
                                       __ATOMIC_ACQUIRE))
    goto out;
  cprof__threads_slot_t *s = &v[idx];
  uint64_t expect = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  if ((expect & 3) != CPROF__SLOT_PENDING ||
      __atomic_load_n(&s->timer, __ATOMIC_ACQUIRE) != info->si_timerid)
    goto out;
  if (!__atomic_compare_exchange_n(&s->state, &expect,
                                   (expect & ~(uint64_t)3) | CPROF__SLOT_WRITING, 0,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    goto out;
  s->depth = cprof__unwind_sigsafe(
      __atomic_load_n(&cprof__threads_unwinder, __ATOMIC_RELAXED), (const ucontext_t *)uctx,
      __atomic_load_n(&cprof__threads_stacks, __ATOMIC_ACQUIRE), s->pcs, s->max);
  __atomic_store_n(&s->state, (expect & ~(uint64_t)3) | CPROF__SLOT_DONE, __ATOMIC_RELEASE);
out:
  __atomic_sub_fetch(&cprof__threads_handlers_in, 1, __ATOMIC_SEQ_CST);
  errno = saved;
}
