/* Stacks kept once each, with a profile's counters beside them: the table
 * behind the heap, block, mutex and threadcreate profiles.
 *
 * A stack is entered the first time a sample has it and kept for the life
 * of the process, with a stable id (its order of entry) and `payload` bytes
 * of counters that belong to the profile (zeroed when made). So a snapshot
 * of the counters is all that a profile, or a delta between two, needs.
 * Stacks that differ only in how many frames they elided (CPROF_PC_ELIDED,
 * unwind/frames.h) are one entry, which keeps CPROF_PC_ELIDED(0).
 *
 * The memory is cprof's own (core/pages.h): mapped in chunks, never freed,
 * never from the program's malloc. Every table together stays under one
 * limit, CPROF_MAX_MEMORY: once a new stack would pass it, lookups of new
 * stacks answer NULL and the profile counts the sample in a bucket of its
 * own that says the limit was reached. Stacks already in the table go on
 * being counted.
 *
 * Not locked: each profile holds its own lock around every call. */
#ifndef CPROF_SAMPLE_STACK_TABLE_H
#define CPROF_SAMPLE_STACK_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct cprof__stack {
  uint64_t hash;
  uint32_t id; /* 0, 1, 2, ... in the order the stacks were entered */
  uint32_t depth;
  const uintptr_t *pcs;
  _Alignas(16) unsigned char payload[]; /* the profile's counters; pcs follow */
} cprof__stack_t;

typedef struct cprof__stack_index_slot {
  uint64_t hash; /* beside the id, so a probe compares without loading the stack */
  uint32_t id1;  /* id + 1; 0: empty */
} cprof__stack_index_slot_t;

typedef struct cprof__stack_table {
  size_t payload; /* bytes of counters per stack */
  cprof__stack_t **by_id;
  size_t n, cap;
  cprof__stack_index_slot_t *index; /* open addressing, at most half full */
  size_t capindex;
  unsigned char *chunk; /* where new stacks are carved from */
  size_t chunk_used, chunk_size;
  size_t mapped; /* bytes this table has mapped */
} cprof__stack_table_t;

/* Zero-initialised tables are empty; set `payload` before the first get. */
#define CPROF_STACK_TABLE(payload_bytes) {.payload = (payload_bytes)}

/* The entry of this stack, made if new (its payload zeroed). NULL when a
 * new entry would pass the memory limit, or the kernel has no pages. */
cprof__stack_t *cprof__stack_table_get(cprof__stack_table_t *t, const uintptr_t *pcs, int depth);

/* `bytes` more of the table's memory, zeroed, kept as long as the table,
 * for a profile's counters that grow (the heap's sizes per stack); NULL
 * past the limit. */
void *cprof__stack_table_alloc(cprof__stack_table_t *t, size_t bytes);

static inline size_t cprof__stack_table_count(const cprof__stack_table_t *t) { return t->n; }
static inline cprof__stack_t *cprof__stack_table_at(const cprof__stack_table_t *t, size_t id) {
  return t->by_id[id];
}

/* The one frame a profile shows for its samples of stacks that found the
 * tables full. */
#define CPROF_STACKS_OVER_LIMIT "[cprof: CPROF_MAX_MEMORY reached; new stacks not kept]"

/* The limit over every table, in bytes (CPROF_MAX_MEMORY; its default,
 * CPROF_DEFAULT_MAX_MEMORY, is core/config.h's), and what they hold
 * together now. */
void cprof__stack_memory_set_limit(size_t bytes);
size_t cprof__stack_memory_limit(void);
size_t cprof__stack_memory_used(void);

#endif
