/* The heap sampler without the malloc wrappers (sanitizer builds have none):
 * allocations are fed to it by hand, at made-up addresses, the way
 * src/interpose/malloc.c feeds it. Checks the statistics (estimates within a
 * few standard errors of the truth), frees, the guard, the stacks both
 * unwinders record, and the two text and proto writers. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "registry/heap_profile.h"
#include "core/guard.h"
#include "sample/heap.h"
#include "sample/stack_table.h"

/* The headers malloc.c would write before each sampled block, kept here
 * instead, since these blocks are made-up addresses: p to its sample. */
#define HEADERS (1 << 17)
static struct {
  uintptr_t p;
  cprof__heap_sample_t sample;
} headers[HEADERS];
static pthread_mutex_t headers_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t header_slot(uintptr_t p) {
  size_t i = (size_t)((p >> 4) * 0x9e3779b97f4a7c15ull >> 47);
  while (headers[i].p && headers[i].p != p)
    i = (i + 1) & (HEADERS - 1);
  return i;
}

/* What malloc.c's wrappers do, but for an allocation at address p. */
__attribute__((noinline)) static void fake_malloc(uintptr_t p, size_t size) {
  if (cprof__heap_crossing(size) && cprof__heap_should_sample(size)) {
    cprof__heap_sample_t smp;
    cprof__heap_record((void *)p, size, 0, (uintptr_t)__builtin_return_address(0), &smp);
    if (!cprof__heap_at_page_start((void *)p)) {
      pthread_mutex_lock(&headers_lock);
      size_t i = header_slot(p);
      headers[i].p = p;
      headers[i].sample = smp;
      pthread_mutex_unlock(&headers_lock);
    }
  }
  __asm__ volatile("" ::: "memory"); /* no tail call: the wrapper has a frame */
}

/* malloc.c reads the header of most pointers, and asks the filter and the
 * table about those at a page's start, which most of these fake ones are. */
__attribute__((noinline)) static void fake_free(uintptr_t p) {
  uint32_t offset;
  if (cprof__heap_at_page_start((void *)p)) {
    if (cprof__heap_maybe_sampled((void *)p))
      cprof__heap_release((void *)p, &offset);
  } else {
    cprof__heap_sample_t smp = {NULL, 0, 0};
    pthread_mutex_lock(&headers_lock);
    size_t i = header_slot(p);
    if (headers[i].p == p) { /* delete, moving later entries of the run back */
      smp = headers[i].sample;
      headers[i].p = 0;
      for (size_t j = (i + 1) & (HEADERS - 1); headers[j].p; j = (j + 1) & (HEADERS - 1)) {
        uintptr_t q = headers[j].p;
        cprof__heap_sample_t moved = headers[j].sample;
        headers[j].p = 0;
        size_t k = header_slot(q);
        headers[k].p = q;
        headers[k].sample = moved;
      }
    }
    pthread_mutex_unlock(&headers_lock);
    cprof__heap_release_sample(&smp);
  }
  __asm__ volatile("" ::: "memory");
}

/* Estimated totals: index 0 alloc_objects, 1 alloc_space, 2 inuse_objects,
 * 3 inuse_space, summed over the snapshot's buckets. */
static void totals(const cprof__heap_snapshot_t *s, int64_t out[4]) {
  memset(out, 0, 4 * sizeof *out);
  for (size_t i = 0; i < s->n; i++) {
    int64_t v[4];
    cprof__heap_values(&s->v[i], NULL, 1, v);
    for (int k = 0; k < 4; k++)
      out[k] += v[k];
  }
}

static int within(int64_t got, double want, double tolerance) {
  return got >= want * (1 - tolerance) && got <= want * (1 + tolerance);
}

#define BASE ((uintptr_t)0x100000000000)

/* A sample's weight, 1 / (1 - exp(-size/rate)) allocations, against
 * libm's expm1 over sizes from far below the rate to far above it. */
