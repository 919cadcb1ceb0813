/* The wall-clock profile, /debug/pprof/wall: the wall sampler's ticks
 * (sample/wall.h) in, profile.proto out. */
#ifndef CPROF_REGISTRY_WALL_PROFILE_H
#define CPROF_REGISTRY_WALL_PROFILE_H

#include "core/buf.h"
#include "sample/wall.h"

/* A reader of the one wall-clock recording (wall_profile.c): joins it,
 * or starts it at o's hz, budget and unwinder, for o->duration_ms from
 * now, waiting with o->wait (a client that went away: -ECANCELED), and
 * appends the gzip-compressed profile.proto of its own window to out:
 * sample types samples/count and wall/nanoseconds, period type
 * wall/nanoseconds with the period of the rate the window was sampled at,
 * every sample labelled thread=NAME, state=running|sleeping|unknown,
 * syscall=CALL when sleeping in one, region=NAME while it is in a region
 * (cprof_region_begin: the innermost), and the thread's own labels. res
 * says what the sampling did in the window. 0; -ERANGE when flags has
 * CPROF_WALL_EXPLICIT_HZ and the recording runs at another rate (res->hz:
 * that rate); -EUSERS when 16 readers are open; -ECANCELED; or a negative
 * errno. o->sink, arg, until and on_tick are the recording's own. */
#define CPROF_WALL_EXPLICIT_HZ 1
int cprof__wall_profile_take(const cprof__wall_opts_t *o, int flags, cprof__buf_t *out,
                             cprof__wall_result_t *res);

/* The name of system call nr ("futex", "epoll_wait"), for the calls a
 * thread waits in; "syscall NR" for others, in buf. */
const char *cprof__syscall_name(long nr, char *buf, size_t len);

#endif
