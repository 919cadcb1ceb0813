/* The CPU profile as a recording, as Go's StartCPUProfile/StopCPUProfile:
 * not a snapshot profile of the registry (registry.h) but an object that
 * is started, drained while it runs, and stopped, which writes
 * profile.proto. Its consumers: /debug/pprof/profile (http/profile.c),
 * which drains on its request's thread; CPROF_OUTPUT (life/output.c) and
 * cprof_cpu_profile_start (registry/cpu_api.c), which give the recording a
 * drainer thread of its own.
 *
 * One recording at a time, process-wide, as the timers behind it are
 * (sample/cpu.h). */
#ifndef CPROF_REGISTRY_CPU_H
#define CPROF_REGISTRY_CPU_H

#include <stddef.h>

#include "core/buf.h"
#include "unwind/unwind.h"

typedef struct cprof__cpu_recording cprof__cpu_recording_t;

/* Starts recording every thread at hz with the unwinder how. 0 and *out;
 * -EALREADY when a recording already runs (HTTP: "cpu profiling already in
 * use"); -EBUSY when the program uses SIGPROF itself (its own handler or
 * ITIMER_PROF); -ENOMEM; or, when not one thread can be sampled, the errno
 * of the call that failed with a line saying which in why (why is "" for
 * the other errors; may be NULL). */
int cprof__cpu_recording_start(int hz, cprof__unwinder_t how, char *why, size_t why_size,
                               cprof__cpu_recording_t **out);

/* Gives timers to new threads and moves the samples recorded so far into
 * the profile. For a recording without a drainer, every 50 ms or so, on
 * one thread at a time. */
void cprof__cpu_recording_drain(cprof__cpu_recording_t *r);

/* Drains the running recording, whoever owns it, if one runs: so that a
 * trace (http/trace.c) has every sample up to now of a recording it did
 * not start. */
void cprof__cpu_recording_flush(void);

/* Appends the gzip-compressed profile.proto of what r recorded since it
 * started or since the last cut, and goes on recording into a new one,
 * the timers untouched: a push's window (push/push.c). 0, -EINVAL when r
 * is not the running recording, -ENOMEM. From one thread at a time. */
int cprof__cpu_recording_cut(cprof__cpu_recording_t *r, cprof__buf_t *out);

/* Starts a thread named name (at most 15 bytes) that drains r every 50 ms
 * until r stops. 0 or a negative errno (r then records on, undrained). */
int cprof__cpu_recording_drainer(cprof__cpu_recording_t *r, const char *name);

/* Stops r, drains what is left, and appends the gzip-compressed
 * profile.proto to out, or discards it when out is NULL; r is freed
 * either way. 0 or a negative errno (-ENOMEM). The drainer, if any, is
 * woken and joined first, so this returns quickly. */
int cprof__cpu_recording_stop(cprof__cpu_recording_t *r, cprof__buf_t *out);

/* Ends the running recording's drainer thread while the recording goes
 * on into the sample buffer (what does not fit is counted as lost), and
 * starts it again: for the moments when cprof must have no thread of its
 * own (life/start.c: a credential change, the program's last thread gone).
 * Both do nothing when no recording with a drainer runs. */
void cprof__cpu_recording_park(void);
void cprof__cpu_recording_unpark(void);

/* Fork handlers. The lock they hold is taken inside life/output.c's and
 * registry/cpu_api.c's and outside sample/cpu.c's and sample/signals.c's;
 * register (idempotent, and done by the first start anyway, with cpu.c's
 * and signals.c's first) after those and before theirs, as
 * pthread_atfork runs prepare handlers in the reverse order of
 * registration. In the child the recording, its drainer and its output are
 * the parent's: it is forgotten. */
void cprof__cpu_recording_atfork_register(void);

/* cprof_cpu_profile_start's fork handlers (cpu_api.c): its lock is taken
 * outside this file's. Registers this file's first. */
void cprof__cpu_api_atfork_register(void);

#endif
