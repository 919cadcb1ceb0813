/* {{name}} marks filled in (ui/template.h). */
#include "ui/template.h"

#include <errno.h>
#include <string.h>

int cprof__ui_fill(const void *tmpl, size_t n, const cprof__ui_part_t *parts, size_t n_parts,
                   cprof__buf_t *out) {
  const char *h = tmpl, *end = h + n;
  while (h < end) {
    const char *mark = memmem(h, (size_t)(end - h), "{{", 2);
    if (!mark) {
      cprof__buf_append(out, h, (size_t)(end - h));
      break;
    }
    cprof__buf_append(out, h, (size_t)(mark - h));
    size_t left = (size_t)(end - mark), matched = 0;
    for (size_t i = 0; i < n_parts; i++) {
      size_t len = strlen(parts[i].mark);
      if (left >= len && memcmp(mark, parts[i].mark, len) == 0) {
        cprof__buf_append(out, parts[i].bytes, parts[i].len);
        matched = len;
      }
    }
    cprof__buf_append(out, mark, matched ? 0 : 2);
    h = mark + (matched ? matched : 2);
  }
  return out->failed ? -ENOMEM : 0;
}
