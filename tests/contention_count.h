/* The events a contention profile holds, summed over its records: for the
 * tests that check what the lock wrappers recorded. -1 when no snapshot. */
#ifndef CPROF_TESTS_CONTENTION_COUNT_H
#define CPROF_TESTS_CONTENTION_COUNT_H

#include "sample/contention.h"

static inline double total_count(cprof__contention_kind_t kind) {
  cprof__contention_snapshot_t s;
  double n = 0;
  if (cprof__contention_snapshot(kind, &s) != 0)
    return -1;
  for (size_t i = 0; i < s.n; i++)
    n += s.v[i].count;
  cprof__contention_snapshot_free(&s);
  return n;
}

#endif
