#include "profile/protobuf.h"

#include <string.h>

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

size_t cprof__pb_varint_len(uint64_t x) {
  size_t n = 1;
  while (x >= 0x80) {
    x >>= 7;
    n++;
  }
  return n;
}

/* Encodes x into p (at least CPROF_PB_MAX_VARINT bytes): seven bits per byte,
 * least significant group first, the high bit set on all but the last. */
static size_t varint_put(unsigned char *p, uint64_t x) {
  size_t n = 0;
  while (x >= 0x80) {
    p[n++] = (unsigned char)(x | 0x80);
    x >>= 7;
  }
  p[n++] = (unsigned char)x;
  return n;
}

void cprof__pb_varint(cprof__buf_t *out, uint64_t x) {
  unsigned char tmp[CPROF_PB_MAX_VARINT];
  cprof__buf_append(out, tmp, varint_put(tmp, x));
}

static uint64_t key(int field, int wire) { return (uint64_t)(unsigned)field << 3 | (unsigned)wire; }

void cprof__pb_uint64(cprof__buf_t *out, int field, uint64_t x) {
  unsigned char tmp[2 * CPROF_PB_MAX_VARINT];
  size_t n = varint_put(tmp, key(field, WIRE_VARINT));
  n += varint_put(tmp + n, x);
  cprof__buf_append(out, tmp, n);
}

void cprof__pb_uint64_opt(cprof__buf_t *out, int field, uint64_t x) {
  if (x != 0)
    cprof__pb_uint64(out, field, x);
}

void cprof__pb_int64(cprof__buf_t *out, int field, int64_t x) {
  cprof__pb_uint64(out, field, (uint64_t)x);
}

void cprof__pb_int64_opt(cprof__buf_t *out, int field, int64_t x) {
  if (x != 0)
    cprof__pb_int64(out, field, x);
}

void cprof__pb_bool(cprof__buf_t *out, int field, int x) { cprof__pb_uint64(out, field, x ? 1 : 0); }

void cprof__pb_bool_opt(cprof__buf_t *out, int field, int x) {
  if (x)
    cprof__pb_bool(out, field, x);
}

void cprof__pb_bytes(cprof__buf_t *out, int field, const void *p, size_t n) {
  unsigned char tmp[2 * CPROF_PB_MAX_VARINT];
  size_t h = varint_put(tmp, key(field, WIRE_LEN));
  h += varint_put(tmp + h, n);
  cprof__buf_append(out, tmp, h);
  cprof__buf_append(out, p, n);
}

void cprof__pb_string(cprof__buf_t *out, int field, const char *s) {
  cprof__pb_bytes(out, field, s, strlen(s));
}

void cprof__pb_uint64s(cprof__buf_t *out, int field, const uint64_t *x, size_t n) {
  if (n == 0)
    return;
  size_t start = cprof__pb_start(out);
  for (size_t i = 0; i < n; i++)
    cprof__pb_varint(out, x[i]);
  cprof__pb_end(out, field, start);
}

void cprof__pb_int64s(cprof__buf_t *out, int field, const int64_t *x, size_t n) {
  if (n == 0)
    return;
  size_t start = cprof__pb_start(out);
  for (size_t i = 0; i < n; i++)
    cprof__pb_varint(out, (uint64_t)x[i]);
  cprof__pb_end(out, field, start);
}

void cprof__pb_uint32s_plus(cprof__buf_t *out, int field, const uint32_t *x, size_t n,
                            uint32_t add) {
  if (n == 0)
    return;
  size_t body = 0;
  for (size_t i = 0; i < n; i++)
    body += cprof__pb_varint_len((uint64_t)x[i] + add);
  unsigned char hdr[2 * CPROF_PB_MAX_VARINT];
  size_t h = varint_put(hdr, key(field, WIRE_LEN));
  h += varint_put(hdr + h, body);
  if (cprof__buf_reserve(out, h + body) != 0)
    return;
  unsigned char *p = (unsigned char *)out->data + out->len;
  memcpy(p, hdr, h);
  p += h;
  for (size_t i = 0; i < n; i++)
    p += varint_put(p, (uint64_t)x[i] + add);
  out->len += h + body;
  out->data[out->len] = '\0'; /* the invariant cprof__buf_append keeps */
}

size_t cprof__pb_start(const cprof__buf_t *out) { return out->len; }

void cprof__pb_end(cprof__buf_t *out, int field, size_t start) {
  /* After a failed allocation the body is incomplete anyway, and `start` may
   * no longer lie inside the buffer. */
  if (out->failed || start > out->len)
    return;
  unsigned char hdr[2 * CPROF_PB_MAX_VARINT];
  size_t body = out->len - start;
  size_t h = varint_put(hdr, key(field, WIRE_LEN));
  h += varint_put(hdr + h, body);
  if (cprof__buf_reserve(out, h) != 0)
    return;
  memmove(out->data + start + h, out->data + start, body);
  memcpy(out->data + start, hdr, h);
  out->len += h;
  out->data[out->len] = '\0'; /* cprof__buf_append keeps this invariant; so do we */
}
