/* Protocol buffer wire primitives, and nothing else: no field here knows
 * what it means. This is the C counterpart of Go's runtime/pprof/protobuf.go,
 * writing straight into a cprof__buf_t.
 *
 * Encoding follows https://protobuf.dev/programming-guides/encoding/: a
 * field starts with the varint (field_number << 3 | wire_type); wire type 0
 * is a varint, wire type 2 a varint length followed by that many bytes
 * (strings, nested messages and packed repeated scalars).
 *
 * Like every cprof__buf_t writer, these never report errors themselves: a
 * failed allocation sets out->failed and the caller checks it once at the
 * end. */
#ifndef CPROF_PROFILE_PROTOBUF_H
#define CPROF_PROFILE_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* A varint never takes more than ten bytes (64 bits in 7-bit groups). */
#define CPROF_PB_MAX_VARINT 10

/* Bytes the varint encoding of x takes (1..10). */
size_t cprof__pb_varint_len(uint64_t x);
void cprof__pb_varint(cprof__buf_t *out, uint64_t x);

/* Wire type 0. An int64 is encoded as its two's-complement uint64 (ten
 * bytes when negative), which is what proto's int64 type means; the *_opt
 * forms omit the field when it is zero, proto3's default. */
void cprof__pb_uint64(cprof__buf_t *out, int field, uint64_t x);
void cprof__pb_uint64_opt(cprof__buf_t *out, int field, uint64_t x);
void cprof__pb_int64(cprof__buf_t *out, int field, int64_t x);
void cprof__pb_int64_opt(cprof__buf_t *out, int field, int64_t x);
void cprof__pb_bool(cprof__buf_t *out, int field, int x);
void cprof__pb_bool_opt(cprof__buf_t *out, int field, int x);

/* Wire type 2: n bytes, or a C string. */
void cprof__pb_bytes(cprof__buf_t *out, int field, const void *p, size_t n);
void cprof__pb_string(cprof__buf_t *out, int field, const char *s);

/* Packed repeated scalars: one length-delimited field holding the varints.
 * Nothing is written for n == 0 (an empty repeated field is absent). */
void cprof__pb_uint64s(cprof__buf_t *out, int field, const uint64_t *x, size_t n);
void cprof__pb_int64s(cprof__buf_t *out, int field, const int64_t *x, size_t n);
/* The same for x[i] + add, each a uint32: the values are encoded twice,
 * once to measure and once to write, so that the body is written in place
 * in one reservation instead of being moved up behind its length, which
 * for the many long fields of a large profile costs more than the encoding. */
void cprof__pb_uint32s_plus(cprof__buf_t *out, int field, const uint32_t *x, size_t n,
                            uint32_t add);

/* Nested messages. cprof__pb_start remembers where the body begins; the body
 * is then written with the functions above; cprof__pb_end inserts the field
 * header and the body's length in front of it, moving the body up by the
 * header's size. Go's encoder does the same (endMessage), which keeps the
 * lengths minimal without encoding the body twice. Pairs nest. */
size_t cprof__pb_start(const cprof__buf_t *out);
void cprof__pb_end(cprof__buf_t *out, int field, size_t start);

#endif
