/* The profile decoder (src/model/decode.c): a profile written field by
 * field with the wire primitives reads back whole, packed or not, gzip or
 * not; and each way a profile can be malformed gives its one-line error,
 * never a crash. Every prefix of a valid profile and a few thousand random
 * mutations of it are decoded too, under ASan in make test. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "profile/gzip.h"
#include "model/model.h"
#include "profile/protobuf.h"

/* The strings of the profiles below, by index. */
static const char *strings[] = {"",       "samples",  "count", "cpu",       "nanoseconds",
                                "main",   "main.c",   "work",  "/bin/prog", "abc123",
                                "thread", "worker-1", "bytes", "a comment", "inlined_fn"};
enum {
  S_SAMPLES = 1,
  S_COUNT,
  S_CPU,
  S_NS,
  S_MAIN,
  S_MAIN_C,
  S_WORK,
  S_PROG,
  S_BUILD,
  S_THREAD,
  S_WORKER,
  S_BYTES,
  S_COMMENT,
  S_INLINED
};

static void value_type(cprof__buf_t *b, int field, int type, int unit) {
  size_t s = cprof__pb_start(b);
  cprof__pb_int64(b, 1, type);
  cprof__pb_int64(b, 2, unit);
  cprof__pb_end(b, field, s);
}

/* A profile of two sample types, one mapping, two functions, two
 * locations (the second with an inlined frame) and two samples; `packed`
 * chooses how repeated scalars are written. */
static void write_profile(cprof__buf_t *b, int packed) {
  value_type(b, 1, S_SAMPLES, S_COUNT);
  value_type(b, 1, S_CPU, S_NS);
  for (int i = 0; i < 2; i++) {
    size_t s = cprof__pb_start(b);
    uint64_t locs[2] = {2, 1};
    int64_t vals[2] = {i + 1, (i + 1) * 10000000};
    if (packed) {
      cprof__pb_uint64s(b, 1, i ? locs + 1 : locs, i ? 1 : 2);
      cprof__pb_int64s(b, 2, vals, 2);
    } else {
      for (int k = i; k < 2; k++)
        cprof__pb_uint64(b, 1, locs[k]);
      cprof__pb_int64(b, 2, vals[0]);
      cprof__pb_int64(b, 2, vals[1]);
    }
    size_t l = cprof__pb_start(b); /* a string label */
    cprof__pb_int64(b, 1, S_THREAD);
    cprof__pb_int64(b, 2, S_WORKER);
    cprof__pb_end(b, 3, l);
    l = cprof__pb_start(b); /* a numeric label with a unit */
    cprof__pb_int64(b, 1, S_BYTES);
    cprof__pb_int64(b, 3, 4096);
    cprof__pb_int64(b, 4, S_BYTES);
    cprof__pb_end(b, 3, l);
    l = cprof__pb_start(b); /* neither: pprof drops it */
    cprof__pb_int64(b, 1, S_THREAD);
    cprof__pb_end(b, 3, l);
    cprof__pb_end(b, 2, s);
  }
  size_t s = cprof__pb_start(b); /* the mapping */
  cprof__pb_uint64(b, 1, 1);
  cprof__pb_uint64(b, 2, 0x400000);
  cprof__pb_uint64(b, 3, 0x500000);
  cprof__pb_int64(b, 5, S_PROG);
  cprof__pb_int64(b, 6, S_BUILD);
  cprof__pb_bool(b, 7, 1);
  cprof__pb_end(b, 3, s);
  for (int id = 1; id <= 2; id++) { /* locations */
    s = cprof__pb_start(b);
    cprof__pb_uint64(b, 1, (uint64_t)id);
    cprof__pb_uint64(b, 2, 1);
    cprof__pb_uint64(b, 3, 0x401000 + (uint64_t)id * 16);
    if (id == 2) { /* the inlined frame first, as profile.proto orders them */
      size_t l = cprof__pb_start(b);
      cprof__pb_uint64(b, 1, 3);
      cprof__pb_int64(b, 2, 7);
      cprof__pb_end(b, 4, l);
    }
    size_t l = cprof__pb_start(b);
    cprof__pb_uint64(b, 1, (uint64_t)id);
    cprof__pb_int64(b, 2, 10 * id);
    cprof__pb_end(b, 4, l);
    cprof__pb_end(b, 4, s);
  }
  int names[] = {S_MAIN, S_WORK, S_INLINED};
  for (int id = 1; id <= 3; id++) { /* functions */
    s = cprof__pb_start(b);
    cprof__pb_uint64(b, 1, (uint64_t)id);
    cprof__pb_int64(b, 2, names[id - 1]);
    cprof__pb_int64(b, 4, S_MAIN_C);
    cprof__pb_end(b, 5, s);
  }
  for (size_t i = 0; i < sizeof strings / sizeof *strings; i++)
    cprof__pb_string(b, 6, strings[i]);
  cprof__pb_int64(b, 9, 1700000000000000000);
  cprof__pb_int64(b, 10, 2000000000);
  value_type(b, 11, S_CPU, S_NS);
  cprof__pb_int64(b, 12, 10000000);
  if (packed) {
    int64_t comments[] = {S_COMMENT};
    cprof__pb_int64s(b, 13, comments, 1);
  } else {
    cprof__pb_int64(b, 13, S_COMMENT);
  }
  cprof__pb_int64(b, 14, S_CPU);
}

