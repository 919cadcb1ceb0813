/* profile.proto in, the model of model.h out, whatever the bytes.
 *
 * The decoder trusts nothing: every length is checked against what is
 * left, every varint against its ten bytes, every index against its table,
 * every ID against the IDs defined, and the first fault ends the decoding
 * with one line saying what and where. Messages nest at most three deep
 * (Profile > Sample > Label, Profile > Location > Line) and are read by
 * loops, not recursion, so no input can exhaust the stack; every loop
 * advances through the input, so none can hang.
 *
 * It reads the top-level message several times over, each pass taking what
 * the next needs, because profile.proto allows its fields in any order:
 *   1. count every repeated field, and find the string table;
 *   2. functions and mappings (they name strings only);
 *   3. locations (they name mappings and functions);
 *   4. samples (they name locations) and the scalar fields.
 * Arrays are sized by the counts of pass 1, so nothing is reallocated, and
 * every object comes from one arena with a budget proportional to the
 * input: a profile cannot be made to take more than about 32 bytes of
 * memory for each byte of it (an empty sample, two bytes, is the dearest).
 *
 * What pprof's profile.Parse checks (profile.go, CheckValid) is checked
 * here too: string_table[0] is "", IDs are nonzero and unique, references
 * resolve, and each sample has one value per sample type. Unknown fields
 * are skipped, as protobuf requires. */
#include "model/model.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile/fields.h"

/* Wire types (https://protobuf.dev/programming-guides/encoding/). */
enum { VARINT = 0, I64 = 1, LEN = 2, SGROUP = 3, EGROUP = 4, I32 = 5 };

/* Bytes of model a byte of profile may cost, and a floor for small inputs. */
#define BUDGET_PER_BYTE 32
#define BUDGET_FLOOR ((size_t)1 << 20)

typedef struct decoder {
  const uint8_t *base; /* the whole (inflated) profile, for offsets in errors */
  cprof__pf_t *p;
  cprof__arena_t *arena;
  char *err;
  size_t errlen;
  int failed;
  /* The string table, from pass 1. */
  const char **strings;
  size_t n_strings;
  /* Counts from pass 1, and what passes 2-4 filled. */
  size_t n_sample_types, n_samples, n_mappings, n_locations, n_functions, n_comments;
} decoder_t;

/* A message being read: [p, end). */
typedef struct reader {
  const uint8_t *p, *end;
} reader_t;

static int fail(decoder_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(decoder_t *d, const char *fmt, ...) {
  if (!d->failed) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, d->errlen, fmt, ap);
    va_end(ap);
    d->failed = 1;
  }
  return -1;
}

static int no_memory(decoder_t *d) {
  if (cprof__arena_over(d->arena))
    return fail(d, "the profile takes more memory than a profile of its size may");
  fail(d, "out of memory");
  return -2;
}

static size_t offset(const decoder_t *d, const uint8_t *at) { return (size_t)(at - d->base); }

/* ---- wire primitives ------------------------------------------------------- */

static int varint(decoder_t *d, reader_t *r, uint64_t *x, const char *what) {
  uint64_t v = 0;
  const uint8_t *start = r->p;
  for (int shift = 0; shift < 70; shift += 7) {
    if (r->p >= r->end)
      return fail(d, "truncated: %s at byte %zu ends inside a varint", what, offset(d, start));
    uint8_t b = *r->p++;
    if (shift == 63 && b > 1)
      return fail(d, "bad varint: %s at byte %zu is longer than 64 bits", what, offset(d, start));
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *x = v;
      return 0;
    }
  }
  return fail(d, "bad varint: %s at byte %zu has more than ten bytes", what, offset(d, start));
}

/* A field's key and, for LEN, its body; for the other wire types the value
 * (I64 and I32 as raw bits). */
typedef struct field {
  int number, type;
  uint64_t value;
  reader_t body;
  const uint8_t *at;
} field_t;

