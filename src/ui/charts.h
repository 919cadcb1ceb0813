/* /debug/charts/: the live charts page. One self-contained HTML page
 * (src/ui/charts/: the html, css and js, with Debian's Chart.js, embedded
 * at build time by cmake/assets.cmake) that polls the metrics ring at
 * data?since=UNIX_MS, relative to its own address (so /debug/charts/data
 * under any prefix), and draws a chart per group of figures. The page holds
 * no data of its own: the same bytes for every request. */
#ifndef CPROF_UI_CHARTS_H
#define CPROF_UI_CHARTS_H

#include "core/buf.h"

/* The Content-Security-Policy the page is served with: nothing but its own
 * inline script and style, and fetches to the server it came from. */
#define CPROF_CHARTS_CSP                                                                           \
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "     \
  "connect-src 'self'"

/* Appends the whole page: the html with the css, Chart.js and the page's js
 * inlined. 0 or -ENOMEM. */
int cprof__charts_page(cprof__buf_t *out);

#endif
