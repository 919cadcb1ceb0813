/* cprof diff BASE NEW: what changed from BASE to NEW, as go tool pprof
 * -top -diff_base=BASE NEW shows it: NEW's values less BASE's, node by node,
 * what grew positive and what shrank negative, percentages of BASE's
 * total. For before/after comparisons and leak hunts (a heap now against a
 * heap an hour ago). --flame writes the viewer's diff page instead: red
 * grew, blue shrank. */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "page.h"
#include "report.h"
#include "save.h"

static const char usage[] =
    "usage: cprof diff [OPTIONS] BASE NEW\n"
    "       cprof diff --flame [-o FILE.html] [OPTIONS] BASE NEW\n"
    "\n"
    "Prints NEW minus BASE as a top table, as go tool pprof -top -diff_base=BASE NEW:\n"
    "positive values grew, negative ones shrank. With --flame, writes a differential\n"
    "flame graph page instead (default file: diff.html).\n"
    "\n"
    "  -n N               show the first N rows\n"
    "  --flame            the page, not the table\n"
    "  -o, --output FILE  where to write the page\n";

typedef struct diff_args {
  report_opts_t *o;
  int flame;
  const char *output;
} diff_args_t;

static int extra(void *ctx, int argc, char **argv, int *i) {
  diff_args_t *a = ctx;
  if (strcmp(argv[*i], "--flame") == 0)
    return a->flame = 1;
  if (strcmp(argv[*i], "-n") == 0)
    return report_flag(a->o, "diff", argc, argv, i);
  if (strcmp(argv[*i], "-o") == 0 || strcmp(argv[*i], "--output") == 0) {
    if (*i + 1 >= argc) {
      fprintf(stderr, "cprof diff: %s wants a file name\n", argv[*i]);
      return -1;
    }
    a->output = argv[++*i];
    return 1;
  }
  return 0;
}

/* The table, as top.c prints it. */
static int write_table(cprof__pf_t *d, report_opts_t *o) {
  cprof__buf_t out;
  char err[512] = "";
  cprof__buf_init(&out);
  int rc = report_top(&out, d, o, NULL, err, sizeof err);
  if (rc != 0)
    fprintf(stderr, "cprof diff: %s\n", err);
  else if (out.failed || fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
    fprintf(stderr, "cprof diff: writing the report failed\n");
    rc = 1;
  }
  cprof__buf_free(&out);
  return rc;
}

int cmd_diff(int argc, char **argv) {
  report_opts_t o;
  report_opts_init(&o);
  diff_args_t a = {&o, 0, "diff.html"};
  char **pos = calloc((size_t)argc, sizeof *pos);
  int n, rc;
  if (!pos)
    return 1;
  if (report_args("diff", usage, &o, extra, &a, argc, argv, pos, &n, &rc) != 0)
    goto done;
  rc = 2;
  if (n != 2) {
    fprintf(stderr, "cprof diff: wants two profiles, BASE and NEW (cprof diff --help)\n");
    goto done;
  }
  cprof__pf_t *base = NULL, *new_ = NULL, *d = NULL;
  char err[512];
  rc = report_load("diff", pos, 1, &base);
  if (rc == 0)
    rc = report_load("diff", pos + 1, 1, &new_);
  /* The filters apply to both (to the merged profile, as pprof does, for
   * the table). */
  if (rc == 0 && a.flame) {
    rc = report_prepare("diff", new_, &o);
    if (rc == 0)
      rc = report_prepare("diff", base, &o);
  }
  if (rc == 0 && a.flame) {
    cprof__buf_t page;
    cprof__buf_init(&page);
    int e = page_build(new_, base, &page);
    if (e == 0)
      e = save_file(a.output, page.data, page.len);
    if (e != 0) {
      fprintf(stderr, "cprof diff: %s: %s\n", a.output, strerror(-e));
      rc = 1;
    } else {
      fprintf(stderr, "Saved differential flame graph in %s\n", a.output);
    }
    cprof__buf_free(&page);
  } else if (rc == 0) {
    if (cprof__pf_diff(base, new_, &d, err, sizeof err) != 0) {
      fprintf(stderr, "cprof diff: %s\n", err);
      rc = 1;
    } else {
      rc = report_prepare("diff", d, &o);
      if (rc == 0)
        rc = write_table(d, &o);
    }
  }
  cprof__pf_free(d);
  cprof__pf_free(new_);
  cprof__pf_free(base);
done:
  free(pos);
  return rc;
}
