/* The process's figures and the samplers' totals, for the consumers
 * (registry/stats.h). */
#include "registry/stats.h"

#include "sample/cpu.h"
#include "sample/proc.h"
#include "sample/stack_table.h"

void cprof__stats_usage(cprof__proc_usage_t *u) { cprof__proc_usage(u); }
void cprof__stats_status(cprof__proc_status_t *s) { cprof__proc_status(s); }
int64_t cprof__stats_count_fds(void) { return cprof__proc_count_fds(); }
int64_t cprof__stats_start_ms(void) { return cprof__proc_start_ms(); }

void cprof__stats_heap(int64_t *inuse_bytes, int64_t *alloc_bytes) {
  cprof__proc_heap(inuse_bytes, alloc_bytes);
}

void cprof__stats_cpu_samples(uint64_t *taken, uint64_t *dropped) {
  cprof__cpu_totals(taken, dropped);
}

size_t cprof__stats_tables_bytes(void) { return cprof__stack_memory_used(); }

void cprof__stats_atfork_child(void) { cprof__proc_atfork_child(); }