static void check_profile(const cprof__pf_t *p) {
  CHECK_EQ_INT(p->n_sample_types, 2);
  CHECK_EQ_STR(p->sample_types[1].type, "cpu");
  CHECK_EQ_STR(p->sample_types[1].unit, "nanoseconds");
  CHECK_EQ_INT(p->n_samples, 2);
  CHECK_EQ_INT(p->samples[0].n_locations, 2);
  CHECK_EQ_INT(p->samples[0].locations[0]->id, 2);
  CHECK_EQ_INT(p->samples[0].values[1], 10000000);
  CHECK_EQ_INT(p->samples[1].values[0], 2);
  CHECK_EQ_INT(p->samples[1].n_locations, 1);
  CHECK_EQ_INT(p->samples[0].n_labels, 2);
  CHECK_EQ_STR(p->samples[0].labels[0].key, "thread");
  CHECK_EQ_STR(p->samples[0].labels[0].str, "worker-1");
  CHECK(p->samples[0].labels[1].str == NULL);
  CHECK_EQ_INT(p->samples[0].labels[1].num, 4096);
  CHECK_EQ_STR(p->samples[0].labels[1].num_unit, "bytes");
  CHECK_EQ_INT(p->n_locations, 2);
  const cprof__pf_location_t *loc = p->samples[0].locations[0];
  CHECK_EQ_INT(loc->n_lines, 2);
  CHECK_EQ_STR(loc->lines[0].function->name, "inlined_fn");
  CHECK_EQ_INT(loc->lines[0].line, 7);
  CHECK_EQ_STR(loc->lines[1].function->name, "work");
  CHECK_EQ_STR(loc->lines[1].function->filename, "main.c");
  CHECK_EQ_INT(loc->address, 0x401020);
  CHECK(loc->mapping == &p->mappings[0]);
  CHECK_EQ_STR(p->mappings[0].file, "/bin/prog");
  CHECK_EQ_STR(p->mappings[0].build_id, "abc123");
  CHECK_EQ_INT(p->mappings[0].has_functions, 1);
  CHECK_EQ_INT(p->mappings[0].limit, 0x500000);
  CHECK_EQ_INT(p->n_functions, 3);
  CHECK_EQ_INT(p->time_nanos, 1700000000000000000);
  CHECK_EQ_INT(p->duration_nanos, 2000000000);
  CHECK_EQ_STR(p->period_type.type, "cpu");
  CHECK_EQ_INT(p->period, 10000000);
  CHECK_EQ_INT(p->n_comments, 1);
  CHECK_EQ_STR(p->comments[0], "a comment");
  CHECK_EQ_STR(p->default_sample_type, "cpu");
  CHECK_EQ_STR(p->drop_frames, "");
}

