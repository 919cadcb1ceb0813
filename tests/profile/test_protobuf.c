/* Table tests of the protobuf wire primitives against encodings worked out
 * by hand from the protobuf encoding spec
 * (https://protobuf.dev/programming-guides/encoding/), several of them the
 * spec's own examples. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "profile/protobuf.h"

/* Compares the buffer with the expected bytes; on a mismatch prints both. */
#define CHECK_BYTES(buf, ...)                                                     \
  do {                                                                            \
    static const unsigned char want_[] = {__VA_ARGS__};                           \
    check_bytes(__FILE__, __LINE__, (buf), want_, sizeof want_);                  \
  } while (0)

static void hex(const char *label, const void *p, size_t n) {
  fprintf(stderr, "  %s (%zu):", label, n);
  for (size_t i = 0; i < n && i < 48; i++)
    fprintf(stderr, " %02x", ((const unsigned char *)p)[i]);
  fprintf(stderr, n > 48 ? " ...\n" : "\n");
}

static void check_bytes(const char *file, int line, const cprof__buf_t *b, const unsigned char *want,
                        size_t n) {
  check_count++;
  if (b->failed || b->len != n || memcmp(b->data, want, n) != 0) {
    check_failures++;
    fprintf(stderr, "%s:%d: bytes differ\n", file, line);
    hex("got ", b->data, b->len);
    hex("want", want, n);
  }
}

static void reset(cprof__buf_t *b) {
  cprof__buf_free(b);
  cprof__buf_init(b);
}

static void test_varints(void) {
  static const struct {
    uint64_t x;
    unsigned char enc[10];
    size_t n;
  } cases[] = {
      {0, {0x00}, 1},
      {1, {0x01}, 1},
      {127, {0x7f}, 1},
      {128, {0x80, 0x01}, 2},
      {150, {0x96, 0x01}, 2},
      {300, {0xac, 0x02}, 2},
      {16383, {0xff, 0x7f}, 2},
      {16384, {0x80, 0x80, 0x01}, 3},
      {UINT32_MAX, {0xff, 0xff, 0xff, 0xff, 0x0f}, 5},
      {UINT64_C(1) << 63, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 10},
      {UINT64_MAX, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
  };
  cprof__buf_t b;
  cprof__buf_init(&b);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    reset(&b);
    cprof__pb_varint(&b, cases[i].x);
    check_bytes(__FILE__, __LINE__, &b, cases[i].enc, cases[i].n);
    CHECK_EQ_INT(cprof__pb_varint_len(cases[i].x), cases[i].n);
  }
  cprof__buf_free(&b);
}

