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
 * are skipped, as protobuf requires.
 *
 * This file holds the passes and the entry point; the wire format is read
 * in decode_wire.c and each message in decode_message.c
 * (decode_internal.h is what they share). */
#include "model/model.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "model/decode_internal.h"
#include "profile/fields.h"

/* Bytes of model a byte of profile may cost, and a floor for small inputs. */
#define BUDGET_PER_BYTE 32
#define BUDGET_FLOOR ((size_t)1 << 20)

/* ---- pass 1: counts and the string table ------------------------------------ */

static int count_fields(decoder_t *d, const uint8_t *data, size_t n) {
  reader_t r = {data, data + n};
  field_t f;
  int rc;
  size_t n_strings = 0, string_bytes = 0;
  while ((rc = cprof__decode_next_field(d, &r, &f, "Profile")) > 0) {
    size_t k;
    switch (f.number) {
    case PROFILE_SAMPLE_TYPE:
    case PROFILE_SAMPLE:
    case PROFILE_MAPPING:
    case PROFILE_LOCATION:
    case PROFILE_FUNCTION:
    case PROFILE_PERIOD_TYPE:
      if (cprof__decode_want_len(d, &f, "Profile") != 0)
        return -1;
      d->n_sample_types += f.number == PROFILE_SAMPLE_TYPE;
      d->n_samples += f.number == PROFILE_SAMPLE;
      d->n_mappings += f.number == PROFILE_MAPPING;
      d->n_locations += f.number == PROFILE_LOCATION;
      d->n_functions += f.number == PROFILE_FUNCTION;
      break;
    case PROFILE_STRING_TABLE:
      if (cprof__decode_want_len(d, &f, "Profile") != 0)
        return -1;
      n_strings++;
      string_bytes += (size_t)(f.body.end - f.body.p) + 1;
      break;
    case PROFILE_COMMENT:
      if (cprof__decode_count_varints(d, &f, &k, "Profile.comment") != 0)
        return -1;
      d->n_comments += k;
      break;
    case PROFILE_DROP_FRAMES:
    case PROFILE_KEEP_FRAMES:
    case PROFILE_TIME_NANOS:
    case PROFILE_DURATION_NANOS:
    case PROFILE_PERIOD:
    case PROFILE_DEFAULT_SAMPLE_TYPE:
      if (cprof__decode_want_varint(d, &f, "Profile") != 0)
        return -1;
      break;
    }
  }
  if (rc < 0)
    return -1;
  if (n_strings == 0)
    return cprof__decode_fail(d,
                              "no string table: not a profile.proto (an empty or foreign file?)");

  /* All the strings' bytes in one allocation, each NUL-terminated. */
  d->strings = cprof__arena_array(d->arena, n_strings, sizeof *d->strings);
  char *bytes = d->strings ? cprof__arena_alloc(d->arena, string_bytes) : NULL;
  if (!bytes)
    return cprof__decode_no_memory(d);
  r = (reader_t){data, data + n};
  while (cprof__decode_next_field(d, &r, &f, "Profile") > 0) {
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
    return cprof__decode_fail(d, "string_table[0] must be \"\", is \"%s\"", shown);
  }
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
        return cprof__decode_fail(d, "a %s has id 0", what);                                       \
      if (i_ > 0 && (array)[i_].id == (array)[i_ - 1].id)                                          \
        return cprof__decode_fail(d, "two %ss have id %" PRIu64, what, (array)[i_].id);            \
      if ((array)[i_].id != i_ + 1)                                                                \
        *(dense) = 0;                                                                              \
    }                                                                                              \
    if (!sorted_ || !*(dense))                                                                     \
      d->p->ids_sequential = 0;                                                                    \
  } while (0)

/* The model's arrays, sized by the counts of pass 1, and the defaults of
 * the fields a profile may leave out. */
static int allocate_model(decoder_t *d) {
  cprof__pf_t *p = d->p;
  cprof__arena_t *a = d->arena;
  p->sample_types = cprof__arena_array(a, d->n_sample_types, sizeof *p->sample_types);
  p->samples = cprof__arena_array(a, d->n_samples, sizeof *p->samples);
  p->mappings = cprof__arena_array(a, d->n_mappings, sizeof *p->mappings);
  p->locations = cprof__arena_array(a, d->n_locations, sizeof *p->locations);
  p->functions = cprof__arena_array(a, d->n_functions, sizeof *p->functions);
  p->comments = cprof__arena_array(a, d->n_comments, sizeof *p->comments);
  if (!p->sample_types || !p->samples || !p->mappings || !p->locations || !p->functions ||
      !p->comments)
    return cprof__decode_no_memory(d);
  const char *empty = d->strings[0];
  p->drop_frames = p->keep_frames = p->default_sample_type = empty;
  p->ids_sequential = 1; /* until CHECK_IDS finds otherwise */
  p->period_type.type = p->period_type.unit = empty;
  return 0;
}

