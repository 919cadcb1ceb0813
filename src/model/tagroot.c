/* Labels as frames: pprof's -tagroot and -tagleaf (internal/driver's
 * addLabelNodes). Each key given becomes one pseudo frame per sample, whose
 * function is named by the sample's values for that key (string values, then
 * numeric ones scaled as pprof's ScaledLabel, joined by ",") and whose file
 * is the key; a sample without the key gets a frame named "". The first
 * root key is the new root, the last leaf key the new leaf. Frames of equal
 * (value, key) are one location, so a flame graph rooted by "thread" has
 * one tower per thread name. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "model/measure.h"
#include "model/model.h"
#include "profile/table.h"

#define MAX_KEYS 32

typedef struct {
  const char *name, *key; /* in p's arena */
} pseudo_t;

typedef struct {
  pseudo_t *v;
  size_t n, cap;
  cprof__table_t index;
} pseudos_t;

static int pseudo_eq(const void *ctx, uint32_t value, const void *key) {
  const pseudo_t *a = &((const pseudos_t *)ctx)->v[value], *b = key;
  return strcmp(a->name, b->name) == 0 && strcmp(a->key, b->key) == 0;
}

/* Splits the comma-separated list s into keys[], dropping empty ones: the
 * number of keys, or -EINVAL when there are more than MAX_KEYS. */
static int split_keys(cprof__arena_t *a, const char *s, const char **keys) {
  int n = 0;
  while (s && *s) {
    size_t len = strcspn(s, ",");
    if (len) {
      if (n == MAX_KEYS)
        return -EINVAL;
      if (!(keys[n++] = cprof__arena_strndup(a, s, len)))
        return -ENOMEM;
    }
    s += len + (s[len] == ',');
  }
  return n;
}

/* The sample's values for key, as pprof's formatLabelValues, joined by ",";
 * *any says whether it had one. */
static void label_values(const cprof__pf_sample_t *s, const char *key, const char *unit,
                         cprof__buf_t *out, int *any) {
  int n = 0;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < s->n_labels; i++) {
      const cprof__label_t *l = &s->labels[i];
      if (strcmp(l->key, key) != 0 || (pass == 0) != (l->str != NULL))
        continue;
      if (n++)
        cprof__buf_append(out, ",", 1);
      if (l->str) {
        cprof__buf_append(out, l->str, strlen(l->str));
      } else {
        char v[96];
        cprof__measure_label(l->num, l->num_unit ? l->num_unit : "", l->num_unit ? unit : "", v,
                             sizeof v);
        cprof__buf_append(out, v, strlen(v));
      }
    }
  *any |= n > 0;
}

/* The index of the pseudo frame (name, key), added if new; -ENOMEM. */
static int64_t intern(cprof__pf_t *p, pseudos_t *ps, const char *name, const char *key) {
  pseudo_t k = {name, key};
  uint64_t h = cprof__hash_bytes(cprof__hash_bytes(CPROF_HASH_SEED, name, strlen(name) + 1), key,
                                 strlen(key));
  int64_t found = cprof__table_find(&ps->index, h, pseudo_eq, ps, &k);
  if (found >= 0)
    return found;
  if (cprof__grow((void **)&ps->v, &ps->cap, ps->n + 1, sizeof *ps->v) != 0 ||
      !(k.name = cprof__arena_strdup(p->arena, name)) ||
      cprof__table_insert(&ps->index, h, (uint32_t)ps->n) != 0)
    return -ENOMEM;
  ps->v[ps->n] = k;
  return (int64_t)ps->n++;
}

/* Moves the functions and locations into arrays with room for the pseudo
 * frames after them (IDs past the largest, so both stay sorted by ID),
 * pointing the old lines and samples at the new places. */
