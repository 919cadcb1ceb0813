#include "core/buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cprof__buf_init(cprof__buf_t *b) { memset(b, 0, sizeof *b); }

void cprof__buf_free(cprof__buf_t *b) {
  free(b->data);
  cprof__buf_init(b);
}

int cprof__buf_reserve(cprof__buf_t *b, size_t n) {
  if (b->failed)
    return -ENOMEM;
  if (b->len + n + 1 <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + n + 1)
    cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) {
    b->failed = 1;
    return -ENOMEM;
  }
  b->data = p;
  b->cap = cap;
  return 0;
}

void cprof__buf_append(cprof__buf_t *b, const void *p, size_t n) {
  if (cprof__buf_reserve(b, n) != 0)
    return;
  if (n) /* p may be NULL for nothing: memcpy wants it valid */
    memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0'; /* always a valid C string for text users */
}

void cprof__buf_puts(cprof__buf_t *b, const char *s) { cprof__buf_append(b, s, strlen(s)); }

void cprof__buf_putc(cprof__buf_t *b, char c) { cprof__buf_append(b, &c, 1); }

void cprof__buf_vprintf(cprof__buf_t *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n < 0) {
    va_end(ap2);
    return;
  }
  if ((size_t)n < sizeof small) {
    cprof__buf_append(b, small, (size_t)n);
  } else if (cprof__buf_reserve(b, (size_t)n) == 0) {
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
    b->len += (size_t)n;
  }
  va_end(ap2);
}

void cprof__buf_printf(cprof__buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cprof__buf_vprintf(b, fmt, ap);
  va_end(ap);
}

char *cprof__buf_take(cprof__buf_t *b, size_t *len) {
  char *p = b->data;
  if (len)
    *len = b->len;
  cprof__buf_init(b);
  return p;
}
