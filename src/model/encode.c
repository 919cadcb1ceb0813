/* The model written back as profile.proto: what decode.c reads, the other
 * way. A process tree's owner decodes its workers' profiles, labels each
 * sample with the worker's pid, merges them and serves the result
 * (issue 31); `cprof convert` writes what it read (issue 35).
 *
 * Every field the model holds is written
 * (github.com/google/pprof/proto/profile.proto), with the IDs the model
 * has: they are unique and every reference resolves, as decode checks and
 * merge makes them. Strings are interned as they are met, string 0 being
 * "", so the table holds each once and comes after the messages that name
 * it, as the builder's (profile/builder.c) does; the header's strings are
 * interned last, before the table is written. Repeated scalars are packed,
 * as proto3 and Go's encoder write them.
 *
 * Two things the format cannot say come back otherwise from a decode, as
 * from pprof's: a label whose string is "" (index 0 reads as no string,
 * so as a number, and a number 0 with no unit as no label at all), and a
 * string holding a NUL byte (the model's C string ends there, so it is
 * written up to it). */
#include "model/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/fields.h"
#include "profile/gzip.h"
#include "profile/protobuf.h"
#include "profile/table.h"

/* ---- the string table -------------------------------------------------- */

typedef struct strings {
  const char **v; /* the model's own strings, not copies: p outlives the encoding */
  size_t n, cap;
  cprof__table_t index;
  int rc; /* the first failure, sticky: intern returns 0 after it */
} strings_t;

static int string_eq(const void *ctx, uint32_t value, const void *key) {
  return strcmp(((const strings_t *)ctx)->v[value], key) == 0;
}

/* s's index in the table, adding it if new; NULL is "". After a failure
 * (st->rc), 0: the caller checks st->rc once at the end. */
static int64_t intern(strings_t *st, const char *s) {
  if (!s)
    s = "";
  if (st->rc != 0)
    return 0;
  uint64_t h = cprof__hash_bytes(CPROF_HASH_SEED, s, strlen(s));
  int64_t i = cprof__table_find(&st->index, h, string_eq, st, s);
  if (i >= 0)
    return i;
  if (st->n >= UINT32_MAX - 1) {
    st->rc = -EOVERFLOW;
    return 0;
  }
  if (cprof__grow((void **)&st->v, &st->cap, st->n + 1, sizeof *st->v) != 0 ||
      cprof__table_insert(&st->index, h, (uint32_t)st->n) != 0) {
    st->rc = -ENOMEM;
    return 0;
  }
  st->v[st->n] = s;
  return (int64_t)st->n++;
}

/* ---- messages ---------------------------------------------------------- */

static void value_type(cprof__buf_t *pb, strings_t *st, int field, const cprof__value_type_t *vt) {
  size_t start = cprof__pb_start(pb);
  cprof__pb_int64_opt(pb, VALUE_TYPE_TYPE, intern(st, vt->type));
  cprof__pb_int64_opt(pb, VALUE_TYPE_UNIT, intern(st, vt->unit));
  cprof__pb_end(pb, field, start);
}

static void sample(cprof__buf_t *pb, strings_t *st, const cprof__pf_sample_t *s, size_t n_values) {
  size_t start = cprof__pb_start(pb);
  /* Leaf first, packed: the IDs are written in place between a start and
   * an end, which puts the length in front of them. */
  if (s->n_locations > 0) {
    size_t ls = cprof__pb_start(pb);
    for (size_t i = 0; i < s->n_locations; i++)
      cprof__pb_varint(pb, s->locations[i]->id);
    cprof__pb_end(pb, SAMPLE_LOCATION_ID, ls);
  }
  cprof__pb_int64s(pb, SAMPLE_VALUE, s->values, n_values);
  for (size_t i = 0; i < s->n_labels; i++) {
    const cprof__label_t *l = &s->labels[i];
    size_t ls = cprof__pb_start(pb);
    cprof__pb_int64_opt(pb, LABEL_KEY, intern(st, l->key));
    /* profile.proto: "At most one of the following must be present". */
    if (l->str) {
      cprof__pb_int64_opt(pb, LABEL_STR, intern(st, l->str));
    } else {
      cprof__pb_int64_opt(pb, LABEL_NUM, l->num);
      if (l->num_unit)
        cprof__pb_int64_opt(pb, LABEL_NUM_UNIT, intern(st, l->num_unit));
    }
    cprof__pb_end(pb, SAMPLE_LABEL, ls);
  }
  cprof__pb_end(pb, PROFILE_SAMPLE, start);
}

