/* The heap sampler and its tables (see heap.h for the design).
 *
 * Everything here runs inside the program's malloc and free, on a thread
 * that may hold any lock of the program's, so it keeps to five rules. The
 * fast paths (in malloc.c) touch only this thread's TLS and the block's
 * header. The tables' memory is cprof's own (core/pages.h), never the
 * program's heap, and nothing on the slow paths allocates from it (the
 * stack's top and the walk come from unwind/caller.h, without malloc). The
 * slow paths set the thread's guard first, so that nothing they do is
 * sampled or profiled. The lock is one of cprof's own (own_lock.h): held
 * across fork by its handlers, and a sample that finds it held while a
 * fork is being prepared is dropped rather than waited for. And a warm
 * sampled path makes no system call (unwind/caller.h). */
#include "sample/heap.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "core/guard.h"
#include "core/pages.h"
#include "sample/own_lock.h"
#include "sample/stack_table.h"
#include "unwind/caller.h"

__thread cprof__heap_tls_t cprof__heap_tls __attribute__((tls_model("initial-exec")));
uint64_t *cprof__heap_filter;
/* How many sampled blocks hash to each filter slot, saturating at 255
 * (then the slot's bit stays set). Under the lock; the fast path reads
 * only the bits. */
static uint8_t *filter_counts;

/* While sampling is off, a thread still drops into the slow path once per
 * this many bytes, to notice when it is turned on: rare enough to cost
 * nothing measurable, and short next to the distance between samples at
 * any useful rate, so turning sampling on misses little. */
#define OFF_COUNTDOWN (64 << 10)
#define FILTER_SLOTS ((size_t)1 << CPROF_HEAP_FILTER_BITS)
#define FILTER_BYTES (FILTER_SLOTS / 8 + FILTER_SLOTS) /* the bits, then the counts */

static long rate;    /* atomic; 0: off */
/* Estimated bytes allocated and freed since the process started, summed
 * over every sample (their weighted bytes): the metrics sampler's heap
 * figures, read without walking the table. Atomic. */
static uint64_t total_alloc_wbytes, total_free_wbytes;
static int unwinder; /* atomic; a cprof__unwinder_t */
static uint64_t seed;

/* One block size of a stack, or the stack's other sizes. Its counters
 * move under the lock, but for a free's, which are atomic. */
typedef struct slot {
  struct slot *next; /* the stack's next size */
  uint64_t size;
  uint32_t id1; /* id + 1; 0: no sample yet */
  uint32_t mixed;
  uint64_t allocs, frees, alloc_bytes, free_bytes;
  uint64_t alloc_weight, free_weight, alloc_wbytes, free_wbytes;
  const cprof__stack_t *stack; /* NULL: stacks past the memory limit */
} slot_t;

/* A stack's counters, the stack table's payload: the first size inline,
 * up to SIZES - 1 more from the table's memory, then one slot for any
 * other size. */
#define SIZES 4
typedef struct bucket {
  slot_t first, other;
  uint32_t sizes; /* exact-size slots in use */
} bucket_t;

typedef struct live {
  uintptr_t addr; /* 0: empty slot */
  uint32_t offset; /* of addr inside the allocator's block */
  cprof__heap_sample_t sample;
} live_t;

/* All under `lock`, one of cprof's own (own_lock.h: held across fork by
 * its handlers, which also raise the guard meanwhile). */
static cprof__own_lock_t *const lock = &cprof__own_locks[CPROF_OWN_LOCK_HEAP];
static cprof__stack_table_t stacks = CPROF_STACK_TABLE(sizeof(bucket_t));
static bucket_t overflow; /* samples of new stacks once the table is full */
static uint32_t nslots;   /* slot ids handed out */
static struct {
  live_t *v; /* open addressing over addresses, backward-shift deletion */
  size_t n, cap;
} live;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init_once(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec;
}

