/* The live charts page: the template with its assets put in. */
#include "ui/charts.h"

#include <errno.h>
#include <string.h>

#include "ui/charts_assets.h"

int cprof__charts_page(cprof__buf_t *out) {
  static const struct {
    const char *mark;
    const unsigned char *bytes;
    const size_t *len;
  } parts[] = {
      {"{{css}}", cprof__charts_css, &cprof__charts_css_len},
      {"{{chartjs}}", cprof__charts_chartjs, &cprof__charts_chartjs_len},
      {"{{js}}", cprof__charts_js, &cprof__charts_js_len},
  };
  /* The template's {{name}} marks say where each part goes; anything else
   * between braces is copied as it is. The parts themselves are not
   * searched for marks: Chart.js is full of braces. */
  const char *h = (const char *)cprof__charts_html, *end = h + cprof__charts_html_len;
  while (h < end) {
    const char *mark = memmem(h, (size_t)(end - h), "{{", 2);
    if (!mark) {
      cprof__buf_append(out, h, (size_t)(end - h));
      break;
    }
    cprof__buf_append(out, h, (size_t)(mark - h));
    size_t left = (size_t)(end - mark), i;
    for (i = 0; i < sizeof parts / sizeof parts[0]; i++) {
      size_t n = strlen(parts[i].mark);
      if (left >= n && memcmp(mark, parts[i].mark, n) == 0) {
        cprof__buf_append(out, parts[i].bytes, *parts[i].len);
        h = mark + n;
        break;
      }
    }
    if (i == sizeof parts / sizeof parts[0]) {
      cprof__buf_append(out, mark, 2);
      h = mark + 2;
    }
  }
  return out->failed ? -ENOMEM : 0;
}
