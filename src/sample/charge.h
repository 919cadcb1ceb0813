/* The mutex profile's arithmetic (locks.c): how long a lock's waiters have
 * waited since the last unlock charged them, kept in three numbers per
 * lock however many waiters it has.
 *
 * Each waiter is uncharged from u = max(its start, the last charge). At an
 * unlock at t the holder is charged the sum of t - u over the waiters, and
 * every u becomes t. With n waiters, that sum is n * (t - base) - ahead,
 * where base is the last charge (or the first waiter's start) and `ahead`
 * the sum of u - base: times relative to base, so that nothing grows with
 * the clock, and a 128-bit product and sum, so that nothing overflows with
 * the number of waiters. (Absolute times, as before, made n * t overflow
 * once the clock passed 2^63 / n ns: 4000 waiters 27 days into a run.)
 *
 * The caller serialises the calls (a spin lock per slot in locks.c). Times
 * are CLOCK_MONOTONIC ns. */
#ifndef CPROF_SAMPLE_CHARGE_H
#define CPROF_SAMPLE_CHARGE_H

#include <stdint.h>

typedef struct cprof__charge {
  int64_t n;      /* waiters */
  int64_t base;   /* the last charge's time, or the first waiter's start */
  __int128 ahead; /* over the waiters, max(start, base) - base */
} cprof__charge_t;

static inline int64_t cprof__charge_from(const cprof__charge_t *c, int64_t start) {
  return start > c->base ? start - c->base : 0;
}

/* A waiter that started waiting at `start` joins. */
static inline void cprof__charge_join(cprof__charge_t *c, int64_t start) {
  if (c->n == 0)
    *c = (cprof__charge_t){0, start, 0};
  c->ahead += cprof__charge_from(c, start);
  c->n++;
}

/* The waiter that started at `start` got the lock (or gave up): what is
 * not yet charged of its wait is nobody's. */
static inline void cprof__charge_leave(cprof__charge_t *c, int64_t start) {
  c->ahead -= cprof__charge_from(c, start);
  c->n--;
}

/* An unlock at `t`: the wait the waiters have accumulated since the last
 * charge, in ns (at most INT64_MAX), now charged. */
static inline int64_t cprof__charge_take(cprof__charge_t *c, int64_t t) {
  if (c->n <= 0)
    return 0;
  if (t < c->base)
    t = c->base;
  __int128 d = (__int128)c->n * (t - c->base) - c->ahead;
  c->base = t;
  c->ahead = 0;
  return d <= 0 ? 0 : d > INT64_MAX ? INT64_MAX : (int64_t)d;
}

#endif
