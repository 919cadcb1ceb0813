/* The block, mutex and threadcreate buckets (see contention.h).
 *
 * Everything here runs on the program's threads, inside a lock or
 * pthread_create call that already waited or is about to make a thread, and
 * the thread may hold any of the program's locks. So it may take its time,
 * but it never waits for anything of the program's: no malloc (the stack
 * comes from caller.h, the buckets from the stack table's own pages), and
 * its tables' locks are cprof's own (own_lock.h), taken with the guard
 * raised, held across fork by their handlers, and given up, the event
 * dropped, while a fork is being prepared. */
#include "sample/contention.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/pages.h"
#include "cprof.h"
#include "core/guard.h"
#include "sample/own_lock.h"
#include "sample/stack_table.h"
#include "unwind/caller.h"

int cprof__contention_on;
static long block_rate, mutex_fraction; /* atomic */
static long last_fraction = 1;          /* atomic: the last fraction above 0 */
static int unwinder;                    /* atomic; a cprof__unwinder_t */

/* A stack's counters: the stack table's payload. */
typedef struct counts {
  double count;
  int64_t delay;
} counts_t;

typedef struct table {
  cprof__stack_table_t stacks;
  counts_t overflow; /* events of new stacks once the tables are full */
} table_t;

#define TABLE {.stacks = CPROF_STACK_TABLE(sizeof(counts_t))}
static table_t tables[CPROF_CONTENTION_KINDS] = {TABLE, TABLE, TABLE};
/* locks[k] over tables[k]: cprof's own (own_lock.h), in the profiles' order. */
static cprof__own_lock_t *const locks = &cprof__own_locks[CPROF_OWN_LOCK_BLOCK];
_Static_assert(CPROF_OWN_LOCK_MUTEX == CPROF_OWN_LOCK_BLOCK + CPROF_MUTEX &&
                   CPROF_OWN_LOCK_THREADCREATE == CPROF_OWN_LOCK_BLOCK + CPROF_THREADCREATE,
               "one own lock per contention profile, in order");

/* ---- settings ---- */

static void update_on(void) {
  int on = (__atomic_load_n(&block_rate, __ATOMIC_RELAXED) > 0) |
           (__atomic_load_n(&mutex_fraction, __ATOMIC_RELAXED) > 0) << 1;
  __atomic_store_n(&cprof__contention_on, on, __ATOMIC_RELAXED);
}

long cprof__block_set_rate(long ns) {
  long old = __atomic_exchange_n(&block_rate, ns < 0 ? 0 : ns, __ATOMIC_RELAXED);
  update_on();
  return old;
}

long cprof__mutex_set_fraction(long n) {
  if (n > 0)
    __atomic_store_n(&last_fraction, n, __ATOMIC_RELAXED);
  long old = __atomic_exchange_n(&mutex_fraction, n < 0 ? 0 : n, __ATOMIC_RELAXED);
  update_on();
  return old;
}

long cprof__block_rate(void) { return __atomic_load_n(&block_rate, __ATOMIC_RELAXED); }
long cprof__mutex_fraction(void) { return __atomic_load_n(&mutex_fraction, __ATOMIC_RELAXED); }

void cprof__contention_set_unwinder(cprof__unwinder_t how) {
  __atomic_store_n(&unwinder, (int)how, __ATOMIC_RELAXED);
}

static uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Adds one event to the caller's bucket: its stack from `ret` on. Dropped
 * while a fork is being prepared (own_lock.h). */
static void record(cprof__contention_kind_t kind, double count, int64_t delay, uintptr_t ret) {
  cprof__guard_enter();
  uintptr_t small[CPROF_DEFAULT_DEPTH];
  cprof__caller_pcs_t pcs;
  cprof__caller_pcs_take(&pcs, small);
  int depth = cprof__unwind_caller(__atomic_load_n(&unwinder, __ATOMIC_RELAXED), pcs.pcs, pcs.max,
                                   ret);
  table_t *t = &tables[kind];
  if (cprof__own_lock_for_sample(&locks[kind])) {
    const cprof__stack_t *stack = cprof__stack_table_get(&t->stacks, pcs.pcs, depth);
    counts_t *c = stack ? (counts_t *)stack->payload : &t->overflow;
    c->count += count;
    c->delay += delay;
    cprof__own_unlock(&locks[kind]);
  }
  cprof__caller_pcs_give(&pcs);
  cprof__guard_leave();
}

