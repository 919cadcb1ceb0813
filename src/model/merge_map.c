/* Each object of a source mapped to the output's, as pprof's profile.Merge
 * maps them (merge.c says by which keys): found in the output's tables or
 * added with the next ID, and remembered by the source's index, so that a
 * source's object is looked up once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/merge_internal.h"

#define MAPSIZE_ROUNDING 0x1000

/* Whether p points into base[0..n), and where. Compared as integers, since
 * pointers into different arrays cannot be compared in C. */
static size_t index_of(const void *p, const void *base, size_t n, size_t size) {
  uintptr_t x = (uintptr_t)p, b = (uintptr_t)base;
  if (!base || x < b || (x - b) / size >= n || (x - b) % size != 0)
    return SIZE_MAX;
  return (x - b) / size;
}

static uint64_t hash_str(uint64_t h, const char *s) {
  s = s ? s : "";
  return cprof__hash_bytes(h, s, strlen(s) + 1);
}

/* ---- mappings ---------------------------------------------------------- */

static uint64_t mapping_size(const cprof__pf_mapping_t *mp) {
  uint64_t size = mp->limit - mp->start;
  size = size + MAPSIZE_ROUNDING - 1;
  return size - size % MAPSIZE_ROUNDING;
}

/* pprof keys a mapping by its build ID, or its file when it has none; one
 * with neither is a fake mapping, and all fake mappings are one. */
static const char *mapping_name(const cprof__pf_mapping_t *mp) {
  return mp->build_id && *mp->build_id ? mp->build_id : mp->file ? mp->file : "";
}

static uint64_t mapping_hash(const cprof__pf_mapping_t *mp) {
  uint64_t h = cprof__hash_u64(CPROF_HASH_SEED, mapping_size(mp));
  h = cprof__hash_u64(h, mp->offset);
  return hash_str(h, mapping_name(mp));
}

static int mapping_eq(const void *ctx, uint32_t value, const void *key) {
  const cprof__pf_mapping_t *a = &((const merger_t *)ctx)->p->mappings[value], *b = key;
  return mapping_size(a) == mapping_size(b) && a->offset == b->offset &&
         strcmp(mapping_name(a), mapping_name(b)) == 0;
}

int cprof__merge_mapping(merger_t *m, const cprof__pf_mapping_t *src, map_info_t *out) {
  *out = (map_info_t){NONE, 0};
  if (!src)
    return 0;
  size_t i = index_of(src, m->src->mappings, m->src->n_mappings, sizeof *src);
  if (i != SIZE_MAX && m->map_memo[i].ix != NONE) {
    *out = m->map_memo[i];
    return 0;
  }
  uint64_t h = mapping_hash(src);
  int64_t found = cprof__table_find(&m->mappings, h, mapping_eq, m, src);
  if (found >= 0) {
    out->ix = (uint32_t)found;
    out->delta = m->p->mappings[found].start - src->start;
  } else {
    cprof__pf_t *p = m->p;
    cprof__pf_mapping_t *mp = &p->mappings[p->n_mappings];
    *mp = *src;
    mp->id = p->n_mappings + 1;
    mp->file = copy_str(m, src->file);
    mp->build_id = copy_str(m, src->build_id);
    if (!mp->file || !mp->build_id)
      return -ENOMEM;
    int err = cprof__table_insert(&m->mappings, h, (uint32_t)p->n_mappings);
    if (err)
      return err;
    out->ix = (uint32_t)p->n_mappings++;
  }
  if (i != SIZE_MAX)
    m->map_memo[i] = *out;
  return 0;
}

/* ---- functions --------------------------------------------------------- */

static uint64_t function_hash(const cprof__pf_function_t *f) {
  uint64_t h = cprof__hash_u64(CPROF_HASH_SEED, (uint64_t)f->start_line);
  h = hash_str(h, f->name);
  h = hash_str(h, f->system_name);
  return hash_str(h, f->filename);
}

