/* Decoded profiles (model/model.h) built by hand for the profile
 * library's tests, a stack a line, and printed back as text to compare.
 *
 *   fx_t f = fx_new("samples/count cpu/nanoseconds", 16);
 *   fx_sample(&f, "main;work;leaf", (int64_t[]){1, 10});
 *
 * A stack lists its frames root first, separated by ';'. A frame is one
 * location:
 *   outer>inner      lines, the outer function first (inner was inlined)
 *   name(file.c)     a line whose function has a file
 *   ...@/lib/x.so    the location's mapping (one per file)
 *   @/lib/x.so       a location with a mapping and no lines
 *   #1234            a location with neither, at that hex address
 * The same frame text is the same location, the same name and file the
 * same function. cap bounds the functions, locations, mappings and samples.
 *
 * fx_dump prints a profile one sample a line, sorted: its stack as above
 * (names only, "#addr" for no lines and no mapping, "@base" for a mapping
 * without lines), its values joined by ',', and its labels, sorted:
 *   "main;work;leaf 1,10 k=v n=5 bytes" */
#ifndef CPROF_TESTS_PF_FIXTURE_H
#define CPROF_TESTS_PF_FIXTURE_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

#define FX_MAX_LABELS 8

typedef struct fx_slot {
  const char *key;
  size_t value;
} fx_slot_t;

typedef struct fx {
  cprof__pf_t *p;
  size_t cap;
  fx_slot_t *slots; /* "F name\1file", "L frame", "M file" -> index */
  size_t n_slots;
} fx_t;

static inline void *fx_alloc(fx_t *f, size_t n) {
  void *x = cprof__arena_alloc(f->p->arena, n ? n : 1);
  if (!x) {
    fprintf(stderr, "fixture: out of memory\n");
    abort();
  }
  return x;
}

static inline char *fx_strndup(fx_t *f, const char *s, size_t n) {
  char *c = fx_alloc(f, n + 1);
  memcpy(c, s, n);
  return c;
}

static inline char *fx_strdup(fx_t *f, const char *s) { return fx_strndup(f, s, strlen(s)); }

/* "samples/count cpu/nanoseconds" */
static inline fx_t fx_new(const char *types, size_t cap) {
  fx_t f = {0};
  f.cap = cap;
  cprof__arena_t *a = cprof__arena_new(0);
  cprof__pf_t *p = cprof__arena_alloc(a, sizeof *p);
  p->arena = a;
  f.p = p;
  p->sample_types = fx_alloc(&f, 8 * sizeof *p->sample_types);
  for (const char *t = types; *t;) {
    while (*t == ' ')
      t++;
    if (!*t)
      break;
    size_t n = strcspn(t, " "), slash = strcspn(t, "/");
    if (slash > n)
      slash = n;
    p->sample_types[p->n_sample_types].type = fx_strndup(&f, t, slash);
    p->sample_types[p->n_sample_types].unit =
        slash < n ? fx_strndup(&f, t + slash + 1, n - slash - 1) : "";
    p->n_sample_types++;
    t += n;
  }
  p->mappings = fx_alloc(&f, cap * sizeof *p->mappings);
  p->functions = fx_alloc(&f, cap * sizeof *p->functions);
  p->locations = fx_alloc(&f, cap * sizeof *p->locations);
  p->samples = fx_alloc(&f, cap * sizeof *p->samples);
  p->drop_frames = p->keep_frames = p->default_sample_type = "";
  p->period_type = (cprof__value_type_t){"", ""};
  f.n_slots = 1;
  while (f.n_slots < 8 * cap)
    f.n_slots *= 2;
  f.slots = fx_alloc(&f, f.n_slots * sizeof *f.slots);
  return f;
}

/* The index stored for key, or SIZE_MAX after making a slot for it, whose
 * value the caller sets through *slot. */
static inline size_t fx_find(fx_t *f, const char *key, fx_slot_t **slot) {
  uint64_t h = 1469598103934665603u;
  for (const char *c = key; *c; c++)
    h = (h ^ (unsigned char)*c) * 1099511628211u;
  for (size_t i = h & (f->n_slots - 1);; i = (i + 1) & (f->n_slots - 1)) {
    if (!f->slots[i].key) {
      f->slots[i].key = fx_strdup(f, key);
      *slot = &f->slots[i];
      return SIZE_MAX;
    }
    if (!strcmp(f->slots[i].key, key))
      return f->slots[i].value;
  }
}