/* ---- the events ---- */

/* A per-thread xorshift64*, seeded from the thread's own address. */
static __thread uint64_t rng __attribute__((tls_model("initial-exec")));
static uint64_t next_random(void) {
  if (!rng) {
    rng = splitmix((uintptr_t)&rng ^ (uint64_t)cprof__now_ns_program(CLOCK_MONOTONIC)) | 1;
  }
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

void cprof__block_event(int64_t delay, uintptr_t ret) {
  long rate = cprof__block_rate();
  if (delay <= 0)
    delay = 1;
  if (rate <= 0)
    return;
  if (delay >= rate) {
    record(CPROF_BLOCK, 1, delay, ret);
  } else if ((int64_t)(next_random() % (uint64_t)rate) <= delay) {
    /* Sampled with probability delay/rate: weighed up, as Go does, so the
     * expected totals are the true ones. */
    record(CPROF_BLOCK, (double)rate / (double)delay, rate, ret);
  }
}

void cprof__mutex_event(int64_t delay, uintptr_t ret) {
  long fraction = cprof__mutex_fraction();
  if (fraction <= 0 || next_random() % (uint64_t)fraction != 0)
    return;
  record(CPROF_MUTEX, 1, delay < 0 ? 0 : delay, ret);
}

void cprof__threadcreate_event(uintptr_t ret) { record(CPROF_THREADCREATE, 1, 0, ret); }

/* ---- snapshots ---- */

int cprof__contention_snapshot(cprof__contention_kind_t kind, cprof__contention_snapshot_t *out) {
  memset(out, 0, sizeof *out);
  table_t *t = &tables[kind];
  int rc = 0;
  cprof__own_lock(&locks[kind]);
  size_t n = cprof__stack_table_count(&t->stacks);
  /* Record 0 is the events of stacks past the limit; each stack's id is
   * one more than its id in the table, the same in every snapshot. The
   * copy is in pages of its own: a snapshot taken on a program's thread
   * (cprof_write_profile) waits for no allocator's lock while it holds
   * ours. */
  if (!(out->v = cprof__pages_map((n + 1) * sizeof *out->v))) {
    rc = -ENOMEM;
  } else {
    out->v[0] = (cprof__contention_record_t){0, t->overflow.count, t->overflow.delay, NULL, 0};
    for (size_t id = 0; id < n; id++) {
      const cprof__stack_t *s = cprof__stack_table_at(&t->stacks, id);
      const counts_t *c = (const counts_t *)s->payload;
      out->v[id + 1] =
          (cprof__contention_record_t){id + 1, c->count, c->delay, s->pcs, (int)s->depth};
    }
    out->n = n + 1;
  }
  cprof__own_unlock(&locks[kind]);
  /* The mutex profile is scaled by the fraction, as Go's; by the last one
   * in force once it is turned off, so that what was recorded stays. */
  out->setting = kind == CPROF_BLOCK   ? cprof__block_rate()
                 : kind == CPROF_MUTEX ? __atomic_load_n(&last_fraction, __ATOMIC_RELAXED)
                                       : 1;
  return rc;
}

void cprof__contention_snapshot_free(cprof__contention_snapshot_t *s) {
  cprof__pages_unmap(s->v, s->n * sizeof *s->v);
  memset(s, 0, sizeof *s);
}

size_t cprof__contention_records(cprof__contention_kind_t kind) {
  cprof__own_lock(&locks[kind]);
  size_t n = cprof__stack_table_count(&tables[kind].stacks) + (tables[kind].overflow.count > 0);
  cprof__own_unlock(&locks[kind]);
  return n;
}
