/* The metrics sampler: a thread of cprof's own ("cprof-metrics") that
 * records a point of the process's figures every CPROF_METRICS_INTERVAL
 * (default 1s) into a fixed ring holding CPROF_METRICS_WINDOW (default
 * 600s), for /debug/charts/data and /metrics. CPROF_METRICS=0 turns it
 * off. It runs while the profiling server does, and without one from the
 * first request for its figures (cprof__metrics_demand).
 *
 * - Created under cprof's guard, as debuginfod.c's fetcher: every signal
 *   blocked, never sampled, never counted as the program's thread. It
 *   opens /proc files in a descriptor table of its own (core/fds.c), so
 *   the program never sees a descriptor number of ours, and counts the
 *   program's descriptors in /proc/self/fd (the thread group leader's
 *   table, which is the program's): at every point while that costs less
 *   than 0.01 % of its time, less often past some 300 descriptors, the
 *   points between repeating the last count. /metrics counts afresh.
 * - The ring is mapped once (core/pages.h), never through the program's
 *   malloc; the thread allocates nothing but, at a tree's owner, what
 *   listing the tree takes (under cprof's guard).
 * - Figures, read by sample/proc.c and the samplers through the registry
 *   (registry/stats.h): getrusage(RUSAGE_SELF) for CPU, context switches
 *   and page faults (every thread's: /proc/self/status counts the main
 *   thread's switches only); /proc/self/status for VmRSS, VmHWM, VmSize
 *   and Threads; /proc/self/io rchar and wchar (unreadable: absent), less
 *   the bytes of the /proc files cprof read for these figures (the
 *   server's own socket traffic, a few kB a request, stays in); the heap
 *   profile's estimates when it is on, else mallinfo2's bytes in use;
 *   cpu.c's samples taken and dropped; the stack tables' memory and the
 *   ring's; the CPU time requests took (cprof__metrics_serve_add).
 * - At a process tree's owner with members, every process of the tree
 *   too, read from /proc/PID (tree/figures.c) into a ring of tree points
 *   of its own (metrics/tree.h): the members run no sampler.
 *
 * /debug/charts/data[?since=UNIX_MS] answers the points newer than since
 * (all without it), oldest first:
 *
 *   {"interval_ms":1000,"window_s":600,"start_ms":<process start, unix ms>,
 *    "t":[unix_ms, ...],
 *    "series":{"cpu_user_pct":[...],"cpu_system_pct":[...],
 *              "rss_bytes":[...],"rss_peak_bytes":[...],"vm_bytes":[...],
 *              "heap_inuse_bytes":[...],"alloc_bytes_per_s":[...],
 *              "threads":[...],"open_fds":[...],
 *              "ctx_voluntary_per_s":[...],"ctx_involuntary_per_s":[...],
 *              "faults_minor_per_s":[...],"faults_major_per_s":[...],
 *              "read_bytes_per_s":[...],"write_bytes_per_s":[...],
 *              "cprof_samples_per_s":[...],"cprof_dropped_per_s":[...],
 *              "cprof_memory_bytes":[...],"cprof_serve_ms_per_s":[...]}}
 *
 * Every series has one entry per entry of t. Percentages are of one core
 * over the interval before the point; the _per_s series are rates from
 * the point before (0 for the oldest point held); entries are null where
 * a figure is not known (/proc/self/io unreadable; alloc_bytes_per_s
 * without the heap profile). At a tree's owner a "tree" member follows
 * "series" (metrics/tree.h, doc/endpoints.md). */
#ifndef CPROF_METRICS_SAMPLER_H
#define CPROF_METRICS_SAMPLER_H

#include <stdint.h>

#include "core/buf.h"
#include "metrics/ring.h"

/* Starts the thread (life/start.c, under its lock: with the server, or
 * without one at the first cprof__metrics_demand). Returns 0, -EALREADY,
 * or a negative errno (it then logs why). */
int cprof__metrics_start(long interval_ms, long window_s);
/* Ends the thread; its points stay for a later start. */
void cprof__metrics_stop(void);

/* Reads the figures now into p (t_ms too). Fresh /proc reads only from a
 * thread in cprof's own descriptor table; elsewhere the descriptor-free
 * figures, the rest from the last point. */
void cprof__metrics_read(cprof__metrics_point_t *p);

/* Set by life/start.c: starts the sampler if it should run and does not.
 * cprof__metrics_demand calls it, from each request for the answers. */
extern void (*cprof__metrics_demand_hook)(void);
void cprof__metrics_demand(void);

/* The two answers. -ENOENT: the sampler is off (reason gets why). */
int cprof__metrics_charts_json(int64_t since_ms, cprof__buf_t *out, const char **reason);
int cprof__metrics_exposition(cprof__buf_t *out, const char **reason);

/* CPU time (ns) a request took to serve: cprof_handle_request. */
void cprof__metrics_serve_add(int64_t ns);

void cprof__metrics_atfork_prepare(void);
void cprof__metrics_atfork_parent(void);
void cprof__metrics_atfork_child(void);

#endif
