/* The replies the pages of cprof collect's web server share
 * (collect/web_pages.h): apart from web.c, which routes to the pages, so
 * that the pages do not call their router back. */
#include <stdarg.h>
#include <stdio.h>

#include "collect/web_pages.h"

void web_reply_error(web_reply_t *r, unsigned status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  r->status = status;
  r->type = WEB_TEXT;
  r->body.len = 0;
  cprof__buf_vprintf(&r->body, fmt, ap);
  cprof__buf_putc(&r->body, '\n');
  va_end(ap);
}

void web_reply_header(web_reply_t *r, const char *name, const char *value) {
  if (r->nheaders >= sizeof r->headers / sizeof *r->headers)
    return;
  snprintf(r->headers[r->nheaders].name, sizeof r->headers[0].name, "%s", name);
  snprintf(r->headers[r->nheaders].value, sizeof r->headers[0].value, "%s", value);
  r->nheaders++;
}