static void test_weight(void) {
  CHECK_EQ_INT(cprof__heap_weight(4096, 4096), 103676); /* 65536 / (1 - 1/e) = 103675.9 */
  CHECK_EQ_INT(cprof__heap_weight(100, 1), CPROF_HEAP_WEIGHT_ONE); /* rate 1: every one */
  CHECK_EQ_INT(cprof__heap_weight(0, 4096), CPROF_HEAP_WEIGHT_ONE); /* malloc(0) counts one */
  CHECK_EQ_INT(cprof__heap_weight(1 << 30, 4096), CPROF_HEAP_WEIGHT_ONE); /* always sampled */
  int bad = 0;
  for (uint64_t size = 1; size < ((uint64_t)1 << 34); size = size * 3 / 2 + 1) {
    double want = CPROF_HEAP_WEIGHT_ONE / -expm1(-(double)size / 524288);
    double got = (double)cprof__heap_weight(size, 524288);
    bad += fabs(got - want) > 0.5 + want * 1e-9;
  }
  CHECK_EQ_INT(bad, 0);
}

/* 400000 blocks of 1 KiB and 100000 of 16 KiB at rate 4096: about 185000
 * samples, so the estimates are good to a few tenths of a percent; 3 %
 * is many standard errors away. Then every other block is freed. */
static void test_estimates(void) {
  cprof__heap_configure(4096, CPROF_UNWIND_FP);
  cprof__heap_snapshot_t before, s;
  CHECK_EQ_INT(cprof__heap_snapshot(&before), 0);
  for (uintptr_t i = 0; i < 500000; i++)
    fake_malloc(BASE + i * 0x10000, i % 5 == 4 ? 16384 : 1024);
  double bytes = 400000.0 * 1024 + 100000.0 * 16384;
  CHECK_EQ_INT(cprof__heap_snapshot(&s), 0);
  int64_t t[4], t0[4];
  totals(&s, t);
  totals(&before, t0);
  CHECK(within(t[0] - t0[0], 500000, 0.03));
  CHECK(within(t[1] - t0[1], bytes, 0.03));
  CHECK(within(t[3] - t0[3], bytes, 0.03));
  CHECK(s.live_blocks > 150000 && s.live_blocks < 220000);
  /* One stack, two sizes: two buckets, in the order first sampled. */
  CHECK_EQ_INT((int)(s.n - before.n), 2);
  cprof__heap_snapshot_free(&s);

  for (uintptr_t i = 0; i < 500000; i += 2)
    fake_free(BASE + i * 0x10000);
  CHECK_EQ_INT(cprof__heap_snapshot(&s), 0);
  totals(&s, t);
  CHECK(within(t[1] - t0[1], bytes, 0.03)); /* allocated stays allocated */
  CHECK(within(t[3] - t0[3], bytes / 2, 0.04));
  CHECK(within(t[2] - t0[2], 250000, 0.04));
  for (uintptr_t i = 1; i < 500000; i += 2)
    fake_free(BASE + i * 0x10000);
  cprof__heap_snapshot_free(&s);
  CHECK_EQ_INT(cprof__heap_snapshot(&s), 0);
  CHECK_EQ_INT((int)s.live_blocks, (int)before.live_blocks);
  totals(&s, t);
  CHECK_EQ_INT(t[3], t0[3]);
  /* Bucket ids are stable: the snapshot before lists the same ones first. */
  for (size_t i = 0; i < before.n; i++)
    CHECK(s.v[i].id == before.v[i].id && s.v[i].pcs == before.v[i].pcs);
  cprof__heap_snapshot_free(&s);
  cprof__heap_snapshot_free(&before);
}

/* One call site, thousands of sizes from 16 B to 64 KiB: one stack, so its
 * first few sizes get slots of their own and the rest one slot together;
 * the estimates stay unbiased, since each sample carries its own weight. */
__attribute__((noinline)) static void mixed_site(uintptr_t p, size_t size) {
  fake_malloc(p, size);
  __asm__ volatile("" ::: "memory");
}

