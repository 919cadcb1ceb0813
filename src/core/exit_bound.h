/* How long cprof may hold a program's exit: its network waits (the push's
 * last round, a debug file being fetched) end by then, name lookups
 * included, whatever the network does. */
#ifndef CPROF_CORE_EXIT_BOUND_H
#define CPROF_CORE_EXIT_BOUND_H

#include <stdint.h>

#define CPROF_EXIT_BOUND_MS 2000

/* The CLOCK_MONOTONIC millisecond by which cprof's exit handlers have
 * returned: CPROF_EXIT_BOUND_MS after the first of them asked, so that
 * they share one bound rather than add theirs up. */
int64_t cprof__exit_deadline_ms(void);

#endif
