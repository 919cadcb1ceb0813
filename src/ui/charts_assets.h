/* The charts page's html, css and js (src/ui/charts/) and Chart.js (Debian's
 * libjs-chart.js), as bytes: cmake/embed.cmake writes them into a generated
 * C file at build time. The arrays are not NUL-terminated. */
#ifndef CPROF_UI_CHARTS_ASSETS_H
#define CPROF_UI_CHARTS_ASSETS_H

#include <stddef.h>

extern const unsigned char cprof__charts_html[];
extern const size_t cprof__charts_html_len;
extern const unsigned char cprof__charts_css[];
extern const size_t cprof__charts_css_len;
extern const unsigned char cprof__charts_js[];
extern const size_t cprof__charts_js_len;
extern const unsigned char cprof__charts_chartjs[];
extern const size_t cprof__charts_chartjs_len;

#endif