static void test_fields(void) {
  cprof__buf_t b;
  cprof__buf_init(&b);

  /* The spec's first example: field 1 = 150 is 08 96 01. */
  cprof__pb_uint64(&b, 1, 150);
  CHECK_BYTES(&b, 0x08, 0x96, 0x01);

  /* Field numbers from 16 on need a two-byte key: (16 << 3 | 0) = 128. */
  reset(&b);
  cprof__pb_uint64(&b, 16, 1);
  CHECK_BYTES(&b, 0x80, 0x01, 0x01);

  /* int64 -2 is its two's complement as a uint64: ten bytes. */
  reset(&b);
  cprof__pb_int64(&b, 1, -2);
  CHECK_BYTES(&b, 0x08, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);

  /* Zero is proto3's default: the _opt forms write nothing for it. */
  reset(&b);
  cprof__pb_uint64_opt(&b, 3, 0);
  cprof__pb_int64_opt(&b, 3, 0);
  cprof__pb_bool_opt(&b, 7, 0);
  CHECK_EQ_INT(b.len, 0);
  cprof__pb_int64_opt(&b, 3, 5);
  CHECK_BYTES(&b, 0x18, 0x05);

  /* bool field 7 (Mapping.has_functions): key 7 << 3 = 0x38. */
  reset(&b);
  cprof__pb_bool(&b, 7, 1);
  cprof__pb_bool(&b, 8, 0);
  cprof__pb_bool(&b, 9, 42); /* any non-zero is true, encoded as 1 */
  CHECK_BYTES(&b, 0x38, 0x01, 0x40, 0x00, 0x48, 0x01);

  /* The spec's string example: field 2 = "testing". */
  reset(&b);
  cprof__pb_string(&b, 2, "testing");
  CHECK_BYTES(&b, 0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g');

  /* string_table[0] is the empty string, which still takes a field. */
  reset(&b);
  cprof__pb_string(&b, 6, "");
  CHECK_BYTES(&b, 0x32, 0x00);

  cprof__buf_free(&b);
}

static void test_packed(void) {
  cprof__buf_t b;
  cprof__buf_init(&b);

  /* The spec's packed example: field 4 = [3, 270, 86942]. */
  static const uint64_t u[] = {3, 270, 86942};
  cprof__pb_uint64s(&b, 4, u, 3);
  CHECK_BYTES(&b, 0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05);

  /* A single value is packed too (Sample.value of a one-type profile). */
  reset(&b);
  static const int64_t one[] = {1};
  cprof__pb_int64s(&b, 2, one, 1);
  CHECK_BYTES(&b, 0x12, 0x01, 0x01);

  reset(&b);
  static const int64_t neg[] = {-1, 0};
  cprof__pb_int64s(&b, 2, neg, 2);
  CHECK_BYTES(&b, 0x12, 0x0b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00);

  /* An empty repeated field is absent. */
  reset(&b);
  cprof__pb_uint64s(&b, 1, u, 0);
  cprof__pb_int64s(&b, 2, one, 0);
  CHECK_EQ_INT(b.len, 0);

  cprof__buf_free(&b);
}

static void test_nested(void) {
  cprof__buf_t b;
  cprof__buf_init(&b);

  /* The spec's embedded-message example: field 3 holding {1: 150}. */
  size_t s = cprof__pb_start(&b);
  cprof__pb_uint64(&b, 1, 150);
  cprof__pb_end(&b, 3, s);
  CHECK_BYTES(&b, 0x1a, 0x03, 0x08, 0x96, 0x01);

  /* Something before the message stays in place. */
  reset(&b);
  cprof__pb_uint64(&b, 1, 1);
  s = cprof__pb_start(&b);
  cprof__pb_uint64(&b, 2, 2);
  cprof__pb_end(&b, 4, s);
  cprof__pb_uint64(&b, 3, 3);
  CHECK_BYTES(&b, 0x08, 0x01, 0x22, 0x02, 0x10, 0x02, 0x18, 0x03);

  /* An empty message is a zero length. */
  reset(&b);
  s = cprof__pb_start(&b);
  cprof__pb_end(&b, 2, s);
  CHECK_BYTES(&b, 0x12, 0x00);

  /* Nesting: field 2 { field 4 { field 1 = 1 } field 1 = 7 }. */
  reset(&b);
  size_t outer = cprof__pb_start(&b);
  size_t inner = cprof__pb_start(&b);
  cprof__pb_uint64(&b, 1, 1);
  cprof__pb_end(&b, 4, inner);
  cprof__pb_uint64(&b, 1, 7);
  cprof__pb_end(&b, 2, outer);
  CHECK_BYTES(&b, 0x12, 0x06, 0x22, 0x02, 0x08, 0x01, 0x08, 0x07);

  cprof__buf_free(&b);
}

/* Writes a message of field 5 whose body is `body` bytes: a string field
 * (key 0x0a, length, filler) sized to make the body exactly that long. */
static void message_of(cprof__buf_t *b, size_t body) {
  char filler[400];
  memset(filler, 'x', sizeof filler);
  size_t s = cprof__pb_start(b);
  /* The string's own header is 2 bytes while its length is below 128. */
  size_t n = body - 2;
  if (n >= 128)
    n = body - 3;
  cprof__pb_bytes(b, 1, filler, n);
  cprof__pb_end(b, 5, s);
}

static void test_backpatch_boundary(void) {
  cprof__buf_t b;
  cprof__buf_init(&b);

  /* A body of 127 bytes takes a one-byte length, 128 a two-byte one: the
   * back-patch must move the body by the header's real size. */
  static const struct {
    size_t body;
    unsigned char hdr[3];
    size_t nhdr;
  } cases[] = {
      {127, {0x2a, 0x7f}, 2},
      {128, {0x2a, 0x80, 0x01}, 3},
      {129, {0x2a, 0x81, 0x01}, 3},
      {300, {0x2a, 0xac, 0x02}, 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    reset(&b);
    cprof__pb_uint64(&b, 15, 9); /* a field in front: 0x78 0x09 */
    message_of(&b, cases[i].body);
    cprof__pb_uint64(&b, 15, 8); /* and one behind */
    size_t want = 2 + cases[i].nhdr + cases[i].body + 2;
    CHECK_EQ_INT(b.len, want);
    if (b.len != want)
      continue;
    const unsigned char *p = (const unsigned char *)b.data;
    CHECK(p[0] == 0x78 && p[1] == 0x09);
    CHECK(memcmp(p + 2, cases[i].hdr, cases[i].nhdr) == 0);
    /* The body starts with the inner string's header, then the filler. */
    const unsigned char *body = p + 2 + cases[i].nhdr;
    size_t n = cases[i].body < 130 ? cases[i].body - 2 : cases[i].body - 3;
    CHECK(body[0] == 0x0a);
    if (n < 128)
      CHECK(body[1] == n);
    else
      CHECK(body[1] == (0x80 | (n & 0x7f)) && body[2] == n >> 7);
    CHECK(body[cases[i].body - 1] == 'x');
    CHECK(p[b.len - 2] == 0x78 && p[b.len - 1] == 0x08);
    CHECK(b.data[b.len] == '\0');
  }

  /* Nested across the boundary: an inner body of 126 bytes makes the inner
   * field 128 bytes, so the outer length needs two bytes while the inner
   * one needs one. */
  reset(&b);
  size_t outer = cprof__pb_start(&b);
  message_of(&b, 126);
  cprof__pb_end(&b, 2, outer);
  CHECK_EQ_INT(b.len, 3 + 2 + 126);
  if (b.len == 3 + 2 + 126) {
    const unsigned char *p = (const unsigned char *)b.data;
    CHECK(p[0] == 0x12 && p[1] == 0x80 && p[2] == 0x01);
    CHECK(p[3] == 0x2a && p[4] == 126);
    CHECK(p[5] == 0x0a && p[6] == 124 && p[7] == 'x');
  }
  cprof__buf_free(&b);
}

/* After a failed allocation every primitive is a no-op, including the
 * back-patch, whose start may then lie outside the buffer. */
static void test_failed_buffer(void) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__pb_uint64(&b, 1, 1);
  size_t s = cprof__pb_start(&b);
  b.failed = 1;
  cprof__pb_uint64(&b, 1, 2);
  cprof__pb_string(&b, 2, "lost");
  cprof__pb_end(&b, 3, s);
  cprof__pb_end(&b, 3, 1000);
  CHECK_EQ_INT(b.len, 2);
  cprof__buf_free(&b);
}

int main(void) {
  test_varints();
  test_fields();
  test_packed();
  test_nested();
  test_backpatch_boundary();
  test_failed_buffer();
  return check_result("profile/test_protobuf");
}
