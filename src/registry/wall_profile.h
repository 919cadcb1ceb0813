/* The wall-clock profile, /debug/pprof/wall: the wall sampler's ticks
 * (sample/wall.h) in, profile.proto out. */
#ifndef CPROF_REGISTRY_WALL_PROFILE_H
#define CPROF_REGISTRY_WALL_PROFILE_H

#include "core/buf.h"
#include "sample/wall.h"

/* Samples as o says (its sink and arg are the profile's own) and appends
 * the gzip-compressed profile.proto to out: sample types samples/count
 * and wall/nanoseconds, period type wall/nanoseconds with the period of
 * the rate used at the end, every sample labelled thread=NAME,
 * state=running|sleeping|unknown, syscall=CALL when sleeping in one,
 * region=NAME while it is in a region (cprof_region_begin: the innermost),
 * and the thread's own labels. res says what the sampling did. 0,
 * -ECANCELED, or a negative errno. */
int cprof__wall_profile_take(const cprof__wall_opts_t *o, cprof__buf_t *out,
                             cprof__wall_result_t *res);

/* The name of system call nr ("futex", "epoll_wait"), for the calls a
 * thread waits in; "syscall NR" for others, in buf. */
const char *cprof__syscall_name(long nr, char *buf, size_t len);

#endif
