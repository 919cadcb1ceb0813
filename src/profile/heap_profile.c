/* The heap profile, as Go's writeHeapProto and writeHeapInternal make it:
 * one sample per bucket (stack and block size), labelled bytes=SIZE, its
 * values scaled from what was sampled to what was allocated. The text form
 * (debug=1) ends with memory statistics, as Go's "# runtime.MemStats"
 * block, and the memory map, as gperftools' heap profiles do. */
#include "profile/heap_profile.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "profile/builder.h"

void cprof__heap_scale(uint64_t count, uint64_t size, long rate, int64_t *objects, int64_t *bytes) {
  *objects = *bytes = 0;
  if (count == 0 || size == 0) {
    *objects = (int64_t)count; /* malloc(0): counted, no bytes */
    return;
  }
  if (rate <= 1) { /* every allocation sampled: nothing to undo */
    *objects = (int64_t)count;
    *bytes = (int64_t)(count * size);
    return;
  }
  /* A block of s bytes is sampled with probability 1 - exp(-s/rate).
   * Rounded, not truncated as Go does: a bucket is one size, so most
   * buckets hold one sample, and truncating 1.58 objects to 1 in each of
   * them biased alloc_objects 5 % low at rate 4096 (bench/README.md). */
  double scale = 1 / (1 - exp(-(double)size / (double)rate));
  *objects = llround((double)count * scale);
  *bytes = llround((double)count * (double)size * scale);
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
  FILE *f = fopen("/proc/self/status", "re");
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
  cprof__buf_printf(out, "# Buckets = %zu\n", now->n);
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
    uint64_t allocs = r->allocs, frees = r->frees;
    if (base && r->id < base->n) { /* ids index the snapshot arrays */
      allocs -= base->v[r->id].allocs;
      frees -= base->v[r->id].frees;
    }
    if (allocs == 0 && frees == 0) /* nothing happened here (in the delta) */
      continue;
    int64_t v[4];
    if (debug) { /* as sampled: pprof scales the text format itself */
      v[0] = (int64_t)allocs;
      v[1] = (int64_t)(allocs * r->size);
      v[2] = (int64_t)(allocs - frees);
      v[3] = (int64_t)((allocs - frees) * r->size);
    } else {
      cprof__heap_scale(allocs, r->size, now->rate, &v[0], &v[1]);
      /* A delta's in-use count may be negative: more freed than allocated. */
      int64_t inuse = (int64_t)(allocs - frees);
      cprof__heap_scale(inuse < 0 ? (uint64_t)-inuse : (uint64_t)inuse, r->size, now->rate, &v[2],
                        &v[3]);
      if (inuse < 0) {
        v[2] = -v[2];
        v[3] = -v[3];
      }
    }
    cprof__label_t size = {.key = "bytes", .num = (int64_t)r->size};
    rc = cprof__builder_add(b, r->pcs, r->depth, v, &size, 1);
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
