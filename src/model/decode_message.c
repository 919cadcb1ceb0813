/* The messages of profile.proto, each read into the model: value types,
 * functions and mappings (which name strings only), locations and their
 * lines (which name functions and mappings), samples and their labels
 * (which name locations). Every reference is checked to resolve. */
#include <inttypes.h>
#include <string.h>

#include "core/search.h"
#include "model/decode_internal.h"
#include "profile/fields.h"

int cprof__decode_value_type(decoder_t *d, reader_t r, cprof__value_type_t *vt, const char *msg) {
  field_t f;
  int rc;
  uint64_t type = 0, unit = 0;
  while ((rc = cprof__decode_next_field(d, &r, &f, msg)) > 0) {
    if (f.number == VALUE_TYPE_TYPE || f.number == VALUE_TYPE_UNIT) {
      if (cprof__decode_want_varint(d, &f, msg) != 0)
        return -1;
      *(f.number == VALUE_TYPE_TYPE ? &type : &unit) = f.value;
    }
  }
  if (rc < 0 || cprof__decode_string_at(d, type, &vt->type, msg) != 0 ||
      cprof__decode_string_at(d, unit, &vt->unit, msg) != 0)
    return -1;
  return 0;
}

/* Reads the fields of a message numbered first..last, each a varint, into
 * v[number]; other fields are passed over, as unknown ones are. 0, or -1
 * on a fault (said in d). */
static int varint_fields(decoder_t *d, reader_t r, const char *msg, int first, int last,
                         uint64_t *v) {
  field_t f;
  int rc;
  while ((rc = cprof__decode_next_field(d, &r, &f, msg)) > 0) {
    if (f.number >= first && f.number <= last) {
      if (cprof__decode_want_varint(d, &f, msg) != 0)
        return -1;
      v[f.number] = f.value;
    }
  }
  return rc < 0 ? -1 : 0;
}

int cprof__decode_function(decoder_t *d, reader_t r, cprof__pf_function_t *fn) {
  uint64_t v[FUNCTION_START_LINE + 1] = {0};
  if (varint_fields(d, r, "Function", FUNCTION_ID, FUNCTION_START_LINE, v) != 0)
    return -1;
  fn->id = v[FUNCTION_ID];
  fn->start_line = (int64_t)v[FUNCTION_START_LINE];
  if (cprof__decode_string_at(d, v[FUNCTION_NAME], &fn->name, "Function.name") != 0 ||
      cprof__decode_string_at(d, v[FUNCTION_SYSTEM_NAME], &fn->system_name,
                              "Function.system_name") != 0 ||
      cprof__decode_string_at(d, v[FUNCTION_FILENAME], &fn->filename, "Function.filename") != 0)
    return -1;
  return 0;
}

int cprof__decode_mapping(decoder_t *d, reader_t r, cprof__pf_mapping_t *m) {
  uint64_t v[MAPPING_HAS_INLINE_FRAMES + 1] = {0};
  if (varint_fields(d, r, "Mapping", MAPPING_ID, MAPPING_HAS_INLINE_FRAMES, v) != 0)
    return -1;
  m->id = v[MAPPING_ID];
  m->start = v[MAPPING_MEMORY_START];
  m->limit = v[MAPPING_MEMORY_LIMIT];
  m->offset = v[MAPPING_FILE_OFFSET];
  m->has_functions = !!v[MAPPING_HAS_FUNCTIONS];
  m->has_filenames = !!v[MAPPING_HAS_FILENAMES];
  m->has_line_numbers = !!v[MAPPING_HAS_LINE_NUMBERS];
  m->has_inline_frames = !!v[MAPPING_HAS_INLINE_FRAMES];
  if (cprof__decode_string_at(d, v[MAPPING_FILENAME], &m->file, "Mapping.filename") != 0 ||
      cprof__decode_string_at(d, v[MAPPING_BUILD_ID], &m->build_id, "Mapping.build_id") != 0)
    return -1;
  return 0;
}

/* IDs are looked up by index when they run 1..N in order, as every
 * encoder we know writes them, and by binary search otherwise. */
#define DEFINE_FIND(name, type)                                                                    \
  static type *name(type *v, size_t n, uint64_t want, int dense) {                                 \
    if (dense)                                                                                     \
      return want >= 1 && want <= n ? &v[want - 1] : NULL;                                         \
    size_t lo = CPROF__PARTITION_POINT(n, mid, v[mid].id < want);                                 \
    return lo < n && v[lo].id == want ? &v[lo] : NULL;                                             \
  }
DEFINE_FIND(find_function, cprof__pf_function_t)
DEFINE_FIND(find_mapping, cprof__pf_mapping_t)
DEFINE_FIND(find_location, cprof__pf_location_t)

static int decode_line(decoder_t *d, reader_t r, cprof__pf_line_t *ln, const ids_t *ids,
                       uint64_t loc_id) {
  uint64_t v[LINE_COLUMN + 1] = {0};
  if (varint_fields(d, r, "Line", LINE_FUNCTION_ID, LINE_COLUMN, v) != 0)
    return -1;
  ln->line = (int64_t)v[LINE_LINE];
  ln->column = (int64_t)v[LINE_COLUMN];
  if (v[LINE_FUNCTION_ID] != 0) {
    cprof__pf_t *p = d->p;
    ln->function =
        find_function(p->functions, p->n_functions, v[LINE_FUNCTION_ID], ids->functions_dense);
    if (!ln->function)
      return cprof__decode_fail(
          d, "location %" PRIu64 ": function id %" PRIu64 " is not in the profile", loc_id,
          v[LINE_FUNCTION_ID]);
  }
  return 0;
}

