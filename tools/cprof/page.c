#include "page.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "ui/viewer.h"

/* "demo_server: heap profile" and the like: the main binary's name and
 * what the profile measures. */
static void title_of(const cprof__pf_t *p, char *buf, size_t len) {
  const cprof__pf_mapping_t *m = report_main_mapping(p);
  const char *file = m && m->file[0] ? m->file : "";
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  const char *kind = p->period_type.type[0] ? p->period_type.type
                     : p->n_sample_types    ? p->sample_types[0].type
                                            : "";
  snprintf(buf, len, "%s%s%s", base, base[0] ? ": " : "", kind); /* the page says "diff" */
}

int page_build(const cprof__pf_t *p, const cprof__pf_t *base, cprof__buf_t *out) {
  cprof__pf_tree_t *t = NULL;
  int rc = base ? cprof__pf_tree_diff(base, p, &t) : cprof__pf_tree(p, &t);
  if (rc != 0)
    return rc;
  char title[256];
  title_of(p, title, sizeof title);
  cprof__buf_t json;
  cprof__buf_init(&json);
  rc = cprof__viewer_json(t, p, title, base != NULL, &json);
  if (rc == 0)
    rc = json.failed ? -ENOMEM : cprof__viewer_page(json.data, json.len, title, out);
  if (rc == 0 && out->failed)
    rc = -ENOMEM;
  cprof__buf_free(&json);
  cprof__pf_tree_free(t);
  return rc;
}
