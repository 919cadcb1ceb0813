/* Filling a cprof_response_t: headers as Go's net/http/pprof sets them. */
#ifndef CPROF_HTTP_RESPONSE_H
#define CPROF_HTTP_RESPONSE_H

#include "core/buf.h"
#include "cprof.h"

/* Empties r; every response carries X-Content-Type-Options: nosniff.
 * Returns 0 or -ENOMEM. */
int cprof__resp_init(cprof_response_t *r);
/* Adds a header, copying the value. Returns 0 or -ENOMEM. */
int cprof__resp_header(cprof_response_t *r, const char *name, const char *value);
/* Adds a header alongside any of the same name (WWW-Authenticate with one
 * challenge each). Returns 0 or -ENOMEM. */
int cprof__resp_header_add(cprof_response_t *r, const char *name, const char *value);
/* A plain-text error as Go's serveError: text/plain, X-Go-Pprof: 1 (which
 * makes go tool pprof print our message), the message and a newline. */
void cprof__resp_error(cprof_response_t *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A 200 body of the given content type; takes the buffer's bytes. A buffer
 * whose allocation failed becomes a 500. */
void cprof__resp_body(cprof_response_t *r, const char *content_type, cprof__buf_t *body);
/* A 200 profile download: application/octet-stream with
 * Content-Disposition: attachment; filename="NAME". */
void cprof__resp_attachment(cprof_response_t *r, const char *filename, cprof__buf_t *body);

#define CPROF_TEXT "text/plain; charset=utf-8"
#define CPROF_HTML "text/html; charset=utf-8"

#endif