/* Decodes, expecting failure with a one-line error containing `want`. */
static void check_error(const void *data, size_t n, const char *want) {
  cprof__pf_t *p = (void *)1;
  char err[256];
  int rc = cprof__pf_decode(data, n, &p, err, sizeof err);
  CHECK_EQ_INT(rc, -EINVAL);
  CHECK(p == NULL);
  CHECK(strchr(err, '\n') == NULL);
  if (!strstr(err, want)) {
    fprintf(stderr, "error \"%s\" does not say \"%s\"\n", err, want);
    CHECK(!"the error names the fault");
  }
}

/* Decodes anything: a failure must say something on one line, a success
 * must hold what it claims (ASan checks the pointers). */
static int decode_anything(const void *data, size_t n) {
  cprof__pf_t *p;
  char err[256];
  int rc = cprof__pf_decode(data, n, &p, err, sizeof err);
  if (rc != 0)
    return err[0] != '\0' && !strchr(err, '\n') ? 0 : -1;
  int64_t sum = 0;
  for (size_t i = 0; i < p->n_samples; i++)
    for (size_t k = 0; k < p->samples[i].n_locations; k++)
      sum += (int64_t)p->samples[i].locations[k]->id;
  cprof__pf_free(p);
  return sum >= 0 ? 0 : -1;
}

/* A buffer holding one top-level field, for the malformed cases. */
static size_t one_field(uint8_t *out, const char *bytes, size_t n) {
  memcpy(out, bytes, n);
  return n;
}