static void test_mixed_sizes(void) {
  cprof__heap_configure(4096, CPROF_UNWIND_FP);
  cprof__heap_snapshot_t before, s;
  CHECK_EQ_INT(cprof__heap_snapshot(&before), 0);
  uint64_t x = 88172645463325252ull;
  double bytes = 0;
  const uintptr_t base = BASE + 0x40000000000;
  for (uintptr_t i = 0; i < 300000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t size = (size_t)(16 * exp2((double)(x >> 11) * 0x1.0p-53 * 12));
    bytes += (double)size;
    mixed_site(base + i * 0x20000, size);
  }
  CHECK_EQ_INT(cprof__heap_snapshot(&s), 0);
  size_t exact = 0, mixed = 0;
  for (size_t i = before.n; i < s.n; i++) {
    exact += !s.v[i].mixed;
    mixed += s.v[i].mixed;
  }
  CHECK_EQ_INT(exact, 4);
  CHECK_EQ_INT(mixed, 1);
  CHECK_EQ_INT(s.buckets - before.buckets, 1);
  int64_t t[4], t0[4];
  totals(&s, t);
  totals(&before, t0);
  CHECK(within(t[0] - t0[0], 300000, 0.03));
  CHECK(within(t[1] - t0[1], bytes, 0.03));
  CHECK(within(t[3] - t0[3], bytes, 0.03));
  cprof__heap_snapshot_free(&s);
  for (uintptr_t i = 0; i < 300000; i++)
    fake_free(base + i * 0x20000);
  CHECK_EQ_INT(cprof__heap_snapshot(&s), 0);
  totals(&s, t);
  CHECK_EQ_INT(t[2], t0[2]);
  CHECK_EQ_INT(t[3], t0[3]);
  cprof__heap_snapshot_free(&s);
  cprof__heap_snapshot_free(&before);
}

static void test_guard_and_off(void) {
  cprof__heap_configure(64, CPROF_UNWIND_FP);
  cprof__heap_snapshot_t a, b;
  CHECK_EQ_INT(cprof__heap_snapshot(&a), 0);
  cprof__guard_enter();
  for (uintptr_t i = 0; i < 10000; i++)
    fake_malloc(BASE + i * 64, 64);
  cprof__guard_leave();
  cprof__heap_configure(0, CPROF_UNWIND_FP);
  for (uintptr_t i = 0; i < 10000; i++)
    fake_malloc(BASE + i * 64, 64);
  CHECK_EQ_INT(cprof__heap_snapshot(&b), 0);
  CHECK_EQ_INT((int)b.live_blocks, (int)a.live_blocks);
  int64_t ta[4], tb[4];
  totals(&a, ta);
  totals(&b, tb);
  CHECK_EQ_INT(tb[0] - ta[0], 0);
  CHECK_EQ_INT((int)b.rate, 0);
  cprof__heap_snapshot_free(&a);
  cprof__heap_snapshot_free(&b);
}

/* At rate 1 every allocation is a sample, as under Go's MemProfileRate=1,
 * however small: a distance of mean 1 byte drawn each time sampled a
 * 1-byte block 63 % of the time, at a weight of one. */
static void test_rate_one(void) {
  cprof__heap_configure(1, CPROF_UNWIND_FP);
  int sampled = 0;
  for (size_t size = 1; size <= 8; size++)
    for (int i = 0; i < 1000; i++)
      sampled += cprof__heap_crossing(size) && cprof__heap_should_sample(size);
  CHECK_EQ_INT(sampled, 8000);
}

/* The recorded stack starts in the function that called the allocator,
 * then its caller: with either unwinder. */
