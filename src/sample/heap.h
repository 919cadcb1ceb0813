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
 * A sampled block's free must move it from in use to freed. malloc.c gives
 * each sampled block a 16-byte header with a sealed tag and its bucket, so
 * that free tells sampled from unsampled by reading the bytes just before
 * the pointer, which the allocator's own free reads anyway, and counts the
 * free in the bucket without a lock (see malloc.c). Blocks at a page's
 * start, whose header free may not read, are remembered by address behind
 * a bit filter. Only sampled allocations, and frees of sampled blocks at a
 * page's start, take the lock.
 *
 * Counts live in buckets, one per stack (sample/stack_table.h), each with
 * a slot per block size for its first few sizes and one slot for the rest,
 * so that Go's `bytes` label stays exact where a call site allocates a few
 * sizes, and a site that allocates thousands of sizes costs one bucket, not
 * thousands. Each sample carries its weight, the number of allocations it
 * stands for, 1 / (1 - exp(-size/rate)), fixed when it is taken: the slot
 * adds it up, a free takes the same weight back, and estimates stay
 * unbiased over mixed sizes and across changes of the rate. Buckets are
 * never freed, so a snapshot of their counters is all that a profile, or a
 * delta between two profiles, needs. Past the memory limit
 * (CPROF_MAX_MEMORY), samples of new stacks are counted in one bucket that
 * says so.
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
  int64_t countdown;  /* bytes left before the next sample */
  uint32_t rate_seen; /* the rate the countdown was drawn for; 0 before the first */
  uint64_t rng;
} cprof__heap_tls_t;

extern __thread cprof__heap_tls_t cprof__heap_tls __attribute__((tls_model("initial-exec")));

/* Sets the sampling rate (0: off) and the unwinder for sampled stacks.
 * Called by cprof_start; may be called again (tests, restarts). */
void cprof__heap_configure(long rate, cprof__unwinder_t how);
long cprof__heap_rate(void);

/* The fast path, before each allocation of `size` bytes: whether it takes
 * this thread's countdown below zero (then ask cprof__heap_should_sample). */
static inline int cprof__heap_crossing(size_t size) {
  /* An unsigned subtraction, crossing on its borrow. The slow path always
   * leaves the countdown at 0 or more, so for sizes below 2^63 this is the
   * countdown going below zero; and a size of 2^63 or more (a negative
   * length passed as size_t) crosses too, where a signed subtraction would
   * raise the countdown and silence the thread's sampling for good. (A
   * load, a subtraction, a store and a jump on carry: the signed form was
   * one instruction shorter, a difference below the benchmark's noise.) */
  uint64_t left;
  int crossed = __builtin_sub_overflow((uint64_t)cprof__heap_tls.countdown, (uint64_t)size, &left);
  cprof__heap_tls.countdown = (int64_t)left;
  return __builtin_expect(crossed, 0);
}

/* The slow path of an allocation that crossed: draws the next distance and
 * says whether this allocation is sampled (not while sampling is off, nor
 * in cprof's own work). */
int cprof__heap_should_sample(size_t size);

/* Whether free may not read the 16 bytes before p: p is within 16 bytes of
 * a page's start, and they would lie on the page before. Sampled blocks
 * there are remembered by address (cprof__heap_release); others carry
 * what their free needs in the header malloc.c gives them. */
static inline int cprof__heap_at_page_start(const void *p) { return ((uintptr_t)p & 4095) < 16; }

/* The weight of a sample, the allocations it stands for, is counted in
 * units of 1/CPROF_HEAP_WEIGHT_ONE. */
#define CPROF_HEAP_WEIGHT_ONE 65536
/* 1 / (1 - exp(-size/rate)) in those units: what a sampled block of
 * `size` bytes stands for at `rate` (every allocation at rate 1). */
uint64_t cprof__heap_weight(uint64_t size, long rate);

/* What a sampled block's free must hand back: where it was counted, its
 * size and its weight. malloc.c keeps it in the block's header. */
