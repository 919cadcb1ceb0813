/* The contention profiles' writer (see contention_profile.h). */
#include "registry/contention_profile.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/clock.h"
#include "profile/builder.h"
#include "registry/builtin.h"
#include "sample/stack_table.h"

int cprof__contention_profile_write(cprof__contention_kind_t kind,
                                    const cprof__contention_snapshot_t *now,
                                    const cprof__contention_snapshot_t *base, int debug,
                                    int64_t duration_ns, cprof__buf_t *out) {
  int threads = kind == CPROF_THREADCREATE;
  cprof__profile_desc_t desc = {
      .sample_types = {{"contentions", "count"}, {"delay", "nanoseconds"}},
      .n_sample_types = 2,
      .period_type = {"contentions", "count"},
      .period = 1,
      .time_nanos = cprof__now_ns(CLOCK_REALTIME),
      .duration_nanos = duration_ns,
  };
  if (threads) {
    desc.sample_types[0] = (cprof__value_type_t){"threadcreate", "count"};
    desc.n_sample_types = 1;
    desc.period_type = desc.sample_types[0];
  }
  /* The mutex profile holds 1 in `fraction` events: Go's scaleMutexProfile
   * multiplies them back, in the protobuf form; the text form says the
   * period and leaves that to pprof. */
  long scale = kind == CPROF_MUTEX && !debug && now->setting > 0 ? now->setting : 1;
  cprof__builder_t *b = cprof__builder_new(&desc);
  if (!b)
    return -ENOMEM;
  int rc = 0;
  for (size_t i = 0; i < now->n && rc == 0; i++) {
    const cprof__contention_record_t *r = &now->v[i];
    double count = r->count;
    int64_t delay = r->delay;
    if (base && r->id < base->n) { /* ids index the snapshot arrays */
      count -= base->v[r->id].count;
      delay -= base->v[r->id].delay;
    }
    if (count <= 0 && delay <= 0) /* nothing happened here (in the delta) */
      continue;
    int64_t v[2] = {llround(count) * scale, delay * scale};
    rc = cprof__builtin_add_record(b, r->pcs, r->depth, v, NULL, 0);
  }
  if (rc == 0) {
    if (!debug) {
      rc = cprof__builder_write_proto(b, out);
    } else if (threads) {
      rc = cprof__builder_write_count_text(b, "threadcreate", out);
    } else {
      char header[128];
      if (kind == CPROF_MUTEX)
        snprintf(header, sizeof header, "--- mutex:\ncycles/second=1000000000\nsampling period=%ld\n",
                 now->setting);
      else
        snprintf(header, sizeof header, "--- contention:\ncycles/second=1000000000\n");
      rc = cprof__builder_write_contention_text(b, header, out);
      if (rc == 0) /* so that `go tool pprof` symbolizes the saved text */
        cprof__text_append_maps(out);
    }
  }
  cprof__builder_free(b);
  return rc;
}

/* ---- block, mutex and threadcreate in the registry (arg: the kind) ---- */

static cprof__contention_kind_t kind_of(const cprof__profile_t *p) {
  return *(const cprof__contention_kind_t *)p->arg;
}

static long count(const cprof__profile_t *p) { return (long)cprof__contention_records(kind_of(p)); }

static int snapshot(const cprof__profile_t *p, void **out) {
  cprof__contention_snapshot_t *s = calloc(1, sizeof *s);
  return cprof__snapshot_done(p, s, s ? cprof__contention_snapshot(kind_of(p), s) : -ENOMEM, out);
}

static void release(const cprof__profile_t *p, void *snap) {
  cprof__contention_snapshot_free(snap);
  free(snap);
}

static int write(const cprof__profile_t *p, void *now, void *base, int debug, int64_t duration_ns,
                 cprof__buf_t *out) {
  return cprof__contention_profile_write(kind_of(p), now, base, debug != 0, duration_ns, out);
}

static const char *block_off(const cprof__profile_t *p) {
  return cprof__block_rate() > 0 ? NULL
                                 : "off: turn it on with CPROF_BLOCK_RATE=NS, "
                                   "cprof_set_block_rate(NS) or POST /debug/pprof/block?rate=NS "
                                   "(1 records every wait)";
}

static const char *mutex_off(const cprof__profile_t *p) {
  return cprof__mutex_fraction() > 0
             ? NULL
             : "off: turn it on with CPROF_MUTEX_FRACTION=N, cprof_set_mutex_fraction(N) or "
               "POST /debug/pprof/mutex?fraction=N (1 records every contended unlock)";
}

static const cprof__profile_ops_t block_ops = {count, snapshot, release, write, block_off};
static const cprof__profile_ops_t mutex_ops = {count, snapshot, release, write, mutex_off};
static const cprof__profile_ops_t threadcreate_ops = {count, snapshot, release, write, NULL};
static const cprof__contention_kind_t kinds[] = {CPROF_BLOCK, CPROF_MUTEX, CPROF_THREADCREATE};

const cprof__profile_t cprof__block_profile = {
    .name = "block",
    .desc = "Stack traces that led to blocking on synchronization primitives (pthread mutexes, "
            "rwlocks, condition variables, semaphores, joins, spin locks)",
    .failure = "could not write the block profile",
    .ops = &block_ops,
    .arg = &kinds[0],
};

const cprof__profile_t cprof__mutex_profile = {
    .name = "mutex",
    .desc = "Stack traces of holders of contended mutexes (pthread mutexes and rwlocks), charged "
            "with the delay their hold caused",
    .failure = "could not write the mutex profile",
    .ops = &mutex_ops,
    .arg = &kinds[1],
};

const cprof__profile_t cprof__threadcreate_profile = {
    .name = "threadcreate",
    .desc = "Stack traces that led to the creation of new OS threads",
    .failure = "could not write the threadcreate profile",
    .ops = &threadcreate_ops,
    .arg = &kinds[2],
};
