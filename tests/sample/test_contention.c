/* The contention sampler without the pthread wrappers (sanitizer builds
 * have none): events are fed to it by hand, as src/interpose/locks.c feeds
 * them. Checks Go's block sampling (short waits sampled in proportion and
 * weighed up: totals unbiased), the mutex fraction, that off records
 * nothing, deltas by bucket id, and both writers of each profile. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "registry/contention_profile.h"
#include "sample/contention.h"

/* The wrappers: like locks.c's, they report with their own return
 * address, so stacks start in their callers. */
__attribute__((noinline)) static void wait_here(int64_t ns) {
  cprof__block_event(ns, (uintptr_t)__builtin_return_address(0));
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void unlock_here(int64_t ns) {
  cprof__mutex_event(ns, (uintptr_t)__builtin_return_address(0));
  __asm__ volatile("" ::: "memory");
}

static void totals(cprof__contention_kind_t kind, const cprof__contention_snapshot_t *base,
                   double *count, double *delay) {
  cprof__contention_snapshot_t s;
  CHECK_EQ_INT(cprof__contention_snapshot(kind, &s), 0);
  *count = *delay = 0;
  for (size_t i = 0; i < s.n; i++) {
    *count += s.v[i].count - (base && i < base->n ? base->v[i].count : 0);
    *delay += (double)(s.v[i].delay - (base && i < base->n ? base->v[i].delay : 0));
  }
  cprof__contention_snapshot_free(&s);
}

/* Waits of 1 µs at rate 100 µs: 1 in 100 is sampled, each weighed as 100
 * waits and 100 µs, so the totals estimate the truth. The standard error
 * of 20,000 waits sampled 1 in 100 is 1/sqrt(200) = 7 %: allow 4 se. */
static void test_block_short_waits(void) {
  cprof__block_set_rate(100000);
  double c0, d0, c1, d1;
  totals(CPROF_BLOCK, NULL, &c0, &d0);
  for (int i = 0; i < 20000; i++)
    wait_here(1000);
  totals(CPROF_BLOCK, NULL, &c1, &d1);
  double count = c1 - c0, delay = d1 - d0;
  fprintf(stderr, "block, short waits: count %.0f (truth 20000), delay %.0f ns (truth 2e7)\n",
          count, delay);
  CHECK(fabs(count / 20000 - 1) < 0.28);
  CHECK(fabs(delay / 2e7 - 1) < 0.28);
  CHECK(fabs(delay / count - 1000) < 1); /* each sample weighs rate/delay waits of rate ns */
}

/* Waits at least as long as the rate are all recorded, as they are. */
static void test_block_long_waits(void) {
  cprof__block_set_rate(1000);
  double c0, d0, c1, d1;
  totals(CPROF_BLOCK, NULL, &c0, &d0);
  for (int i = 0; i < 100; i++)
    wait_here(5000);
  totals(CPROF_BLOCK, NULL, &c1, &d1);
  CHECK_EQ_INT(llround(c1 - c0), 100);
  CHECK_EQ_INT(llround(d1 - d0), 500000);
}

static void test_off(void) {
  cprof__block_set_rate(0);
  cprof__mutex_set_fraction(0);
  CHECK(!cprof__contention_enabled(CPROF_CONTENTION_BLOCK_ON | CPROF_CONTENTION_MUTEX_ON));
  double c0, d0, c1, d1, m0, e0, m1, e1;
  totals(CPROF_BLOCK, NULL, &c0, &d0);
  totals(CPROF_MUTEX, NULL, &m0, &e0);
  for (int i = 0; i < 1000; i++) {
    wait_here(1000000);
    unlock_here(1000000);
  }
  totals(CPROF_BLOCK, NULL, &c1, &d1);
  totals(CPROF_MUTEX, NULL, &m1, &e1);
  CHECK(c1 == c0 && d1 == d0 && m1 == m0 && e1 == e0);
}

/* 1 in 10 unlocks recorded, unscaled in the buckets; the writer scales. */
static void test_mutex_fraction(void) {
  CHECK_EQ_INT(cprof__mutex_set_fraction(10), 0);
  CHECK(cprof__contention_enabled(CPROF_CONTENTION_MUTEX_ON));
  cprof__contention_snapshot_t base;
  CHECK_EQ_INT(cprof__contention_snapshot(CPROF_MUTEX, &base), 0);
  for (int i = 0; i < 20000; i++)
    unlock_here(3000);
  double count, delay;
  totals(CPROF_MUTEX, &base, &count, &delay);
  fprintf(stderr, "mutex 1 in 10: %.0f recorded of 20000\n", count);
  CHECK(fabs(count / 2000 - 1) < 0.1); /* se 2.2 % */
  CHECK_EQ_INT(llround(delay), llround(count) * 3000);

  /* The profile multiplies by the fraction; the delta holds only what
   * happened after base. */
  cprof__contention_snapshot_t now;
  CHECK_EQ_INT(cprof__contention_snapshot(CPROF_MUTEX, &now), 0);
  CHECK_EQ_INT(now.setting, 10);
  cprof__buf_t out;
  cprof__buf_init(&out);
  CHECK_EQ_INT(cprof__contention_profile_write(CPROF_MUTEX, &now, &base, 1, 0, &out), 0);
  cprof__buf_putc(&out, '\0');
  CHECK(strncmp(out.data, "--- mutex:\ncycles/second=1000000000\nsampling period=10\n", 55) == 0);
  char line[64];
  snprintf(line, sizeof line, "\n%lld %lld @", (long long)llround(delay), (long long)llround(count));
  CHECK(strstr(out.data, line) != NULL); /* unscaled in the text: pprof scales it */
  CHECK(strstr(out.data, "test_mutex_fraction") != NULL); /* the stack starts at the caller */
  cprof__buf_free(&out);
  cprof__buf_init(&out);
  CHECK_EQ_INT(cprof__contention_profile_write(CPROF_MUTEX, &now, &base, 0, 1000, &out), 0);
  CHECK(out.len > 20 && (unsigned char)out.data[0] == 0x1f); /* gzip */
  cprof__buf_free(&out);
  cprof__contention_snapshot_free(&now);
  cprof__contention_snapshot_free(&base);
  /* Off: the last fraction still scales what was recorded. */
  cprof__mutex_set_fraction(0);
  CHECK_EQ_INT(cprof__contention_snapshot(CPROF_MUTEX, &now), 0);
  CHECK_EQ_INT(now.setting, 10);
  cprof__contention_snapshot_free(&now);
}

static void test_block_text(void) {
  cprof__block_set_rate(1);
  wait_here(123456789);
  cprof__contention_snapshot_t now;
  CHECK_EQ_INT(cprof__contention_snapshot(CPROF_BLOCK, &now), 0);
  cprof__buf_t out;
  cprof__buf_init(&out);
  CHECK_EQ_INT(cprof__contention_profile_write(CPROF_BLOCK, &now, NULL, 1, 0, &out), 0);
  cprof__buf_putc(&out, '\0');
  CHECK(strncmp(out.data, "--- contention:\ncycles/second=1000000000\n", 41) == 0);
  CHECK(strstr(out.data, "test_block_text") != NULL);
  cprof__buf_free(&out);
  cprof__contention_snapshot_free(&now);
  cprof__block_set_rate(0);
}

static void test_threadcreate(void) {
  cprof__threadcreate_event((uintptr_t)__builtin_return_address(0));
  CHECK(cprof__contention_records(CPROF_THREADCREATE) >= 1);
  cprof__contention_snapshot_t now;
  CHECK_EQ_INT(cprof__contention_snapshot(CPROF_THREADCREATE, &now), 0);
  cprof__buf_t out;
  cprof__buf_init(&out);
  CHECK_EQ_INT(cprof__contention_profile_write(CPROF_THREADCREATE, &now, NULL, 1, 0, &out), 0);
  cprof__buf_putc(&out, '\0');
  CHECK(strncmp(out.data, "threadcreate profile: total ", 28) == 0);
  cprof__buf_free(&out);
  cprof__contention_snapshot_free(&now);
}

int main(void) {
  test_block_short_waits();
  test_block_long_waits();
  test_off();
  test_mutex_fraction();
  test_block_text();
  test_threadcreate();
  return check_result("contention");
}