typedef struct cprof__heap_sample {
  void *slot; /* NULL: not counted (out of memory) */
  uint64_t size, weight;
} cprof__heap_sample_t;

/* Records a sampled block: its stack, from the allocating call's return
 * address `ret` on, and its size. Fills *out for the block's header. A
 * block at a page's start is also remembered by address, with its
 * `offset` inside the block the allocator gave; when that cannot be done
 * (out of memory) out->slot is NULL and nothing was counted. */
void cprof__heap_record(void *p, size_t size, uint32_t offset, uintptr_t ret,
                        cprof__heap_sample_t *out);

/* A sampled block was freed. Lock-free. */
void cprof__heap_release_sample(const cprof__heap_sample_t *s);

/* For a block at a page's start: if p is a sampled block, counts it freed,
 * sets *offset, and returns 1; else 0. Call before the block is really
 * freed, so that its address cannot be handed out (and sampled) again
 * meanwhile. */
int cprof__heap_release(void *p, uint32_t *offset);
/* For a block at a page's start: whether p is a sampled block. */
int cprof__heap_known(const void *p);

/* Whether p, at a page's start, may be a sampled block: the filter's
 * answer, one load. The filter is a bit per slot (2^20 bits, 128 KiB), set
 * while any sampled block at a page's start hashes to the slot; other
 * sampled blocks carry a tag just before them. */
extern uint64_t *cprof__heap_filter;
#define CPROF_HEAP_FILTER_BITS 20
static inline size_t cprof__heap_filter_slot(const void *p) {
  return (size_t)(((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >> (64 - CPROF_HEAP_FILTER_BITS));
}
static inline int cprof__heap_maybe_sampled(const void *p) {
  uint64_t *f = __atomic_load_n(&cprof__heap_filter, __ATOMIC_RELAXED);
  if (!f)
    return 0;
  size_t slot = cprof__heap_filter_slot(p);
  return (__atomic_load_n(&f[slot >> 6], __ATOMIC_RELAXED) >> (slot & 63)) & 1;
}

/* One slot's counters, copied: the samples of one stack and one block
 * size, or of the stack's other sizes. pcs point into the table, which
 * lives as long as the process. Counts are of sampled blocks; weights are
 * the allocations they stand for (CPROF_HEAP_WEIGHT_ONE units) and the
 * bytes (size x weight). */
typedef struct cprof__heap_record {
  uint64_t id;   /* stable: the same slot has the same id in every snapshot */
  uint64_t size; /* the block size; 0 when `mixed` */
  int mixed;     /* the stack's sizes beyond its first few */
  uint64_t allocs, frees;           /* sampled blocks allocated, and freed */
  uint64_t alloc_bytes, free_bytes; /* their sizes, summed */
  uint64_t alloc_weight, free_weight;
  uint64_t alloc_wbytes, free_wbytes;
  const uintptr_t *pcs; /* pcs[0] the address inside the allocating call, then return addresses */
  int depth;            /* 0: samples of stacks past the memory limit */
} cprof__heap_record_t;

typedef struct cprof__heap_snapshot {
  cprof__heap_record_t *v; /* by id */
  size_t n;
  long rate;            /* the rate in force when it was taken */
  uint64_t live_blocks; /* sampled blocks in use */
  uint64_t own_bytes;   /* memory the tables hold */
  size_t buckets;       /* stacks */
} cprof__heap_snapshot_t;

/* Copies every slot's counters (under the lock; nothing is symbolized).
 * 0 or -ENOMEM. */
int cprof__heap_snapshot(cprof__heap_snapshot_t *out);
void cprof__heap_snapshot_free(cprof__heap_snapshot_t *s);
/* The number of records of a heap profile, without a copy. */
size_t cprof__heap_records(void);
/* Estimated bytes allocated and freed (cumulative) over every sample
 * taken since the process started: cheap, for the metrics sampler. */
void cprof__heap_totals(uint64_t *allocated, uint64_t *freed);

#endif