static int add_frames(cprof__pf_t *p, const pseudos_t *ps) {
  size_t nf = p->n_functions, nl = p->n_locations;
  cprof__pf_function_t *f = cprof__arena_array(p->arena, nf + ps->n, sizeof *f);
  cprof__pf_location_t *l = cprof__arena_array(p->arena, nl + ps->n, sizeof *l);
  cprof__pf_line_t *lines = cprof__arena_array(p->arena, ps->n ? ps->n : 1, sizeof *lines);
  if (!f || !l || !lines)
    return -ENOMEM;
  if (nf)
    memcpy(f, p->functions, nf * sizeof *f);
  if (nl)
    memcpy(l, p->locations, nl * sizeof *l);
  for (size_t i = 0; i < nl; i++)
    for (size_t k = 0; k < l[i].n_lines; k++) {
      cprof__pf_line_t *line = (cprof__pf_line_t *)&l[i].lines[k];
      if (line->function >= p->functions && line->function < p->functions + nf)
        line->function = f + (line->function - p->functions);
    }
  uint64_t fid = nf ? p->functions[nf - 1].id : 0, lid = nl ? p->locations[nl - 1].id : 0;
  for (size_t i = 0; i < ps->n; i++) {
    f[nf + i] = (cprof__pf_function_t){
        .id = fid + 1 + i, .name = ps->v[i].name, .system_name = "", .filename = ps->v[i].key};
    lines[i] = (cprof__pf_line_t){.function = &f[nf + i]};
    l[nl + i] = (cprof__pf_location_t){.id = lid + 1 + i, .lines = &lines[i], .n_lines = 1};
  }
  for (size_t i = 0; i < p->n_samples; i++)
    for (size_t k = 0; k < p->samples[i].n_locations; k++)
      p->samples[i].locations[k] = l + (p->samples[i].locations[k] - p->locations);
  p->functions = f;
  p->n_functions = nf + ps->n;
  p->locations = l;
  p->n_locations = nl + ps->n;
  return 0;
}

int cprof__pf_tagroot(cprof__pf_t *p, const char *root_keys, const char *leaf_keys,
                      const char *unit, int *root_matched, int *leaf_matched) {
  const char *roots[MAX_KEYS], *leaves[MAX_KEYS];
  int nr = split_keys(p->arena, root_keys, roots), nv = split_keys(p->arena, leaf_keys, leaves);
  *root_matched = *leaf_matched = 0;
  if (nr < 0 || nv < 0)
    return nr < 0 ? nr : nv;
  if (nr + nv == 0)
    return 0;
  size_t width = (size_t)(nr + nv);
  uint32_t *frames = calloc(p->n_samples ? p->n_samples * width : 1, sizeof *frames);
  pseudos_t ps = {0};
  cprof__table_init(&ps.index);
  cprof__buf_t name;
  cprof__buf_init(&name);
  int rc = frames ? 0 : -ENOMEM;
  /* frames[i * width ...]: sample i's pseudo frames leaf first, as they
   * will stand: the leaf keys last to first, then the root keys last to
   * first (pprof's order). */
  for (size_t i = 0; i < p->n_samples && rc == 0; i++)
    for (size_t k = 0; k < width && rc == 0; k++) {
      int leaf = k < (size_t)nv;
      const char *key = leaf ? leaves[nv - 1 - k] : roots[nr - 1 - (k - (size_t)nv)];
      name.len = 0;
      label_values(&p->samples[i], key, unit, &name, leaf ? leaf_matched : root_matched);
      cprof__buf_append(&name, "", 1);
      int64_t f = name.failed ? -ENOMEM : intern(p, &ps, name.data, key);
      if (f < 0)
        rc = (int)f;
      else
        frames[i * width + k] = (uint32_t)f;
    }
  if (rc == 0)
    rc = add_frames(p, &ps);
  for (size_t i = 0; i < p->n_samples && rc == 0; i++) {
    cprof__pf_sample_t *s = &p->samples[i];
    const cprof__pf_location_t **locs =
        cprof__arena_array(p->arena, s->n_locations + width, sizeof *locs);
    if (!locs) {
      rc = -ENOMEM;
      break;
    }
    const cprof__pf_location_t *added = p->locations + (p->n_locations - ps.n);
    size_t n = 0;
    for (size_t k = 0; k < (size_t)nv; k++)
      locs[n++] = added + frames[i * width + k];
    for (size_t k = 0; k < s->n_locations; k++)
      locs[n++] = s->locations[k];
    for (size_t k = (size_t)nv; k < width; k++)
      locs[n++] = added + frames[i * width + k];
    s->locations = locs;
    s->n_locations = n;
  }
  free(frames);
  free(ps.v);
  cprof__table_free(&ps.index);
  cprof__buf_free(&name);
  return rc;
}
