/* The profile builder: samples in, profile.proto out.
 *
 * Samples are merged as they are added; symbolization waits until the
 * profile is written (cprof__builder_resolve, in builder_resolve.c), when
 * every distinct address becomes a Location, every distinct (name, file) a
 * Function and every executable mapping a Mapping, as Go's runtime/pprof
 * profileBuilder does.
 * Field numbers are profile.proto's (github.com/google/pprof/proto). */
#include "profile/builder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "profile/builder_internal.h"
#include "profile/fields.h"
#include "profile/gzip.h"
#include "profile/protobuf.h"
#include "symbol/symbolize.h"
#include "unwind/pc.h"

/* Adds without signed-overflow undefined behaviour: totals of a long-lived
 * profile wrap rather than trap. */
static int64_t add_wrap(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

/* Grows *v (of *cap elements of size `size`) to hold at least `need`. */
int cprof__builder_grow(void **v, size_t *cap, size_t need, size_t size) {
  if (need <= *cap)
    return 0;
  size_t cap2 = *cap ? *cap : 16;
  while (cap2 < need)
    cap2 *= 2;
  if (cap2 > SIZE_MAX / size)
    return -ENOMEM;
  void *p = realloc(*v, cap2 * size);
  if (!p)
    return -ENOMEM;
  *v = p;
  *cap = cap2;
  return 0;
}

/* ---- strings ---- */

static int str_eq(const void *ctx, uint32_t value, const void *key) {
  const cprof__strtab_t *st = ctx;
  return strcmp(st->v[value], key) == 0;
}

/* The index of s in the table, adding a copy of it if new; NULL is "".
 * Returns the index or -ENOMEM. */
int64_t cprof__strtab_intern(cprof__strtab_t *st, const char *s) {
  if (!s)
    s = "";
  size_t len = strlen(s);
  uint64_t h = cprof__hash_bytes(CPROF_HASH_SEED, s, len);
  int64_t i = cprof__table_find(&st->index, h, str_eq, st, s);
  if (i >= 0)
    return i;
  if (cprof__builder_grow((void **)&st->v, &st->cap, st->n + 1, sizeof *st->v) != 0)
    return -ENOMEM;
  char *copy = malloc(len + 1);
  if (!copy)
    return -ENOMEM;
  memcpy(copy, s, len + 1);
  if (cprof__table_insert(&st->index, h, (uint32_t)st->n) != 0) {
    free(copy);
    return -ENOMEM;
  }
  st->v[st->n] = copy;
  return (int64_t)st->n++;
}

static void strtab_free(cprof__strtab_t *st) {
  for (size_t i = 0; i < st->n; i++)
    free(st->v[i]);
  free(st->v);
  cprof__table_free(&st->index);
  memset(st, 0, sizeof *st);
}

/* ---- building ---- */

cprof__builder_t *cprof__builder_new(const cprof__profile_desc_t *desc) {
  if (!desc || desc->n_sample_types < 1 || desc->n_sample_types > CPROF_MAX_SAMPLE_TYPES)
    return NULL;
  cprof__builder_t *b = calloc(1, sizeof *b);
  if (!b)
    return NULL;
  cprof__table_init(&b->strings.index);
  cprof__table_init(&b->sample_index);
  b->n_sample_types = desc->n_sample_types;
  b->period = desc->period;
  b->time_nanos = desc->time_nanos;
  b->duration_nanos = desc->duration_nanos;
  b->default_sample_type = -1;
  /* The description's strings are interned now, which copies them and puts
   * string 0, "", first. */
  if (cprof__strtab_intern(&b->strings, "") != 0)
    goto fail;
  for (int i = 0; i < desc->n_sample_types; i++) {
    if ((b->sample_type[i][0] = cprof__strtab_intern(&b->strings, desc->sample_types[i].type)) <
            0 ||
        (b->sample_type[i][1] = cprof__strtab_intern(&b->strings, desc->sample_types[i].unit)) < 0)
      goto fail;
  }
  if ((b->period_type[0] = cprof__strtab_intern(&b->strings, desc->period_type.type)) < 0 ||
      (b->period_type[1] = cprof__strtab_intern(&b->strings, desc->period_type.unit)) < 0)
    goto fail;
  if (desc->default_sample_type &&
      (b->default_sample_type = cprof__strtab_intern(&b->strings, desc->default_sample_type)) < 0)
    goto fail;
  return b;
fail:
  cprof__builder_free(b);
  return NULL;
}

void cprof__builder_free(cprof__builder_t *b) {
  if (!b)
    return;
  for (size_t i = 0; i < b->nsamples; i++)
    free(b->samples[i].labels);
  free(b->samples);
  cprof__table_free(&b->sample_index);
  strtab_free(&b->strings);
  free(b);
}

static int label_cmp(const void *pa, const void *pb) {
  const cprof__label_rec_t *a = pa, *b = pb;
  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  if (a->str != b->str)
    return a->str < b->str ? -1 : 1;
  if (a->num != b->num)
    return a->num < b->num ? -1 : 1;
  if (a->num_unit != b->num_unit)
    return a->num_unit < b->num_unit ? -1 : 1;
  return 0;
}

/* The key a sample is merged by: its stack (or pseudo frame) and labels. */
typedef struct sample_key {
  const uintptr_t *pcs;
  int depth;
  uint32_t modules;
  int64_t pseudo;
  const cprof__label_rec_t *labels;
  int nlabels;
} sample_key_t;

static int sample_eq(const void *ctx, uint32_t value, const void *key) {
  const cprof__sample_rec_t *s = &((const cprof__builder_t *)ctx)->samples[value];
  const sample_key_t *k = key;
  if (s->depth != k->depth || s->pseudo != k->pseudo || s->nlabels != k->nlabels ||
      s->modules != k->modules)
    return 0;
  for (int i = 0; i < k->depth; i++)
    if (s->pcs[i] != k->pcs[i])
      return 0;
  for (int i = 0; i < k->nlabels; i++)
    if (label_cmp(&s->labels[i], &k->labels[i]) != 0)
      return 0;
  return 1;
}

static uint64_t sample_hash(const sample_key_t *k) {
  uint64_t h = cprof__hash_u64(CPROF_HASH_SEED, (uint64_t)k->pseudo);
  h = cprof__hash_u64(h, (uint64_t)k->depth);
  h = cprof__hash_u64(h, k->modules);
  h = cprof__hash_u64(h, cprof__hash_pcs(k->pcs, k->depth));
  for (int i = 0; i < k->nlabels; i++) {
    const cprof__label_rec_t *l = &k->labels[i];
    h = cprof__hash_u64(h, (uint64_t)l->key);
    h = cprof__hash_u64(h, (uint64_t)l->str);
    h = cprof__hash_u64(h, (uint64_t)l->num);
    h = cprof__hash_u64(h, (uint64_t)l->num_unit);
  }
  return h;
}

/* Merges one sample into its record, creating the record if the (stack,
 * labels) is new. k->labels are interned and sorted. */
static int merge(cprof__builder_t *b, const sample_key_t *k, const int64_t *values) {
  uint64_t h = sample_hash(k);
  int64_t i = cprof__table_find(&b->sample_index, h, sample_eq, b, k);
  if (i < 0) {
    if (cprof__builder_grow((void **)&b->samples, &b->capsamples, b->nsamples + 1,
                            sizeof *b->samples) != 0)
      return -ENOMEM;
    /* The labels and the pcs share one block (labels first, for the
     * alignment of their int64_t fields). */
    size_t lsize = (size_t)k->nlabels * sizeof(cprof__label_rec_t);
    size_t psize = (size_t)k->depth * sizeof(uintptr_t);
    char *block = NULL;
    if (lsize + psize > 0 && !(block = malloc(lsize + psize)))
      return -ENOMEM;
    cprof__sample_rec_t *s = &b->samples[b->nsamples];
    memset(s, 0, sizeof *s);
    s->hash = h;
    s->pseudo = k->pseudo;
    s->depth = k->depth;
    s->modules = k->modules;
    s->nlabels = k->nlabels;
    s->labels = (cprof__label_rec_t *)(void *)block;
    s->pcs = (uintptr_t *)(void *)(block + lsize);
    if (lsize)
      memcpy(s->labels, k->labels, lsize);
    if (psize)
      memcpy(s->pcs, k->pcs, psize);
    if (cprof__table_insert(&b->sample_index, h, (uint32_t)b->nsamples) != 0) {
      free(block);
      return -ENOMEM;
    }
    i = (int64_t)b->nsamples++;
  }
  cprof__sample_rec_t *s = &b->samples[i];
  for (int v = 0; v < b->n_sample_types; v++) {
    s->values[v] = add_wrap(s->values[v], values[v]);
    b->totals[v] = add_wrap(b->totals[v], values[v]);
  }
  b->count++;
  return 0;
}

static int add(cprof__builder_t *b, const uintptr_t *pcs, int depth, const char *pseudo,
               const int64_t *values, const cprof__label_t *labels, int nlabels) {
  if (!b || !values || depth < 0 || (depth > 0 && !pcs) || nlabels < 0 || (nlabels > 0 && !labels))
    return -EINVAL;
  cprof__label_rec_t small[8];
  cprof__label_rec_t *lr = small;
  if ((size_t)nlabels > sizeof small / sizeof small[0] &&
      !(lr = malloc((size_t)nlabels * sizeof *lr)))
    return -ENOMEM;
  int rc = -ENOMEM;
  sample_key_t k = {.pcs = pcs, .depth = depth, .labels = lr, .nlabels = nlabels};
  /* A stack taken after a dlclose says in its last word in which module
   * generation: that is part of what its addresses mean, not a frame. */
  if (depth > 0 && cprof__pc_is_modules(pcs[depth - 1])) {
    k.modules = cprof__pc_mark_number(pcs[depth - 1]);
    k.depth--;
  }
  if (pseudo && (k.pseudo = cprof__strtab_intern(&b->strings, pseudo)) < 0)
    goto out;
  /* An empty name would look like a real stack (pseudo == 0): give it one. */
  if (pseudo && k.pseudo == 0 && (k.pseudo = cprof__strtab_intern(&b->strings, "[unknown]")) < 0)
    goto out;
  for (int i = 0; i < nlabels; i++) {
    const cprof__label_t *l = &labels[i];
    /* profile.proto: a Label has either str or num; num_unit goes with num. */
    lr[i].key = cprof__strtab_intern(&b->strings, l->key);
    lr[i].str = l->str ? cprof__strtab_intern(&b->strings, l->str) : 0;
    lr[i].num = l->str ? 0 : l->num;
    lr[i].num_unit = !l->str && l->num_unit ? cprof__strtab_intern(&b->strings, l->num_unit) : 0;
    if (lr[i].key < 0 || lr[i].str < 0 || lr[i].num_unit < 0)
      goto out;
  }
  /* Go keeps labels in a map, so their order never distinguishes samples. */
  if (nlabels > 1)
    qsort(lr, (size_t)nlabels, sizeof *lr, label_cmp);
  rc = merge(b, &k, values);
out:
  if (lr != small)
    free(lr);
  return rc;
}

int cprof__builder_add(cprof__builder_t *b, const uintptr_t *pcs, int depth, const int64_t *values,
                       const cprof__label_t *labels, int nlabels) {
  return add(b, pcs, depth, NULL, values, labels, nlabels);
}

int cprof__builder_add_pseudo(cprof__builder_t *b, const char *name, const int64_t *values,
                              const cprof__label_t *labels, int nlabels) {
  return add(b, NULL, 0, name ? name : "", values, labels, nlabels);
}

void cprof__builder_set_duration(cprof__builder_t *b, int64_t duration_nanos) {
  b->duration_nanos = duration_nanos;
}

void cprof__builder_set_time(cprof__builder_t *b, int64_t time_nanos) {
  b->time_nanos = time_nanos;
}

void cprof__builder_set_period(cprof__builder_t *b, int64_t period) { b->period = period; }

int64_t cprof__builder_total(const cprof__builder_t *b, int index) {
  if (!b || index < 0 || index >= b->n_sample_types)
    return 0;
  return b->totals[index];
}

int64_t cprof__builder_count(const cprof__builder_t *b) { return b ? b->count : 0; }

/* ---- encoding ---- */

static void encode_value_type(cprof__buf_t *pb, int field, const int64_t vt[2]) {
  size_t start = cprof__pb_start(pb);
  cprof__pb_int64_opt(pb, VALUE_TYPE_TYPE, vt[0]);
  cprof__pb_int64_opt(pb, VALUE_TYPE_UNIT, vt[1]);
  cprof__pb_end(pb, field, start);
}

/* A sample whose values all cancel out, such as an unchanged stack in a
 * delta profile (the new values plus the old ones negated), says nothing:
 * pprof's own Merge drops such samples, and so do we. */
static int all_zero(const cprof__builder_t *b, const cprof__sample_rec_t *s) {
  for (int i = 0; i < b->n_sample_types; i++)
    if (s->values[i] != 0)
      return 0;
  return 1;
}

/* The samples, each with its location IDs, values and labels. */
static void encode_samples(const cprof__builder_t *b, const cprof__resolved_t *r,
                           cprof__buf_t *pb) {
  for (size_t i = 0; i < b->nsamples; i++) {
    const cprof__sample_rec_t *s = &b->samples[i];
    if (all_zero(b, s))
      continue;
    size_t start = cprof__pb_start(pb);
    /* Packed location IDs (indexes + 1), leaf first (profile.proto: "The
     * leaf is at location_id[0]"). */
    cprof__pb_uint32s_plus(pb, SAMPLE_LOCATION_ID, &r->stack_locs[r->stack_start[i]],
                           (size_t)cprof__sample_nlocs(s), 1);
    /* Exactly one value per sample type, even zeros: strict readers reject
     * a sample whose value count differs from the sample-type count. */
    cprof__pb_int64s(pb, SAMPLE_VALUE, s->values, (size_t)b->n_sample_types);
    for (int j = 0; j < s->nlabels; j++) {
      const cprof__label_rec_t *l = &s->labels[j];
      size_t ls = cprof__pb_start(pb);
      cprof__pb_int64_opt(pb, LABEL_KEY, l->key);
      cprof__pb_int64_opt(pb, LABEL_STR, l->str);
      cprof__pb_int64_opt(pb, LABEL_NUM, l->num);
      cprof__pb_int64_opt(pb, LABEL_NUM_UNIT, l->num_unit);
      cprof__pb_end(pb, SAMPLE_LABEL, ls);
    }
    cprof__pb_end(pb, PROFILE_SAMPLE, start);
  }
}

static void encode_mappings(const cprof__resolved_t *r, cprof__buf_t *pb) {
  for (size_t i = 0; i < r->nmappings; i++) {
    const cprof__res_mapping_t *m = &r->mappings[i];
    size_t start = cprof__pb_start(pb);
    cprof__pb_uint64(pb, MAPPING_ID, i + 1);
    cprof__pb_uint64_opt(pb, MAPPING_MEMORY_START, m->start);
    cprof__pb_uint64_opt(pb, MAPPING_MEMORY_LIMIT, m->limit);
    cprof__pb_uint64_opt(pb, MAPPING_FILE_OFFSET, m->offset);
    cprof__pb_int64_opt(pb, MAPPING_FILENAME, m->file);
    cprof__pb_int64_opt(pb, MAPPING_BUILD_ID, m->build_id);
    cprof__pb_bool_opt(pb, MAPPING_HAS_FUNCTIONS, m->has_functions);
    cprof__pb_bool_opt(pb, MAPPING_HAS_FILENAMES, m->has_filenames);
    cprof__pb_bool_opt(pb, MAPPING_HAS_LINE_NUMBERS, m->has_line_numbers);
    cprof__pb_bool_opt(pb, MAPPING_HAS_INLINE_FRAMES, m->has_inline_frames);
    cprof__pb_end(pb, PROFILE_MAPPING, start);
  }
}

static void encode_locations(const cprof__resolved_t *r, cprof__buf_t *pb) {
  for (size_t i = 0; i < r->nlocations; i++) {
    const cprof__res_location_t *l = &r->locations[i];
    size_t start = cprof__pb_start(pb);
    cprof__pb_uint64(pb, LOCATION_ID, i + 1);
    /* mapping_id 0 (absent) means "no mapping", as profile.proto allows. */
    cprof__pb_uint64_opt(pb, LOCATION_MAPPING_ID, (uint64_t)(l->mapping + 1));
    cprof__pb_uint64_opt(pb, LOCATION_ADDRESS, l->address);
    for (uint32_t j = 0; j < l->nlines; j++) {
      const cprof__res_line_t *ln = &r->lines[l->first_line + j];
      size_t ls = cprof__pb_start(pb);
      cprof__pb_uint64(pb, LINE_FUNCTION_ID, (uint64_t)ln->function + 1);
      cprof__pb_int64_opt(pb, LINE_LINE, ln->line);
      cprof__pb_end(pb, LOCATION_LINE, ls);
    }
    cprof__pb_end(pb, PROFILE_LOCATION, start);
  }
}

static void encode_functions(const cprof__resolved_t *r, cprof__buf_t *pb) {
  for (size_t i = 0; i < r->nfunctions; i++) {
    const cprof__res_function_t *f = &r->functions[i];
    size_t start = cprof__pb_start(pb);
    cprof__pb_uint64(pb, FUNCTION_ID, i + 1);
    /* profile.proto: name is for people, system_name as the system knows
     * it, "a C++ mangled name". Where the two differ, pprof shows name as
     * it is; where they are equal, it takes the name for one it may
     * simplify, and cuts "shop::fill(int)" and "shop::fill(double)" both
     * to "shop::fill" (internal/symbolizer: demangleSingleFunction). */
    cprof__pb_int64_opt(pb, FUNCTION_NAME, f->name);
    cprof__pb_int64_opt(pb, FUNCTION_SYSTEM_NAME, f->system_name);
    cprof__pb_int64_opt(pb, FUNCTION_FILENAME, f->file);
    cprof__pb_end(pb, PROFILE_FUNCTION, start);
  }
}

/* The whole Profile message. */
static void encode(const cprof__builder_t *b, const cprof__resolved_t *r, cprof__buf_t *pb) {
  for (int i = 0; i < b->n_sample_types; i++)
    encode_value_type(pb, PROFILE_SAMPLE_TYPE, b->sample_type[i]);

  encode_samples(b, r, pb);
  encode_mappings(r, pb);
  encode_locations(r, pb);
  encode_functions(r, pb);

  /* Every string was interned before this point (description, labels,
   * symbols, mapping files), so the table is complete; string 0 is "". */
  for (size_t i = 0; i < b->strings.n; i++)
    cprof__pb_string(pb, PROFILE_STRING_TABLE, b->strings.v[i]);

  cprof__pb_int64_opt(pb, PROFILE_TIME_NANOS, b->time_nanos);
  cprof__pb_int64_opt(pb, PROFILE_DURATION_NANOS, b->duration_nanos);
  if (b->period_type[0] || b->period_type[1])
    encode_value_type(pb, PROFILE_PERIOD_TYPE, b->period_type);
  cprof__pb_int64_opt(pb, PROFILE_PERIOD, b->period);
  if (b->default_sample_type >= 0)
    cprof__pb_int64(pb, PROFILE_DEFAULT_SAMPLE_TYPE, b->default_sample_type);
  for (size_t i = 0; i < r->nmappings; i++)
    cprof__pb_int64_opt(pb, PROFILE_COMMENT, r->mappings[i].no_symbols);
}

int cprof__builder_write_proto(cprof__builder_t *b, cprof__buf_t *out) {
  if (!b || !out)
    return -EINVAL;
  cprof__resolved_t r;
  cprof__buf_t pb;
  cprof__buf_init(&pb);
  /* In a tree's member (cprof__symbolizer_frugal), addresses only: the
   * tree's owner names them (symbol/symbolize.h). */
  cprof__symbolizer_bare(1);
  int rc = cprof__builder_resolve(b, &r);
  cprof__symbolizer_bare(0);
  if (rc == 0) {
    encode(b, &r, &pb);
    rc = pb.failed ? -ENOMEM : cprof__gzip(pb.data, pb.len, out);
  }
  cprof__buf_free(&pb);
  cprof__resolved_free(&r);
  return rc;
}
