/* A CPU profile in the making: drained samples in, profile.proto out. One
 * piece shared by /debug/pprof/profile and the whole-run profile that
 * CPROF_OUTPUT writes at exit. */
#ifndef CPROF_REGISTRY_CPU_PROFILE_H
#define CPROF_REGISTRY_CPU_PROFILE_H

#include "core/buf.h"
#include "sample/cpu.h"

typedef struct cprof__cpu_profile cprof__cpu_profile_t;

/* A profile sampled at hz, started now. NULL on allocation failure. */
cprof__cpu_profile_t *cprof__cpu_profile_new(int hz);
/* Makes the profile's window begin now: time_nanos and the start of its
 * duration. For a profile made before its window opened. */
void cprof__cpu_profile_restart(cprof__cpu_profile_t *p);
/* Closes the profile's window now: its duration ends here, however long
 * the writing takes after. */
void cprof__cpu_profile_end(cprof__cpu_profile_t *p);
/* The sink to hand to cprof__cpu_drain/cprof__cpu_stop (arg: the profile). */
void cprof__cpu_profile_add(void *arg, const cprof__cpu_sample_t *s);
/* Adds the lost samples as a frame of their own, sets the duration (to
 * the end, or to now when it has none), and
 * writes the gzip-compressed profile.proto. 0 or a negative errno. */
int cprof__cpu_profile_write(cprof__cpu_profile_t *p, uint64_t lost, cprof__buf_t *out);
void cprof__cpu_profile_free(cprof__cpu_profile_t *p);

#endif
