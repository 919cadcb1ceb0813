/* The process readers: the figures of the whole process that the kernel
 * and glibc keep (CPU time, context switches, page faults, memory,
 * threads, I/O, descriptors, the start), read for the metrics sampler
 * (metrics/sampler.c, through registry/stats.h) and for a trace's counter
 * tracks (registry/trace.c) alike.
 *
 * getrusage and the heap's figure need no descriptor and are read from
 * any thread. The /proc files are opened only from a thread in cprof's
 * own descriptor table (core/fds.h): elsewhere opening one would take one
 * of the program's descriptor numbers. Nothing here allocates.
 *
 * Every figure is -1 when it is not known (its file could not be read,
 * or nothing counts it). */
#ifndef CPROF_SAMPLE_PROC_H
#define CPROF_SAMPLE_PROC_H

#include <stdint.h>

/* getrusage(RUSAGE_SELF): every thread's, where /proc/self/status counts
 * the main thread's switches only. Cumulative but rss_peak_bytes. */
typedef struct cprof__proc_usage {
  int64_t cpu_user_us, cpu_system_us;
  int64_t ctx_voluntary, ctx_involuntary;
  int64_t faults_minor, faults_major;
  int64_t rss_peak_bytes; /* ru_maxrss */
} cprof__proc_usage_t;
void cprof__proc_usage(cprof__proc_usage_t *u);

/* /proc/self/status (VmRSS, VmHWM, VmSize, Threads) and /proc/self/io
 * (rchar and wchar, less the bytes of the /proc files read here: the
 * server's own socket traffic, a few kB a request, stays in). Only from
 * cprof's own descriptor table. */
typedef struct cprof__proc_status {
  int64_t rss_bytes, rss_peak_bytes, vm_bytes, threads;
  int64_t read_bytes, write_bytes; /* cumulative */
} cprof__proc_status_t;
void cprof__proc_status(cprof__proc_status_t *s);

/* Entries of /proc/self/fd but . and ..: the thread group leader's
 * table, the program's. Only from cprof's own descriptor table. */
int64_t cprof__proc_count_fds(void);

/* The process's start, unix ms (/proc/self/stat and /proc/stat btime);
 * 0 when it cannot be read. Only from cprof's own descriptor table. */
int64_t cprof__proc_start_ms(void);

/* The heap in use: the heap profile's estimate when it is on (with the
 * cumulative bytes allocated), else glibc's figures, walking its free
 * lists under each arena's lock (a few times a second is cheap for
 * ordinary heaps; *alloc_bytes is then -1). */
void cprof__proc_heap(int64_t *inuse_bytes, int64_t *alloc_bytes);

/* Only the resident set (/proc/self/statm; -1 outside cprof's own
 * descriptor table) and the heap in use, for a trace's counter tracks,
 * read ten times a second. Without the heap profile the heap's figure
 * walks glibc's free lists under its arenas' locks: only when `walk`,
 * else -1. */
void cprof__proc_memory(int64_t *rss_bytes, int64_t *heap_inuse_bytes, int walk);

/* After fork(), in the child: its rchar starts at 0, and so does the
 * count of bytes read here. */
void cprof__proc_atfork_child(void);

#endif
