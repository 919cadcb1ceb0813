#include "http/response.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The public structs keep their sizes from version to version (cprof.h,
 * "Versions"): a field added to one takes a reserved_ word's place. */
_Static_assert(sizeof(cprof_request_t) == 16 * sizeof(void *),
               "cprof_request_t changed size: take new fields from reserved_");
_Static_assert(sizeof(cprof_response_t) == 14 * sizeof(void *),
               "cprof_response_t changed size: take new fields from reserved_");
_Static_assert(sizeof(cprof_header_t) == 2 * sizeof(void *), "cprof_header_t never changes");

/* A response's headers and their values live in one block it owns, which
 * storage_ points to: outside the struct, so that a later version may carry
 * more headers without the struct, whose size programs compile in,
 * changing. */
#define STORAGE 2048

typedef struct storage {
  cprof_header_t headers[CPROF_MAX_HEADERS];
  char values[STORAGE];
} storage_t;

static size_t storage_used(const cprof_response_t *r) {
  const char *values = ((const storage_t *)(void *)r->storage_)->values;
  size_t used = 0;
  for (int i = 0; i < r->nheaders; i++) {
    const char *v = r->headers[i].value;
    if (v >= values && v < values + STORAGE)
      used = (size_t)(v - values) + strlen(v) + 1;
  }
  return used;
}

int cprof__resp_init(cprof_response_t *r) {
  memset(r, 0, sizeof *r);
  storage_t *s = malloc(sizeof *s);
  if (!s)
    return -ENOMEM;
  r->storage_ = (char *)s;
  r->headers = s->headers;
  r->status = 200;
  return cprof__resp_header(r, "X-Content-Type-Options", "nosniff");
}

int cprof__resp_header(cprof_response_t *r, const char *name, const char *value) {
  for (int i = 0; i < r->nheaders; i++) { /* a later value replaces an earlier one */
    if (strcasecmp(r->headers[i].name, name) == 0) {
      memmove(&r->headers[i], &r->headers[i + 1], (size_t)(r->nheaders - i - 1) * sizeof r->headers[0]);
      r->nheaders--;
      break;
    }
  }
  return cprof__resp_header_add(r, name, value);
}

int cprof__resp_header_add(cprof_response_t *r, const char *name, const char *value) {
  size_t used = storage_used(r), n = strlen(value) + 1;
  if (r->nheaders == CPROF_MAX_HEADERS || used + n > STORAGE)
    return -ENOMEM;
  char *v = ((storage_t *)(void *)r->storage_)->values + used;
  memcpy(v, value, n);
  r->headers[r->nheaders].name = name;
  r->headers[r->nheaders].value = v;
  r->nheaders++;
  return 0;
}

static void set_body(cprof_response_t *r, cprof__buf_t *body) {
  free(r->body);
  r->body = cprof__buf_take(body, &r->body_len);
}

void cprof__resp_error(cprof_response_t *r, int status, const char *fmt, ...) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  va_list ap;
  va_start(ap, fmt);
  cprof__buf_vprintf(&b, fmt, ap);
  va_end(ap);
  cprof__buf_putc(&b, '\n');
  for (int i = 0; i < r->nheaders; i++) { /* Go deletes Content-Disposition here */
    if (strcasecmp(r->headers[i].name, "Content-Disposition") == 0) {
      memmove(&r->headers[i], &r->headers[i + 1], (size_t)(r->nheaders - i - 1) * sizeof r->headers[0]);
      r->nheaders--;
    }
  }
  r->status = status;
  cprof__resp_header(r, "Content-Type", CPROF_TEXT);
  cprof__resp_header(r, "X-Go-Pprof", "1");
  set_body(r, &b);
}

void cprof__resp_body(cprof_response_t *r, const char *content_type, cprof__buf_t *body) {
  if (body->failed) {
    cprof__buf_free(body);
    cprof__resp_error(r, 500, "out of memory");
    return;
  }
  r->status = 200;
  cprof__resp_header(r, "Content-Type", content_type);
  set_body(r, body);
}

void cprof__resp_attachment(cprof_response_t *r, const char *filename, cprof__buf_t *body) {
  char v[160];
  snprintf(v, sizeof v, "attachment; filename=\"%s\"", filename);
  cprof__resp_header(r, "Content-Disposition", v);
  cprof__resp_body(r, "application/octet-stream", body);
}

void cprof_response_free(cprof_response_t *r) {
  free(r->body);
  free(r->storage_);
  memset(r, 0, sizeof *r);
}
