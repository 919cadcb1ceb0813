/* The heap sampler and its tables (see heap.h for the design).
 *
 * Everything here runs inside the program's malloc and free, so it keeps to
 * three rules. The fast paths (in malloc.c) touch only this thread's TLS
 * and the block's header. The slow paths set the thread's guard first, so
 * that the allocations they make themselves (growing a table, the
 * unwinder's first look at a module) pass through unsampled and their
 * frees never come back here for the lock they hold. And a warm sampled
 * path makes no system call (unwind/caller.h). */
#include "sample/heap.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

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
static int unwinder; /* atomic; a cprof__unwinder_t */
static uint64_t seed;

typedef struct bucket {
  uint64_t id, hash, size, allocs, frees;
  int depth;
  uintptr_t pcs[];
} bucket_t;

/* A bucket's hash kept beside its id, so that a probe compares hashes
 * without loading the bucket (each load is a cache miss in a program
 * that churns through its memory). */
typedef struct index_slot {
  uint64_t hash;
  uint32_t id1; /* id + 1; 0: empty */
} index_slot_t;

typedef struct live {
  uintptr_t addr; /* 0: empty slot */
  uint32_t bucket;
  uint32_t offset; /* of addr inside the allocator's block */
} live_t;

/* All under `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  bucket_t **buckets; /* by id */
  size_t nbuckets, capbuckets;
  index_slot_t *index; /* open addressing over bucket hashes */
  size_t capindex;
  live_t *live; /* open addressing over addresses, backward-shift deletion */
  size_t nlive, caplive;
  uint64_t own_bytes;
} t;

/* ---- fork: the child inherits a consistent table ---- */

static void lock_table(void);
static void unlock_table(void);
static void fork_prepare(void) {
  /* A prepare handler that runs after ours, on this thread, must not wait
   * for the lock we hold: the guard keeps its allocations unsampled, and
   * `locked` lets its frees look in the table directly. */
  cprof__heap_guard_enter();
  lock_table();
}
static void fork_parent(void) {
  unlock_table();
  cprof__heap_guard_leave();
}
static void fork_child(void) {
  pthread_mutex_init(&lock, NULL);
  cprof__heap_tls.locked--;
  cprof__heap_guard_leave();
}
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init_once(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
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

/* The distance to the next sample: exponential with mean r bytes. */
static int64_t draw(cprof__heap_tls_t *s, long r) {
  double u = (double)((next_random(s) >> 11) + 1) * 0x1.0p-53; /* (0, 1], no subnormals */
  double d = neg_log(u) * (double)r;
  return d < 1e18 ? (int64_t)d : (int64_t)1e18;
}

/* ---- the tables (callers hold the lock and the guard) ---- */

static uint64_t hash_addr(uintptr_t p) { return splitmix(p); }

static uint64_t hash_stack(const uintptr_t *pcs, int depth, uint64_t size) {
  uint64_t h = splitmix(size);
  for (int i = 0; i < depth; i++)
    h = splitmix(h ^ pcs[i]);
  return h;
}

static void index_put(index_slot_t *index, size_t cap, uint64_t hash, size_t id) {
  size_t i = hash & (cap - 1);
  while (index[i].id1)
    i = (i + 1) & (cap - 1);
  index[i] = (index_slot_t){hash, (uint32_t)id + 1};
}

static int grow_index(void) {
  size_t cap = t.capindex ? t.capindex * 2 : 1024;
  index_slot_t *index = calloc(cap, sizeof *index);
  if (!index)
    return -ENOMEM;
  for (size_t id = 0; id < t.nbuckets; id++)
    index_put(index, cap, t.buckets[id]->hash, id);
  free(t.index);
  t.own_bytes += (cap - t.capindex) * sizeof *index;
  t.index = index;
  t.capindex = cap;
  return 0;
}

/* The bucket of (stack, size), made if new; NULL when out of memory. */
static bucket_t *bucket_of(const uintptr_t *pcs, int depth, uint64_t size) {
  uint64_t h = hash_stack(pcs, depth, size);
  if (t.capindex) {
    for (size_t i = h & (t.capindex - 1); t.index[i].id1; i = (i + 1) & (t.capindex - 1)) {
      if (t.index[i].hash != h)
        continue;
      bucket_t *b = t.buckets[t.index[i].id1 - 1];
      if (b->size == size && b->depth == depth &&
          memcmp(b->pcs, pcs, (size_t)depth * sizeof *pcs) == 0)
        return b;
    }
  }
  if ((t.nbuckets + 1) * 2 > t.capindex && grow_index() != 0)
    return NULL;
  if (t.nbuckets == t.capbuckets) {
    size_t cap = t.capbuckets ? t.capbuckets * 2 : 256;
    bucket_t **v = realloc(t.buckets, cap * sizeof *v);
    if (!v)
      return NULL;
    t.own_bytes += (cap - t.capbuckets) * sizeof *v;
    t.buckets = v;
    t.capbuckets = cap;
  }
  size_t bytes = sizeof(bucket_t) + (size_t)depth * sizeof *pcs;
  bucket_t *b = calloc(1, bytes);
  if (!b)
    return NULL;
  t.own_bytes += bytes;
  b->id = t.nbuckets;
  b->hash = h;
  b->size = size;
  b->depth = depth;
  memcpy(b->pcs, pcs, (size_t)depth * sizeof *pcs);
  index_put(t.index, t.capindex, h, t.nbuckets);
  t.buckets[t.nbuckets++] = b;
  return b;
}

static size_t live_find(uintptr_t p) {
  if (!t.caplive)
    return SIZE_MAX;
  for (size_t i = hash_addr(p) & (t.caplive - 1); t.live[i].addr; i = (i + 1) & (t.caplive - 1))
    if (t.live[i].addr == p)
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
  size_t cap = t.caplive ? t.caplive * 2 : 1024;
  live_t *v = calloc(cap, sizeof *v);
  if (!v)
    return -ENOMEM;
  for (size_t i = 0; i < t.caplive; i++)
    if (t.live[i].addr)
      live_put(v, cap, t.live[i]);
  free(t.live);
  t.own_bytes += (cap - t.caplive) * sizeof *v;
  t.live = v;
  t.caplive = cap;
  return 0;
}

/* Linear probing's deletion without tombstones: later entries of the same
 * probe run move back into the hole. */
static void live_delete(size_t i) {
  size_t mask = t.caplive - 1;
  for (size_t j = (i + 1) & mask; t.live[j].addr; j = (j + 1) & mask) {
    size_t home = hash_addr(t.live[j].addr) & mask;
    /* Entry j may move to i when its home is not in (i, j], cyclically. */
    int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) {
      t.live[i] = t.live[j];
      i = j;
    }
  }
  t.live[i].addr = 0;
  t.nlive--;
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

static void count_free(bucket_t *b) { __atomic_add_fetch(&b->frees, 1, __ATOMIC_RELAXED); }

static void free_locked(size_t i) {
  count_free(t.buckets[t.live[i].bucket]);
  filter_add(t.live[i].addr, -1);
  live_delete(i);
}

static void lock_table(void) {
  pthread_mutex_lock(&lock);
  cprof__heap_tls.locked++;
}
static void unlock_table(void) {
  cprof__heap_tls.locked--;
  pthread_mutex_unlock(&lock);
}

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
  return s->guard == 0;
}

