/* The public run-time setters (cprof.h), in one place that every consumer
 * may call: cprof_set_cpu_rate and cprof_set_heap_rate, as Go's
 * runtime.SetCPUProfileRate and runtime.MemProfileRate, and
 * cprof_set_block_rate and cprof_set_mutex_fraction, as Go's
 * runtime.SetBlockProfileRate and SetMutexProfileFraction. Each returns the
 * setting it replaced (a long, as SetMutexProfileFraction returns the
 * previous rate); a negative argument changes nothing and returns the
 * setting in force.
 *
 * The CPU and heap rates keep the configuration (core/config.h) in step,
 * so that the next CPU profile, whoever takes it (/debug/pprof/profile,
 * cprof_cpu_profile_start, CPROF_OUTPUT after a restart), samples at the
 * rate set here. cprof_start sets all four again from its options and the
 * environment (life/start.c). POST /debug/pprof/block and /mutex
 * (http/rates.c) call the block and mutex setters. */
#include <errno.h>

#include "core/config.h"
#include "cprof.h"
#include "interpose/malloc.h"
#include "core/guard.h"
#include "sample/contention.h"
#include "sample/heap.h"

typedef struct {
  int hz, old;
} cpu_rate_t;

static void edit_cpu_hz(cprof__config_t *cfg, void *arg) {
  cpu_rate_t *r = arg;
  r->old = cfg->cpu_hz;
  if (r->hz > 0)
    cfg->cpu_hz = r->hz;
}

long cprof_set_cpu_rate(int hz) {
  if (hz == 0 || hz > CPROF_MAX_CPU_HZ)
    return -EINVAL;
  cpu_rate_t r = {.hz = hz};
  cprof__config_edit(edit_cpu_hz, &r);
  return r.old;
}

static void edit_heap_rate(cprof__config_t *cfg, void *arg) { cfg->heap_rate = *(long *)arg; }

long cprof_set_heap_rate(long bytes) {
  if (bytes < 0)
    return cprof__heap_rate();
  if (bytes > CPROF_MAX_HEAP_RATE)
    return -EINVAL;
  int saved = errno;
  cprof__guard_enter();
  long err = 0;
  char why[600];
  /* As cprof_start: a malloc that is not ours cannot be sampled, and one
   * whose frees we would not see must not be. */
  if (bytes > 0 && cprof__malloc_check(why, sizeof why) != 0) {
    err = -ENOTSUP;
    goto out;
  }
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  err = cprof__heap_rate();
  cprof__heap_configure(bytes, cfg.unwind);
  long now = cprof__heap_rate(); /* 0 when the sampler's filter could not be mapped */
  cprof__config_edit(edit_heap_rate, &now);
out:
  cprof__guard_leave();
  errno = saved;
  return err;
}

long cprof_set_block_rate(long ns) {
  if (ns < 0)
    return cprof__block_rate();
  return cprof__block_set_rate(ns > CPROF_MAX_BLOCK_RATE ? CPROF_MAX_BLOCK_RATE : ns);
}

long cprof_set_mutex_fraction(long n) {
  if (n < 0)
    return cprof__mutex_fraction();
  return cprof__mutex_set_fraction(n > CPROF_MAX_MUTEX_FRACTION ? CPROF_MAX_MUTEX_FRACTION : n);
}
