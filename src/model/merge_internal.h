/* What the two files of the merge share (merge.c, the profiles: their
 * compatibility, their headers and the merge itself; merge_map.c, each
 * mapping, function, location and sample of a source mapped to the
 * output's): the merger's state. */
#ifndef CPROF_MODEL_MERGE_INTERNAL_H
#define CPROF_MODEL_MERGE_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "model/model.h"
#include "profile/table.h"

#define NONE UINT32_MAX

typedef struct map_info {
  uint32_t ix;    /* into the output's mappings; NONE: not mapped yet */
  uint64_t delta; /* added to a location's address (mod 2^64) */
} map_info_t;

typedef struct merger {
  cprof__pf_t *p; /* the output */
  cprof__arena_t *a;
  cprof__table_t mappings, functions, locations, samples;
  /* The current source and what its objects became, by index. */
  const cprof__pf_t *src;
  map_info_t *map_memo;
  uint32_t *fn_memo, *loc_memo;
  /* Scratch for the key of the location or sample being mapped. */
  cprof__pf_line_t *lines;
  size_t lines_cap;
  const cprof__pf_location_t **locs;
  size_t locs_cap;
  cprof__label_t *labels;
  size_t labels_cap;
} merger_t;

static inline int str_eq(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

static inline const char *copy_str(merger_t *m, const char *s) {
  return cprof__arena_strdup(m->a, s ? s : "");
}

static inline int is_zero(const int64_t *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (v[i])
      return 0;
  return 1;
}

/* Maps src (a mapping of m->src) to the output's, adding it if new: *out
 * says which, and by how much its locations' addresses move (merge_map.c). */
int cprof__merge_mapping(merger_t *m, const cprof__pf_mapping_t *src, map_info_t *out);

/* Maps src (a sample of m->src) into the output, its values times sign;
 * with base, labelled pprof::base=true instead of any pprof::base label it
 * had, as pprof's SetLabel (merge_map.c). */
int cprof__merge_sample(merger_t *m, const cprof__pf_sample_t *src, int sign, int base);

#endif