void *cprof__heap_record(void *p, size_t size, uint32_t offset, uintptr_t ret) {
  cprof__heap_tls_t *s = &cprof__heap_tls;
  s->guard++;
  uintptr_t pcs[CPROF_MAX_DEPTH];
  int depth = cprof__unwind_caller(__atomic_load_n(&unwinder, __ATOMIC_RELAXED), pcs, CPROF_MAX_DEPTH, ret);
  lock_table();
  bucket_t *b = bucket_of(pcs, depth, size);
  if (b && cprof__heap_at_page_start(p)) {
    /* A block we still hold at this address was freed where we did not
     * see it: count it freed. */
    size_t old = live_find((uintptr_t)p);
    if (old != SIZE_MAX)
      free_locked(old);
    if ((t.nlive + 1) * 2 <= t.caplive || grow_live() == 0) {
      live_put(t.live, t.caplive, (live_t){(uintptr_t)p, (uint32_t)b->id, offset});
      t.nlive++;
      filter_add((uintptr_t)p, 1);
    } else {
      b = NULL;
    }
  }
  if (b)
    b->allocs++;
  unlock_table();
  s->guard--;
  return b;
}

void cprof__heap_release_bucket(void *bucket) { count_free(bucket); }

/* The lock, unless this thread holds it already (freeing a table it
 * replaced, or a fork prepare handler running after ours): then it looks
 * without taking it. Returns whether it took it. */
static int lock_unless_held(void) {
  int take = cprof__heap_tls.locked == 0;
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
    *offset = t.live[i].offset;
    free_locked(i);
  }
  if (took)
    unlock_table();
  return found;
}

/* ---- snapshots ---- */

int cprof__heap_snapshot(cprof__heap_snapshot_t *out) {
  memset(out, 0, sizeof *out);
  cprof__heap_guard_enter();
  lock_table();
  int rc = 0;
  if (t.nbuckets && !(out->v = malloc(t.nbuckets * sizeof *out->v))) {
    rc = -ENOMEM;
  } else {
    for (size_t id = 0; id < t.nbuckets; id++) {
      bucket_t *b = t.buckets[id];
      uint64_t frees = __atomic_load_n(&b->frees, __ATOMIC_RELAXED);
      out->v[id] = (cprof__heap_record_t){id, b->size, b->allocs, frees, b->pcs, b->depth};
      out->live_blocks += b->allocs - frees;
    }
    out->n = t.nbuckets;
    out->own_bytes = t.own_bytes + (cprof__heap_filter ? FILTER_BYTES : 0);
  }
  unlock_table();
  cprof__heap_guard_leave();
  out->rate = cprof__heap_rate();
  return rc;
}

size_t cprof__heap_records(void) {
  lock_table();
  size_t n = t.nbuckets;
  unlock_table();
  return n;
}

void cprof__heap_snapshot_free(cprof__heap_snapshot_t *s) {
  cprof__heap_guard_enter();
  free(s->v);
  cprof__heap_guard_leave();
  memset(s, 0, sizeof *s);
}