__attribute__((noinline)) static void allocating_site(uintptr_t p) {
  fake_malloc(p, 1 << 20);
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void caller_of_site(uintptr_t p) {
  allocating_site(p);
  __asm__ volatile("" ::: "memory");
}

static void test_stacks(cprof__unwinder_t how) {
  cprof__heap_configure(1, how); /* 1 MiB at rate 1: always sampled */
  uintptr_t p = BASE + ((uintptr_t)how + 1) * 0x1000000;
  caller_of_site(p);
  cprof__heap_snapshot_t s;
  CHECK_EQ_INT(cprof__heap_snapshot(&s), 0);
  const cprof__heap_record_t *r = NULL;
  for (size_t i = 0; i < s.n; i++)
    if (s.v[i].size == 1 << 20 && s.v[i].allocs - s.v[i].frees == 1)
      r = &s.v[i];
  CHECK(r != NULL);
  if (r) {
    CHECK(r->depth >= 3);
    uintptr_t site = (uintptr_t)allocating_site, caller = (uintptr_t)caller_of_site;
    CHECK(r->pcs[0] > site && r->pcs[0] < site + 64);
    CHECK(r->depth >= 2 && r->pcs[1] > caller && r->pcs[1] < caller + 64);
  }
  fake_free(p);
  cprof__heap_snapshot_free(&s);
}

/* Threads sampling and freeing at once; under TSan, the races are checked.
 * (Outside sanitizers the test is linked with the real wrappers too, so
 * pthread_create's own allocations are sampled: count 256-byte blocks.) */
static uint64_t live_of_size(const cprof__heap_snapshot_t *s, uint64_t size) {
  uint64_t n = 0;
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i].size == size)
      n += s->v[i].allocs - s->v[i].frees;
  return n;
}

static void *churn(void *arg) {
  uintptr_t base = BASE + (uintptr_t)arg * 0x100000000;
  for (int round = 0; round < 20; round++) {
    for (uintptr_t i = 0; i < 2000; i++)
      fake_malloc(base + i * 256, 256);
    for (uintptr_t i = 0; i < 2000; i++)
      fake_free(base + i * 256);
  }
  return NULL;
}

static void test_threads(void) {
  cprof__heap_configure(512, CPROF_UNWIND_FP);
  cprof__heap_snapshot_t a, b;
  CHECK_EQ_INT(cprof__heap_snapshot(&a), 0);
  pthread_t t[4];
  for (long i = 0; i < 4; i++)
    CHECK_EQ_INT(pthread_create(&t[i], NULL, churn, (void *)(i + 1)), 0);
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  CHECK_EQ_INT(cprof__heap_snapshot(&b), 0);
  CHECK_EQ_INT((int)live_of_size(&b, 256), (int)live_of_size(&a, 256)); /* all freed */
  int64_t ta[4], tb[4];
  totals(&a, ta);
  totals(&b, tb);
  CHECK(within(tb[1] - ta[1], 4.0 * 20 * 2000 * 256, 0.1));
  cprof__heap_snapshot_free(&a);
  cprof__heap_snapshot_free(&b);
}

/* The writers: the text names the rate as Go does and lists the site; a
 * delta against the same snapshot is empty. */
static void test_writers(void) {
  cprof__heap_configure(4096, CPROF_UNWIND_FP);
  caller_of_site(BASE + 0x7000000);
  cprof__heap_snapshot_t s;
  CHECK_EQ_INT(cprof__heap_snapshot(&s), 0);
  cprof__buf_t text, pb, delta;
  cprof__buf_init(&text);
  cprof__buf_init(&pb);
  cprof__buf_init(&delta);
  CHECK_EQ_INT(cprof__heap_profile_write(&s, NULL, 1, "inuse_space", 0, &text), 0);
  cprof__buf_putc(&text, '\0');
  CHECK(text.data && strncmp(text.data, "heap profile: ", 14) == 0);
  CHECK(text.data && strstr(text.data, "] @ heap/8192\n") != NULL);
  CHECK(text.data && strstr(text.data, "allocating_site+0x") != NULL);
  CHECK(text.data && strstr(text.data, "\n# SampledLive = ") != NULL);
  CHECK(text.data && strstr(text.data, "\n# VmRSS = ") != NULL);
  CHECK_EQ_INT(cprof__heap_profile_write(&s, NULL, 0, "inuse_space", 0, &pb), 0);
  CHECK(pb.len > 20 && (unsigned char)pb.data[0] == 0x1f); /* gzip */
  CHECK_EQ_INT(cprof__heap_profile_write(&s, &s, 1, "inuse_space", 0, &delta), 0);
  cprof__buf_putc(&delta, '\0');
  CHECK(delta.data && strncmp(delta.data, "heap profile: 0: 0 [0: 0] @ heap/8192\n", 38) == 0);
  CHECK(delta.data && strstr(delta.data, "allocating_site") == NULL);
  fake_free(BASE + 0x7000000);
  cprof__buf_free(&text);
  cprof__buf_free(&pb);
  cprof__buf_free(&delta);
  cprof__heap_snapshot_free(&s);
}

