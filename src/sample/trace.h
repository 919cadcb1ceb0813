/* What lies behind cprof_region_begin and its kin (include/cprof.h): who
 * listens, each thread's stack of open regions, and each thread's buffer of
 * trace events. The trace endpoint drains the buffers; the wall-clock
 * profile reads the open regions. How it works: the comment at the top of
 * trace.c. */
#ifndef CPROF_SAMPLE_TRACE_H
#define CPROF_SAMPLE_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cprof.h"

/* Who listens, as bits of cprof_trace_listening_: a trace records events
 * (set by cprof__trace_begin only), a wall-clock profile reads open
 * regions. The bits above these two hold a generation, bumped each time
 * the first listener comes, so test the bits with &. Read with
 * __atomic_load_n(..., __ATOMIC_RELAXED): that load is the whole cost of
 * the public calls while nobody listens. */
#define CPROF__LISTEN_TRACE 1
#define CPROF__LISTEN_WALL 2
#define CPROF__LISTEN_BITS 3
/* The word itself is cprof.h's cprof_trace_listening_ (public: the
 * header's macros load it in the program). */

/* Whether a trace records: one relaxed load, for the trace's other
 * sources (the lock wrappers, thread start) to test on their fast paths. */
static inline int cprof__trace_recording(void) {
  return __atomic_load_n(&cprof_trace_listening_, __ATOMIC_RELAXED) & CPROF__LISTEN_TRACE;
}

/* Sets (on) or clears one listener bit. Counted per bit: two wall profiles
 * at once each call it with on = 1 and then 0, and the bit stays set until
 * both have cleared it. A clear with no matching set is ignored. */
void cprof__trace_listen(int bit, int on);

/* Calls fn for every thread with at least one region open now: its id, the
 * name of its innermost named region (the CPROF_MAX_TRACE_DEPTH-th when it
 * is deeper than that), and its depth (all open regions, named or not).
 * Each a consistent copy; a thread changing its regions all the while is
 * left out. Regions are tracked only while some listener bit is set. fn
 * runs under the list's lock: it must not begin or end regions, create or
 * end threads, or take locks. Not for signal handlers. */
void cprof__regions_each(void (*fn)(pid_t tid, const char *innermost, int depth, void *ctx),
                         void *ctx);

/* The kinds of trace events. The last three are for the trace endpoint's
 * own sources (the lock wrappers, thread start and exit): defined here so
 * that every writer agrees on them, and recorded through cprof__trace_emit. */
enum cprof__trace_kind {
  CPROF__TRACE_REGION_BEGIN = 1, /* s1: the region's name */
  CPROF__TRACE_REGION_END,       /* s1: its name, "" past the named depth */
  CPROF__TRACE_TASK_BEGIN,       /* id: the task; s1: its name */
  CPROF__TRACE_TASK_END,         /* id: the task */
  CPROF__TRACE_LOG,              /* s1: category; s2: message */
  CPROF__TRACE_LOCK_WAIT,        /* ts: wait's start; id: lock address; dur */
  CPROF__TRACE_THREAD_START,     /* s1: thread name */
  CPROF__TRACE_THREAD_EXIT,
  CPROF__TRACE_CPU_SAMPLE, /* pcs, depth: from cprof__trace_cpu_sample */
};

/* A REGION_END may come without its REGION_BEGIN: a region opened while
 * only a wall profile listened, before the trace began, is on the stack
 * and its end is recorded. A writer may start such a region at the trace's
 * start. Regions open when the trace ends have no REGION_END.
 *
 * One event, as cprof__trace_end hands it out. Strings are "" when absent
 * and valid only during the call. */
typedef struct cprof__trace_rec {
  pid_t tid;
  const char *thread;      /* the thread's name (see cprof__trace_end) */
  uint64_t thread_dropped; /* events of this thread lost to a full buffer */
  int64_t ts;              /* CLOCK_MONOTONIC, ns */
  int kind;                /* enum cprof__trace_kind */
  uint64_t id;             /* task id, lock address, or 0 */
  uint64_t dur;            /* ns, or 0 */
  const char *s1, *s2;
  const uintptr_t *pcs; /* a CPU sample's stack (unwind/pc.h's convention), or NULL */
  int depth;
} cprof__trace_rec_t;

/* The bytes one event takes in a thread's buffer, with strings of n1 and
 * n2 bytes (after cutting): a 32-byte header, then the strings' bytes, not
 * NUL-terminated, padded to 8. For sizing buffers, and for tests. */
#define CPROF__TRACE_REC_BYTES(n1, n2) (32 + (((size_t)(n1) + (size_t)(n2) + 7) & ~(size_t)7))

/* Starts recording: every thread that emits an event from now on gets a
 * buffer of bytes_per_thread bytes (64 B .. 1 GiB) on its first event.
 * Returns 0; -EBUSY while a trace records or is being collected (one trace
 * at a time); -EINVAL for a size out of range. */
int cprof__trace_begin(size_t bytes_per_thread);

/* A CPU sample, for the trace's timeline, while a trace records: thread
 * tid was running at ts (CLOCK_MONOTONIC) in the stack pcs (the innermost
 * CPROF__TRACE_CPU_FRAMES frames are kept). Kept in a store of the trace's
 * own, since it comes from the thread that drains the CPU recording, not
 * from the thread sampled (registry/cpu.c hands every sample over); a
 * full store drops samples and counts them. Takes a lock: not for signal
 * handlers. */
#define CPROF__TRACE_CPU_FRAMES 64
void cprof__trace_cpu_sample(pid_t tid, int64_t ts, const uintptr_t *pcs, int depth);
/* The same, with where among its thread's events the sample was taken:
 * seq is what cprof__trace_appended_sigsafe() read on the thread then
 * (CPROF__TRACE_SEQ_UNKNOWN: placed by ts alone). */
#define CPROF__TRACE_SEQ_UNKNOWN UINT64_MAX
void cprof__trace_cpu_sample_seq(pid_t tid, int64_t ts, uint64_t seq, const uintptr_t *pcs,
                                 int depth);
/* How many events the calling thread has appended to traces' buffers, in
 * all: for a CPU sample's handler, which reads no clock (sample/cpu.c).
 * One load from initial-exec TLS. */
uint64_t cprof__trace_appended_sigsafe(void);

/* Stops recording and hands out what was recorded: fn(rec, ctx) for every
 * event of every thread that recorded one or was sampled, exited threads
 * included, thread by thread, each thread's in the order they happened
 * (time order: its CPU samples among its events). The
 * thread's name is the one it had at exit, or for a live thread its
 * /proc/self/task/TID/comm now (the name at its first event if that cannot
 * be read). *dropped (when not NULL) gets the total of events lost: full
 * buffers, and threads that could not get one. The buffers are freed
 * before it returns; fn runs without any of cprof's locks. Nothing happens
 * (and *dropped is 0) when no trace records. */
void cprof__trace_end(void (*fn)(const cprof__trace_rec_t *r, void *ctx), void *ctx,
                      uint64_t *dropped);

/* Records one event on the calling thread, when a trace records (ts 0:
 * now). For the trace's other sources; not for signal handlers (a thread's
 * first event allocates its buffer). A thread's events must come with
 * timestamps that do not go back: a lock wait is recorded when it ends,
 * with its start, and nothing else of the thread's happens meanwhile. */
void cprof__trace_emit(int kind, int64_t ts, uint64_t id, uint64_t dur, const char *s1,
                       const char *s2);

#endif
