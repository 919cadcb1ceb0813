/* What the files of the decoder share (decode.c, the passes over the
 * profile and the entry point; decode_wire.c, the protobuf wire format read
 * with every check; decode_message.c, each message of profile.proto made
 * into the model): the decoder's state, a field as read, and the readers of
 * each. Every function returns 0 (or, for the field reader, 1 with a
 * field), or -1 once cprof__decode_fail has said what is wrong. */
#ifndef CPROF_MODEL_DECODE_INTERNAL_H
#define CPROF_MODEL_DECODE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/* Wire types (https://protobuf.dev/programming-guides/encoding/). */
enum { VARINT = 0, I64 = 1, LEN = 2, SGROUP = 3, EGROUP = 4, I32 = 5 };

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
/* Says what is wrong in d->err (the first fault only) and returns -1. */
int cprof__decode_fail(decoder_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Out of memory, or past the arena's budget: says which, -1 or -2. */
int cprof__decode_no_memory(decoder_t *d);

/* ---- the wire format (decode_wire.c) ---- */

int cprof__decode_varint(decoder_t *d, reader_t *r, uint64_t *x, const char *what);

/* A field's key and, for LEN, its body; for the other wire types the value
 * (I64 and I32 as raw bits). */
typedef struct field {
  int number, type;
  uint64_t value;
  reader_t body;
  const uint8_t *at;
} field_t;

/* Reads the next field of r. 1 with *f, 0 at the end, -1 on a fault. */
int cprof__decode_next_field(decoder_t *d, reader_t *r, field_t *f, const char *msg);

/* A scalar field that profile.proto declares as a varint, and one that is
 * length-delimited. */
int cprof__decode_want_varint(decoder_t *d, const field_t *f, const char *msg);
int cprof__decode_want_len(decoder_t *d, const field_t *f, const char *msg);

/* A repeated varint field, packed (LEN) or not (VARINT): the count of
 * values f holds. */
int cprof__decode_count_varints(decoder_t *d, const field_t *f, size_t *n, const char *msg);

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
        if (cprof__decode_varint(d, &pr_, &x, msg) != 0)                                           \
          return -1;                                                                               \
        take;                                                                                      \
      }                                                                                            \
    }                                                                                              \
  } while (0)

/* String i of the string table, checked. */
int cprof__decode_string_at(decoder_t *d, uint64_t i, const char **s, const char *what);

/* ---- the messages (decode_message.c) ---- */

/* Whether the IDs of each table run 1..n (looked up by index) or not (by
 * binary search). */
typedef struct ids {
  int functions_dense, mappings_dense, locations_dense;
} ids_t;

int cprof__decode_value_type(decoder_t *d, reader_t r, cprof__value_type_t *vt, const char *msg);
int cprof__decode_function(decoder_t *d, reader_t r, cprof__pf_function_t *fn);
int cprof__decode_mapping(decoder_t *d, reader_t r, cprof__pf_mapping_t *m);
/* Needs the functions and mappings decoded, their IDs checked. */
int cprof__decode_location(decoder_t *d, reader_t r, cprof__pf_location_t *loc, const ids_t *ids);
/* Needs the locations decoded, their IDs checked. */
int cprof__decode_sample(decoder_t *d, reader_t r, cprof__pf_sample_t *s, size_t index,
                         const ids_t *ids);

#endif
