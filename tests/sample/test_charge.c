/* The mutex profile's arithmetic (src/sample/charge.h) against a waiter by
 * waiter account: every charge is exact, with thousands of waiters and a
 * clock years past its start. The old sum of absolute start times and
 * n * t overflowed int64 there (4000 waiters 30 days into a run): undefined
 * behaviour, right only when the overflows happened to wrap back, which
 * the sanitizer build's UBSan reports as "signed integer overflow". */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "sample/charge.h"

/* The reference: each waiter's start and the time from which it is not
 * yet charged, max(its start, the last charge or the first waiter's
 * start). */
#define MAX_WAITERS 10000
static int64_t start[MAX_WAITERS], from[MAX_WAITERS];
static int n;
static int64_t base;

static void ref_join(int64_t s) {
  if (n == 0)
    base = s;
  start[n] = s;
  from[n] = s > base ? s : base;
  n++;
}
static void ref_leave(int i) {
  start[i] = start[n - 1];
  from[i] = from[n - 1];
  n--;
}
static __int128 ref_take(int64_t t) {
  __int128 d = 0;
  for (int i = 0; i < n; i++) {
    d += t - from[i];
    from[i] = t;
  }
  base = t;
  return d;
}

static void test_simple(void) {
  cprof__charge_t c = {0};
  cprof__charge_join(&c, 100);
  cprof__charge_join(&c, 200);
  CHECK_EQ_INT(cprof__charge_take(&c, 1000), 900 + 800);
  cprof__charge_leave(&c, 100); /* woke after the charge: nothing more of it */
  CHECK_EQ_INT(cprof__charge_take(&c, 1500), 500);
  cprof__charge_join(&c, 1600);
  CHECK_EQ_INT(cprof__charge_take(&c, 1700), 200 + 100);
  cprof__charge_leave(&c, 200);
  cprof__charge_leave(&c, 1600);
  CHECK_EQ_INT(c.n, 0);
  CHECK_EQ_INT(cprof__charge_take(&c, 2000), 0); /* nobody waits */
}

/* 4000 waiters that started within a millisecond, 30 days after boot,
 * charged 10 ms later: 4000 * 10 ms less what they had not waited yet. */
static void test_many_waiters_late(void) {
  const int64_t day = 86400LL * 1000000000LL, t0 = 30 * day;
  cprof__charge_t c = {0};
  n = 0;
  for (int i = 0; i < 4000; i++) {
    cprof__charge_join(&c, t0 + i * 250);
    ref_join(t0 + i * 250);
  }
  int64_t got = cprof__charge_take(&c, t0 + 10000000);
  __int128 want = ref_take(t0 + 10000000);
  fprintf(stderr, "4000 waiters at 30 days: charged %lld ns, want %lld\n", (long long)got,
          (long long)want);
  CHECK(want > 0 && got == want);
}

/* Random joins, leaves and charges with up to MAX_WAITERS waiters, the
 * clock near 2^60 ns (36 years): every charge as the account says. */
static void test_random(void) {
  cprof__charge_t c = {0};
  n = 0;
  srand(7);
  int64_t t = (int64_t)1 << 60;
  int charges = 0, exact = 0;
  for (int step = 0; step < 200000; step++) {
    t += rand() % 1000;
    int r = rand() % 100;
    if ((r < 50 && n < MAX_WAITERS) || n == 0) {
      int64_t s = t - rand() % 500; /* read its clock a moment before it joined */
      cprof__charge_join(&c, s);
      ref_join(s);
    } else if (r < 80) {
      int i = rand() % n;
      cprof__charge_leave(&c, start[i]);
      ref_leave(i);
    } else {
      charges++;
      __int128 want = ref_take(t);
      exact += cprof__charge_take(&c, t) == (want > INT64_MAX ? INT64_MAX : (int64_t)want);
    }
    if (c.n != n)
      break;
  }
  fprintf(stderr, "random: %d of %d charges exact, %d waiters at the end\n", exact, charges, n);
  CHECK(charges > 1000);
  CHECK_EQ_INT(exact, charges);
  CHECK_EQ_INT(c.n, n);
}

int main(void) {
  test_simple();
  test_many_waiters_late();
  test_random();
  return check_result("test_charge");
}
