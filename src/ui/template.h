/* The pages' templates (src/ui/viewer/viewer.html, src/ui/charts/
 * charts.html): {{name}} marks where a part goes. */
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

#endif
