/* cprof top SOURCE: the table `go tool pprof -top` prints, with its header
 * lines and its numbers (pprof's report.printText):
 *
 *   Showing nodes accounting for 4.54MB, 100% of 4.54MB total
 *         flat  flat%   sum%        cum   cum%
 *       3.54MB 77.89% 77.89%     3.54MB 77.89%  cache_insert
 *
 * As pprof's -top it shows every node above the node fraction (0.5% of the
 * total by default); -n N keeps the first N, as pprof's -nodecount. */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "model/measure.h"
#include "report.h"

static const char usage[] =
    "usage: cprof top [-n N] [--sample-index NAME] [--cum] [--unit UNIT] [OPTIONS] SOURCE...\n"
    "\n"
    "Prints the nodes (functions, by default) with the most value, as go tool pprof -top:\n"
    "flat is the value in the node itself, cum the value in it and what it called.\n"
    "Several SOURCEs are merged first.\n";

/* The rows and their header lines (pprof's printText). */
void top_write(cprof__buf_t *out, const cprof__pf_t *p, const report_opts_t *o,
               const cprof__pf_graph_t *g, const cprof__pf_trimmed_t *r) {
  int64_t total = o->total;
  const char *unit = report_output_unit(o, g);
  cprof__pf_trimmed_t counts = *r;
  counts.dropped_edges = 0; /* a table has no edges to speak of */
  report_labels(out, p, o, g, &counts, unit);
  char a[64], b[64];
  int64_t flat_sum = 0;
  cprof__buf_printf(out, "%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum", "cum", "cum");
  for (size_t i = 0; i < g->n_nodes; i++) {
    const cprof__pf_node_t *n = g->nodes[i];
    flat_sum += cprof__pf_flat(n);
    char flat_pc[32], sum_pc[32], cum_pc[32];
    report_value(a, sizeof a, cprof__pf_flat(n), o, unit);
    report_value(b, sizeof b, cprof__pf_cum(n), o, unit);
    cprof__measure_percentage(cprof__pf_flat(n), total, flat_pc, sizeof flat_pc);
    cprof__measure_percentage(flat_sum, total, sum_pc, sizeof sum_pc);
    cprof__measure_percentage(cprof__pf_cum(n), total, cum_pc, sizeof cum_pc);
    cprof__buf_printf(out, "%10s %s %s %10s %s  ", a, flat_pc, sum_pc, b, cum_pc);
    report_put_name(out, n->name);
    if (n->inlined)
      cprof__buf_puts(out, n->inlined == 2 ? " (partial-inline)" : " (inline)");
    cprof__buf_putc(out, '\n');
  }
}

static int extra(void *ctx, int argc, char **argv, int *i) {
  if (strcmp(argv[*i], "-n") != 0)
    return 0;
  return report_flag(ctx, "top", argc, argv, i);
}

int report_top(cprof__buf_t *out, cprof__pf_t *p, report_opts_t *o, const char *arg, char *err,
               size_t errlen) {
  (void)arg;
  cprof__pf_trim_t trim = {.nodefraction = o->nodefraction,
                           .edgefraction = o->edgefraction,
                           .nodecount = o->nodecount > 0 ? (size_t)o->nodecount : 0,
                           .cum_sort = o->cum_sort};
  cprof__pf_trimmed_t r;
  cprof__pf_graph_t *g;
  int rc = report_graph(p, o, &trim, &g, &r, err, errlen);
  if (rc == 0)
    top_write(out, p, o, g, &r);
  cprof__pf_graph_free(g);
  return rc;
}

int cmd_top(int argc, char **argv) {
  return report_main("top", usage, 0, extra, NULL, report_top, argc, argv);
}
