/* A growable byte buffer: the one way cprof builds bodies and encodings.
 * Not for signal context (it allocates). A failed allocation sets `failed`
 * and makes every later append a no-op, so a caller checks once at the end. */
#ifndef CPROF_CORE_BUF_H
#define CPROF_CORE_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct cprof__buf {
  char *data;
  size_t len;
  size_t cap;
  int failed; /* an allocation failed; contents are incomplete */
} cprof__buf_t;

void cprof__buf_init(cprof__buf_t *b);
void cprof__buf_free(cprof__buf_t *b);
/* Ensures room for n more bytes; returns 0 or -ENOMEM. */
int cprof__buf_reserve(cprof__buf_t *b, size_t n);
void cprof__buf_append(cprof__buf_t *b, const void *p, size_t n);
void cprof__buf_puts(cprof__buf_t *b, const char *s);
void cprof__buf_putc(cprof__buf_t *b, char c);
void cprof__buf_printf(cprof__buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cprof__buf_vprintf(cprof__buf_t *b, const char *fmt, va_list ap);
/* Hands the bytes to the caller (who frees them) and empties the buffer. */
char *cprof__buf_take(cprof__buf_t *b, size_t *len);

#endif
