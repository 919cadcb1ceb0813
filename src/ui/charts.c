/* The live charts page: the template with its assets put in. */
#include "ui/charts.h"

#include "ui/charts_assets.h"
#include "ui/template.h"

int cprof__charts_page(cprof__buf_t *out) {
  const cprof__ui_part_t parts[] = {
      {"{{css}}", cprof__charts_css, cprof__charts_css_len},
      {"{{chartjs}}", cprof__charts_chartjs, cprof__charts_chartjs_len},
      {"{{js}}", cprof__charts_js, cprof__charts_js_len},
  };
  return cprof__ui_fill(cprof__charts_html, cprof__charts_html_len, parts,
                        sizeof parts / sizeof *parts, out);
}
