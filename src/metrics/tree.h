/* A process tree's figures over time, at the tree's owner (tree/tree.h):
 * the metrics sampler reads each process of the tree from /proc/PID every
 * interval (tree/figures.c; the members are never asked and run no
 * sampler) and keeps a ring of tree points beside its own ring; the
 * charts' JSON and Prometheus's exposition are made from them here. Pure,
 * as ring.c: no clock, no /proc, so that tests/metrics/test_tree.c drives
 * it. */
#ifndef CPROF_METRICS_TREE_H
#define CPROF_METRICS_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "tree/tree.h"

/* The processes a point holds, owner first then by pid; a tree of more
 * counts them all (processes) and charts the first ones. */
#define CPROF_METRICS_TREE_MAX 64

typedef struct cprof__metrics_proc {
  int32_t pid;
  int32_t threads;
  int64_t cpu_us; /* user + system, cumulative */
  int64_t rss_bytes;
} cprof__metrics_proc_t;

typedef struct cprof__metrics_tree_point {
  int64_t t_ms;      /* unix ms, the same as the process's point of that time */
  int32_t n;         /* entries of p */
  int32_t processes; /* processes in the tree, the owner too: n or more */
  cprof__metrics_proc_t p[CPROF_METRICS_TREE_MAX];
} cprof__metrics_tree_point_t;

/* Which name each pid had, the latest seen first to go last. */
#define CPROF_METRICS_TREE_NAMES (2 * CPROF_METRICS_TREE_MAX)
typedef struct cprof__metrics_tree_name {
  int32_t pid;
  int64_t seen_ms;
  char name[64];
} cprof__metrics_tree_name_t;

/* What the sampler keeps of a tree, in one mapping of its own (never
 * inherited by a fork: the members must not carry the owner's ring). */
typedef struct cprof__metrics_tree {
  int32_t owner;
  int32_t processes;                                  /* in the latest point, the owner too */
  int64_t t_ms;                                       /* the latest point's time */
  int32_t nlast;                                      /* entries of last */
  cprof__tree_figures_t last[CPROF_METRICS_TREE_MAX]; /* the latest figures, for /metrics */
  cprof__metrics_tree_name_t names[CPROF_METRICS_TREE_NAMES];
  size_t cap, n, next; /* the ring of points that follows */
  cprof__metrics_tree_point_t v[];
} cprof__metrics_tree_t;

/* Bytes for a tree of cap points. */
size_t cprof__metrics_tree_size(size_t cap);
/* Sets up t (zeroed memory of cprof__metrics_tree_size(cap) bytes). */
void cprof__metrics_tree_init(cprof__metrics_tree_t *t, size_t cap, int32_t owner);
/* Records the figures of n processes (owner first) read at t_ms, of a tree
 * of `processes` processes: a point in the ring, and the latest figures
 * and names. */
void cprof__metrics_tree_push(cprof__metrics_tree_t *t, int64_t t_ms,
                              const cprof__tree_figures_t *f, int n, int processes);

/* The charts' "tree" member after lead (",\n"), for the points newer
 * than since_ms, or nothing when no point is:
 *
 *   "tree":{"owner":PID,"t":[unix_ms, ...],
 *     "totals":{"processes":[...],"cpu_cores":[...],"rss_bytes":[...],"threads":[...]},
 *     "processes":[{"pid":PID,"name":"...","cpu_cores":[...],"rss_bytes":[...],
 *                   "threads":[...]}, ...]}
 *
 * cpu_cores is CPU time (user and system) per second of the interval
 * before the point: 1 is one core busy. A process's entry is null at the
 * points it was not in the tree, and its cpu_cores at the first point it
 * was (nothing to take a rate from). The totals are the sums of the
 * processes' entries. Returns 1 when it wrote something. */
int cprof__metrics_tree_json(const cprof__metrics_tree_t *t, int64_t since_ms, const char *lead,
                             cprof__buf_t *out);

/* Prometheus's text of the latest figures: cprof_tree_processes and the
 * sums, then a series per process with labels pid and name (see
 * doc/endpoints.md). Nothing without a point. */
void cprof__metrics_tree_prometheus(const cprof__metrics_tree_t *t, cprof__buf_t *out);

#endif
