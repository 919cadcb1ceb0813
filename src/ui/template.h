/* What the pages share: their templates (src/ui/viewer/viewer.html,
 * src/ui/charts/charts.html), where {{name}} marks where a part goes, and
 * how a name becomes HTML text. */
#ifndef CPROF_UI_TEMPLATE_H
#define CPROF_UI_TEMPLATE_H

#include <stddef.h>

#include "core/buf.h"

typedef struct cprof__ui_part {
  const char *mark; /* "{{css}}" */
  const void *bytes;
  size_t len;
} cprof__ui_part_t;

/* Appends template tmpl[0..n) with each mark replaced by the parts that
 * name it, in their order (a mark may have several); anything else between
 * braces is copied as it is. The parts are not searched for marks (Chart.js
 * is full of braces). 0 or -ENOMEM. */
int cprof__ui_fill(const void *tmpl, size_t n, const cprof__ui_part_t *parts, size_t n_parts,
                   cprof__buf_t *out);

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 when the byte
 * at s does not start one (Unicode's table 3-7: no overlong forms, no
 * surrogates, nothing past U+10FFFF). */
size_t cprof__utf8_len(const unsigned char *s);

/* Appends s as HTML text, as every page writes names: markup characters
 * as entities (&lt; &gt; &amp; &#34; &#39;), control characters as \xNN,
 * bytes that are not UTF-8 as U+FFFD. */
void cprof__ui_html_text(cprof__buf_t *out, const char *s);

#endif