/* Pass 2: what names only strings, and the scalars. */
static int decode_strings_and_scalars(decoder_t *d, const uint8_t *data, size_t n) {
  cprof__pf_t *p = d->p;
  reader_t r = {data, data + n};
  field_t f;
  while (cprof__decode_next_field(d, &r, &f, "Profile") > 0) {
    switch (f.number) {
    case PROFILE_SAMPLE_TYPE:
      if (cprof__decode_value_type(d, f.body, &p->sample_types[p->n_sample_types++],
                                   "Profile.sample_type") != 0)
        return -1;
      break;
    case PROFILE_PERIOD_TYPE:
      if (cprof__decode_value_type(d, f.body, &p->period_type, "Profile.period_type") != 0)
        return -1;
      break;
    case PROFILE_FUNCTION:
      if (cprof__decode_function(d, f.body, &p->functions[p->n_functions++]) != 0)
        return -1;
      break;
    case PROFILE_MAPPING:
      if (cprof__decode_mapping(d, f.body, &p->mappings[p->n_mappings++]) != 0)
        return -1;
      break;
    case PROFILE_DROP_FRAMES:
      if (cprof__decode_string_at(d, f.value, &p->drop_frames, "Profile.drop_frames") != 0)
        return -1;
      break;
    case PROFILE_KEEP_FRAMES:
      if (cprof__decode_string_at(d, f.value, &p->keep_frames, "Profile.keep_frames") != 0)
        return -1;
      break;
    case PROFILE_DEFAULT_SAMPLE_TYPE:
      if (cprof__decode_string_at(d, f.value, &p->default_sample_type,
                                  "Profile.default_sample_type") != 0)
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
        if (cprof__decode_string_at(d, i, &p->comments[p->n_comments++], "Profile.comment") != 0)
          return -1;
      });
      break;
    }
  }
  return d->failed ? -1 : 0;
}

/* Pass 3: locations. */
static int decode_locations(decoder_t *d, const uint8_t *data, size_t n, const ids_t *ids) {
  cprof__pf_t *p = d->p;
  reader_t r = {data, data + n};
  field_t f;
  while (cprof__decode_next_field(d, &r, &f, "Profile") > 0)
    if (f.number == PROFILE_LOCATION &&
        cprof__decode_location(d, f.body, &p->locations[p->n_locations++], ids) != 0)
      return -1;
  return 0; /* a field that cannot be read fails the decoding after pass 4 */
}

/* Pass 4: samples. */
static int decode_samples(decoder_t *d, const uint8_t *data, size_t n, const ids_t *ids) {
  cprof__pf_t *p = d->p;
  reader_t r = {data, data + n};
  field_t f;
  while (cprof__decode_next_field(d, &r, &f, "Profile") > 0)
    if (f.number == PROFILE_SAMPLE &&
        cprof__decode_sample(d, f.body, &p->samples[p->n_samples], p->n_samples, ids) == 0)
      p->n_samples++;
    else if (d->failed)
      return -1;
  return d->failed ? -1 : 0;
}

static int decode_all(decoder_t *d, const uint8_t *data, size_t n) {
  cprof__pf_t *p = d->p;
  ids_t ids;
  if (count_fields(d, data, n) != 0 || allocate_model(d) != 0 ||
      decode_strings_and_scalars(d, data, n) != 0)
    return -1;
  CHECK_IDS(d, p->functions, p->n_functions, by_function_id, "function", &ids.functions_dense);
  CHECK_IDS(d, p->mappings, p->n_mappings, by_mapping_id, "mapping", &ids.mappings_dense);
  if (decode_locations(d, data, n, &ids) != 0)
    return -1;
  CHECK_IDS(d, p->locations, p->n_locations, by_location_id, "location", &ids.locations_dense);
  return decode_samples(d, data, n, &ids);
}

/* ---- gzip ------------------------------------------------------------------------ */

/* Inflates every gzip member of in[0..n) (Go's gzip.Reader reads them all,
 * as pprof does) into *out, at most CPROF_PF_MAX_INFLATED bytes. */
static int inflate_all(decoder_t *d, const uint8_t *in, size_t n, uint8_t **out, size_t *out_len) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
    return cprof__decode_no_memory(d);
  size_t cap = n < ((size_t)1 << 20) ? (size_t)4 << 20 : n * 4, len = 0;
  uint8_t *buf = NULL;
  int rc = -1;
  const uint8_t *p = in, *end = in + n;
  for (;;) {
    if (len == cap || !buf) {
      if (buf)
        cap = cap * 2 > CPROF_PF_MAX_INFLATED ? CPROF_PF_MAX_INFLATED : cap * 2;
      if (buf && len == cap) {
        cprof__decode_fail(d, "gzip: the profile inflates to more than %zu MiB",
                           CPROF_PF_MAX_INFLATED >> 20);
        break;
      }
      uint8_t *grown = realloc(buf, cap);
      if (!grown) {
        rc = cprof__decode_no_memory(d);
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
        cprof__decode_fail(d, "gzip: %zu bytes of garbage after the compressed data",
                           (size_t)(end - p));
        break;
      }
      inflateReset(&z);
      continue;
    }
    if (zr == Z_BUF_ERROR && p == end && z.avail_out > 0) {
      cprof__decode_fail(d, "gzip: truncated (the compressed data ends early)");
      break;
    }
    if (zr != Z_OK && zr != Z_BUF_ERROR) {
      if (zr == Z_MEM_ERROR)
        rc = cprof__decode_no_memory(d);
      else
        cprof__decode_fail(d, "gzip: %s", z.msg ? z.msg : "corrupt data");
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
