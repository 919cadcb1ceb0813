/* What a range of stored profiles means, as Pyroscope and Parca mean it
 * (DESIGN.md, "Reading and keeping profiles over time"), decided for each
 * sample type by its kind:
 *
 *   delta       a profile of the scrape's own window (CPU, wall, and any
 *               profile scraped with ?seconds=, which has a duration):
 *               the range is their sum.
 *   cumulative  a counter since the program started (block, mutex,
 *               threadcreate, allocs, and the alloc_* sample types of the
 *               heap profile): the range is the sum of the differences
 *               between consecutive scrapes of one series, which adds up
 *               to last minus first. The first scrape of a series in the
 *               range is its baseline: what happened before it is not the
 *               range's. A restarted target (a sample type's total lower
 *               than the scrape before) starts a new stretch whose first
 *               profile counts from zero, whole; so does the range's
 *               first when the target restarted since the series' last
 *               scrape before the range. A series with no scrape before
 *               (a new target, a new process of a tree, a new collector)
 *               starts with a baseline: the collector cannot tell a
 *               process that just started from one it just met.
 *   snapshot    a state at the scrape (the heap's inuse_* sample types,
 *               goroutine/threads): the range is their average over the
 *               series' scrapes in it, or the latest one.
 *
 * Series (a stored profile's canonical label text: job, instance, pid...)
 * are reduced each on its own, then added up: two instances' bytes in use
 * are the sum of their averages.
 *
 * This is computed when a range is read, from the profiles as scraped (the
 * store keeps them unchanged, as Parca does, and pushes them to Pyroscope
 * marked cumulative), as they are read: the differences telescope, so a
 * stretch needs only its first and last profile, and the others only
 * their totals, to find the restarts; sums and averages are merged in
 * batches as they come. A range holds a few profiles per series however
 * long it is (a day of CPU profiles at 3 s: 36 MB at its peak, where
 * keeping them all took 624 MB). */
#ifndef CPROF_COLLECT_RANGE_H
#define CPROF_COLLECT_RANGE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

typedef enum { COLLECT_DELTA, COLLECT_CUMULATIVE, COLLECT_SNAPSHOT } collect_kind_t;

/* What a range request asks for: by kind (the default), or one treatment
 * for every sample type. */
typedef enum {
  COLLECT_MODE_AUTO,   /* delta: sum, cumulative: delta, snapshot: avg */
  COLLECT_MODE_SUM,    /* every profile added up, as the collector did before */
  COLLECT_MODE_DELTA,  /* last minus first per stretch, restarts counted from zero */
  COLLECT_MODE_AVG,    /* the sum divided by the series' profile count */
  COLLECT_MODE_LATEST, /* each series' last profile */
} collect_mode_t;

/* "delta", "cumulative", "snapshot". */
const char *collect_kind_name(collect_kind_t k);
/* "auto", "sum", "delta", "avg", "latest"; and back: 0, or -EINVAL. */
const char *collect_mode_name(collect_mode_t m);
int collect_mode_parse(const char *s, collect_mode_t *m);

/* The kind of sample type NAME in a profile whose duration_nanos is
 * duration_ns: a profile with a duration covers its window (delta) for
 * every type; otherwise alloc_*, contentions, delay and threadcreate are
 * cumulative, inuse_*, goroutine and threads snapshots, anything else
 * delta. */
collect_kind_t collect_sample_kind(const char *name, int64_t duration_ns);

/* The quantity a person means for a series of profile NAME (the
 * config's: process_cpu, memory, block...), as /api/series gives it. kind
 * is that of the default sample type; rate says a row's value is per
 * second of its window. delta_scrape is the profile's delta: (scraped
 * with ?seconds=). Unknown names get the default sample type's unit. */
typedef struct collect_quantity {
  collect_kind_t kind;
  const char *unit;     /* "cores", "bytes", "bytes/s", "s/s", "threads", "threads/s", ... */
  const char *quantity; /* "CPU cores", "bytes in use", ... */
  int per_second;       /* value = the default type's change over the window / its seconds */
  int cpu;              /* value = sampled ns / duration ns */
  double scale;         /* the default type's unit into unit's: 1e-9 from nanoseconds */
  int known;            /* 0: a name this does not know (unit and quantity "") */
} collect_quantity_t;
void collect_quantity_of(const char *name, int delta_scrape, collect_quantity_t *q);

/* A stored row's value in q's unit, from its total (the default sample
 * type's), time and duration, and the total and time of the series' row
 * before it (has_prev 0 when there is none). CPU: sampled seconds per
 * second of the profile's duration; a cumulative series: the change since
 * the row before per second between them (a counter that went down is a
 * restart: the row's whole total over that time); a delta scrape of such
 * a profile: its total per second of its duration; a snapshot: its total.
 * 0 with *v, or -ENODATA when there is none: a cumulative series' first
 * row, a delta profile without a duration. */
int collect_row_value(const collect_quantity_t *q, int64_t total, int64_t time_ns,
                      int64_t duration_ns, int has_prev, int64_t prev_total, int64_t prev_ns,
                      double *v);

/* Scales every value of p by num/den, rounded to the nearest (den > 0). */
void collect_scale(cprof__pf_t *p, int64_t num, int64_t den);

/* The sum of sample type i's values. */
int64_t collect_type_total(const cprof__pf_t *p, size_t i);

/* A range being read: profiles added series by series, oldest first
 * within a series; collect_range_finish reduces them. */
typedef struct collect_range collect_range_t;

int collect_range_new(collect_mode_t mode, collect_range_t **out);
/* Adds p (taken over: freed by the range, also on failure) to the series
 * named series (any string; its profiles' times must not go back). 0,
 * -ENOMEM, or -EINVAL with a line in err when p's sample types differ
 * from the series' first profile's. */
int collect_range_add(collect_range_t *r, const char *series, cprof__pf_t *p, char *err,
                      size_t errlen);
/* The series' last profile before the range (taken over, as by add):
 * when the target restarted between it and the series' first profile in
 * the range, that first profile counts from zero too, instead of being
 * the baseline. Before the series' first add. */
int collect_range_before(collect_range_t *r, const char *series, cprof__pf_t *p, char *err,
                         size_t errlen);

/* The range reduced: *out (NULL when nothing was added), and in applied
 * what was done, for a person ("delta", "avg", "delta+avg" for the heap's
 * mixed types...). A comment saying it per sample type is added to the
 * profile. 0, -ENOMEM, or -EINVAL with a line in err. */
int collect_range_finish(collect_range_t *r, cprof__pf_t **out, char *applied, size_t appliedlen,
                         char *err, size_t errlen);
/* How many profiles were added, and how many restarts were found (after
 * finish). */
size_t collect_range_count(const collect_range_t *r);
size_t collect_range_restarts(const collect_range_t *r);
void collect_range_free(collect_range_t *r);

#endif
