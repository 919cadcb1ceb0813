/* The contention profiles, block and mutex, and threadcreate: what the
 * interposed pthread functions (locks.c, thread_start.c) report, kept in
 * buckets by stack, as Go's runtime keeps its bucketed profiles.
 *
 * block (Go's SetBlockProfileRate): where threads waited, and how long.
 * Each wait of at least `rate` ns is recorded; a shorter one is recorded
 * with probability delay/rate, counted as rate/delay events and rate ns, so
 * that the totals stay unbiased (Go's saveblockevent since 1.17).
 *
 * mutex (Go's SetMutexProfileFraction, with Go 1.22's attribution): the
 * thread that held a contended lock, at its unlock, charged with the delay
 * its hold caused the waiters. One event in `fraction` is recorded; the
 * profile multiplies by the fraction.
 *
 * threadcreate: one count per pthread_create, by the creating stack.
 *
 * Counts are kept unscaled (mutex) or as Go weighs them (block); buckets
 * are never freed, so a snapshot is all a profile or a delta needs. */
#ifndef CPROF_SAMPLE_CONTENTION_H
#define CPROF_SAMPLE_CONTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind.h"

typedef enum cprof__contention_kind {
  CPROF_BLOCK = 0,
  CPROF_MUTEX = 1,
  CPROF_THREADCREATE = 2,
  CPROF_CONTENTION_KINDS
} cprof__contention_kind_t;

/* The settings. Both start at 0 (off), as Go's; they can change at any
 * time. Each returns the previous value. */
long cprof__block_set_rate(long ns);
long cprof__mutex_set_fraction(long n);
long cprof__block_rate(void);
long cprof__mutex_fraction(void);
void cprof__contention_set_unwinder(cprof__unwinder_t how);

/* Which of the profiles in `bits` are on: the interposed functions' one
 * check on their fast path. */
extern int cprof__contention_on; /* atomic: the bits below */
#define CPROF_CONTENTION_BLOCK_ON 1
#define CPROF_CONTENTION_MUTEX_ON 2
static inline int cprof__contention_enabled(int bits) {
  return __atomic_load_n(&cprof__contention_on, __ATOMIC_RELAXED) & bits;
}

/* A wait of `delay` ns by the caller of the function that returns to
 * `ret`: sampled into the block profile as the rate says. */
void cprof__block_event(int64_t delay, uintptr_t ret);
/* An unlock, by the caller that returns to `ret`, that kept waiters
 * `delay` ns in all: sampled into the mutex profile. */
void cprof__mutex_event(int64_t delay, uintptr_t ret);
/* A pthread_create by the caller that returns to `ret`. */
void cprof__threadcreate_event(uintptr_t ret);

/* One bucket's counters, copied. pcs point into the bucket, which lives as
 * long as the process. */
typedef struct cprof__contention_record {
  uint64_t id; /* stable: the same bucket has the same id in every snapshot */
  double count;
  int64_t delay; /* ns */
  const uintptr_t *pcs;
  int depth;
} cprof__contention_record_t;

typedef struct cprof__contention_snapshot {
  cprof__contention_record_t *v;
  size_t n;
  long setting; /* block: the rate when it was taken; mutex: the fraction
                   (the last one above 0, once turned off); threadcreate: 1 */
} cprof__contention_snapshot_t;

/* Copies every bucket of one profile. 0 or -ENOMEM. */
int cprof__contention_snapshot(cprof__contention_kind_t kind, cprof__contention_snapshot_t *out);
void cprof__contention_snapshot_free(cprof__contention_snapshot_t *s);
/* The number of buckets of one profile, without a copy. */
size_t cprof__contention_records(cprof__contention_kind_t kind);

#endif
