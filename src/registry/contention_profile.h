/* The block, mutex and threadcreate profiles: a snapshot of the contention
 * buckets in, Go's profile out (runtime/pprof's printCountCycleProfile and
 * printCountProfile, and their legacy text forms). */
#ifndef CPROF_REGISTRY_CONTENTION_PROFILE_H
#define CPROF_REGISTRY_CONTENTION_PROFILE_H

#include "core/buf.h"
#include "sample/contention.h"

/* Appends the profile of `now`, minus `base` when it is not NULL (a delta).
 * block and mutex: sample types contentions/count and delay/nanoseconds,
 * period type contentions/count, period 1; mutex values multiplied by the
 * fraction. threadcreate: threadcreate/count. debug 1: Go's text ("---
 * contention:" or "--- mutex:" with cycles/second=1000000000, as cprof's
 * cycles are nanoseconds; "threadcreate profile: total N"). 0 or a negative
 * errno. */
int cprof__contention_profile_write(cprof__contention_kind_t kind,
                                    const cprof__contention_snapshot_t *now,
                                    const cprof__contention_snapshot_t *base, int debug,
                                    int64_t duration_ns, cprof__buf_t *out);

#endif
