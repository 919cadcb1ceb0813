/* Writes the live charts page, for charts_browser.sh and its fixture server:
 *   charts_page OUT.html
 * Linked with the library's static archive, as the library serves the same
 * bytes: the page's assets, Chart.js among them, must be in it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ui/charts.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: charts_page OUT.html\n");
    return 2;
  }
  cprof__buf_t b;
  cprof__buf_init(&b);
  int rc = cprof__charts_page(&b);
  if (rc != 0) {
    fprintf(stderr, "charts_page: %s\n", strerror(-rc));
    return 1;
  }
  FILE *f = fopen(argv[1], "wb");
  if (!f || fwrite(b.data, 1, b.len, f) != b.len || fclose(f) != 0) {
    fprintf(stderr, "charts_page: %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  cprof__buf_free(&b);
  return 0;
}
