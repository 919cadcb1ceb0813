/* What the trace's two files share: the per-thread blocks and buffers
 * the events are recorded in (trace.c), and the CPU samples the trace
 * keeps, which trace_end.c hands out with the events at the trace's end.
 * Not for other parts of cprof: they use sample/trace.h. */
#ifndef CPROF_SAMPLE_TRACE_INTERNAL_H
#define CPROF_SAMPLE_TRACE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample/thread_blocks.h"
#include "sample/trace.h"

/* Hidden, as every definition of cprof's: the handlers reach these
 * directly, not through the GOT. */
#pragma GCC visibility push(hidden)

#define CPROF__TRACE_NAME_WORDS ((CPROF_MAX_TRACE_NAME + 1) / 8)

/* A thread's events during one trace. */
typedef struct cprof__trace_buf {
  struct cprof__trace_buf *next; /* on `bufs`, under blocks.lock */
  uint64_t first;                /* the owner's `appended` when the buffer was made */
  pid_t tid;
  int exited;       /* under blocks.lock */
  char name[16];    /* at the first event, then at exit; under blocks.lock */
  uint64_t dropped; /* the owner's while the trace records */
  size_t used, cap; /* the owner's while the trace records */
  uint64_t data[];  /* records, 8-byte aligned */
} cprof__trace_buf_t;

typedef struct cprof__trace_block {
  cprof__thread_node_t node; /* first: on `blocks`, under its lock */
  unsigned seq;              /* odd while the owner changes its regions; atomic */
  int depth;                 /* open regions, named or not; atomic */
  unsigned gen;              /* the listeners' generation `depth` counts in; atomic */
  int appending;             /* 1 while the owner appends; atomic */
  cprof__trace_buf_t *buf;   /* the trace's buffer, or NULL; atomic */
  uint64_t names[CPROF_MAX_TRACE_DEPTH][CPROF__TRACE_NAME_WORDS]; /* atomic words */
} cprof__trace_block_t;

typedef struct cprof__trace_hdr {
  int64_t ts;
  uint64_t id, dur;
  uint16_t kind, n1, n2, pad;
} cprof__trace_hdr_t;
_Static_assert(sizeof(cprof__trace_hdr_t) == CPROF__TRACE_REC_BYTES(0, 0),
               "the record header is 32 bytes");

enum { CPROF__TRACING_IDLE, CPROF__TRACING_RECORDING, CPROF__TRACING_ENDING };
extern int cprof__trace_state;     /* atomic */
extern uint64_t cprof__trace_lost; /* events of threads without a buffer; atomic */

/* Every thread's block (thread_blocks.h); under its lock, every buffer of
 * the trace, and the size of a new buffer (0: no trace takes buffers now). */
extern cprof__thread_blocks_t cprof__trace_blocks;
extern cprof__trace_buf_t *cprof__trace_bufs;
extern size_t cprof__trace_buf_bytes;

/* The trace's CPU samples: records of cpu_rec_t and its pcs, back to back
 * in `cpu_store` (NULL: no trace takes samples now), under cpu_lock. */
typedef struct cprof__trace_cpu_rec {
  int64_t ts;
  uint64_t seq; /* the thread's `appended` when sampled; CPROF__TRACE_SEQ_UNKNOWN */
  int32_t tid, depth;
  uintptr_t pcs[];
} cprof__trace_cpu_rec_t;
extern unsigned char *cprof__trace_cpu_store;
extern size_t cprof__trace_cpu_used;
extern uint64_t cprof__trace_cpu_dropped;
extern pthread_mutex_t cprof__trace_cpu_lock;

/* cprof's locks, taken with the guard raised. */
void cprof__trace_lock(pthread_mutex_t *m);
void cprof__trace_unlock(pthread_mutex_t *m);

/* Frees memory of the trace's own (mmap'd, not malloc's). */
void cprof__trace_free(void *p);

#pragma GCC visibility pop

#endif
