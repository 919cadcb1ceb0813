/* One hex digit's value, for the parsers of /proc files and URLs. */
#ifndef CPROF_CORE_HEX_H
#define CPROF_CORE_HEX_H

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

#endif
