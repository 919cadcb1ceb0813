/* The process's figures and the samplers' counts of themselves, for the
 * consumers that show them (metrics/sampler.c): the registry's door to
 * the process readers (sample/proc.h) and to the samplers' totals, so that
 * no consumer reaches a sampler. Each call is the reader's own, on the
 * caller's thread, under no lock of the registry's. */
#ifndef CPROF_REGISTRY_STATS_H
#define CPROF_REGISTRY_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "sample/proc.h" /* the figures' types */

/* The process readers (sample/proc.h): getrusage and the heap from any
 * thread; the /proc files only from cprof's own descriptor table. */
void cprof__stats_usage(cprof__proc_usage_t *u);
void cprof__stats_status(cprof__proc_status_t *s);
int64_t cprof__stats_count_fds(void);
int64_t cprof__stats_start_ms(void);
/* The heap in use (the heap profile's estimate, else mallinfo2's) and the
 * heap profile's bytes allocated (-1 without it). */
void cprof__stats_heap(int64_t *inuse_bytes, int64_t *alloc_bytes);

/* The CPU profile's samples taken (every timer signal of ours) and
 * dropped, since the process started (sample/cpu.h). */
void cprof__stats_cpu_samples(uint64_t *taken, uint64_t *dropped);
/* The memory of cprof's stack tables (sample/stack_table.h). */
size_t cprof__stats_tables_bytes(void);

/* After fork(), in the child: the process readers' count of their own
 * reads starts again (the child's rchar starts at 0). */
void cprof__stats_atfork_child(void);

#endif