/* Reads the next field of r. 1 with *f, 0 at the end, -1 on a fault. */
static int next_field(decoder_t *d, reader_t *r, field_t *f, const char *msg) {
  if (r->p >= r->end)
    return 0;
  f->at = r->p;
  uint64_t key;
  if (varint(d, r, &key, msg) != 0)
    return -1;
  f->type = (int)(key & 7);
  if (key >> 3 == 0 || key >> 3 > 536870911)
    return fail(d, "bad field number %" PRIu64 " in %s at byte %zu", key >> 3, msg,
                offset(d, f->at));
  f->number = (int)(key >> 3);
  switch (f->type) {
  case VARINT:
    return varint(d, r, &f->value, msg) == 0 ? 1 : -1;
  case I64:
  case I32: {
    size_t k = f->type == I64 ? 8 : 4;
    if ((size_t)(r->end - r->p) < k)
      return fail(d, "truncated: field %d of %s at byte %zu wants %zu bytes, %zu are left",
                  f->number, msg, offset(d, f->at), k, (size_t)(r->end - r->p));
    f->value = 0;
    memcpy(&f->value, r->p, k); /* little-endian on the wire and here */
    r->p += k;
    return 1;
  }
  case LEN: {
    uint64_t n;
    if (varint(d, r, &n, msg) != 0)
      return -1;
    if (n > (uint64_t)(r->end - r->p))
      return fail(d, "truncated: field %d of %s at byte %zu wants %" PRIu64 " bytes, %zu are left",
                  f->number, msg, offset(d, f->at), n, (size_t)(r->end - r->p));
    f->body.p = r->p;
    f->body.end = r->p + n;
    r->p += n;
    return 1;
  }
  default:
    return fail(d, "field %d of %s at byte %zu has wire type %d, which profile.proto never uses",
                f->number, msg, offset(d, f->at), f->type);
  }
}

/* A scalar field that profile.proto declares as a varint. */
static int want_varint(decoder_t *d, const field_t *f, const char *msg) {
  if (f->type == VARINT)
    return 0;
  return fail(d, "field %d of %s at byte %zu should be a varint, has wire type %d", f->number, msg,
              offset(d, f->at), f->type);
}

static int want_len(decoder_t *d, const field_t *f, const char *msg) {
  if (f->type == LEN)
    return 0;
  return fail(d, "field %d of %s at byte %zu should be length-delimited, has wire type %d",
              f->number, msg, offset(d, f->at), f->type);
}

/* A repeated varint field, packed (LEN) or not (VARINT): the count of
 * values f holds. */
static int count_varints(decoder_t *d, const field_t *f, size_t *n, const char *msg) {
  if (f->type == VARINT) {
    *n = 1;
    return 0;
  }
  if (want_len(d, f, msg) != 0)
    return -1;
  size_t k = 0;
  for (const uint8_t *q = f->body.p; q < f->body.end; q++)
    k += !(*q & 0x80);
  if (f->body.end > f->body.p && (f->body.end[-1] & 0x80))
    return fail(d, "truncated: packed field %d of %s at byte %zu ends inside a varint", f->number,
                msg, offset(d, f->at));
  *n = k;
  return 0;
}

