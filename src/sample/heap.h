/* The heap sampler: which allocations are sampled, and the tables that
 * remember them.
 *
 * As Go's runtime and tcmalloc do it, each thread counts down the bytes it
 * allocates from a distance drawn from an exponential distribution with
 * mean `rate`; the allocation that takes the count below zero is sampled
 * (its stack and size recorded), and a new distance is drawn. An allocation
 * of s bytes is thus sampled with probability 1 - exp(-s/rate), which the
 * profile undoes when it scales values back up (see doc/internals.md).
 *
 * Sampled blocks are remembered by address, so that their free moves them
 * from in use to freed. Every free asks first a one-byte-per-slot filter
 * indexed by a hash of the address: a zero there means "not sampled",
 * which is the answer for all but a tiny fraction of frees, and costs one
 * load. The rest take the lock and look in the table.
 *
 * Counts live in buckets, one per (stack, size), as Go's memory profile
 * keeps them; buckets are never freed, so a snapshot of their counters is
 * all that a profile, or a delta between two profiles, needs.
 *
 * The malloc family itself is interposed in malloc.c; this file's entry
 * points are what it calls, and what the unit tests call directly. */
#ifndef CPROF_SAMPLE_HEAP_H
#define CPROF_SAMPLE_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind.h"


/* The per-thread state the malloc wrappers touch on every call. Initial-exec
 * TLS: one %fs-relative access, never an allocation. */
typedef struct cprof__heap_tls {
  int64_t countdown; /* bytes left before the next sample */
  uint32_t guard;    /* > 0: cprof's own work; nothing is sampled or looked up */
  uint32_t rate_seen; /* the rate the countdown was drawn for; 0 before the first */
  uint64_t rng;
  uintptr_t stack_hi; /* the top of this thread's stack, for the frame-pointer walk */
} cprof__heap_tls_t;

extern __thread cprof__heap_tls_t cprof__heap_tls __attribute__((tls_model("initial-exec")));

/* Sets the sampling rate (0: off) and the unwinder for sampled stacks.
 * Called by cprof_start; may be called again (tests, restarts). */
void cprof__heap_configure(long rate, cprof__unwinder_t how);
long cprof__heap_rate(void);

/* cprof's own work on this thread (serving a request, writing a file)
 * allocates without being sampled. Nests. */
static inline void cprof__heap_guard_enter(void) { cprof__heap_tls.guard++; }
static inline void cprof__heap_guard_leave(void) { cprof__heap_tls.guard--; }
static inline int cprof__heap_guarded(void) { return cprof__heap_tls.guard != 0; }

/* The slow path of an allocation whose size took the countdown below zero:
 * decides whether p is sampled and records it. `ret` is the allocating
 * call's return address (the first frame of the recorded stack). */
void cprof__heap_sample(void *p, size_t size, uintptr_t ret);

/* Whether p may be a sampled block: the filter's answer, one load. */
extern uint8_t *cprof__heap_filter;
#define CPROF_HEAP_FILTER_BITS 20
static inline size_t cprof__heap_filter_slot(const void *p) {
  return (size_t)(((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >> (64 - CPROF_HEAP_FILTER_BITS));
}
static inline int cprof__heap_maybe_sampled(const void *p) {
  uint8_t *f = __atomic_load_n(&cprof__heap_filter, __ATOMIC_RELAXED);
  return f && f[cprof__heap_filter_slot(p)] != 0;
}
/* The slow path of a free whose filter slot was set: moves p from in use
 * to freed if it was sampled. Call before the block is really freed, so
 * that its address cannot be handed out (and sampled) again meanwhile. */
void cprof__heap_freed(void *p);

/* One bucket's counters, copied. pcs point into the bucket, which lives as
 * long as the process. All counts are of sampled blocks, not yet scaled. */
typedef struct cprof__heap_record {
  uint64_t id; /* stable: the same bucket has the same id in every snapshot */
  uint64_t size;
  uint64_t allocs, frees; /* sampled blocks allocated, and freed */
  const uintptr_t *pcs;   /* pcs[0] the address inside the allocating call, then return addresses */
  int depth;
} cprof__heap_record_t;

typedef struct cprof__heap_snapshot {
  cprof__heap_record_t *v;
  size_t n;
  long rate;            /* the rate in force when it was taken */
  uint64_t live_blocks; /* sampled blocks in use */
  uint64_t own_bytes;   /* memory the tables hold */
} cprof__heap_snapshot_t;

/* Copies every bucket's counters (under the lock; nothing is symbolized).
 * 0 or -ENOMEM. */
int cprof__heap_snapshot(cprof__heap_snapshot_t *out);
void cprof__heap_snapshot_free(cprof__heap_snapshot_t *s);

#endif
