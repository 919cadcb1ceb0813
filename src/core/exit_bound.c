/* The one deadline cprof's exit handlers share (core/exit_bound.h). */
#include "core/exit_bound.h"

#include <time.h>

#include "core/clock.h"

static int64_t deadline; /* 0 until exit begins; atomic */

int64_t cprof__exit_deadline_ms(void) {
  int64_t want = cprof__now_ms(CLOCK_MONOTONIC) + CPROF_EXIT_BOUND_MS, none = 0;
  /* The first asks: later ones get its deadline. */
  if (__atomic_compare_exchange_n(&deadline, &none, want, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return want;
  return none;
}