int main(void) {
  for (int packed = 0; packed <= 1; packed++) {
    cprof__buf_t b;
    cprof__buf_init(&b);
    write_profile(&b, packed);
    CHECK(!b.failed);
    cprof__pf_t *p;
    char err[256];
    CHECK_EQ_INT(cprof__pf_decode(b.data, b.len, &p, err, sizeof err), 0);
    if (p)
      check_profile(p), cprof__pf_free(p);

    /* gzip, as pprof writes it; and two gzip members, as Go reads them. */
    cprof__buf_t z;
    cprof__buf_init(&z);
    CHECK_EQ_INT(cprof__gzip(b.data, b.len, &z), 0);
    CHECK_EQ_INT(cprof__pf_decode(z.data, z.len, &p, err, sizeof err), 0);
    if (p)
      check_profile(p), cprof__pf_free(p);
    check_error(z.data, z.len - 5, "gzip: truncated");
    cprof__buf_t two;
    cprof__buf_init(&two);
    CHECK_EQ_INT(cprof__gzip(b.data, b.len / 2, &two), 0);
    CHECK_EQ_INT(cprof__gzip(b.data + b.len / 2, b.len - b.len / 2, &two), 0);
    CHECK_EQ_INT(cprof__pf_decode(two.data, two.len, &p, err, sizeof err), 0);
    if (p)
      check_profile(p), cprof__pf_free(p);
    cprof__buf_putc(&two, 'x');
    check_error(two.data, two.len, "garbage after the compressed data");
    cprof__buf_free(&two);
    memset(z.data + 20, 0x55, 8);
    check_error(z.data, z.len, "gzip: ");
    cprof__buf_free(&z);

    /* Every prefix, and random single-byte changes: never a crash. */
    int bad = 0;
    for (size_t n = 0; n < b.len; n++)
      bad += decode_anything(b.data, n) != 0;
    srand(1);
    for (int i = 0; i < 3000; i++) {
      uint8_t *m = malloc(b.len);
      memcpy(m, b.data, b.len);
      for (int k = 0; k < 1 + i % 3; k++)
        m[(size_t)rand() % b.len] = (uint8_t)rand();
      bad += decode_anything(m, b.len) != 0;
      free(m);
    }
    CHECK_EQ_INT(bad, 0);
    cprof__buf_free(&b);
  }

  /* The malformed, one fault each. */
  uint8_t m[64];
  check_error("", 0, "empty input");
  check_error("heap profile: 1: 2 [3: 4] @ heap/1048576\n", 41, "not profile.proto but text");
  /* A varint of eleven bytes; one whose tenth byte overflows. */
  check_error(m, one_field(m, "\x48\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12),
              "bad varint");
  check_error(m, one_field(m, "\x48\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11), "bad varint");
  check_error(m, one_field(m, "\x48\xff", 2), "truncated");
  /* A length past the end, and a huge one. */
  check_error(m,
              one_field(m,
                        "\x32\x05"
                        "ab",
                        4),
              "truncated: field 6 of Profile");
  check_error(m, one_field(m, "\x32\xff\xff\xff\xff\x0f", 6), "truncated");
  /* A group, which profile.proto never uses; field number 0. */
  check_error(m, one_field(m, "\x33", 1), "wire type 3");
  check_error(m, one_field(m, "\x00\x00", 2), "bad field number 0");
  /* No string table; string 0 not empty. */
  check_error(m, one_field(m, "\x48\x01", 2), "no string table");
  check_error(m, one_field(m, "\x32\x01x", 3), "string_table[0] must be \"\"");
  /* A string index past the table: drop_frames = 5 with one string. */
  check_error(m, one_field(m, "\x32\x00\x38\x05", 4), "string index 5 is past the string table");
  /* A sample naming location 9, which is not there (one sample type). */
  check_error(m, one_field(m, "\x32\x00\x0a\x00\x12\x04\x08\x09\x10\x01", 10),
              "sample 0: location id 9 is not in the profile");
  /* Two values for one sample type. */
  check_error(m, one_field(m, "\x32\x00\x0a\x00\x12\x04\x10\x01\x10\x02", 10),
              "sample 0 has 2 values for 1 sample types");
  /* A location with id 0; two with id 1; one naming mapping 3. */
  check_error(m, one_field(m, "\x32\x00\x22\x02\x18\x01", 6), "a location has id 0");
  check_error(m, one_field(m, "\x32\x00\x22\x02\x08\x01\x22\x02\x08\x01", 10),
              "two locations have id 1");
  check_error(m, one_field(m, "\x32\x00\x22\x04\x08\x01\x10\x03", 8),
              "location 1: mapping id 3 is not in the profile");
  /* A line naming function 4. */
  check_error(m, one_field(m, "\x32\x00\x22\x06\x08\x01\x22\x02\x08\x04", 10),
              "location 1: function id 4 is not in the profile");
  /* A varint field sent length-delimited. */
  check_error(m, one_field(m, "\x32\x00\x4a\x00", 4), "should be a varint");

  /* Out-of-order IDs are found by search, not by index. */
  cprof__pf_t *p;
  char err[256];
  const char sparse[] = "\x32\x00\x0a\x00"
                        "\x22\x02\x08\x07\x22\x02\x08\x03"  /* locations 7 and 3 */
                        "\x12\x06\x0a\x02\x03\x07\x10\x01"; /* a sample: 3, 7; value 1 */
  CHECK_EQ_INT(cprof__pf_decode(sparse, sizeof sparse - 1, &p, err, sizeof err), 0);
  if (p) {
    CHECK_EQ_INT(p->samples[0].locations[0]->id, 3);
    CHECK_EQ_INT(p->samples[0].locations[1]->id, 7);
    CHECK_EQ_INT(p->locations[0].id, 3);
    cprof__pf_free(p);
  }
  return check_result("test_decode");
}