/* Calls take(x) for each value of a repeated varint field, packed or not. */
#define EACH_VARINT(d, f, msg, x, take)                                                            \
  do {                                                                                             \
    if ((f)->type == VARINT) {                                                                     \
      uint64_t x = (f)->value;                                                                     \
      take;                                                                                        \
    } else {                                                                                       \
      reader_t pr_ = (f)->body;                                                                    \
      while (pr_.p < pr_.end) {                                                                    \
        uint64_t x;                                                                                \
        if (varint(d, &pr_, &x, msg) != 0)                                                         \
          return -1;                                                                               \
        take;                                                                                      \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static int string_at(decoder_t *d, uint64_t i, const char **s, const char *what) {
  if (i >= d->n_strings)
    return fail(d, "%s: string index %" PRIu64 " is past the string table (%zu strings)", what, i,
                d->n_strings);
  *s = d->strings[i];
  return 0;
}

/* ---- pass 1: counts and the string table ------------------------------------ */

static int count_fields(decoder_t *d, const uint8_t *data, size_t n) {
  reader_t r = {data, data + n};
  field_t f;
  int rc;
  size_t n_strings = 0, string_bytes = 0;
  while ((rc = next_field(d, &r, &f, "Profile")) > 0) {
    size_t k;
    switch (f.number) {
    case PROFILE_SAMPLE_TYPE:
    case PROFILE_SAMPLE:
    case PROFILE_MAPPING:
    case PROFILE_LOCATION:
    case PROFILE_FUNCTION:
    case PROFILE_PERIOD_TYPE:
      if (want_len(d, &f, "Profile") != 0)
        return -1;
      d->n_sample_types += f.number == PROFILE_SAMPLE_TYPE;
      d->n_samples += f.number == PROFILE_SAMPLE;
      d->n_mappings += f.number == PROFILE_MAPPING;
      d->n_locations += f.number == PROFILE_LOCATION;
      d->n_functions += f.number == PROFILE_FUNCTION;
      break;
    case PROFILE_STRING_TABLE:
      if (want_len(d, &f, "Profile") != 0)
        return -1;
      n_strings++;
      string_bytes += (size_t)(f.body.end - f.body.p) + 1;
      break;
    case PROFILE_COMMENT:
      if (count_varints(d, &f, &k, "Profile.comment") != 0)
        return -1;
      d->n_comments += k;
      break;
    case PROFILE_DROP_FRAMES:
    case PROFILE_KEEP_FRAMES:
    case PROFILE_TIME_NANOS:
    case PROFILE_DURATION_NANOS:
    case PROFILE_PERIOD:
    case PROFILE_DEFAULT_SAMPLE_TYPE:
      if (want_varint(d, &f, "Profile") != 0)
        return -1;
      break;
    }
  }
  if (rc < 0)
    return -1;
  if (n_strings == 0)
    return fail(d, "no string table: not a profile.proto (an empty or foreign file?)");

  /* All the strings' bytes in one allocation, each NUL-terminated. */
  d->strings = cprof__arena_array(d->arena, n_strings, sizeof *d->strings);
  char *bytes = d->strings ? cprof__arena_alloc(d->arena, string_bytes) : NULL;
  if (!bytes)
    return no_memory(d);
  r = (reader_t){data, data + n};
  while (next_field(d, &r, &f, "Profile") > 0) {
    if (f.number != PROFILE_STRING_TABLE)
      continue;
    size_t len = (size_t)(f.body.end - f.body.p);
    memcpy(bytes, f.body.p, len);
    bytes[len] = '\0';
    d->strings[d->n_strings++] = bytes;
    bytes += len + 1;
  }
  if (d->strings[0][0] != '\0') {
    /* Shown escaped: it may hold any byte, and the error is one line. */
    char shown[4 * 24 + 1], *o = shown;
    for (const unsigned char *c = (const unsigned char *)d->strings[0]; *c && o - shown < 4 * 23;
         c++)
      o += *c >= 0x20 && *c < 0x7f && *c != '\\' && *c != '"' ? sprintf(o, "%c", *c)
                                                              : sprintf(o, "\\x%02x", *c);
    return fail(d, "string_table[0] must be \"\", is \"%s\"", shown);
  }
  return 0;
}

/* ---- messages ------------------------------------------------------------------ */

static int decode_value_type(decoder_t *d, reader_t r, cprof__value_type_t *vt, const char *msg) {
  field_t f;
  int rc;
  uint64_t type = 0, unit = 0;
  while ((rc = next_field(d, &r, &f, msg)) > 0) {
    if (f.number == VALUE_TYPE_TYPE || f.number == VALUE_TYPE_UNIT) {
      if (want_varint(d, &f, msg) != 0)
        return -1;
      *(f.number == VALUE_TYPE_TYPE ? &type : &unit) = f.value;
    }
  }
  if (rc < 0 || string_at(d, type, &vt->type, msg) != 0 || string_at(d, unit, &vt->unit, msg) != 0)
    return -1;
  return 0;
}

static int decode_function(decoder_t *d, reader_t r, cprof__pf_function_t *fn) {
  field_t f;
  int rc;
  uint64_t v[FUNCTION_START_LINE + 1] = {0};
  while ((rc = next_field(d, &r, &f, "Function")) > 0) {
    if (f.number >= FUNCTION_ID && f.number <= FUNCTION_START_LINE) {
      if (want_varint(d, &f, "Function") != 0)
        return -1;
      v[f.number] = f.value;
    }
  }
  if (rc < 0)
    return -1;
  fn->id = v[FUNCTION_ID];
  fn->start_line = (int64_t)v[FUNCTION_START_LINE];
  if (string_at(d, v[FUNCTION_NAME], &fn->name, "Function.name") != 0 ||
      string_at(d, v[FUNCTION_SYSTEM_NAME], &fn->system_name, "Function.system_name") != 0 ||
      string_at(d, v[FUNCTION_FILENAME], &fn->filename, "Function.filename") != 0)
    return -1;
  return 0;
}

static int decode_mapping(decoder_t *d, reader_t r, cprof__pf_mapping_t *m) {
  field_t f;
  int rc;
  uint64_t v[MAPPING_HAS_INLINE_FRAMES + 1] = {0};
  while ((rc = next_field(d, &r, &f, "Mapping")) > 0) {
    if (f.number >= MAPPING_ID && f.number <= MAPPING_HAS_INLINE_FRAMES) {
      if (want_varint(d, &f, "Mapping") != 0)
        return -1;
      v[f.number] = f.value;
    }
  }
  if (rc < 0)
    return -1;
  m->id = v[MAPPING_ID];
  m->start = v[MAPPING_MEMORY_START];
  m->limit = v[MAPPING_MEMORY_LIMIT];
  m->offset = v[MAPPING_FILE_OFFSET];
  m->has_functions = !!v[MAPPING_HAS_FUNCTIONS];
  m->has_filenames = !!v[MAPPING_HAS_FILENAMES];
  m->has_line_numbers = !!v[MAPPING_HAS_LINE_NUMBERS];
  m->has_inline_frames = !!v[MAPPING_HAS_INLINE_FRAMES];
  if (string_at(d, v[MAPPING_FILENAME], &m->file, "Mapping.filename") != 0 ||
      string_at(d, v[MAPPING_BUILD_ID], &m->build_id, "Mapping.build_id") != 0)
    return -1;
  return 0;
}

/* IDs are looked up by index when they run 1..N in order, as every
 * encoder we know writes them, and by binary search otherwise. */
#define DEFINE_FIND(name, type)                                                                    \
  static type *name(type *v, size_t n, uint64_t want, int dense) {                                 \
    if (dense)                                                                                     \
      return want >= 1 && want <= n ? &v[want - 1] : NULL;                                         \
    size_t lo = 0, hi = n;                                                                         \
    while (lo < hi) {                                                                              \
      size_t mid = lo + (hi - lo) / 2;                                                             \
      if (v[mid].id < want)                                                                        \
        lo = mid + 1;                                                                              \
      else                                                                                         \
        hi = mid;                                                                                  \
    }                                                                                              \
    return lo < n && v[lo].id == want ? &v[lo] : NULL;                                             \
  }
DEFINE_FIND(find_function, cprof__pf_function_t)
DEFINE_FIND(find_mapping, cprof__pf_mapping_t)
DEFINE_FIND(find_location, cprof__pf_location_t)

typedef struct ids {
  int functions_dense, mappings_dense, locations_dense;
} ids_t;

static int decode_line(decoder_t *d, reader_t r, cprof__pf_line_t *ln, const ids_t *ids,
                       uint64_t loc_id) {
  field_t f;
  int rc;
  uint64_t v[LINE_COLUMN + 1] = {0};
  while ((rc = next_field(d, &r, &f, "Line")) > 0) {
    if (f.number >= LINE_FUNCTION_ID && f.number <= LINE_COLUMN) {
      if (want_varint(d, &f, "Line") != 0)
        return -1;
      v[f.number] = f.value;
    }
  }
  if (rc < 0)
    return -1;
  ln->line = (int64_t)v[LINE_LINE];
  ln->column = (int64_t)v[LINE_COLUMN];
  if (v[LINE_FUNCTION_ID] != 0) {
    cprof__pf_t *p = d->p;
    ln->function =
        find_function(p->functions, p->n_functions, v[LINE_FUNCTION_ID], ids->functions_dense);
    if (!ln->function)
      return fail(d, "location %" PRIu64 ": function id %" PRIu64 " is not in the profile", loc_id,
                  v[LINE_FUNCTION_ID]);
  }
  return 0;
}

static int decode_location(decoder_t *d, reader_t r, cprof__pf_location_t *loc, const ids_t *ids) {
  field_t f;
  int rc;
  size_t n_lines = 0;
  uint64_t mapping_id = 0;
  reader_t start = r;
  while ((rc = next_field(d, &r, &f, "Location")) > 0) {
    switch (f.number) {
    case LOCATION_ID:
    case LOCATION_MAPPING_ID:
    case LOCATION_ADDRESS:
    case LOCATION_IS_FOLDED:
      if (want_varint(d, &f, "Location") != 0)
        return -1;
      if (f.number == LOCATION_ID)
        loc->id = f.value;
      else if (f.number == LOCATION_MAPPING_ID)
        mapping_id = f.value;
      else if (f.number == LOCATION_ADDRESS)
        loc->address = f.value;
      else
        loc->is_folded = !!f.value;
      break;
    case LOCATION_LINE:
      if (want_len(d, &f, "Location") != 0)
        return -1;
      n_lines++;
      break;
    }
  }
  if (rc < 0)
    return -1;
  if (loc->id == 0)
    return fail(d, "a location has id 0");
  if (mapping_id != 0) {
    cprof__pf_t *p = d->p;
    loc->mapping = find_mapping(p->mappings, p->n_mappings, mapping_id, ids->mappings_dense);
    if (!loc->mapping)
      return fail(d, "location %" PRIu64 ": mapping id %" PRIu64 " is not in the profile", loc->id,
                  mapping_id);
  }
  if (n_lines == 0)
    return 0;
  cprof__pf_line_t *lines = cprof__arena_array(d->arena, n_lines, sizeof *lines);
  if (!lines)
    return no_memory(d);
  r = start;
  size_t i = 0;
  while (next_field(d, &r, &f, "Location") > 0)
    if (f.number == LOCATION_LINE && decode_line(d, f.body, &lines[i++], ids, loc->id) != 0)
      return -1;
  loc->lines = lines;
  loc->n_lines = n_lines;
  return 0;
}

/* 0 with *l, 1 for a label pprof drops (neither a string nor a number),
 * -1 on a fault. */
static int decode_label(decoder_t *d, reader_t r, cprof__label_t *l) {
  field_t f;
  int rc;
  uint64_t v[LABEL_NUM_UNIT + 1] = {0};
  while ((rc = next_field(d, &r, &f, "Label")) > 0) {
    if (f.number >= LABEL_KEY && f.number <= LABEL_NUM_UNIT) {
      if (want_varint(d, &f, "Label") != 0)
        return -1;
      v[f.number] = f.value;
    }
  }
  if (rc < 0 || string_at(d, v[LABEL_KEY], &l->key, "Label.key") != 0)
    return -1;
  /* As pprof's postDecode: a string makes a string label, else a number
   * or a unit a numeric one, else there is no label. */
  if (v[LABEL_STR] != 0)
    return string_at(d, v[LABEL_STR], &l->str, "Label.str");
  if (v[LABEL_NUM] == 0 && v[LABEL_NUM_UNIT] == 0)
    return 1;
  l->num = (int64_t)v[LABEL_NUM];
  return v[LABEL_NUM_UNIT] != 0 ? string_at(d, v[LABEL_NUM_UNIT], &l->num_unit, "Label.num_unit")
                                : 0;
}

static int decode_sample(decoder_t *d, reader_t r, cprof__pf_sample_t *s, size_t index,
                         const ids_t *ids) {
  field_t f;
  int rc;
  size_t n_locs = 0, n_values = 0, n_labels = 0, k;
  reader_t start = r;
  while ((rc = next_field(d, &r, &f, "Sample")) > 0) {
    if (f.number == SAMPLE_LOCATION_ID || f.number == SAMPLE_VALUE) {
      if (count_varints(d, &f, &k, "Sample") != 0)
        return -1;
      *(f.number == SAMPLE_LOCATION_ID ? &n_locs : &n_values) += k;
    } else if (f.number == SAMPLE_LABEL) {
      if (want_len(d, &f, "Sample") != 0)
        return -1;
      n_labels++;
    }
  }
  if (rc < 0)
    return -1;
  cprof__pf_t *p = d->p;
  if (n_values != p->n_sample_types)
    return fail(d, "sample %zu has %zu values for %zu sample types", index, n_values,
                p->n_sample_types);
  const cprof__pf_location_t **locs = cprof__arena_array(d->arena, n_locs, sizeof *locs);
  int64_t *values = cprof__arena_array(d->arena, n_values, sizeof *values);
  cprof__label_t *labels = cprof__arena_array(d->arena, n_labels, sizeof *labels);
  if (!locs || !values || !labels)
    return no_memory(d);
  size_t il = 0, iv = 0, ib = 0;
  r = start;
  while (next_field(d, &r, &f, "Sample") > 0) {
    if (f.number == SAMPLE_LOCATION_ID) {
      EACH_VARINT(d, &f, "Sample.location_id", id, {
        const cprof__pf_location_t *loc =
            find_location(p->locations, p->n_locations, id, ids->locations_dense);
        if (!loc)
          return fail(d, "sample %zu: location id %" PRIu64 " is not in the profile", index, id);
        locs[il++] = loc;
      });
    } else if (f.number == SAMPLE_VALUE) {
      EACH_VARINT(d, &f, "Sample.value", x, values[iv++] = (int64_t)x);
    } else if (f.number == SAMPLE_LABEL) {
      int kept = decode_label(d, f.body, &labels[ib]);
      if (kept < 0)
        return -1;
      ib += kept == 0;
    }
  }
  s->locations = locs;
  s->n_locations = n_locs;
  s->values = values;
  s->labels = labels;
  s->n_labels = ib;
  return 0;
}

/* ---- passes 2-4 ---------------------------------------------------------------- */

#define SORT_BY_ID(name, type)                                                                     \
  static int name(const void *a, const void *b) {                                                  \
    uint64_t x = ((const type *)a)->id, y = ((const type *)b)->id;                                 \
    return x < y ? -1 : x > y;                                                                     \
  }
SORT_BY_ID(by_function_id, cprof__pf_function_t)
SORT_BY_ID(by_mapping_id, cprof__pf_mapping_t)
SORT_BY_ID(by_location_id, cprof__pf_location_t)

/* Sorts by ID unless already in order, checks that no ID is 0 or twice,
 * and says whether the IDs run 1..n (dense). */
#define CHECK_IDS(d, array, n, cmp, what, dense)                                                   \
  do {                                                                                             \
    int sorted_ = 1;                                                                               \
    for (size_t i_ = 1; i_ < (n) && sorted_; i_++)                                                 \
      sorted_ = (array)[i_ - 1].id <= (array)[i_].id;                                              \
    if (!sorted_)                                                                                  \
      qsort((array), (n), sizeof *(array), cmp);                                                   \
    *(dense) = 1;                                                                                  \
    for (size_t i_ = 0; i_ < (n); i_++) {                                                          \
      if ((array)[i_].id == 0)                                                                     \
        return fail(d, "a %s has id 0", what);                                                     \
      if (i_ > 0 && (array)[i_].id == (array)[i_ - 1].id)                                          \
        return fail(d, "two %ss have id %" PRIu64, what, (array)[i_].id);                          \
      if ((array)[i_].id != i_ + 1)                                                                \
        *(dense) = 0;                                                                              \
    }                                                                                              \
    if (!sorted_ || !*(dense))                                                                     \
      d->p->ids_sequential = 0;                                                                    \
  } while (0)

static int decode_all(decoder_t *d, const uint8_t *data, size_t n) {
  cprof__pf_t *p = d->p;
  cprof__arena_t *a = d->arena;
  if (count_fields(d, data, n) != 0)
    return -1;
  p->sample_types = cprof__arena_array(a, d->n_sample_types, sizeof *p->sample_types);
  p->samples = cprof__arena_array(a, d->n_samples, sizeof *p->samples);
  p->mappings = cprof__arena_array(a, d->n_mappings, sizeof *p->mappings);
  p->locations = cprof__arena_array(a, d->n_locations, sizeof *p->locations);
  p->functions = cprof__arena_array(a, d->n_functions, sizeof *p->functions);
  p->comments = cprof__arena_array(a, d->n_comments, sizeof *p->comments);
  if (!p->sample_types || !p->samples || !p->mappings || !p->locations || !p->functions ||
      !p->comments)
    return no_memory(d);
  const char *empty = d->strings[0];
  p->drop_frames = p->keep_frames = p->default_sample_type = empty;
  p->ids_sequential = 1; /* until CHECK_IDS finds otherwise */
  p->period_type.type = p->period_type.unit = empty;

  /* Pass 2: what names only strings, and the scalars. */
  reader_t r = {data, data + n};
  field_t f;
  while (next_field(d, &r, &f, "Profile") > 0) {
    switch (f.number) {
    case PROFILE_SAMPLE_TYPE:
      if (decode_value_type(d, f.body, &p->sample_types[p->n_sample_types++],
                            "Profile.sample_type") != 0)
        return -1;
      break;
    case PROFILE_PERIOD_TYPE:
      if (decode_value_type(d, f.body, &p->period_type, "Profile.period_type") != 0)
        return -1;
      break;
    case PROFILE_FUNCTION:
      if (decode_function(d, f.body, &p->functions[p->n_functions++]) != 0)
        return -1;
      break;
    case PROFILE_MAPPING:
      if (decode_mapping(d, f.body, &p->mappings[p->n_mappings++]) != 0)
        return -1;
      break;
    case PROFILE_DROP_FRAMES:
      if (string_at(d, f.value, &p->drop_frames, "Profile.drop_frames") != 0)
        return -1;
      break;
    case PROFILE_KEEP_FRAMES:
      if (string_at(d, f.value, &p->keep_frames, "Profile.keep_frames") != 0)
        return -1;
      break;
    case PROFILE_DEFAULT_SAMPLE_TYPE:
      if (string_at(d, f.value, &p->default_sample_type, "Profile.default_sample_type") != 0)
        return -1;
      break;
    case PROFILE_TIME_NANOS:
      p->time_nanos = (int64_t)f.value;
      break;
    case PROFILE_DURATION_NANOS:
      p->duration_nanos = (int64_t)f.value;
      break;
    case PROFILE_PERIOD:
      p->period = (int64_t)f.value;
      break;
    case PROFILE_COMMENT:
      EACH_VARINT(d, &f, "Profile.comment", i, {
        if (string_at(d, i, &p->comments[p->n_comments++], "Profile.comment") != 0)
          return -1;
      });
      break;
    }
  }
  if (d->failed)
    return -1;
  ids_t ids;
  CHECK_IDS(d, p->functions, p->n_functions, by_function_id, "function", &ids.functions_dense);
  CHECK_IDS(d, p->mappings, p->n_mappings, by_mapping_id, "mapping", &ids.mappings_dense);

  /* Pass 3: locations. */
  r = (reader_t){data, data + n};
  while (next_field(d, &r, &f, "Profile") > 0)
    if (f.number == PROFILE_LOCATION &&
        decode_location(d, f.body, &p->locations[p->n_locations++], &ids) != 0)
      return -1;
  CHECK_IDS(d, p->locations, p->n_locations, by_location_id, "location", &ids.locations_dense);

  /* Pass 4: samples. */
  r = (reader_t){data, data + n};
  while (next_field(d, &r, &f, "Profile") > 0)
    if (f.number == PROFILE_SAMPLE &&
        decode_sample(d, f.body, &p->samples[p->n_samples], p->n_samples, &ids) == 0)
      p->n_samples++;
    else if (d->failed)
      return -1;
  return d->failed ? -1 : 0;
}

/* ---- gzip ------------------------------------------------------------------------ */

/* Inflates every gzip member of in[0..n) (Go's gzip.Reader reads them all,
 * as pprof does) into *out, at most CPROF_PF_MAX_INFLATED bytes. */
static int inflate_all(decoder_t *d, const uint8_t *in, size_t n, uint8_t **out, size_t *out_len) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
    return no_memory(d);
  size_t cap = n < ((size_t)1 << 20) ? (size_t)4 << 20 : n * 4, len = 0;
  uint8_t *buf = NULL;
  int rc = -1;
  const uint8_t *p = in, *end = in + n;
  for (;;) {
    if (len == cap || !buf) {
      if (buf)
        cap = cap * 2 > CPROF_PF_MAX_INFLATED ? CPROF_PF_MAX_INFLATED : cap * 2;
      if (buf && len == cap) {
        fail(d, "gzip: the profile inflates to more than %zu MiB", CPROF_PF_MAX_INFLATED >> 20);
        break;
      }
      uint8_t *grown = realloc(buf, cap);
      if (!grown) {
        rc = no_memory(d);
        break;
      }
      buf = grown;
    }
    /* zlib counts in uInt: feed and drain at most 1 GiB at a time. */
    size_t in_left = (size_t)(end - p), room = cap - len;
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)(in_left < (1u << 30) ? in_left : 1u << 30);
    z.next_out = buf + len;
    z.avail_out = (uInt)(room < (1u << 30) ? room : 1u << 30);
    uInt had_in = z.avail_in, had_out = z.avail_out;
    int zr = inflate(&z, Z_NO_FLUSH);
    p += had_in - z.avail_in;
    len += had_out - z.avail_out;
    if (zr == Z_STREAM_END) {
      /* Another member may follow; anything else after the last is
       * ignored, as gzip(1) warns and Go's reader errs: err too. */
      if (p == end) {
        rc = 0;
        break;
      }
      if (end - p < 2 || p[0] != 0x1f || p[1] != 0x8b) {
        fail(d, "gzip: %zu bytes of garbage after the compressed data", (size_t)(end - p));
        break;
      }
      inflateReset(&z);
      continue;
    }
    if (zr == Z_BUF_ERROR && p == end && z.avail_out > 0) {
      fail(d, "gzip: truncated (the compressed data ends early)");
      break;
    }
    if (zr != Z_OK && zr != Z_BUF_ERROR) {
      if (zr == Z_MEM_ERROR)
        rc = no_memory(d);
      else
        fail(d, "gzip: %s", z.msg ? z.msg : "corrupt data");
      break;
    }
  }
  inflateEnd(&z);
  if (rc != 0) {
    free(buf);
    return -1;
  }
  *out = buf;
  *out_len = len;
  return 0;
}

/* ---- the entry point ------------------------------------------------------------- */

/* Text that pprof reads and we do not: Go's legacy formats (debug=1), a
 * collapsed-stack file, an HTML error page. Said plainly, rather than as a
 * wire-format fault at byte 0. */
static int looks_like_text(const uint8_t *data, size_t n) {
  size_t k = n < 64 ? n : 64, printable = 0;
  for (size_t i = 0; i < k; i++)
    printable += (data[i] >= 0x20 && data[i] < 0x7f) || data[i] == '\n' || data[i] == '\t';
  return k >= 8 && printable == k;
}

int cprof__pf_decode(const void *data, size_t n, cprof__pf_t **out, char *err, size_t errlen) {
  decoder_t d = {.err = err, .errlen = errlen};
  *out = NULL;
  if (errlen)
    err[0] = '\0';
  const uint8_t *bytes = data;
  uint8_t *inflated = NULL;
  if (n == 0) {
    snprintf(err, errlen, "empty input: no profile");
    return -EINVAL;
  }
  if (n >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
    if (inflate_all(&d, bytes, n, &inflated, &n) != 0)
      return d.failed ? -EINVAL : -ENOMEM;
    bytes = inflated;
    if (n == 0) {
      free(inflated);
      snprintf(err, errlen, "empty input: the gzip data holds no profile");
      return -EINVAL;
    }
  } else if (looks_like_text(bytes, n)) {
    snprintf(err, errlen,
             "not profile.proto but text (Go's legacy text formats, debug=1, are not read: ask "
             "for debug=0)");
    return -EINVAL;
  }
  d.base = bytes;
  size_t budget = n > (SIZE_MAX - BUDGET_FLOOR) / BUDGET_PER_BYTE
                      ? SIZE_MAX
                      : n * BUDGET_PER_BYTE + BUDGET_FLOOR;
  d.arena = cprof__arena_new(budget);
  cprof__pf_t *p = d.arena ? cprof__arena_alloc(d.arena, sizeof *p) : NULL;
  int rc = 0;
  if (!p) {
    snprintf(err, errlen, "out of memory");
    rc = -ENOMEM;
  } else {
    p->arena = d.arena;
    d.p = p;
    if (decode_all(&d, bytes, n) != 0)
      rc = cprof__arena_over(d.arena) || strcmp(err, "out of memory") != 0 ? -EINVAL : -ENOMEM;
  }
  free(inflated);
  if (rc != 0) {
    cprof__arena_free(d.arena);
    return rc;
  }
  *out = p;
  return 0;
}

void cprof__pf_free(cprof__pf_t *p) {
  if (p)
    cprof__arena_free(p->arena);
}
