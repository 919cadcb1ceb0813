/* cprof flame SOURCE -o flame.html: the viewer page (flame graph, icicle,
 * top table, every sample type) with the profile inside, one file that
 * opens in any browser with nothing fetched from anywhere. */
#include <errno.h>
#include <string.h>

#include "commands.h"
#include "page.h"
#include "report.h"
#include "save.h"

static const char usage[] =
    "usage: cprof flame [OPTIONS] SOURCE... [-o FILE.html]\n"
    "\n"
    "Writes the profile as a self-contained page: an interactive flame graph and\n"
    "icicle, a top table and a sample-type selector (default file: flame.html).\n"
    "\n"
    "  -o, --output FILE  where to write the page\n";

static int output_flag(void *ctx, int argc, char **argv, int *i) {
  const char **out = ctx;
  if (strcmp(argv[*i], "-o") != 0 && strcmp(argv[*i], "--output") != 0) {
    if (strncmp(argv[*i], "--output=", 9) == 0) {
      *out = argv[*i] + 9;
      return 1;
    }
    return 0;
  }
  if (*i + 1 >= argc) {
    fprintf(stderr, "cprof: %s wants a file name\n", argv[*i]);
    return -1;
  }
  *out = argv[++*i];
  return 1;
}

int cmd_flame(int argc, char **argv) {
  report_opts_t o;
  const char *output = "flame.html", *arg;
  cprof__pf_t *p;
  int rc = report_open("flame", usage, 0, output_flag, NULL, &output, argc, argv, &o, &arg, &p);
  if (rc != -1)
    return rc;
  cprof__buf_t page;
  cprof__buf_init(&page);
  int e = page_build(p, NULL, &page);
  if (e == 0)
    e = save_file(output, page.data, page.len);
  if (e != 0) {
    fprintf(stderr, "cprof flame: %s: %s\n", output, strerror(-e));
    rc = 1;
  } else {
    fprintf(stderr, "Saved flame graph in %s\n", output);
    rc = 0;
  }
  cprof__buf_free(&page);
  cprof__pf_free(p);
  return rc;
}