void cprof__heap_configure(long r, cprof__unwinder_t how) {
  pthread_once(&once, init_once);
  if (r > 0 && !__atomic_load_n(&cprof__heap_filter, __ATOMIC_ACQUIRE)) {
    void *f = mmap(NULL, FILTER_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (f == MAP_FAILED) {
      r = 0;
    } else {
      filter_counts = (uint8_t *)f + FILTER_SLOTS / 8;
      __atomic_store_n(&cprof__heap_filter, (uint64_t *)f, __ATOMIC_RELEASE);
    }
  }
  __atomic_store_n(&unwinder, (int)how, __ATOMIC_RELAXED);
  __atomic_store_n(&rate, r < 0 ? 0 : r, __ATOMIC_RELEASE);
  /* This thread (under LD_PRELOAD, the main thread before main) looks at
   * the new rate at its next allocation; others within OFF_COUNTDOWN. */
  cprof__heap_tls.countdown = 0;
}

long cprof__heap_rate(void) { return __atomic_load_n(&rate, __ATOMIC_ACQUIRE); }

/* ---- sampling ---- */

static uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t next_random(cprof__heap_tls_t *s) {
  if (!s->rng) {
    static uint64_t threads;
    uint64_t n = __atomic_add_fetch(&threads, 1, __ATOMIC_RELAXED);
    s->rng = splitmix(seed ^ (uintptr_t)s ^ (n << 32)) | 1;
  }
  /* xorshift64* */
  s->rng ^= s->rng >> 12;
  s->rng ^= s->rng << 25;
  s->rng ^= s->rng >> 27;
  return s->rng * 0x2545f4914f6cdd1dull;
}

/* -ln(u) for u in (0, 1], without libm's tables, whose lines a program that
 * churns through its memory has evicted by the next sample: u = m 2^e with
 * m in [sqrt(1/2), sqrt(2)), and ln m = 2 atanh(s), s = (m-1)/(m+1),
 * |s| < 0.172, summed to s^9. Relative error below 1e-8. */
static double neg_log(double u) {
  uint64_t bits;
  memcpy(&bits, &u, sizeof bits);
  int e = (int)((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  double m;
  memcpy(&m, &bits, sizeof m);
  if (m > 1.4142135623730951) {
    m *= 0.5;
    e++;
  }
  double x = (m - 1) / (m + 1), x2 = x * x;
  double ln_m = 2 * x * (1 + x2 * (1.0 / 3 + x2 * (1.0 / 5 + x2 * (1.0 / 7 + x2 / 9))));
  return -(e * 0.6931471805599453 + ln_m);
}

/* The distance to the next sample: exponential with mean r bytes. At rate
 * 1, none: every allocation is a sample, as under Go's MemProfileRate=1
 * (a distance of mean 1 byte sampled a 1-byte block 63 % of the time, and
 * the weights count each sample once at that rate). */
static int64_t draw(cprof__heap_tls_t *s, long r) {
  if (r == 1)
    return 0;
  double u = (double)((next_random(s) >> 11) + 1) * 0x1.0p-53; /* (0, 1], no subnormals */
  double d = neg_log(u) * (double)r;
  return d < 1e18 ? (int64_t)d : (int64_t)1e18;
}

/* ---- the weights ---- */

/* 1 - exp(-x) for x >= 0, without libm, whose tables a program that churns
 * through its memory has evicted by the next sample: the series for small
 * x, where the subtraction would cancel; otherwise exp(-x) = 2^-n exp(-f)
 * with f = x - n ln 2 in [0, ln 2) summed to f^14. Relative error below
 * 1e-12. */
static double one_minus_exp_neg(double x) {
  if (x < 0.5) { /* x - x^2/2! + x^3/3! - ... */
    double term = x, sum = x;
    for (int k = 2; k <= 16; k++)
      sum += (term *= -x / k);
    return sum;
  }
  if (x > 700)
    return 1;
  int n = (int)(x / 0.6931471805599453);
  double f = x - n * 0.6931471805599453, term = 1, e = 1;
  for (int k = 1; k <= 14; k++)
    e += (term *= -f / k);
  uint64_t bits = (uint64_t)(1023 - n) << 52; /* 2^-n, n <= 1010 */
  double scale;
  memcpy(&scale, &bits, sizeof scale);
  return 1 - e * scale;
}

uint64_t cprof__heap_weight(uint64_t size, long r) {
  if (r <= 1 || size == 0) /* every allocation sampled; malloc(0) counts one */
    return CPROF_HEAP_WEIGHT_ONE;
  double w = CPROF_HEAP_WEIGHT_ONE / one_minus_exp_neg((double)size / (double)r);
  return (uint64_t)(w + 0.5);
}

/* The bytes a sample stands for: its size times its weight, as whole
 * bytes, the same at the allocation and at the free. */
static uint64_t weighted_bytes(const cprof__heap_sample_t *s) {
  return (uint64_t)(((unsigned __int128)s->size * s->weight + CPROF_HEAP_WEIGHT_ONE / 2) /
                    CPROF_HEAP_WEIGHT_ONE);
}

/* ---- the tables (callers hold the lock and the guard) ---- */

static uint64_t hash_addr(uintptr_t p) { return splitmix(p); }

static slot_t *claim(slot_t *s, const cprof__stack_t *stack, uint64_t size, int mixed) {
  s->id1 = ++nslots;
  s->size = mixed ? 0 : size;
  s->mixed = (uint32_t)mixed;
  s->stack = stack;
  return s;
}

/* The slot of a block of `size` in bucket b, of `stack`: its own size's,
 * claimed if new and one of the stack's first SIZES, else the other
 * sizes'. Extra slots come from the table's memory, so past the limit a
 * new size goes to the other sizes too. */
static slot_t *slot_of(bucket_t *b, const cprof__stack_t *stack, uint64_t size) {
  slot_t *s = &b->first, *last = NULL;
  if (!s->id1) {
    b->sizes = 1;
    return claim(s, stack, size, 0);
  }
  for (; s; last = s, s = s->next)
    if (s->size == size)
      return s;
  if (b->sizes < SIZES && (s = cprof__stack_table_alloc(&stacks, sizeof *s)) != NULL) {
    b->sizes++;
    last->next = s;
    return claim(s, stack, size, 0);
  }
  return b->other.id1 ? &b->other : claim(&b->other, stack, size, 1);
}

static size_t live_find(uintptr_t p) {
  if (!live.cap)
    return SIZE_MAX;
  for (size_t i = hash_addr(p) & (live.cap - 1); live.v[i].addr; i = (i + 1) & (live.cap - 1))
    if (live.v[i].addr == p)
      return i;
  return SIZE_MAX;
}

static void live_put(live_t *v, size_t cap, live_t e) {
  size_t i = hash_addr(e.addr) & (cap - 1);
  while (v[i].addr)
    i = (i + 1) & (cap - 1);
  v[i] = e;
}

static int grow_live(void) {
  size_t cap = live.cap ? live.cap * 2 : 1024;
  live_t *v = cprof__pages_map(cap * sizeof *v);
  if (!v)
    return -ENOMEM;
  for (size_t i = 0; i < live.cap; i++)
    if (live.v[i].addr)
      live_put(v, cap, live.v[i]);
  cprof__pages_unmap(live.v, live.cap * sizeof *v);
  live.v = v;
  live.cap = cap;
  return 0;
}

/* Linear probing's deletion without tombstones: later entries of the same
 * probe run move back into the hole. */
static void live_delete(size_t i) {
  size_t mask = live.cap - 1;
  for (size_t j = (i + 1) & mask; live.v[j].addr; j = (j + 1) & mask) {
    size_t home = hash_addr(live.v[j].addr) & mask;
    /* Entry j may move to i when its home is not in (i, j], cyclically. */
    int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) {
      live.v[i] = live.v[j];
      i = j;
    }
  }
  live.v[i].addr = 0;
  live.n--;
}

/* Counts a page-aligned sampled block in or out of its filter slot, and
 * keeps the slot's bit set while the count is above zero. A count that reached 255 stays
 * there, bit set (always "maybe"), so it never wraps to a false "no". */
static void filter_add(uintptr_t p, int d) {
  size_t slot = cprof__heap_filter_slot((void *)p);
  uint8_t *c = &filter_counts[slot];
  if (*c == 255)
    return;
  *c = (uint8_t)(*c + d);
  uint64_t *w = &cprof__heap_filter[slot >> 6], bit = 1ull << (slot & 63);
  uint64_t v = *w;
  __atomic_store_n(w, *c ? v | bit : v & ~bit, __ATOMIC_RELAXED);
}

void cprof__heap_release_sample(const cprof__heap_sample_t *smp) {
  slot_t *s = smp->slot;
  if (!s)
    return;
  __atomic_add_fetch(&s->free_bytes, smp->size, __ATOMIC_RELAXED);
  __atomic_add_fetch(&s->free_weight, smp->weight, __ATOMIC_RELAXED);
  __atomic_add_fetch(&s->free_wbytes, weighted_bytes(smp), __ATOMIC_RELAXED);
  __atomic_add_fetch(&s->frees, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&total_free_wbytes, weighted_bytes(smp), __ATOMIC_RELAXED);
}

static void free_locked(size_t i) {
  cprof__heap_release_sample(&live.v[i].sample);
  filter_add(live.v[i].addr, -1);
  live_delete(i);
}

/* The lock, with the guard raised while it is held: its own wait is not
 * profiled, and nothing a signal handler allocates meanwhile is sampled. */
static void lock_table(void) { cprof__own_lock(lock); }
static void unlock_table(void) { cprof__own_unlock(lock); }

int cprof__heap_should_sample(size_t size) {
  cprof__heap_tls_t *s = &cprof__heap_tls;
  long r = __atomic_load_n(&rate, __ATOMIC_ACQUIRE);
  if (r <= 0) {
    s->countdown = OFF_COUNTDOWN;
    s->rate_seen = 0;
    return 0;
  }
  if (s->rate_seen != r) {
    /* The first distance under this rate starts before this allocation:
     * it is sampled only if it is longer than the distance. */
    s->rate_seen = r;
    s->countdown = draw(s, r) - (int64_t)size;
    if (s->countdown >= 0)
      return 0;
  }
  s->countdown = draw(s, r);
  return !cprof__guarded();
}

void cprof__heap_record(void *p, size_t size, uint32_t offset, uintptr_t ret,
                        cprof__heap_sample_t *out) {
  cprof__guard_enter();
  uintptr_t small[CPROF_DEFAULT_DEPTH];
  cprof__caller_pcs_t pcs;
  cprof__caller_pcs_take(&pcs, small);
  int depth = cprof__unwind_caller(__atomic_load_n(&unwinder, __ATOMIC_RELAXED), pcs.pcs, pcs.max, ret);
  *out = (cprof__heap_sample_t){NULL, size, cprof__heap_weight(size, cprof__heap_rate())};
  /* While a fork is being prepared, the sample is dropped rather than
   * waited for (own_lock.h): the block goes out unsampled. */
  if (!cprof__own_lock_for_sample(lock)) {
    cprof__caller_pcs_give(&pcs);
    cprof__guard_leave();
    return;
  }
  const cprof__stack_t *stack = cprof__stack_table_get(&stacks, pcs.pcs, depth);
  cprof__caller_pcs_give(&pcs);
  bucket_t *b = stack ? (bucket_t *)stack->payload : &overflow;
  slot_t *slot = slot_of(b, stack, size);
  out->slot = slot;
  if (cprof__heap_at_page_start(p)) {
    /* A block we still hold at this address was freed where we did not
     * see it: count it freed. */
    size_t old = live_find((uintptr_t)p);
    if (old != SIZE_MAX)
      free_locked(old);
    if ((live.n + 1) * 2 <= live.cap || grow_live() == 0) {
      live_put(live.v, live.cap, (live_t){(uintptr_t)p, offset, *out});
      live.n++;
      filter_add((uintptr_t)p, 1);
    } else {
      out->slot = NULL; /* free could not tell it: not counted */
    }
  }
  if (out->slot) {
    slot->allocs++;
    slot->alloc_bytes += size;
    slot->alloc_weight += out->weight;
    slot->alloc_wbytes += weighted_bytes(out);
    __atomic_add_fetch(&total_alloc_wbytes, weighted_bytes(out), __ATOMIC_RELAXED);
  }
  unlock_table();
  cprof__guard_leave();
}

/* The lock, unless this thread holds it already (a fork prepare handler
 * that runs after ours frees a block): then it looks without taking it.
 * Returns whether it took it. */
static int lock_unless_held(void) {
  int take = !cprof__own_lock_mine(lock);
  if (take)
    lock_table();
  return take;
}

int cprof__heap_known(const void *p) {
  int took = lock_unless_held();
  int found = live_find((uintptr_t)p) != SIZE_MAX;
  if (took)
    unlock_table();
  return found;
}

int cprof__heap_release(void *p, uint32_t *offset) {
  int took = lock_unless_held();
  size_t i = live_find((uintptr_t)p);
  int found = i != SIZE_MAX;
  if (found) {
    *offset = live.v[i].offset;
    free_locked(i);
  }
  if (took)
    unlock_table();
  return found;
}

/* ---- snapshots ---- */

static void copy_slot(const slot_t *s, cprof__heap_snapshot_t *out) {
  if (!s->id1)
    return;
  uint64_t frees = __atomic_load_n(&s->frees, __ATOMIC_RELAXED);
  out->v[s->id1 - 1] = (cprof__heap_record_t){
      .id = s->id1 - 1,
      .size = s->size,
      .mixed = (int)s->mixed,
      .allocs = s->allocs,
      .frees = frees,
      .alloc_bytes = s->alloc_bytes,
      .free_bytes = __atomic_load_n(&s->free_bytes, __ATOMIC_RELAXED),
      .alloc_weight = s->alloc_weight,
      .free_weight = __atomic_load_n(&s->free_weight, __ATOMIC_RELAXED),
      .alloc_wbytes = s->alloc_wbytes,
      .free_wbytes = __atomic_load_n(&s->free_wbytes, __ATOMIC_RELAXED),
      .pcs = s->stack ? s->stack->pcs : NULL,
      .depth = s->stack ? (int)s->stack->depth : 0,
  };
  out->live_blocks += s->allocs - frees;
}

static void copy_bucket(const bucket_t *b, cprof__heap_snapshot_t *out) {
  for (const slot_t *s = &b->first; s; s = s->next)
    copy_slot(s, out);
  copy_slot(&b->other, out);
}

int cprof__heap_snapshot(cprof__heap_snapshot_t *out) {
  memset(out, 0, sizeof *out);
  lock_table();
  int rc = 0;
  /* The copy is the snapshot's own memory too, not the program's heap. */
  if (nslots && !(out->v = cprof__pages_map(nslots * sizeof *out->v))) {
    rc = -ENOMEM;
  } else {
    out->n = nslots;
    for (size_t id = 0; id < cprof__stack_table_count(&stacks); id++)
      copy_bucket((const bucket_t *)cprof__stack_table_at(&stacks, id)->payload, out);
    copy_bucket(&overflow, out);
    out->buckets = cprof__stack_table_count(&stacks);
    out->own_bytes = stacks.mapped + cprof__pages_round(live.cap * sizeof *live.v) +
                     (cprof__heap_filter ? FILTER_BYTES : 0);
  }
  unlock_table();
  out->rate = cprof__heap_rate();
  return rc;
}

size_t cprof__heap_records(void) {
  lock_table();
  size_t n = nslots;
  unlock_table();
  return n;
}

void cprof__heap_snapshot_free(cprof__heap_snapshot_t *s) {
  cprof__pages_unmap(s->v, s->n * sizeof *s->v);
  memset(s, 0, sizeof *s);
}

void cprof__heap_totals(uint64_t *allocated, uint64_t *freed) {
  *freed = __atomic_load_n(&total_free_wbytes, __ATOMIC_RELAXED);
  *allocated = __atomic_load_n(&total_alloc_wbytes, __ATOMIC_RELAXED);
}
