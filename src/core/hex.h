/* Hex digits: one digit's value, for the parsers of /proc files and URLs,
 * and bytes as lower-case hex, for build IDs. */
#ifndef CPROF_CORE_HEX_H
#define CPROF_CORE_HEX_H

#include <stddef.h>

/* 0..15, or -1 when c is not a hex digit. Async-signal-safe. */
static inline int cprof__hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Writes n bytes as 2n lower-case hex digits and a NUL into out, which
 * holds 2n + 1. Async-signal-safe. */
static inline void cprof__hex_encode(const unsigned char *bytes, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  out[2 * n] = '\0';
}

#endif