int cprof__decode_location(decoder_t *d, reader_t r, cprof__pf_location_t *loc, const ids_t *ids) {
  field_t f;
  int rc;
  size_t n_lines = 0;
  uint64_t mapping_id = 0;
  reader_t start = r;
  while ((rc = cprof__decode_next_field(d, &r, &f, "Location")) > 0) {
    switch (f.number) {
    case LOCATION_ID:
    case LOCATION_MAPPING_ID:
    case LOCATION_ADDRESS:
    case LOCATION_IS_FOLDED:
      if (cprof__decode_want_varint(d, &f, "Location") != 0)
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
      if (cprof__decode_want_len(d, &f, "Location") != 0)
        return -1;
      n_lines++;
      break;
    }
  }
  if (rc < 0)
    return -1;
  if (loc->id == 0)
    return cprof__decode_fail(d, "a location has id 0");
  if (mapping_id != 0) {
    cprof__pf_t *p = d->p;
    loc->mapping = find_mapping(p->mappings, p->n_mappings, mapping_id, ids->mappings_dense);
    if (!loc->mapping)
      return cprof__decode_fail(
          d, "location %" PRIu64 ": mapping id %" PRIu64 " is not in the profile", loc->id,
          mapping_id);
  }
  if (n_lines == 0)
    return 0;
  cprof__pf_line_t *lines = cprof__arena_array(d->arena, n_lines, sizeof *lines);
  if (!lines)
    return cprof__decode_no_memory(d);
  r = start;
  size_t i = 0;
  while (cprof__decode_next_field(d, &r, &f, "Location") > 0)
    if (f.number == LOCATION_LINE && decode_line(d, f.body, &lines[i++], ids, loc->id) != 0)
      return -1;
  loc->lines = lines;
  loc->n_lines = n_lines;
  return 0;
}

/* 0 with *l, 1 for a label pprof drops (neither a string nor a number),
 * -1 on a fault. */
static int decode_label(decoder_t *d, reader_t r, cprof__label_t *l) {
  uint64_t v[LABEL_NUM_UNIT + 1] = {0};
  if (varint_fields(d, r, "Label", LABEL_KEY, LABEL_NUM_UNIT, v) != 0 ||
      cprof__decode_string_at(d, v[LABEL_KEY], &l->key, "Label.key") != 0)
    return -1;
  /* As pprof's postDecode: a string makes a string label, else a number
   * or a unit a numeric one, else there is no label. */
  if (v[LABEL_STR] != 0)
    return cprof__decode_string_at(d, v[LABEL_STR], &l->str, "Label.str");
  if (v[LABEL_NUM] == 0 && v[LABEL_NUM_UNIT] == 0)
    return 1;
  l->num = (int64_t)v[LABEL_NUM];
  return v[LABEL_NUM_UNIT] != 0
             ? cprof__decode_string_at(d, v[LABEL_NUM_UNIT], &l->num_unit, "Label.num_unit")
             : 0;
}

int cprof__decode_sample(decoder_t *d, reader_t r, cprof__pf_sample_t *s, size_t index,
                         const ids_t *ids) {
  field_t f;
  int rc;
  size_t n_locs = 0, n_values = 0, n_labels = 0, k;
  reader_t start = r;
  while ((rc = cprof__decode_next_field(d, &r, &f, "Sample")) > 0) {
    if (f.number == SAMPLE_LOCATION_ID || f.number == SAMPLE_VALUE) {
      if (cprof__decode_count_varints(d, &f, &k, "Sample") != 0)
        return -1;
      *(f.number == SAMPLE_LOCATION_ID ? &n_locs : &n_values) += k;
    } else if (f.number == SAMPLE_LABEL) {
      if (cprof__decode_want_len(d, &f, "Sample") != 0)
        return -1;
      n_labels++;
    }
  }
  if (rc < 0)
    return -1;
  cprof__pf_t *p = d->p;
  if (n_values != p->n_sample_types)
    return cprof__decode_fail(d, "sample %zu has %zu values for %zu sample types", index, n_values,
                              p->n_sample_types);
  const cprof__pf_location_t **locs = cprof__arena_array(d->arena, n_locs, sizeof *locs);
  int64_t *values = cprof__arena_array(d->arena, n_values, sizeof *values);
  cprof__label_t *labels = cprof__arena_array(d->arena, n_labels, sizeof *labels);
  if (!locs || !values || !labels)
    return cprof__decode_no_memory(d);
  size_t il = 0, iv = 0, ib = 0;
  r = start;
  while (cprof__decode_next_field(d, &r, &f, "Sample") > 0) {
    if (f.number == SAMPLE_LOCATION_ID) {
      EACH_VARINT(d, &f, "Sample.location_id", id, {
        const cprof__pf_location_t *loc =
            find_location(p->locations, p->n_locations, id, ids->locations_dense);
        if (!loc)
          return cprof__decode_fail(d, "sample %zu: location id %" PRIu64 " is not in the profile",
                                    index, id);
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
