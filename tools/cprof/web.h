/* Serving a page over HTTP until interrupted, for cprof web and the
 * prompt's web command (web.c). */
#ifndef CPROF_TOOLS_WEB_H
#define CPROF_TOOLS_WEB_H

#include <stddef.h>

typedef struct web_page {
  const char *data;
  size_t len;
} web_page_t;

/* Serves page at / on spec (HOST:PORT, [V6]:PORT, :PORT; port 0: any free
 * one), says where on stderr, and returns when SIGINT, SIGTERM or SIGHUP
 * comes (its number in *signo, when not NULL), with the signal mask as it
 * was. 0; 1 or 2 after a line on stderr if it could not listen. */
int web_serve(const web_page_t *page, const char *spec, int *signo);

#endif
