/* The heap profile: a snapshot of the heap sampler's buckets in, Go's heap
 * profile out. One piece shared by /debug/pprof/heap, /allocs and the
 * heap.pb.gz that CPROF_OUTPUT writes at exit. */
#ifndef CPROF_REGISTRY_HEAP_PROFILE_H
#define CPROF_REGISTRY_HEAP_PROFILE_H

#include "core/buf.h"
#include "sample/heap.h"

/* A record's four values, alloc_objects, alloc_space, inuse_objects and
 * inuse_space, minus base's when base is not NULL: as sampled, or (scaled)
 * as estimated from the samples' weights, Go's scaleHeapSample done per
 * sample. */
void cprof__heap_values(const cprof__heap_record_t *r, const cprof__heap_record_t *base,
                        int scaled, int64_t v[4]);

/* Appends the profile of `now`, minus `base` when it is not NULL (a delta:
 * only what happened between the two). debug 0: gzip-compressed
 * profile.proto with sample types alloc_objects, alloc_space,
 * inuse_objects, inuse_space (scaled), period type space/bytes, period the
 * rate, and default_type ("inuse_space" for /heap, "alloc_space" for
 * /allocs). debug 1: Go's legacy text heap profile, then the process's
 * memory statistics. duration_ns is the delta's length, or 0. 0 or a
 * negative errno. */
int cprof__heap_profile_write(const cprof__heap_snapshot_t *now, const cprof__heap_snapshot_t *base,
                              int debug, const char *default_type, int64_t duration_ns,
                              cprof__buf_t *out);

#endif
