/* The viewer's html, css and js (src/ui/viewer/) and the live page's
 * picker (viewer.live.js, as cprof__viewer_live_js), as bytes:
 * cmake/embed.cmake writes them into a generated C file at build time, and
 * rewrites it when an asset changes. The arrays are not NUL-terminated. */
#ifndef CPROF_UI_VIEWER_ASSETS_H
#define CPROF_UI_VIEWER_ASSETS_H

#include <stddef.h>

extern const unsigned char cprof__viewer_html[];
extern const size_t cprof__viewer_html_len;
extern const unsigned char cprof__viewer_css[];
extern const size_t cprof__viewer_css_len;
extern const unsigned char cprof__viewer_js[];
extern const size_t cprof__viewer_js_len;
extern const unsigned char cprof__viewer_live_js[];
extern const size_t cprof__viewer_live_js_len;

#endif
