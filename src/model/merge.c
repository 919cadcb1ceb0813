/* Merging profiles and subtracting one from another, as pprof's
 * profile.Merge (github.com/google/pprof/profile/merge.go) and its
 * -diff_base.
 *
 * Every mapping, function, location and sample of the sources is mapped to
 * one of the output's, found by its key or added with the next ID:
 *   mapping   size rounded up to 4 KiB, offset, and build ID or else file
 *             (two runs of a program load it at different addresses);
 *   function  name, system name, file name and start line;
 *   location  mapping, address less the mapping's start, lines (function and
 *             line number) and is_folded;
 *   sample    its locations and its labels, whatever their order across
 *             keys (pprof keeps labels in maps), values summed.
 * A location in a mapping met before at another start is moved by the
 * difference, as pprof does, so that the addresses stay in the mapping.
 *
 * The output's arrays are allocated at once for the sum of the sources'
 * counts, which bounds what the merge can produce: the pointers between
 * them are then final as soon as they are made. Samples whose values are
 * all zero are skipped; if summing left some at zero, the output is merged
 * once more on its own, which drops them and everything only they used
 * (pprof's Merge does the same). */
#include "model/model.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/table.h"

#define NONE UINT32_MAX
#define MAPSIZE_ROUNDING 0x1000

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

