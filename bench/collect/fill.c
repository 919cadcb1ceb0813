/* Fills a cprof collect store with a day of one target's profiles, through
 * the store's own code (tools/cprof/collect/store*.c, compiled in), for
 * bench/collect/day.sh:
 *
 *   fill [--no-fsync] DIR INTERVAL_S COUNT TYPE...
 *
 * DIR is a store a real `cprof collect` wrote a few scrapes of one target
 * into (and has left: the store is locked while open). For each TYPE
 * (process_cpu, memory, ...) the rows of that type already there are the
 * templates: COUNT more are put before the oldest of them, INTERVAL_S
 * apart going back in time, each a copy of a template in turn (its bytes,
 * labels, duration and total as the collector stored them), with
 * collect_store_put, as the collector puts a scrape: a file per profile
 * under profiles/YYYYMMDD/, a row in the SQLite index.
 *
 * --no-fsync: the store's fsync(2) calls return at once (this file's
 * fsync overrides libc's for the store code linked with it). That changes
 * how durable the fill is while it runs, not one byte of what is stored.
 *
 * Prints, per type, the count put and the seconds it took. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collect/store.h"

static int no_fsync;

int fsync(int fd) {
  if (no_fsync)
    return 0;
  return (int)syscall(SYS_fsync, fd);
}

typedef struct {
  int64_t id, time_ns, duration_ns, total;
  char *job, *instance, *labels;
  void *data;
  size_t len;
} tmpl_t;

typedef struct {
  tmpl_t v[64];
  size_t n;
} tmpls_t;

static int keep(void *arg, const collect_store_row_t *row) {
  tmpls_t *t = arg;
  if (t->n == sizeof t->v / sizeof *t->v)
    return 0;
  tmpl_t *m = &t->v[t->n++];
  *m = (tmpl_t){.id = row->id,
                .time_ns = row->time_ns,
                .duration_ns = row->duration_ns,
                .total = row->total,
                .job = strdup(row->job),
                .instance = strdup(row->instance),
                .labels = strdup(row->labels)};
  return m->job && m->instance && m->labels ? 0 : -ENOMEM;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  int a = 1;
  if (a < argc && !strcmp(argv[a], "--no-fsync"))
    no_fsync = 1, a++;
  if (argc - a < 4) {
    fprintf(stderr, "usage: fill [--no-fsync] DIR INTERVAL_S COUNT TYPE...\n");
    return 2;
  }
  const char *dir = argv[a];
  int64_t interval_ns = (int64_t)(atof(argv[a + 1]) * 1e9);
  long count = atol(argv[a + 2]);
  char err[512];
  collect_store_t *s;
  collect_store_repair_t rep;
  if (collect_store_open(dir, &s, &rep, err, sizeof err)) {
    fprintf(stderr, "fill: %s\n", err);
    return 1;
  }
  int rc = 0;
  for (int k = a + 3; k < argc && rc == 0; k++) {
    const char *type = argv[k];
    tmpls_t t = {.n = 0};
    collect_query_t q = {.type = type, .from_ns = 0, .to_ns = INT64_MAX};
    if ((rc = collect_store_query(s, &q, keep, &t, err, sizeof err))) {
      fprintf(stderr, "fill: %s\n", err);
      break;
    }
    if (!t.n) {
      fprintf(stderr, "fill: no %s profile in %s to copy\n", type, dir);
      rc = 1;
      break;
    }
    for (size_t i = 0; i < t.n && rc == 0; i++) {
      if ((rc = collect_store_read(s, t.v[i].id, &t.v[i].data, &t.v[i].len, err, sizeof err)))
        fprintf(stderr, "fill: %s\n", err);
      else if (strcmp(t.v[i].job, t.v[0].job) || strcmp(t.v[i].instance, t.v[0].instance))
        fprintf(stderr, "fill: %s: more than one target in %s\n", type, dir), rc = 1;
    }
    /* The collector's labels of a static target: job and instance. */
    collect_store_label_t labels[2] = {{"job", t.v[0].job}, {"instance", t.v[0].instance}};
    char *text = collect_store_labels_text(labels, 2);
    if (rc == 0 && (!text || strcmp(text, t.v[0].labels))) {
      fprintf(stderr, "fill: %s: labels %s are not just job and instance\n", type, t.v[0].labels);
      rc = 1;
    }
    free(text);
    double t0 = now_s();
    for (long i = 1; i <= count && rc == 0; i++) {
      const tmpl_t *m = &t.v[(size_t)(i - 1) % t.n];
      collect_entry_t e = {.job = m->job,
                           .instance = m->instance,
                           .type = type,
                           .labels = labels,
                           .nlabels = 2,
                           .time_ns = t.v[0].time_ns - i * interval_ns,
                           .duration_ns = m->duration_ns,
                           .total = m->total};
      if ((rc = collect_store_put(s, &e, m->data, m->len, NULL, err, sizeof err)))
        fprintf(stderr, "fill: %s\n", err);
    }
    if (rc == 0)
      printf("fill: %s: %ld profiles put (copies of %zu stored ones) in %.1f s%s\n", type, count,
             t.n, now_s() - t0, no_fsync ? " (fsync skipped)" : "");
    for (size_t i = 0; i < t.n; i++) {
      free(t.v[i].job);
      free(t.v[i].instance);
      free(t.v[i].labels);
      free(t.v[i].data);
    }
  }
  collect_store_close(s);
  return rc ? 1 : 0;
}