static inline void fx_full(fx_t *f, size_t n, const char *what) {
  if (n >= f->cap) {
    fprintf(stderr, "fixture: more %s than cap %zu\n", what, f->cap);
    abort();
  }
}

static inline const cprof__pf_mapping_t *fx_mapping(fx_t *f, const char *file) {
  char key[512];
  fx_slot_t *slot = NULL;
  snprintf(key, sizeof key, "M %s", file);
  size_t i = fx_find(f, key, &slot);
  if (i == SIZE_MAX) {
    cprof__pf_t *p = f->p;
    fx_full(f, p->n_mappings, "mappings");
    i = slot->value = p->n_mappings++;
    cprof__pf_mapping_t *m = &p->mappings[i];
    m->id = i + 1;
    m->start = (uint64_t)(i + 1) << 28;
    m->limit = m->start + 0x100000;
    m->file = fx_strdup(f, file);
    m->build_id = "";
    m->has_functions = 1;
  }
  return &f->p->mappings[i];
}

static inline const cprof__pf_function_t *fx_function(fx_t *f, const char *name, const char *file) {
  char key[2048];
  fx_slot_t *slot = NULL;
  snprintf(key, sizeof key, "F %s\1%s", name, file);
  size_t i = fx_find(f, key, &slot);
  if (i == SIZE_MAX) {
    cprof__pf_t *p = f->p;
    fx_full(f, p->n_functions, "functions");
    i = slot->value = p->n_functions++;
    cprof__pf_function_t *fn = &p->functions[i];
    fn->id = i + 1;
    fn->name = fx_strdup(f, name);
    fn->system_name = fn->name;
    fn->filename = fx_strdup(f, file);
  }
  return &f->p->functions[i];
}

/* One frame's location: see the top of this file. */
static inline const cprof__pf_location_t *fx_location(fx_t *f, const char *frame, size_t n) {
  char key[1040], text[1024];
  fx_slot_t *slot = NULL;
  snprintf(text, sizeof text, "%.*s", (int)n, frame);
  snprintf(key, sizeof key, "L %s", text);
  size_t i = fx_find(f, key, &slot);
  if (i != SIZE_MAX)
    return &f->p->locations[i];
  cprof__pf_t *p = f->p;
  fx_full(f, p->n_locations, "locations");
  i = slot->value = p->n_locations++;
  cprof__pf_location_t *l = &p->locations[i];
  l->id = i + 1;
  char *at = strchr(text, '@');
  if (at) {
    *at = 0;
    l->mapping = fx_mapping(f, at + 1);
    l->address = l->mapping->start + 0x10 * (i + 1);
  } else if (text[0] == '#') {
    l->address = strtoull(text + 1, NULL, 16);
    text[0] = 0;
  } else {
    l->address = 0x1000 + 0x10 * (i + 1);
  }
  if (!text[0])
    return l;
  size_t n_lines = 1;
  for (char *c = text; *c; c++)
    n_lines += *c == '>';
  cprof__pf_line_t *lines = fx_alloc(f, n_lines * sizeof *lines);
  /* Written outer first, stored inner first. */
  char *s = text;
  for (size_t k = 0; k < n_lines; k++) {
    char *end = strchr(s, '>');
    if (end)
      *end = 0;
    char *paren = strchr(s, '('), file[512] = "";
    if (paren) {
      snprintf(file, sizeof file, "%.*s", (int)strcspn(paren + 1, ")"), paren + 1);
      *paren = 0;
    }
    lines[n_lines - 1 - k].function = fx_function(f, s, file);
    lines[n_lines - 1 - k].line = (int64_t)(10 + k);
    s = end ? end + 1 : s + strlen(s);
  }
  l->lines = lines;
  l->n_lines = n_lines;
  return l;
}

