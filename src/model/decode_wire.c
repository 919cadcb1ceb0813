/* The protobuf wire format (https://protobuf.dev/programming-guides/encoding/),
 * read for the decoder with every length checked against what is left and
 * every varint against its ten bytes; a fault says what and at which byte. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "model/decode_internal.h"

int cprof__decode_fail(decoder_t *d, const char *fmt, ...) {
  if (!d->failed) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, d->errlen, fmt, ap);
    va_end(ap);
    d->failed = 1;
  }
  return -1;
}

int cprof__decode_no_memory(decoder_t *d) {
  if (cprof__arena_over(d->arena))
    return cprof__decode_fail(d, "the profile takes more memory than a profile of its size may");
  cprof__decode_fail(d, "out of memory");
  return -2;
}

static size_t offset(const decoder_t *d, const uint8_t *at) { return (size_t)(at - d->base); }

/* ---- wire primitives ------------------------------------------------------- */

int cprof__decode_varint(decoder_t *d, reader_t *r, uint64_t *x, const char *what) {
  uint64_t v = 0;
  const uint8_t *start = r->p;
  for (int shift = 0; shift < 70; shift += 7) {
    if (r->p >= r->end)
      return cprof__decode_fail(d, "truncated: %s at byte %zu ends inside a varint", what,
                                offset(d, start));
    uint8_t b = *r->p++;
    if (shift == 63 && b > 1)
      return cprof__decode_fail(d, "bad varint: %s at byte %zu is longer than 64 bits", what,
                                offset(d, start));
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *x = v;
      return 0;
    }
  }
  return cprof__decode_fail(d, "bad varint: %s at byte %zu has more than ten bytes", what,
                            offset(d, start));
}

/* Reads the next field of r. 1 with *f, 0 at the end, -1 on a fault. */
int cprof__decode_next_field(decoder_t *d, reader_t *r, field_t *f, const char *msg) {
  if (r->p >= r->end)
    return 0;
  f->at = r->p;
  uint64_t key;
  if (cprof__decode_varint(d, r, &key, msg) != 0)
    return -1;
  f->type = (int)(key & 7);
  if (key >> 3 == 0 || key >> 3 > 536870911)
    return cprof__decode_fail(d, "bad field number %" PRIu64 " in %s at byte %zu", key >> 3, msg,
                              offset(d, f->at));
  f->number = (int)(key >> 3);
  switch (f->type) {
  case VARINT:
    return cprof__decode_varint(d, r, &f->value, msg) == 0 ? 1 : -1;
  case I64:
  case I32: {
    size_t k = f->type == I64 ? 8 : 4;
    if ((size_t)(r->end - r->p) < k)
      return cprof__decode_fail(
          d, "truncated: field %d of %s at byte %zu wants %zu bytes, %zu are left", f->number, msg,
          offset(d, f->at), k, (size_t)(r->end - r->p));
    f->value = 0;
    memcpy(&f->value, r->p, k); /* little-endian on the wire and here */
    r->p += k;
    return 1;
  }
  case LEN: {
    uint64_t n;
    if (cprof__decode_varint(d, r, &n, msg) != 0)
      return -1;
    if (n > (uint64_t)(r->end - r->p))
      return cprof__decode_fail(
          d, "truncated: field %d of %s at byte %zu wants %" PRIu64 " bytes, %zu are left",
          f->number, msg, offset(d, f->at), n, (size_t)(r->end - r->p));
    f->body.p = r->p;
    f->body.end = r->p + n;
    r->p += n;
    return 1;
  }
  default:
    return cprof__decode_fail(
        d, "field %d of %s at byte %zu has wire type %d, which profile.proto never uses", f->number,
        msg, offset(d, f->at), f->type);
  }
}

/* A scalar field that profile.proto declares as a varint. */
int cprof__decode_want_varint(decoder_t *d, const field_t *f, const char *msg) {
  if (f->type == VARINT)
    return 0;
  return cprof__decode_fail(d, "field %d of %s at byte %zu should be a varint, has wire type %d",
                            f->number, msg, offset(d, f->at), f->type);
}

int cprof__decode_want_len(decoder_t *d, const field_t *f, const char *msg) {
  if (f->type == LEN)
    return 0;
  return cprof__decode_fail(
      d, "field %d of %s at byte %zu should be length-delimited, has wire type %d", f->number, msg,
      offset(d, f->at), f->type);
}

/* A repeated varint field, packed (LEN) or not (VARINT): the count of
 * values f holds. */
int cprof__decode_count_varints(decoder_t *d, const field_t *f, size_t *n, const char *msg) {
  if (f->type == VARINT) {
    *n = 1;
    return 0;
  }
  if (cprof__decode_want_len(d, f, msg) != 0)
    return -1;
  size_t k = 0;
  for (const uint8_t *q = f->body.p; q < f->body.end; q++)
    k += !(*q & 0x80);
  if (f->body.end > f->body.p && (f->body.end[-1] & 0x80))
    return cprof__decode_fail(d,
                              "truncated: packed field %d of %s at byte %zu ends inside a varint",
                              f->number, msg, offset(d, f->at));
  *n = k;
  return 0;
}

int cprof__decode_string_at(decoder_t *d, uint64_t i, const char **s, const char *what) {
  if (i >= d->n_strings)
    return cprof__decode_fail(d,
                              "%s: string index %" PRIu64 " is past the string table (%zu strings)",
                              what, i, d->n_strings);
  *s = d->strings[i];
  return 0;
}
