/* The metrics sampler's ring of points, and the two texts made from it:
 * the charts' JSON and Prometheus's exposition. Pure: no clock, no /proc
 * (sampler.c reads those, /proc through registry/stats.h), so that
 * tests/metrics/test_ring.c drives it. */
#ifndef CPROF_METRICS_RING_H
#define CPROF_METRICS_RING_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* One sample of the process. Cumulative figures are totals since the
 * process started; the JSON turns them into rates. -1: not known (the
 * figure's file could not be read, or nothing counts it). */
typedef struct cprof__metrics_point {
  int64_t t_ms;             /* unix ms */
  int64_t cpu_user_us;      /* cumulative, every thread */
  int64_t cpu_system_us;    /* cumulative */
  int64_t rss_bytes;        /* VmRSS */
  int64_t rss_peak_bytes;   /* VmHWM */
  int64_t vm_bytes;         /* VmSize */
  int64_t heap_inuse_bytes; /* heap profile's estimate, else mallinfo2 */
  int64_t heap_alloc_bytes; /* cumulative: the heap profile's estimate; -1 without it */
  int64_t threads;
  int64_t open_fds;
  int64_t ctx_voluntary;      /* cumulative, every thread */
  int64_t ctx_involuntary;    /* cumulative */
  int64_t faults_minor;       /* cumulative */
  int64_t faults_major;       /* cumulative */
  int64_t read_bytes;         /* cumulative: /proc/self/io rchar */
  int64_t write_bytes;        /* cumulative: wchar */
  int64_t cprof_samples;      /* cumulative: CPU profile samples taken */
  int64_t cprof_dropped;      /* cumulative: of them, dropped */
  int64_t cprof_memory_bytes; /* cprof's own tables and this ring */
  int64_t cprof_serve_ns;     /* cumulative: CPU time serving requests */
} cprof__metrics_point_t;

/* A fixed ring: cap points in memory the caller provides, the oldest
 * overwritten first. */
typedef struct cprof__metrics_ring {
  cprof__metrics_point_t *v;
  size_t cap;
  size_t n;    /* points held, at most cap */
  size_t next; /* where the next point goes */
} cprof__metrics_ring_t;

void cprof__metrics_ring_init(cprof__metrics_ring_t *r, cprof__metrics_point_t *v, size_t cap);
void cprof__metrics_ring_push(cprof__metrics_ring_t *r, const cprof__metrics_point_t *p);
/* The i-th point held, oldest first (i < r->n). */
const cprof__metrics_point_t *cprof__metrics_ring_at(const cprof__metrics_ring_t *r, size_t i);

/* What the JSON says beside the points. */
typedef struct cprof__metrics_meta {
  long interval_ms;
  long window_s;
  int64_t start_ms; /* the process's start, unix ms */
} cprof__metrics_meta_t;

/* /debug/charts/data: the points newer than since_ms (0: all), in the
 * format documented in sampler.h. */
void cprof__metrics_json(const cprof__metrics_ring_t *r, const cprof__metrics_meta_t *m,
                         int64_t since_ms, cprof__buf_t *out);
/* The same without its closing "}\n": members may follow (the tree's,
 * metrics/tree.h), after a comma. */
void cprof__metrics_json_open(const cprof__metrics_ring_t *r, const cprof__metrics_meta_t *m,
                              int64_t since_ms, cprof__buf_t *out);

/* /metrics: Prometheus text format 0.0.4 of now (the figures of a fresh
 * point), with the limits that are no point's: RLIMIT_NOFILE and
 * RLIMIT_AS (-1: unlimited). */
void cprof__metrics_prometheus(const cprof__metrics_point_t *now, const cprof__metrics_meta_t *m,
                               int64_t max_fds, int64_t max_vm, cprof__buf_t *out);

#endif
