/* What builder.c (the samples and the protobuf encoding) shares with
 * builder_resolve.c (symbolizing them) and text.c (Go's legacy text
 * formats): the builder's fields, and the symbolized view of its samples
 * that both encodings are written from. */
#ifndef CPROF_PROFILE_BUILDER_INTERNAL_H
#define CPROF_PROFILE_BUILDER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "profile/builder.h"
#include "profile/table.h"

/* Interned strings; index 0 is always "", as profile.proto requires of
 * string_table[0]. */
typedef struct cprof__strtab {
  char **v;
  size_t n, cap;
  cprof__table_t index;
} cprof__strtab_t;

/* A label with its strings interned, so that comparing labels is comparing
 * numbers. str == 0 marks a numeric label (profile.proto's Label.str). */
typedef struct cprof__label_rec {
  int64_t key, str, num, num_unit;
} cprof__label_rec_t;

/* One distinct (stack, labels) with its summed values. A pseudo sample
 * (cprof__builder_add_pseudo) has depth 0 and pseudo == the string index of
 * its frame's name; a real one has pseudo == 0. */
typedef struct cprof__sample_rec {
  uint64_t hash;
  int64_t values[CPROF_MAX_SAMPLE_TYPES];
  int64_t pseudo;
  int depth, nlabels;
  uint32_t modules;            /* the module generation it was taken in (unwind/modules.h) */
  uintptr_t *pcs;              /* depth entries, in the same block as labels */
  cprof__label_rec_t *labels;  /* sorted, so that label order does not matter */
} cprof__sample_rec_t;

struct cprof__builder {
  int n_sample_types;
  int64_t sample_type[CPROF_MAX_SAMPLE_TYPES][2]; /* string indexes: type, unit */
  int64_t period_type[2];                         /* string indexes; 0 when absent */
  int64_t period, time_nanos, duration_nanos;
  int64_t default_sample_type; /* string index, or -1 when the description had none */

  cprof__strtab_t strings;
  cprof__sample_rec_t *samples;
  size_t nsamples, capsamples;
  cprof__table_t sample_index;

  int64_t totals[CPROF_MAX_SAMPLE_TYPES];
  int64_t count;
};

/* The symbolized view, made at write time while the symbolizer is held and
 * independent of it afterwards (every string is interned in the builder).
 * Arrays are in ID order: element i has profile ID i + 1. */
typedef struct cprof__res_line {
  uint32_t function; /* index into functions */
  int64_t line;
} cprof__res_line_t;

typedef struct cprof__res_location {
  uint64_t address;    /* Location.address: pcs[0], or pcs[i] - 1 for i > 0 */
  int64_t pseudo;      /* string index of a pseudo frame's name, or 0 */
  int mapping;         /* index into mappings, -1 for none */
  uint32_t modules;    /* the module generation it was looked up in */
  uint32_t first_line; /* index into lines; nlines of them, innermost first */
  uint32_t nlines;
  uint64_t sym_offset; /* address minus the start of the outermost function */
} cprof__res_location_t;

typedef struct cprof__res_function {
  int64_t name, file; /* string indexes; a Function is one (name, file) */
  int64_t system_name; /* string index: the first frame's, see builder.c */
} cprof__res_function_t;

typedef struct cprof__res_mapping {
  uint64_t start, limit, offset;
  int64_t file, build_id; /* string indexes */
  int has_functions, has_filenames, has_line_numbers, has_inline_frames;
  int64_t no_symbols; /* string index of the comment saying it has none, or 0 */
} cprof__res_mapping_t;

typedef struct cprof__resolved {
  cprof__res_mapping_t *mappings;
  size_t nmappings;
  cprof__res_location_t *locations;
  size_t nlocations, caplocations;
  cprof__table_t location_index;
  cprof__res_line_t *lines;
  size_t nlines, caplines;
  cprof__res_function_t *functions;
  size_t nfunctions, capfunctions;
  cprof__table_t function_index;
  /* Location indexes of sample i: stack_locs[stack_start[i] ..
   * stack_start[i] + depth), leaf first (one entry for a pseudo sample). */
  uint32_t *stack_locs;
  size_t *stack_start;
  /* builder_resolve.c's cache of recent address lookups; NULL for small
   * profiles. */
  struct cprof__recent_loc *recent;
} cprof__resolved_t;

/* Grows *v (of *cap elements of size `size`) to hold at least `need`.
 * 0 or -ENOMEM. */
int cprof__builder_grow(void **v, size_t *cap, size_t need, size_t size);

/* The index of s in the table, adding a copy of it if new; NULL is "".
 * Returns the index or -ENOMEM. */
int64_t cprof__strtab_intern(cprof__strtab_t *st, const char *s);

/* Symbolizes every sample of b (builder_resolve.c). 0 or -ENOMEM; r is always safe to free. */
int cprof__builder_resolve(cprof__builder_t *b, cprof__resolved_t *r);
void cprof__resolved_free(cprof__resolved_t *r);

/* Number of location indexes sample i has in stack_locs. */
static inline int cprof__sample_nlocs(const cprof__sample_rec_t *s) {
  return s->pseudo ? 1 : s->depth;
}

static inline const char *cprof__builder_str(const cprof__builder_t *b, int64_t i) {
  return b->strings.v[i];
}

#endif