/* 4096 distinct stacks, by the path through a binary tree of calls. */
__attribute__((noinline)) static void leaf_alloc(uintptr_t p) {
  fake_malloc(p, 1 << 20);
  __asm__ volatile("" ::: "memory");
}
static void tree(uintptr_t p, unsigned path, int depth);
__attribute__((noinline)) static void tree_left(uintptr_t p, unsigned path, int depth) {
  tree(p, path, depth);
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void tree_right(uintptr_t p, unsigned path, int depth) {
  tree(p, path, depth);
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void tree(uintptr_t p, unsigned path, int depth) {
  if (depth == 0)
    leaf_alloc(p);
  else if (path & 1)
    tree_left(p, path >> 1, depth - 1);
  else
    tree_right(p, path >> 1, depth - 1);
  __asm__ volatile("" ::: "memory");
}

/* Past CPROF_MAX_MEMORY, samples of new stacks are counted in one record
 * without a stack, and the tables stay under the limit. */
static void test_memory_limit(void) {
  cprof__heap_configure(1, CPROF_UNWIND_FP);
  size_t old = cprof__stack_memory_limit();
  size_t limit = cprof__stack_memory_used() + (1 << 20);
  cprof__stack_memory_set_limit(limit);
  cprof__heap_snapshot_t before, s;
  CHECK_EQ_INT(cprof__heap_snapshot(&before), 0);
  const uintptr_t base = BASE + 0x50000000000;
  for (unsigned i = 0; i < 4096; i++)
    tree(base + i * 0x200000, i, 12);
  CHECK(cprof__stack_memory_used() <= limit);
  CHECK_EQ_INT(cprof__heap_snapshot(&s), 0);
  uint64_t kept = 0, over = 0;
  for (size_t i = before.n; i < s.n; i++)
    *(s.v[i].depth ? &kept : &over) += s.v[i].allocs;
  CHECK_EQ_INT(kept + over, 4096); /* every sample counted */
  CHECK(kept > 100 && over > 100);
  cprof__buf_t text;
  cprof__buf_init(&text);
  CHECK_EQ_INT(cprof__heap_profile_write(&s, &before, 1, "inuse_space", 0, &text), 0);
  cprof__buf_putc(&text, '\0');
  CHECK(text.data && strstr(text.data, CPROF_STACKS_OVER_LIMIT) != NULL);
  CHECK(text.data && strstr(text.data, "tree_left") != NULL);
  cprof__buf_free(&text);
  cprof__heap_snapshot_free(&s);
  for (unsigned i = 0; i < 4096; i++)
    fake_free(base + i * 0x200000);
  CHECK_EQ_INT(cprof__heap_snapshot(&s), 0);
  CHECK_EQ_INT((int)s.live_blocks, (int)before.live_blocks);
  cprof__heap_snapshot_free(&s);
  cprof__heap_snapshot_free(&before);
  cprof__stack_memory_set_limit(old);
}

int main(void) {
  test_weight();
  test_estimates();
  test_guard_and_off();
  test_rate_one();
  test_stacks(CPROF_UNWIND_FP);
  test_stacks(CPROF_UNWIND_DWARF);
  test_threads();
  test_writers();
  test_mixed_sizes();
  test_memory_limit();
  return check_result("heap");
}