static void mapping(cprof__buf_t *pb, strings_t *st, const cprof__pf_mapping_t *m) {
  size_t start = cprof__pb_start(pb);
  cprof__pb_uint64(pb, MAPPING_ID, m->id);
  cprof__pb_uint64_opt(pb, MAPPING_MEMORY_START, m->start);
  cprof__pb_uint64_opt(pb, MAPPING_MEMORY_LIMIT, m->limit);
  cprof__pb_uint64_opt(pb, MAPPING_FILE_OFFSET, m->offset);
  cprof__pb_int64_opt(pb, MAPPING_FILENAME, intern(st, m->file));
  cprof__pb_int64_opt(pb, MAPPING_BUILD_ID, intern(st, m->build_id));
  cprof__pb_bool_opt(pb, MAPPING_HAS_FUNCTIONS, m->has_functions);
  cprof__pb_bool_opt(pb, MAPPING_HAS_FILENAMES, m->has_filenames);
  cprof__pb_bool_opt(pb, MAPPING_HAS_LINE_NUMBERS, m->has_line_numbers);
  cprof__pb_bool_opt(pb, MAPPING_HAS_INLINE_FRAMES, m->has_inline_frames);
  cprof__pb_end(pb, PROFILE_MAPPING, start);
}

static void location(cprof__buf_t *pb, const cprof__pf_location_t *l) {
  size_t start = cprof__pb_start(pb);
  cprof__pb_uint64(pb, LOCATION_ID, l->id);
  /* mapping_id and function_id 0 (absent) mean none, as the model's NULL. */
  cprof__pb_uint64_opt(pb, LOCATION_MAPPING_ID, l->mapping ? l->mapping->id : 0);
  cprof__pb_uint64_opt(pb, LOCATION_ADDRESS, l->address);
  for (size_t i = 0; i < l->n_lines; i++) {
    const cprof__pf_line_t *ln = &l->lines[i];
    size_t ls = cprof__pb_start(pb);
    cprof__pb_uint64_opt(pb, LINE_FUNCTION_ID, ln->function ? ln->function->id : 0);
    cprof__pb_int64_opt(pb, LINE_LINE, ln->line);
    cprof__pb_int64_opt(pb, LINE_COLUMN, ln->column);
    cprof__pb_end(pb, LOCATION_LINE, ls);
  }
  cprof__pb_bool_opt(pb, LOCATION_IS_FOLDED, l->is_folded);
  cprof__pb_end(pb, PROFILE_LOCATION, start);
}

static void function(cprof__buf_t *pb, strings_t *st, const cprof__pf_function_t *f) {
  size_t start = cprof__pb_start(pb);
  cprof__pb_uint64(pb, FUNCTION_ID, f->id);
  cprof__pb_int64_opt(pb, FUNCTION_NAME, intern(st, f->name));
  cprof__pb_int64_opt(pb, FUNCTION_SYSTEM_NAME, intern(st, f->system_name));
  cprof__pb_int64_opt(pb, FUNCTION_FILENAME, intern(st, f->filename));
  cprof__pb_int64_opt(pb, FUNCTION_START_LINE, f->start_line);
  cprof__pb_end(pb, PROFILE_FUNCTION, start);
}

/* The whole Profile message into pb. 0 or st->rc. */
static int encode(const cprof__pf_t *p, strings_t *st, cprof__buf_t *pb) {
  for (size_t i = 0; i < p->n_sample_types; i++)
    value_type(pb, st, PROFILE_SAMPLE_TYPE, &p->sample_types[i]);
  for (size_t i = 0; i < p->n_samples; i++)
    sample(pb, st, &p->samples[i], p->n_sample_types);
  for (size_t i = 0; i < p->n_mappings; i++)
    mapping(pb, st, &p->mappings[i]);
  for (size_t i = 0; i < p->n_locations; i++)
    location(pb, &p->locations[i]);
  for (size_t i = 0; i < p->n_functions; i++)
    function(pb, st, &p->functions[i]);

  /* The header's strings, interned before the table is written. */
  int64_t drop = intern(st, p->drop_frames), keep = intern(st, p->keep_frames);
  int64_t period[2] = {intern(st, p->period_type.type), intern(st, p->period_type.unit)};
  int64_t dflt = intern(st, p->default_sample_type);
  int64_t *comments = NULL;
  if (p->n_comments > 0) {
    if (!(comments = calloc(p->n_comments, sizeof *comments)))
      return -ENOMEM;
    for (size_t i = 0; i < p->n_comments; i++)
      comments[i] = intern(st, p->comments[i]);
  }
  if (st->rc != 0) {
    free(comments);
    return st->rc;
  }

  for (size_t i = 0; i < st->n; i++)
    cprof__pb_string(pb, PROFILE_STRING_TABLE, st->v[i]);
  cprof__pb_int64_opt(pb, PROFILE_DROP_FRAMES, drop);
  cprof__pb_int64_opt(pb, PROFILE_KEEP_FRAMES, keep);
  cprof__pb_int64_opt(pb, PROFILE_TIME_NANOS, p->time_nanos);
  cprof__pb_int64_opt(pb, PROFILE_DURATION_NANOS, p->duration_nanos);
  /* An absent period type reads as "" and "", so one is written only
   * when it names something. */
  if (period[0] || period[1]) {
    size_t start = cprof__pb_start(pb);
    cprof__pb_int64_opt(pb, VALUE_TYPE_TYPE, period[0]);
    cprof__pb_int64_opt(pb, VALUE_TYPE_UNIT, period[1]);
    cprof__pb_end(pb, PROFILE_PERIOD_TYPE, start);
  }
  cprof__pb_int64_opt(pb, PROFILE_PERIOD, p->period);
  /* Every comment, "" (index 0) too: packed, so a zero is written. */
  cprof__pb_int64s(pb, PROFILE_COMMENT, comments, p->n_comments);
  cprof__pb_int64_opt(pb, PROFILE_DEFAULT_SAMPLE_TYPE, dflt);
  free(comments);
  return 0;
}