static int function_eq(const void *ctx, uint32_t value, const void *key) {
  const cprof__pf_function_t *a = &((const merger_t *)ctx)->p->functions[value], *b = key;
  return a->start_line == b->start_line && str_eq(a->name, b->name) &&
         str_eq(a->system_name, b->system_name) && str_eq(a->filename, b->filename);
}

static int map_function(merger_t *m, const cprof__pf_function_t *src,
                        const cprof__pf_function_t **out) {
  *out = NULL;
  if (!src)
    return 0;
  size_t i = index_of(src, m->src->functions, m->src->n_functions, sizeof *src);
  if (i != SIZE_MAX && m->fn_memo[i] != NONE) {
    *out = &m->p->functions[m->fn_memo[i]];
    return 0;
  }
  uint64_t h = function_hash(src);
  int64_t found = cprof__table_find(&m->functions, h, function_eq, m, src);
  if (found < 0) {
    cprof__pf_t *p = m->p;
    cprof__pf_function_t *f = &p->functions[p->n_functions];
    f->id = p->n_functions + 1;
    f->name = copy_str(m, src->name);
    f->system_name = copy_str(m, src->system_name);
    f->filename = copy_str(m, src->filename);
    f->start_line = src->start_line;
    if (!f->name || !f->system_name || !f->filename)
      return -ENOMEM;
    int err = cprof__table_insert(&m->functions, h, (uint32_t)p->n_functions);
    if (err)
      return err;
    found = (int64_t)p->n_functions++;
  }
  if (i != SIZE_MAX)
    m->fn_memo[i] = (uint32_t)found;
  *out = &m->p->functions[found];
  return 0;
}

/* ---- locations --------------------------------------------------------- */

/* The address pprof compares: relative to the mapping's start, so that
 * address space randomization does not split a location. */
static uint64_t location_addr(const cprof__pf_location_t *l) {
  return l->mapping ? l->address - l->mapping->start : l->address;
}

static uint64_t location_hash(const cprof__pf_location_t *l) {
  uint64_t h = cprof__hash_u64(CPROF_HASH_SEED, location_addr(l));
  h = cprof__hash_u64(h, l->mapping ? l->mapping->id : 0);
  h = cprof__hash_u64(h, (uint64_t)l->is_folded);
  for (size_t i = 0; i < l->n_lines; i++) {
    h = cprof__hash_u64(h, l->lines[i].function ? l->lines[i].function->id : 0);
    h = cprof__hash_u64(h, (uint64_t)l->lines[i].line);
    h = cprof__hash_u64(h, (uint64_t)l->lines[i].column);
  }
  return h;
}

/* Both locations are the output's, so their mappings and functions are
 * compared by identity. */
static int location_eq(const void *ctx, uint32_t value, const void *key) {
  const cprof__pf_location_t *a = &((const merger_t *)ctx)->p->locations[value], *b = key;
  if (a->mapping != b->mapping || location_addr(a) != location_addr(b) ||
      !a->is_folded != !b->is_folded || a->n_lines != b->n_lines)
    return 0;
  for (size_t i = 0; i < a->n_lines; i++)
    if (a->lines[i].function != b->lines[i].function || a->lines[i].line != b->lines[i].line ||
        a->lines[i].column != b->lines[i].column)
      return 0;
  return 1;
}

