/* The CPU profile as a recording with readers. Go's StartCPUProfile and
 * StopCPUProfile record one profile at a time; here the recording (the
 * per-thread timers of sample/cpu.h, their sample buffer, and a drainer)
 * is shared: it starts with its first reader and stops with its last, and
 * every consumer is a reader with a window of its own, whose profile.proto
 * holds the samples of that window alone, with its own time_nanos (its
 * start) and duration_nanos (its length).
 *
 * The readers: /debug/pprof/profile (http/profile.c), one per request,
 * drained on the request's thread; CPROF_OUTPUT (life/output.c) for the
 * whole run; the push (push/push.c), cut at each window; the trace
 * (registry/trace.c), which wants the samples on its timeline and no
 * profile; cprof_cpu_profile_start (registry/cpu_api.c). Each drain hands
 * every sample to every reader present at that drain; a reader's start and
 * stop drain first, so its window is the drains between them (how exact
 * that is: doc/internals.md, "One CPU recording, many readers").
 *
 * The rate is the recording's: the first reader's. A reader that asks for
 * another rate explicitly (?hz=) while it runs is refused (-ERANGE, saying
 * the running rate); one that takes the configured rate (CPROF_CPU_HZ,
 * cprof_set_cpu_rate) gets the running one, as Go's SetCPUProfileRate
 * does not change a running profile's rate. At most CPROF_CPU_MAX_READERS
 * readers at once (-EUSERS beyond), so that memory stays bounded: each
 * reader has a profile builder of its own, freed at its stop. */
#ifndef CPROF_REGISTRY_CPU_H
#define CPROF_REGISTRY_CPU_H

#include <stddef.h>

#include "core/buf.h"
#include "unwind/unwind.h"

#define CPROF_CPU_MAX_READERS 16

typedef struct cprof__cpu_reader cprof__cpu_reader_t;

enum {
  /* hz is the reader's own choice (?hz=): a recording running at another
   * rate refuses it, rather than the reader taking the running rate. */
  CPROF_CPU_READER_EXPLICIT_HZ = 1,
  /* No profile: the reader keeps the recording running and its samples
   * flowing (onto a trace's timeline, sample/trace.h), and its stop
   * writes nothing. */
  CPROF_CPU_READER_NO_PROFILE = 2,
};

/* Joins the running recording, or starts one at hz with the unwinder how,
 * and opens the reader's window now. 0 and *out; -EBUSY when the program
 * uses SIGPROF itself (its own handler or ITIMER_PROF); -ERANGE when an
 * explicit hz is not the running rate (why says the running rate);
 * -EUSERS when CPROF_CPU_MAX_READERS readers are open (why says so);
 * -ENOMEM; or, when not one thread can be sampled, the errno of the call
 * that failed with a line saying which in why (why is "" for -EBUSY and
 * -ENOMEM; may be NULL). */
int cprof__cpu_reader_start(int hz, int flags, cprof__unwinder_t how, char *why, size_t why_size,
                            cprof__cpu_reader_t **out);

/* The rate r records at: the recording's. */
int cprof__cpu_reader_hz(const cprof__cpu_reader_t *r);

/* Gives timers to new threads and hands the samples recorded so far to
 * every reader, if a recording runs. Every 50 ms or so, from any thread:
 * a reader that waits (an HTTP request's thread, the trace) calls it, and
 * so does the drainer, when the recording has one. */
void cprof__cpu_recording_drain(void);

/* Appends the gzip-compressed profile.proto of r's window since it
 * started or since its last cut, and opens its next window now, the
 * recording untouched: a push's window (push/push.c). 0, -EINVAL when r
 * is not an open reader, -ENOMEM. From one thread at a time per reader. */
int cprof__cpu_reader_cut(cprof__cpu_reader_t *r, cprof__buf_t *out);

/* Gives the recording a thread named name (at most 15 bytes) that drains
 * it every 50 ms until the recording stops, unless it has one (0 then
 * too): for readers that do not wait (CPROF_OUTPUT, push, the API). 0,
 * -EINVAL when r is not an open reader, or a negative errno (the readers
 * then record on, undrained until some reader drains). */
int cprof__cpu_reader_drainer(cprof__cpu_reader_t *r, const char *name);

/* Closes r's window: drains, appends r's gzip-compressed profile.proto to
 * out (nothing when out is NULL or r has no profile), and frees r. The
 * last reader's stop stops the recording (its drainer is woken and joined
 * first, so this returns quickly). 0 or a negative errno (-ENOMEM). */
int cprof__cpu_reader_stop(cprof__cpu_reader_t *r, cprof__buf_t *out);

/* The readers open now and the rate the recording runs at (0 when none
 * runs): for tests and the index. */
int cprof__cpu_readers(int *hz);

/* Ends the recording's drainer thread while the recording goes on into
 * the sample buffer (what does not fit is counted as lost), and starts it
 * again: for the moments when cprof must have no thread of its own
 * (life/start.c: a credential change, the program's last thread gone).
 * Both do nothing when no recording with a drainer runs. */
void cprof__cpu_recording_park(void);
void cprof__cpu_recording_unpark(void);

/* Fork handlers. The lock they hold is taken inside life/output.c's and
 * registry/cpu_api.c's and outside sample/cpu.c's and sample/signals.c's;
 * register (idempotent, and done by the first start anyway, with cpu.c's
 * and signals.c's first) after those and before theirs, as
 * pthread_atfork runs prepare handlers in the reverse order of
 * registration. In the child the recording, its drainer and its readers
 * are the parent's: they are forgotten. */
void cprof__cpu_recording_atfork_register(void);

/* cprof_cpu_profile_start's fork handlers (cpu_api.c): its lock is taken
 * outside this file's. Registers this file's first. */
void cprof__cpu_api_atfork_register(void);

#endif
