/* The built-in profiles, each defined beside its writer. */
#ifndef CPROF_REGISTRY_BUILTIN_H
#define CPROF_REGISTRY_BUILTIN_H

#include <stdint.h>

#include "profile/builder.h"
#include "registry/registry.h"

extern const cprof__profile_t cprof__goroutine_profile;    /* goroutine.c */
extern const cprof__profile_t cprof__heap_profile;         /* heap_profile.c */
extern const cprof__profile_t cprof__allocs_profile;       /* heap_profile.c */
extern const cprof__profile_t cprof__block_profile;        /* contention_profile.c */
extern const cprof__profile_t cprof__mutex_profile;        /* contention_profile.c */
extern const cprof__profile_t cprof__threadcreate_profile; /* contention_profile.c */
extern const cprof__profile_t cprof__wall_profile;         /* wall_profile.c */

/* Adds the sample of a record of the samplers' stack tables (heap,
 * contention): its stack, or for a record of no stack the one frame that
 * says the tables were full (CPROF_STACKS_OVER_LIMIT). 0 or -ENOMEM. */
int cprof__builtin_add_record(cprof__builder_t *b, const uintptr_t *pcs, int depth,
                              const int64_t *values, const cprof__label_t *labels, int nlabels);

#endif