static int map_location(merger_t *m, const cprof__pf_location_t *src,
                        const cprof__pf_location_t **out) {
  size_t i = index_of(src, m->src->locations, m->src->n_locations, sizeof *src);
  if (i != SIZE_MAX && m->loc_memo[i] != NONE) {
    *out = &m->p->locations[m->loc_memo[i]];
    return 0;
  }
  map_info_t mi;
  int err = cprof__merge_mapping(m, src->mapping, &mi);
  if (err)
    return err;
  if ((err = cprof__grow((void **)&m->lines, &m->lines_cap, src->n_lines, sizeof *m->lines)))
    return err;
  cprof__pf_location_t l = {
      .mapping = mi.ix == NONE ? NULL : &m->p->mappings[mi.ix],
      .address = src->address + mi.delta,
      .lines = m->lines,
      .n_lines = src->n_lines,
      .is_folded = src->is_folded,
  };
  for (size_t k = 0; k < src->n_lines; k++) {
    m->lines[k] = src->lines[k];
    if ((err = map_function(m, src->lines[k].function, &m->lines[k].function)))
      return err;
  }
  uint64_t h = location_hash(&l);
  int64_t found = cprof__table_find(&m->locations, h, location_eq, m, &l);
  if (found < 0) {
    cprof__pf_t *p = m->p;
    cprof__pf_line_t *lines = NULL;
    if (l.n_lines) {
      lines = cprof__arena_array(m->a, l.n_lines, sizeof *lines);
      if (!lines)
        return -ENOMEM;
      memcpy(lines, m->lines, l.n_lines * sizeof *lines);
    }
    l.lines = lines;
    l.id = p->n_locations + 1;
    p->locations[p->n_locations] = l;
    if ((err = cprof__table_insert(&m->locations, h, (uint32_t)p->n_locations)))
      return err;
    found = (int64_t)p->n_locations++;
  }
  if (i != SIZE_MAX)
    m->loc_memo[i] = (uint32_t)found;
  *out = &m->p->locations[found];
  return 0;
}

/* ---- samples ----------------------------------------------------------- */

/* Labels in one order whatever order a sample lists them in: strings before
 * numbers, then by key. Values of one key keep their order, as in pprof's
 * map of key to list (hence the position as the last resort). */
typedef struct sort_label {
  cprof__label_t l;
  size_t pos;
} sort_label_t;