static inline cprof__pf_sample_t *fx_sample(fx_t *f, const char *stack, const int64_t *values) {
  cprof__pf_t *p = f->p;
  fx_full(f, p->n_samples, "samples");
  cprof__pf_sample_t *s = &p->samples[p->n_samples++];
  size_t n = *stack ? 1 : 0;
  for (const char *c = stack; *c; c++)
    n += *c == ';';
  s->locations = fx_alloc(f, n * sizeof *s->locations);
  s->n_locations = n;
  const char *c = stack;
  for (size_t k = 0; k < n; k++) {
    size_t len = strcspn(c, ";");
    s->locations[n - 1 - k] = fx_location(f, c, len); /* leaf first */
    c += len + (c[len] == ';');
  }
  s->values = fx_alloc(f, p->n_sample_types * sizeof *s->values);
  memcpy(s->values, values, p->n_sample_types * sizeof *s->values);
  s->labels = fx_alloc(f, FX_MAX_LABELS * sizeof *s->labels);
  return s;
}

static inline void fx_label(fx_t *f, cprof__pf_sample_t *s, const char *key, const char *str) {
  cprof__label_t *l = (cprof__label_t *)&s->labels[s->n_labels++];
  l->key = fx_strdup(f, key);
  l->str = fx_strdup(f, str);
}

static inline void fx_num_label(fx_t *f, cprof__pf_sample_t *s, const char *key, int64_t num,
                                const char *unit) {
  cprof__label_t *l = (cprof__label_t *)&s->labels[s->n_labels++];
  l->key = fx_strdup(f, key);
  l->num = num;
  l->num_unit = unit ? fx_strdup(f, unit) : NULL;
}

static inline int fx_cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline void fx_print_location(FILE *out, const cprof__pf_location_t *l) {
  if (l->n_lines == 0) {
    if (l->mapping) {
      const char *slash = strrchr(l->mapping->file, '/');
      fprintf(out, "@%s", slash ? slash + 1 : l->mapping->file);
    } else {
      fprintf(out, "#%" PRIx64, l->address);
    }
    return;
  }
  for (size_t k = l->n_lines; k-- > 0;)
    fprintf(out, "%s%s", k + 1 < l->n_lines ? ">" : "",
            l->lines[k].function ? l->lines[k].function->name : "?");
}

/* The profile's samples as text, sorted; free() it. */
static inline char *fx_dump(const cprof__pf_t *p) {
  char **lines = calloc(p->n_samples + 1, sizeof *lines);
  for (size_t i = 0; i < p->n_samples; i++) {
    const cprof__pf_sample_t *s = &p->samples[i];
    size_t len;
    FILE *out = open_memstream(&lines[i], &len);
    for (size_t k = s->n_locations; k-- > 0;) {
      fx_print_location(out, s->locations[k]);
      if (k)
        fputc(';', out);
    }
    for (size_t v = 0; v < p->n_sample_types; v++)
      fprintf(out, "%s%" PRId64, v ? "," : " ", s->values[v]);
    char **labels = calloc(s->n_labels + 1, sizeof *labels);
    for (size_t k = 0; k < s->n_labels; k++) {
      const cprof__label_t *l = &s->labels[k];
      size_t n;
      FILE *lo = open_memstream(&labels[k], &n);
      if (l->str)
        fprintf(lo, "%s=%s", l->key, l->str);
      else
        fprintf(lo, "%s=%" PRId64 "%s%s", l->key, l->num, l->num_unit && *l->num_unit ? " " : "",
                l->num_unit ? l->num_unit : "");
      fclose(lo);
    }
    qsort(labels, s->n_labels, sizeof *labels, fx_cmp_str);
    for (size_t k = 0; k < s->n_labels; k++) {
      fprintf(out, " %s", labels[k]);
      free(labels[k]);
    }
    free(labels);
    fclose(out);
  }
  qsort(lines, p->n_samples, sizeof *lines, fx_cmp_str);
  char *all;
  size_t len;
  FILE *out = open_memstream(&all, &len);
  for (size_t i = 0; i < p->n_samples; i++) {
    fprintf(out, "%s%s", i ? "\n" : "", lines[i]);
    free(lines[i]);
  }
  fclose(out);
  free(lines);
  return all;
}

/* CHECK_EQ_STR on a dump, freeing it. */
#define CHECK_DUMP(p, want)                                                                        \
  do {                                                                                             \
    char *dump_ = fx_dump(p);                                                                      \
    CHECK_EQ_STR(dump_, want);                                                                     \
    free(dump_);                                                                                   \
  } while (0)

#endif
