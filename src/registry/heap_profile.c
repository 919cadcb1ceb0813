/* The heap profile, as Go's writeHeapProto and writeHeapInternal make it:
 * one sample per stack and block size, labelled bytes=SIZE (a stack's sizes
 * past its first few make one sample without the label), its values
 * scaled from what was sampled to what was allocated. The text form
 * (debug=1) ends with memory statistics, as Go's "# runtime.MemStats"
 * block, and the memory map, as gperftools' heap profiles do. */
#include "registry/heap_profile.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "profile/builder.h"
#include "registry/builtin.h"
#include "sample/stack_table.h"

/* A weight sum as whole allocations, rounded (a delta's may be negative). */
static int64_t objects(int64_t weight) {
  return llround((double)weight / CPROF_HEAP_WEIGHT_ONE);
}

void cprof__heap_values(const cprof__heap_record_t *r, const cprof__heap_record_t *base,
                        int scaled, int64_t v[4]) {
  cprof__heap_record_t d = *r;
  if (base) { /* unsigned differences: right modulo 2^64, as the counters wrap */
    d.allocs -= base->allocs, d.frees -= base->frees;
    d.alloc_bytes -= base->alloc_bytes, d.free_bytes -= base->free_bytes;
    d.alloc_weight -= base->alloc_weight, d.free_weight -= base->free_weight;
    d.alloc_wbytes -= base->alloc_wbytes, d.free_wbytes -= base->free_wbytes;
  }
  if (!scaled) {
    v[0] = (int64_t)d.allocs;
    v[1] = (int64_t)d.alloc_bytes;
    v[2] = (int64_t)(d.allocs - d.frees);
    v[3] = (int64_t)(d.alloc_bytes - d.free_bytes);
    return;
  }
  v[0] = objects((int64_t)d.alloc_weight);
  v[1] = (int64_t)d.alloc_wbytes;
  v[2] = objects((int64_t)(d.alloc_weight - d.free_weight));
  v[3] = (int64_t)(d.alloc_wbytes - d.free_wbytes);
}

/* One "# Name = value" line per figure, after the profile, as Go's
 * "# runtime.MemStats" block: pprof ignores them, people read them. */
static void append_stats(const cprof__heap_snapshot_t *now, cprof__buf_t *out) {
  struct mallinfo2 mi = mallinfo2();
  cprof__buf_puts(out, "\n# malloc statistics (glibc mallinfo2; zero under another allocator)\n");
  cprof__buf_printf(out, "# InUse = %zu\n", mi.uordblks + mi.hblkhd);
  cprof__buf_printf(out, "# Free = %zu\n", mi.fordblks);
  cprof__buf_printf(out, "# Arena = %zu\n", mi.arena);
  cprof__buf_printf(out, "# Mmapped = %zu\n", mi.hblkhd);
  cprof__buf_printf(out, "# MmappedBlocks = %zu\n", mi.hblks);
  cprof__buf_printf(out, "# FreeChunks = %zu\n", mi.ordblks);
  cprof__buf_printf(out, "# Releasable = %zu\n", mi.keepcost);

  cprof__buf_puts(out, "#\n# process memory (/proc/self/status)\n");
  FILE *f = fopen("/proc/thread-self/status", "re");
  char line[256];
  while (f && fgets(line, sizeof line, f)) {
    static const char *const keys[] = {"VmRSS", "VmHWM", "VmSize", "VmPeak"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
      size_t n = strlen(keys[i]);
      unsigned long long kb;
      if (strncmp(line, keys[i], n) == 0 && line[n] == ':' &&
          sscanf(line + n + 1, "%llu", &kb) == 1)
        cprof__buf_printf(out, "# %s = %llu\n", keys[i], kb * 1024);
    }
  }
  if (f)
    fclose(f);

  cprof__buf_puts(out, "#\n# cprof heap sampler\n");
  cprof__buf_printf(out, "# SampleRate = %ld\n", now->rate);
  cprof__buf_printf(out, "# SampledLive = %llu\n", (unsigned long long)now->live_blocks);
  cprof__buf_printf(out, "# Buckets = %zu\n", now->buckets);
  cprof__buf_printf(out, "# Records = %zu\n", now->n);
  cprof__buf_printf(out, "# ProfilerBytes = %llu\n", (unsigned long long)now->own_bytes);
}

