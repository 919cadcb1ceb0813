/* The query page's html and js (tools/cprof/collect/ui/), as bytes:
 * cmake/embed.cmake writes them into a generated C file at build time. The
 * arrays are not NUL-terminated. */
#ifndef CPROF_COLLECT_UI_ASSETS_H
#define CPROF_COLLECT_UI_ASSETS_H

#include <stddef.h>

extern const unsigned char cprof__collect_html[];
extern const size_t cprof__collect_html_len;
extern const unsigned char cprof__collect_js[];
extern const size_t cprof__collect_js_len;

#endif
