/* The execution trace as a recording, for every consumer (the HTTP route,
 * http/trace.c): the events the program's threads record
 * (sample/trace.h), the CPU samples of the CPU recording (registry/cpu.h)
 * and counter tracks of the process's memory, over some seconds, written
 * as Chrome Trace Event JSON (registry/trace_json.h). It knows no HTTP.
 *
 * The CPU samples: the trace starts a CPU recording of its own at hz, or,
 * when one already runs (a /debug/pprof/profile, CPROF_OUTPUT, the push),
 * takes that one's samples. While the trace's own runs, a CPU profile
 * request is told "cpu profiling already in use", as during another CPU
 * profile; a program that uses SIGPROF itself gets a trace without CPU
 * samples. otherData's cpu_samples says which.
 *
 * The counters: the resident set and the heap in use, every 100 ms (the
 * heap once a second without the heap profile: sample/proc.h). */
#ifndef CPROF_REGISTRY_TRACE_H
#define CPROF_REGISTRY_TRACE_H

#include <stddef.h>

#include "core/buf.h"
#include "unwind/unwind.h"

typedef struct cprof__trace_opts {
  double seconds;      /* > 0 */
  size_t buffer_bytes; /* each thread's events (sample/trace.h) */
  int cpu_hz;          /* the CPU recording's rate, when the trace starts one */
  cprof__unwinder_t how;
  /* Sleeps ms, returning non-zero when the trace should end now (the
   * client went away); NULL sleeps plainly. */
  int (*wait)(void *ctx, long ms);
  void *ctx;
} cprof__trace_opts_t;

/* Records a trace as o says and appends its JSON to out. 0; -EBUSY while
 * another trace records (one at a time); -ECANCELED when the wait was cut
 * short (what was recorded is thrown away); -ENOMEM; or the error of
 * cprof__trace_begin. */
int cprof__trace_take(const cprof__trace_opts_t *o, cprof__buf_t *out);

#endif