static int label_cmp(const void *x, const void *y) {
  const sort_label_t *a = x, *b = y;
  int an = a->l.str == NULL, bn = b->l.str == NULL;
  if (an != bn)
    return an - bn;
  int c = strcmp(a->l.key ? a->l.key : "", b->l.key ? b->l.key : "");
  if (c)
    return c;
  return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static int label_eq(const cprof__label_t *a, const cprof__label_t *b) {
  if (!str_eq(a->key, b->key) || (a->str == NULL) != (b->str == NULL))
    return 0;
  if (a->str)
    return strcmp(a->str, b->str) == 0;
  return a->num == b->num && str_eq(a->num_unit, b->num_unit);
}

static uint64_t sample_hash(const cprof__pf_sample_t *s) {
  uint64_t h = CPROF_HASH_SEED;
  for (size_t i = 0; i < s->n_locations; i++)
    h = cprof__hash_u64(h, s->locations[i]->id);
  for (size_t i = 0; i < s->n_labels; i++) {
    const cprof__label_t *l = &s->labels[i];
    h = hash_str(h, l->key);
    if (l->str) {
      h = hash_str(h, l->str);
    } else {
      h = cprof__hash_u64(h, (uint64_t)l->num);
      h = hash_str(h, l->num_unit);
    }
  }
  return h;
}

static int sample_eq(const void *ctx, uint32_t value, const void *key) {
  const cprof__pf_sample_t *a = &((const merger_t *)ctx)->p->samples[value], *b = key;
  if (a->n_locations != b->n_locations || a->n_labels != b->n_labels)
    return 0;
  for (size_t i = 0; i < a->n_locations; i++)
    if (a->locations[i] != b->locations[i])
      return 0;
  for (size_t i = 0; i < a->n_labels; i++)
    if (!label_eq(&a->labels[i], &b->labels[i]))
      return 0;
  return 1;
}

/* Adds sign * src's values, in unsigned arithmetic: a sum that overflows
 * wraps instead of being undefined. */
static void add_values(int64_t *dst, const int64_t *src, size_t n, int sign) {
  for (size_t i = 0; i < n; i++) {
    uint64_t v = (uint64_t)src[i];
    dst[i] = (int64_t)((uint64_t)dst[i] + (sign < 0 ? 0 - v : v));
  }
}

static int copy_labels(merger_t *m, cprof__pf_sample_t *s) {
  cprof__label_t *labels = cprof__arena_array(m->a, s->n_labels, sizeof *labels);
  if (!labels)
    return -ENOMEM;
  for (size_t i = 0; i < s->n_labels; i++) {
    const cprof__label_t *l = &s->labels[i];
    labels[i] = *l;
    labels[i].key = copy_str(m, l->key);
    if (!labels[i].key)
      return -ENOMEM;
    if (l->str && !(labels[i].str = copy_str(m, l->str)))
      return -ENOMEM;
    if (l->num_unit && !(labels[i].num_unit = copy_str(m, l->num_unit)))
      return -ENOMEM;
  }
  s->labels = labels;
  return 0;
}

/* The label pprof's -diff_base puts on every sample of BASE. */
static const cprof__label_t base_label = {.key = "pprof::base", .str = "true"};

/* Maps src into the output, its values times sign; with base, labelled
 * pprof::base=true instead of any pprof::base label it had, as pprof's
 * SetLabel. */
int cprof__merge_sample(merger_t *m, const cprof__pf_sample_t *src, int sign, int base) {
  size_t nv = m->p->n_sample_types;
  if (is_zero(src->values, nv))
    return 0;
  int err = cprof__grow((void **)&m->locs, &m->locs_cap, src->n_locations, sizeof *m->locs);
  if (err)
    return err;
  for (size_t i = 0; i < src->n_locations; i++)
    if ((err = map_location(m, src->locations[i], &m->locs[i])))
      return err;
  sort_label_t *sorted = NULL;
  size_t n_labels = 0;
  if (src->n_labels || base) {
    sorted = malloc((src->n_labels + 1) * sizeof *sorted);
    if (!sorted || (err = cprof__grow((void **)&m->labels, &m->labels_cap, src->n_labels + 1,
                                      sizeof *m->labels))) {
      free(sorted);
      return -ENOMEM;
    }
    for (size_t i = 0; i < src->n_labels; i++)
      if (!base || !src->labels[i].str || !str_eq(src->labels[i].key, base_label.key))
        sorted[n_labels] = (sort_label_t){src->labels[i], n_labels}, n_labels++;
    if (base)
      sorted[n_labels] = (sort_label_t){base_label, n_labels}, n_labels++;
    qsort(sorted, n_labels, sizeof *sorted, label_cmp);
    for (size_t i = 0; i < n_labels; i++)
      m->labels[i] = sorted[i].l;
    free(sorted);
  }
  cprof__pf_sample_t s = {
      .locations = m->locs,
      .n_locations = src->n_locations,
      .labels = m->labels,
      .n_labels = n_labels,
  };
  uint64_t h = sample_hash(&s);
  int64_t found = cprof__table_find(&m->samples, h, sample_eq, m, &s);
  if (found >= 0) {
    add_values(m->p->samples[found].values, src->values, nv, sign);
    return 0;
  }
  cprof__pf_t *p = m->p;
  s.values = cprof__arena_array(m->a, nv ? nv : 1, sizeof *s.values);
  s.locations = NULL;
  if (s.n_locations) {
    s.locations = cprof__arena_array(m->a, s.n_locations, sizeof *s.locations);
    if (s.locations)
      memcpy(s.locations, m->locs, s.n_locations * sizeof *s.locations);
  }
  if (!s.values || (s.n_locations && !s.locations))
    return -ENOMEM;
  if (s.n_labels && (err = copy_labels(m, &s)))
    return err;
  add_values(s.values, src->values, nv, sign);
  p->samples[p->n_samples] = s;
  if ((err = cprof__table_insert(&m->samples, h, (uint32_t)p->n_samples)))
    return err;
  p->n_samples++;
  return 0;
}