static int str_eq(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

static const char *copy_str(merger_t *m, const char *s) {
  return cprof__arena_strdup(m->a, s ? s : "");
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

static int map_mapping(merger_t *m, const cprof__pf_mapping_t *src, map_info_t *out) {
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
  int err = map_mapping(m, src->mapping, &mi);
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

static int is_zero(const int64_t *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (v[i])
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
static int map_sample(merger_t *m, const cprof__pf_sample_t *src, int sign, int base) {
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

/* ---- profiles ---------------------------------------------------------- */

static int same_type(const cprof__value_type_t *a, const cprof__value_type_t *b) {
  return str_eq(a->type, b->type) && str_eq(a->unit, b->unit);
}

/* "samples/count, cpu/nanoseconds", cut to fit. */
static void format_types(char *buf, size_t len, const cprof__pf_t *p) {
  size_t at = 0;
  buf[0] = 0;
  for (size_t i = 0; i < p->n_sample_types && at < len; i++) {
    int n = snprintf(buf + at, len - at, "%s%s/%s", i ? ", " : "",
                     p->sample_types[i].type ? p->sample_types[i].type : "",
                     p->sample_types[i].unit ? p->sample_types[i].unit : "");
    if (n < 0)
      break;
    at += (size_t)n;
  }
}

/* Whether b can be merged with a (pprof's Profile.compatible): the same
 * period type and the same sample types in the same order. */
static int compatible(const cprof__pf_t *a, const cprof__pf_t *b, const char *a_name,
                      const char *b_name, char *err, size_t errlen) {
  if (!same_type(&a->period_type, &b->period_type)) {
    snprintf(err, errlen, "%s's period type (%s/%s) differs from %s's (%s/%s)", b_name,
             b->period_type.type ? b->period_type.type : "",
             b->period_type.unit ? b->period_type.unit : "", a_name,
             a->period_type.type ? a->period_type.type : "",
             a->period_type.unit ? a->period_type.unit : "");
    return 0;
  }
  int ok = a->n_sample_types == b->n_sample_types;
  for (size_t i = 0; ok && i < a->n_sample_types; i++)
    ok = same_type(&a->sample_types[i], &b->sample_types[i]);
  if (!ok) {
    char ta[120], tb[120];
    format_types(ta, sizeof ta, a);
    format_types(tb, sizeof tb, b);
    snprintf(err, errlen, "%s's sample types (%s) differ from %s's (%s)", b_name, tb, a_name, ta);
  }
  return ok;
}

/* pprof's combineHeaders: the first profile's types, drop and keep frames
 * and period type; the earliest time (a zero met first is replaced), the
 * durations summed, the largest period, every distinct comment once, the
 * first default sample type given. */
static int combine_headers(merger_t *m, cprof__pf_t *const *ps, size_t n) {
  cprof__pf_t *p = m->p;
  const cprof__pf_t *first = ps[0];
  size_t n_comments = 0;
  for (size_t i = 0; i < n; i++)
    n_comments += ps[i]->n_comments;
  p->n_sample_types = first->n_sample_types;
  p->sample_types =
      cprof__arena_array(m->a, p->n_sample_types ? p->n_sample_types : 1, sizeof *p->sample_types);
  p->comments = cprof__arena_array(m->a, n_comments ? n_comments : 1, sizeof *p->comments);
  if (!p->sample_types || !p->comments)
    return -ENOMEM;
  for (size_t i = 0; i < p->n_sample_types; i++) {
    p->sample_types[i].type = copy_str(m, first->sample_types[i].type);
    p->sample_types[i].unit = copy_str(m, first->sample_types[i].unit);
    if (!p->sample_types[i].type || !p->sample_types[i].unit)
      return -ENOMEM;
  }
  p->drop_frames = copy_str(m, first->drop_frames);
  p->keep_frames = copy_str(m, first->keep_frames);
  p->period_type.type = copy_str(m, first->period_type.type);
  p->period_type.unit = copy_str(m, first->period_type.unit);
  p->default_sample_type = "";
  p->ids_sequential = 1; /* IDs run 1..N, in order */
  for (size_t i = 0; i < n; i++) {
    const cprof__pf_t *s = ps[i];
    if (p->time_nanos == 0 || s->time_nanos < p->time_nanos)
      p->time_nanos = s->time_nanos;
    p->duration_nanos = (int64_t)((uint64_t)p->duration_nanos + (uint64_t)s->duration_nanos);
    if (p->period == 0 || p->period < s->period)
      p->period = s->period;
    /* Comments are few (a handful a profile), so a linear search does. */
    for (size_t c = 0; c < s->n_comments; c++) {
      size_t k = 0;
      while (k < p->n_comments && !str_eq(p->comments[k], s->comments[c]))
        k++;
      if (k == p->n_comments && !(p->comments[p->n_comments++] = copy_str(m, s->comments[c])))
        return -ENOMEM;
    }
    if (!*p->default_sample_type && s->default_sample_type)
      p->default_sample_type = s->default_sample_type;
  }
  p->default_sample_type = copy_str(m, p->default_sample_type);
  if (!p->drop_frames || !p->keep_frames || !p->period_type.type || !p->period_type.unit ||
      !p->default_sample_type)
    return -ENOMEM;
  return 0;
}

static void merger_free(merger_t *m) {
  cprof__table_free(&m->mappings);
  cprof__table_free(&m->functions);
  cprof__table_free(&m->locations);
  cprof__table_free(&m->samples);
  free(m->map_memo);
  free(m->fn_memo);
  free(m->loc_memo);
  free(m->lines);
  free(m->locs);
  free(m->labels);
}

/* Sums of the sources' counts, which the output cannot exceed; -EOVERFLOW
 * past what the tables index. */
static int add_count(size_t *sum, size_t n) {
  if (n > UINT32_MAX - 1 - *sum)
    return -EOVERFLOW;
  *sum += n;
  return 0;
}

/* Merges ps[0..n), the values of ps[i] multiplied by signs[i] (1 or -1);
 * with a sign of -1, ps[i] is a diff's BASE and its samples are labelled
 * pprof::base=true. The profiles are compatible. */
static int merge_signed(cprof__pf_t *const *ps, const int *signs, size_t n, cprof__pf_t **out) {
  merger_t m = {0};
  size_t n_mappings = 0, n_functions = 0, n_locations = 0, n_samples = 0;
  size_t max_mappings = 0, max_functions = 0, max_locations = 0;
  int err = 0;
  *out = NULL;
  for (size_t i = 0; i < n && !err; i++) {
    err = add_count(&n_mappings, ps[i]->n_mappings);
    if (!err)
      err = add_count(&n_functions, ps[i]->n_functions);
    if (!err)
      err = add_count(&n_locations, ps[i]->n_locations);
    if (!err)
      err = add_count(&n_samples, ps[i]->n_samples);
    max_mappings = ps[i]->n_mappings > max_mappings ? ps[i]->n_mappings : max_mappings;
    max_functions = ps[i]->n_functions > max_functions ? ps[i]->n_functions : max_functions;
    max_locations = ps[i]->n_locations > max_locations ? ps[i]->n_locations : max_locations;
  }
  if (err)
    return err;

  cprof__pf_t *p = NULL;
  cprof__arena_t *a = cprof__arena_new(0);
  if (!a || !(p = cprof__arena_alloc(a, sizeof *p)))
    goto nomem;
  p->arena = m.a = a;
  m.p = p;
  p->mappings = cprof__arena_array(a, n_mappings + 1, sizeof *p->mappings);
  p->functions = cprof__arena_array(a, n_functions + 1, sizeof *p->functions);
  p->locations = cprof__arena_array(a, n_locations + 1, sizeof *p->locations);
  p->samples = cprof__arena_array(a, n_samples + 1, sizeof *p->samples);
  m.map_memo = malloc((max_mappings + 1) * sizeof *m.map_memo);
  m.fn_memo = malloc((max_functions + 1) * sizeof *m.fn_memo);
  m.loc_memo = malloc((max_locations + 1) * sizeof *m.loc_memo);
  if (!p->mappings || !p->functions || !p->locations || !p->samples || !m.map_memo || !m.fn_memo ||
      !m.loc_memo)
    goto nomem;
  if ((err = combine_headers(&m, ps, n)))
    goto fail;

  for (size_t i = 0; i < n; i++) {
    const cprof__pf_t *src = ps[i];
    m.src = src;
    for (size_t k = 0; k < src->n_mappings; k++)
      m.map_memo[k] = (map_info_t){NONE, 0};
    memset(m.fn_memo, 0xff, src->n_functions * sizeof *m.fn_memo);
    memset(m.loc_memo, 0xff, src->n_locations * sizeof *m.loc_memo);
    /* The first mapping is the main binary's (profile.proto says so), so
     * it goes first, whatever the samples meet first. */
    if (p->n_mappings == 0 && src->n_mappings > 0) {
      map_info_t mi;
      if ((err = map_mapping(&m, &src->mappings[0], &mi)))
        goto fail;
    }
    for (size_t k = 0; k < src->n_samples; k++)
      if ((err = map_sample(&m, &src->samples[k], signs[i], signs[i] < 0)))
        goto fail;
  }
  merger_free(&m);
  *out = p;
  return 0;
nomem:
  err = -ENOMEM;
fail:
  merger_free(&m);
  cprof__arena_free(a);
  return err;
}

static int has_zero_sample(const cprof__pf_t *p) {
  for (size_t i = 0; i < p->n_samples; i++)
    if (is_zero(p->samples[i].values, p->n_sample_types))
      return 1;
  return 0;
}

/* Merges, then merges the result alone when samples summed to zero, to
 * drop them and what only they referred to. */
static int merge_and_compact(cprof__pf_t *const *ps, const int *signs, size_t n,
                             cprof__pf_t **out) {
  int err = merge_signed(ps, signs, n, out);
  if (err || !has_zero_sample(*out))
    return err;
  cprof__pf_t *first = *out;
  int one = 1;
  err = merge_signed(&first, &one, 1, out);
  cprof__pf_free(first);
  return err;
}

static int fail_errno(int err, char *err_buf, size_t errlen) {
  if (err == -ENOMEM)
    snprintf(err_buf, errlen, "out of memory");
  else if (err == -EOVERFLOW)
    snprintf(err_buf, errlen, "too many objects to merge (more than 2^32)");
  return err;
}

int cprof__pf_merge(cprof__pf_t *const *ps, size_t n, cprof__pf_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (n == 0) {
    snprintf(err, errlen, "no profiles to merge");
    return -EINVAL;
  }
  char a_name[32], b_name[32];
  for (size_t i = 1; i < n; i++) {
    snprintf(a_name, sizeof a_name, "profile 1");
    snprintf(b_name, sizeof b_name, "profile %zu", i + 1);
    if (!compatible(ps[0], ps[i], a_name, b_name, err, errlen))
      return -EINVAL;
  }
  int *signs = malloc(n * sizeof *signs);
  if (!signs)
    return fail_errno(-ENOMEM, err, errlen);
  for (size_t i = 0; i < n; i++)
    signs[i] = 1;
  int rc = merge_and_compact(ps, signs, n, out);
  free(signs);
  return fail_errno(rc, err, errlen);
}

int cprof__pf_diff(const cprof__pf_t *base, const cprof__pf_t *new_, cprof__pf_t **out, char *err,
                   size_t errlen) {
  *out = NULL;
  if (!compatible(new_, base, "NEW", "BASE", err, errlen))
    return -EINVAL;
  /* NEW first, as pprof merges [NEW, BASE]: NEW's header wins. BASE's
   * samples are negated and labelled pprof::base=true (merge_signed), so
   * a stack in both stays two samples and reports take their total from
   * BASE's, as pprof's -diff_base. */
  cprof__pf_t *ps[2] = {(cprof__pf_t *)new_, (cprof__pf_t *)base};
  int signs[2] = {1, -1};
  return fail_errno(merge_and_compact(ps, signs, 2, out), err, errlen);
}