int cprof__pf_encode(const cprof__pf_t *p, int gzip, cprof__buf_t *out, char *err, size_t errlen) {
  char dummy[1];
  if (!err || errlen == 0)
    err = dummy, errlen = sizeof dummy;
  err[0] = 0;
  if (!p || !out) {
    snprintf(err, errlen, "no profile or no buffer to encode into");
    return -EINVAL;
  }
  strings_t st = {0};
  cprof__table_init(&st.index);
  cprof__buf_t pb;
  cprof__buf_init(&pb);
  int rc = 0;
  if (intern(&st, "") != 0 || st.rc != 0) /* string_table[0] must be "" */
    rc = st.rc ? st.rc : -EINVAL;
  if (rc == 0)
    rc = encode(p, &st, &pb);
  if (rc == 0 && pb.failed)
    rc = -ENOMEM;
  if (rc == 0) {
    if (gzip) {
      rc = cprof__gzip(pb.data, pb.len, out);
    } else {
      cprof__buf_append(out, pb.data, pb.len);
      rc = out->failed ? -ENOMEM : 0;
    }
  }
  if (rc == -EOVERFLOW)
    snprintf(err, errlen, "too many distinct strings to encode (2^32 or more)");
  else if (rc == -ENOMEM)
    snprintf(err, errlen, "out of memory encoding the profile");
  else if (rc != 0)
    snprintf(err, errlen, "encoding the profile failed (%s)", strerror(-rc));
  cprof__buf_free(&pb);
  cprof__table_free(&st.index);
  free(st.v);
  return rc;
}

/* ---- labels ------------------------------------------------------------ */

static int same(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* label's key and strings are copied into p's arena. */
static int set_label(cprof__pf_t *p, cprof__label_t label) {
  const char *key = label.key;
  /* One block for every sample's new labels, sized first, so that on
   * failure the profile is as it was. */
  size_t total = 0;
  for (size_t i = 0; i < p->n_samples; i++) {
    const cprof__pf_sample_t *s = &p->samples[i];
    size_t kept = 0;
    for (size_t k = 0; k < s->n_labels; k++)
      kept += !same(s->labels[k].key, key);
    if (kept + 1 > SIZE_MAX - total)
      return -ENOMEM;
    total += kept + 1;
  }
  const char *str = label.str, *unit = label.num_unit;
  label.key = cprof__arena_strdup(p->arena, key);
  label.str = str ? cprof__arena_strdup(p->arena, str) : NULL;
  label.num_unit = unit ? cprof__arena_strdup(p->arena, unit) : NULL;
  cprof__label_t *block = cprof__arena_array(p->arena, total ? total : 1, sizeof *block);
  if (!label.key || (str && !label.str) || (unit && !label.num_unit) || !block)
    return -ENOMEM;
  for (size_t i = 0; i < p->n_samples; i++) {
    cprof__pf_sample_t *s = &p->samples[i];
    cprof__label_t *labels = block;
    size_t n = 0;
    /* Every label of the key goes, a string or a number, one or several
     * (pprof keeps a key's values as a list): the new one replaces them
     * all, where the first stood, else last. */
    int placed = 0;
    for (size_t k = 0; k < s->n_labels; k++) {
      if (!same(s->labels[k].key, key)) {
        labels[n++] = s->labels[k];
      } else if (!placed) {
        labels[n++] = label;
        placed = 1;
      }
    }
    if (!placed)
      labels[n++] = label;
    s->labels = labels;
    s->n_labels = n;
    block += n;
  }
  return 0;
}

int cprof__pf_set_label(cprof__pf_t *p, const char *key, const char *str) {
  if (!p || !key || !str)
    return -EINVAL;
  return set_label(p, (cprof__label_t){.key = key, .str = str});
}

int cprof__pf_set_num_label(cprof__pf_t *p, const char *key, int64_t num, const char *unit) {
  if (!p || !key)
    return -EINVAL;
  return set_label(p, (cprof__label_t){.key = key, .num = num, .num_unit = unit});
}
