/* The built-in profiles, each defined beside its writer. */
#ifndef CPROF_REGISTRY_BUILTIN_H
#define CPROF_REGISTRY_BUILTIN_H

#include "registry/registry.h"

extern const cprof__profile_t cprof__goroutine_profile;    /* goroutine.c */
extern const cprof__profile_t cprof__heap_profile;         /* heap_profile.c */
extern const cprof__profile_t cprof__allocs_profile;       /* heap_profile.c */
extern const cprof__profile_t cprof__block_profile;        /* contention_profile.c */
extern const cprof__profile_t cprof__mutex_profile;        /* contention_profile.c */
extern const cprof__profile_t cprof__threadcreate_profile; /* contention_profile.c */
extern const cprof__profile_t cprof__wall_profile;         /* wall_profile.c */

#endif