int cprof__heap_profile_write(const cprof__heap_snapshot_t *now, const cprof__heap_snapshot_t *base,
                              int debug, const char *default_type, int64_t duration_ns,
                              cprof__buf_t *out) {
  cprof__profile_desc_t desc = {
      .sample_types = {{"alloc_objects", "count"},
                       {"alloc_space", "bytes"},
                       {"inuse_objects", "count"},
                       {"inuse_space", "bytes"}},
      .n_sample_types = 4,
      .period_type = {"space", "bytes"},
      .period = now->rate,
      .time_nanos = cprof__now_ns(CLOCK_REALTIME),
      .duration_nanos = duration_ns,
      .default_sample_type = default_type,
  };
  cprof__builder_t *b = cprof__builder_new(&desc);
  if (!b)
    return -ENOMEM;
  int rc = 0;
  for (size_t i = 0; i < now->n && rc == 0; i++) {
    const cprof__heap_record_t *r = &now->v[i];
    /* ids index the snapshot arrays */
    const cprof__heap_record_t *was = base && r->id < base->n ? &base->v[r->id] : NULL;
    if (r->allocs == (was ? was->allocs : 0) && r->frees == (was ? was->frees : 0))
      continue; /* nothing happened here (in the delta) */
    int64_t v[4];
    /* debug=1 as sampled: pprof scales the text format itself */
    cprof__heap_values(r, was, !debug, v);
    /* Go's label: the block size, where the slot holds one size. */
    cprof__label_t size = {.key = "bytes", .num = (int64_t)r->size};
    rc = cprof__builtin_add_record(b, r->pcs, r->depth, v, &size, r->mixed ? 0 : 1);
  }
  if (rc == 0 && debug) {
    cprof__buf_t trailer;
    cprof__buf_init(&trailer);
    append_stats(now, &trailer);
    cprof__text_append_maps(&trailer);
    rc = trailer.failed ? -ENOMEM
                        : cprof__builder_write_heap_text(b, now->rate, trailer.data, out);
    cprof__buf_free(&trailer);
  } else if (rc == 0) {
    rc = cprof__builder_write_proto(b, out);
  }
  cprof__builder_free(b);
  return rc;
}

/* ---- heap and allocs in the registry: the same sampled profile, told
 * apart only by the sample type pprof shows first (arg) ---- */

static long heap_count(const cprof__profile_t *p) { return (long)cprof__heap_records(); }

static int heap_snapshot(const cprof__profile_t *p, void **out) {
  cprof__heap_snapshot_t *s = calloc(1, sizeof *s);
  return cprof__snapshot_done(p, s, s ? cprof__heap_snapshot(s) : -ENOMEM, out);
}

static void heap_release(const cprof__profile_t *p, void *snap) {
  cprof__heap_snapshot_free(snap);
  free(snap);
}

static int heap_write(const cprof__profile_t *p, void *now, void *base, int debug,
                      int64_t duration_ns, cprof__buf_t *out) {
  return cprof__heap_profile_write(now, base, debug != 0, p->arg, duration_ns, out);
}

static const cprof__profile_ops_t heap_ops = {heap_count, heap_snapshot, heap_release, heap_write,
                                              NULL};

const cprof__profile_t cprof__allocs_profile = {
    .name = "allocs",
    .desc = "A sampling of all past memory allocations (malloc and friends, C++ new), one sample "
            "per CPROF_HEAP_RATE bytes on average; CPROF_HEAP_RATE=0 turns it off.",
    .failure = "could not write the heap profile",
    .ops = &heap_ops,
    .arg = "alloc_space",
};

const cprof__profile_t cprof__heap_profile = {
    .name = "heap",
    .desc = "A sampling of memory allocations of live objects: where the memory in use was "
            "allocated. The gc GET parameter is accepted and ignored (C has no collector).",
    .failure = "could not write the heap profile",
    .ops = &heap_ops,
    .arg = "inuse_space",
};
