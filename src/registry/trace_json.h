/* The execution trace as Chrome Trace Event JSON (the "JSON Object
 * Format": {"traceEvents": [...], "otherData": {...}}), which Perfetto UI
 * and chrome://tracing open. A consumer of the events cprof__trace_end
 * hands out (sample/trace.h); it knows no HTTP.
 *
 * No "displayTimeUnit": the format says it only chooses how times are
 * shown, but Perfetto's importer takes it for the unit of ts and dur, and
 * a trace written in µs with "ms" there opens 1000 times too long (google/
 * perfetto issue 274). Without it every viewer reads µs.
 *
 * What becomes what, per thread (pid: the process, tid: the thread):
 * - the thread's name: a metadata event (ph "M", "thread_name");
 * - a region: a complete event (ph "X", ts and dur), from its begin and
 *   end on the thread, nested. A region still open at the end of the trace
 *   runs to the end; an end without its begin (the region began before the
 *   trace) starts at the trace's start;
 * - a task: async events (ph "b" and "e", category "task", the task's id),
 *   which may begin on one thread and end on another;
 * - a log message: an instant event (ph "i", s "t") with args category and
 *   message;
 * - a lock wait: a complete event with args {"lock": "0x..."};
 * - a thread's start and exit: instant events;
 * - a CPU sample: an instant event (cat "cpu") named for the function that
 *   ran, with args {"stack": [innermost, ..., outermost]} (inlined
 *   functions as frames of their own, as in the profiles); samples outside
 *   the trace's span are left out;
 * - a counter (cprof__trace_json_counter): a counter event (ph "C"), one
 *   track per name, on the process; a value read at the trace's start
 *   is put 1 ns after it (Perfetto v20 drops a counter's value at 0).
 * Timestamps are µs from the trace's start, printed with ns precision. */
#ifndef CPROF_REGISTRY_TRACE_JSON_H
#define CPROF_REGISTRY_TRACE_JSON_H

#include <stdint.h>
#include <sys/types.h>

#include "core/buf.h"
#include "sample/trace.h"
#include "symbol/symbolize.h"

typedef struct cprof__trace_json_region {
  int64_t ts;
  char name[CPROF_MAX_TRACE_NAME + 1];
} cprof__trace_json_region_t;

typedef struct cprof__trace_json_task {
  uint64_t id;
  char name[CPROF_MAX_TRACE_NAME + 1];
} cprof__trace_json_task_t;

/* A task end seen before its begin (another thread's, handed out later):
 * written at the end, once every begin is known. */
typedef struct cprof__trace_json_end {
  uint64_t id;
  int64_t ts;
  pid_t tid;
} cprof__trace_json_end_t;

typedef struct cprof__trace_json {
  cprof__buf_t *out;
  int pid;
  int64_t start_ns, end_ns;         /* CLOCK_MONOTONIC */
  int nevents;                      /* written so far: for the commas */
  int failed;                       /* an allocation failed */
  pid_t tid;                        /* the thread being read; 0 before the first */
  cprof__trace_json_region_t *open; /* its open regions, outermost first */
  int nopen, capopen;
  cprof__trace_json_task_t *tasks; /* every task begun, by id */
  int ntasks, captasks;
  cprof__trace_json_end_t *ends;
  int nends, capends;
  cprof__symbolizer_t *sym; /* from the first CPU sample on */
  cprof__buf_t stack;       /* a CPU sample's frames, as JSON */
  struct cprof__trace_json_frames *frames; /* what each pc names, cached (trace_json.c) */
} cprof__trace_json_t;

/* Starts the document in out: the trace ran from start_ns to end_ns
 * (CLOCK_MONOTONIC), in process pid, named process_name (NULL: none). */
void cprof__trace_json_init(cprof__trace_json_t *j, cprof__buf_t *out, int pid,
                            const char *process_name, int64_t start_ns, int64_t end_ns);

/* One event, in cprof__trace_end's order (thread by thread, each in time
 * order): the shape of cprof__trace_end's fn, ctx being the writer. */
void cprof__trace_json_add(const cprof__trace_rec_t *r, void *j);

/* A counter track's value at ts (ph "C"): name, and one series. */
void cprof__trace_json_counter(cprof__trace_json_t *j, const char *name, const char *series,
                               int64_t ts, double value);

/* Closes the open regions and the document, with the events lost
 * (dropped) and where the CPU samples came from (cpu_samples: a short
 * sentence, or NULL) in otherData, and frees the writer's memory. 0, or
 * -ENOMEM (out is then incomplete). */
int cprof__trace_json_finish(cprof__trace_json_t *j, uint64_t dropped, const char *cpu_samples);

#endif
