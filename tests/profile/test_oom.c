/* Allocation failure, everywhere the builder allocates: every call returns 0
 * or -ENOMEM, nothing crashes, a failed add leaves the builder as it was,
 * and nothing leaks.
 *
 * The test replaces malloc, calloc, realloc and free (glibc supports that:
 * its own calls go through the replacement too) with versions that fail the
 * Nth allocation asked for by code of this program -- the builder, the
 * buffer, the symbolizer, all linked in statically -- and never those asked
 * for by shared libraries (libdw, libc itself), whose behaviour under
 * failure is not ours to test. N runs from 0 until a whole round completes
 * without reaching it.
 *
 * Sanitizers bring their own malloc, so under ASan or TSan this test only
 * says it skipped. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "profile/builder.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SKIP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SKIP 1
#endif
#endif

#ifndef SKIP

/* ---- the failing allocator ---- */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

/* The bounds of this program's code, from the linker. */
extern char __executable_start[], etext[];

static int armed;          /* counting and failing only while set */
static long countdown;     /* allocations left before the failing one */
static int injected;       /* a failure was injected this round */

/* The pointers our code holds, so that a round can end with none: a fixed
 * open-addressing set (this allocator cannot allocate). */
#define LIVE_CAP (1 << 16)
static void *live[LIVE_CAP];
static long nlive;
#define TOMBSTONE ((void *)1)

static size_t slot_of(void *p) { return ((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15u >> 48; }

static void live_add(void *p) {
  for (size_t i = slot_of(p);; i = (i + 1) % LIVE_CAP) {
    if (!live[i] || live[i] == TOMBSTONE) {
      live[i] = p;
      nlive++;
      return;
    }
  }
}

static void live_remove(void *p) {
  for (size_t i = slot_of(p), n = 0; live[i] && n < LIVE_CAP; i = (i + 1) % LIVE_CAP, n++) {
    if (live[i] == p) {
      live[i] = TOMBSTONE;
      nlive--;
      return;
    }
  }
}

static int ours(const void *caller) {
  return (const char *)caller >= __executable_start && (const char *)caller < etext;
}

/* Whether this allocation, asked for from `caller`, is the one to fail. */
static int should_fail(const void *caller) {
  if (!armed || !ours(caller))
    return 0;
  if (countdown-- == 0) {
    injected = 1;
    return 1;
  }
  return 0;
}

void *malloc(size_t n) {
  const void *caller = __builtin_return_address(0);
  if (should_fail(caller))
    return NULL;
  void *p = __libc_malloc(n);
  if (p && armed && ours(caller))
    live_add(p);
  return p;
}

void *calloc(size_t n, size_t size) {
  const void *caller = __builtin_return_address(0);
  if (should_fail(caller))
    return NULL;
  void *p = __libc_calloc(n, size);
  if (p && armed && ours(caller))
    live_add(p);
  return p;
}

void *realloc(void *old, size_t n) {
  const void *caller = __builtin_return_address(0);
  if (should_fail(caller))
    return NULL;
  void *p = __libc_realloc(old, n);
  if (p && armed && ours(caller)) {
    if (old)
      live_remove(old);
    live_add(p);
  }
  return p;
}

void free(void *p) {
  if (p && armed)
    live_remove(p);
  __libc_free(p);
}

/* ---- one round ---- */

#define NOINLINE __attribute__((noinline))
NOINLINE static void ptest_leaf(uintptr_t *pcs) {
  pcs[0] = (uintptr_t)__builtin_return_address(0);
  __asm__ volatile("" ::: "memory");
}

static const cprof__profile_desc_t desc = {
    .sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
    .n_sample_types = 2,
    .period_type = {"cpu", "nanoseconds"},
    .period = 10000000,
    .default_sample_type = "cpu",
};

static uintptr_t stacks[3][2];

/* Builds, writes and frees one profile. Every step may fail with -ENOMEM
 * only; returns how many steps did. */
static int round_once(void) {
  int failed = 0;
  cprof__builder_t *b = cprof__builder_new(&desc);
  if (!b)
    return 1;
  static const int64_t v[] = {1, 10000000};
  static const cprof__label_t labels[] = {{.key = "thread", .str = "worker"},
                                          {.key = "bytes", .num = 64, .num_unit = "bytes"}};
  for (int i = 0; i < 30; i++) {
    int64_t before = cprof__builder_count(b), total = cprof__builder_total(b, 1);
    int rc = i % 5 == 4 ? cprof__builder_add_pseudo(b, "[lost]", v, labels, i % 3)
                        : cprof__builder_add(b, stacks[i % 3], 2, v, labels, i % 3);
    CHECK(rc == 0 || rc == -ENOMEM);
    if (rc != 0) {
      failed++;
      /* A failed add changes nothing. */
      CHECK_EQ_INT(cprof__builder_count(b), before);
      CHECK_EQ_INT(cprof__builder_total(b, 1), total);
    }
  }
  cprof__buf_t out;
  cprof__buf_init(&out);
  int rc = cprof__builder_write_proto(b, &out);
  CHECK(rc == 0 || rc == -ENOMEM);
  failed += rc != 0;
  cprof__buf_free(&out);
  rc = cprof__builder_write_count_text(b, "samples", &out);
  CHECK(rc == 0 || rc == -ENOMEM);
  failed += rc != 0;
  cprof__buf_free(&out);
  cprof__format_stack(&out, stacks[0], 2); /* void: it must only not crash */
  cprof__buf_free(&out);
  cprof__builder_free(b);
  return failed;
}

int main(void) {
  ptest_leaf(stacks[0]);
  ptest_leaf(stacks[1]);
  stacks[0][1] = stacks[1][1] = stacks[2][1] = (uintptr_t)__builtin_return_address(0);
  stacks[2][0] = 0x10;

  /* A first round warms the process-wide symbolizer, whose instance lives
   * on between rounds. */
  CHECK_EQ_INT(round_once(), 0);

  long rounds = 0, failing_rounds = 0;
  for (long n = 0; n < 100000; n++) {
    injected = 0;
    countdown = n;
    long live_before = nlive;
    armed = 1;
    int failed = round_once();
    armed = 0;
    rounds++;
    if (!injected) {
      CHECK_EQ_INT(failed, 0);
      break;
    }
    failing_rounds += failed > 0;
    if (nlive != live_before) {
      CHECK_EQ_INT(nlive, live_before);
      fprintf(stderr, "  (leak in the round that failed allocation %ld)\n", n);
    }
  }
  fprintf(stderr, "%ld rounds, %ld of them reported -ENOMEM\n", rounds, failing_rounds);
  CHECK(rounds > 50); /* the rounds did allocate, and were counted */
  CHECK(failing_rounds > 0);
  return check_result("profile/test_oom");
}

#else

int main(void) {
  return check_skip("profile/test_oom", "under a sanitizer (it replaces malloc)");
}

#endif
