/* cprof peek REGEX SOURCE: for each function whose name matches, its
 * callers above it and its callees below, with the value through each, as
 * go tool pprof -peek prints it (pprof's report.printTree):
 *
 *                                      1.28s   100% |   start_thread
 *        0     0% 78.91%      1.28s   100%                | worker_main
 *                                      1.02s 79.69% |   contend_on_lock
 *
 * As in pprof nothing is trimmed away first, so a small function can be
 * peeked at too. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "model/measure.h"
#include "report.h"

static const char usage[] = "usage: cprof peek [OPTIONS] REGEX SOURCE...\n"
                            "\n"
                            "Prints the callers and callees of the functions matching REGEX\n"
                            "(POSIX extended), as go tool pprof -peek.\n";

static void edge_line(cprof__buf_t *out, const report_opts_t *o, const char *unit, int64_t weight,
                      int64_t cum, const cprof__pf_node_t *other, int inline_) {
  char v[64], pc[32];
  report_value(v, sizeof v, weight, o, unit);
  cprof__measure_percentage(weight, cum, pc, sizeof pc);
  cprof__buf_printf(out, "%50s %s |   ", v, pc);
  report_put_name(out, other->name);
  cprof__buf_puts(out, inline_ ? " (inline)\n" : "\n");
}

/* The report; the number of nodes that matched. */
static size_t peek_write(cprof__buf_t *out, const cprof__pf_t *p, const report_opts_t *o,
                         const cprof__pf_graph_t *g, const cprof__pf_trimmed_t *r,
                         const regex_t *rx) {
  static const char separator[] =
      "----------------------------------------------------------+-------------\n";
  const char *unit = report_output_unit(o, g);
  report_labels(out, p, o, g, r, unit);
  cprof__buf_puts(out, separator);
  cprof__buf_puts(out,
                  "      flat  flat%   sum%        cum   cum%   calls calls% + context \t \t \n");
  size_t matched = 0;
  int64_t flat_sum = 0;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const cprof__pf_node_t *n = g->nodes[i];
    if (regexec(rx, n->name, 0, NULL, 0) != 0)
      continue;
    matched++;
    cprof__buf_puts(out, separator);
    for (size_t k = 0; k < n->n_in; k++)
      edge_line(out, o, unit, n->in[k]->weight, cprof__pf_cum(n), n->in[k]->from,
                n->in[k]->inline_);
    flat_sum += cprof__pf_flat(n);
    char flat[64], cum[64], flat_pc[32], sum_pc[32], cum_pc[32];
    report_value(flat, sizeof flat, cprof__pf_flat(n), o, unit);
    report_value(cum, sizeof cum, cprof__pf_cum(n), o, unit);
    cprof__measure_percentage(cprof__pf_flat(n), o->total, flat_pc, sizeof flat_pc);
    cprof__measure_percentage(flat_sum, o->total, sum_pc, sizeof sum_pc);
    cprof__measure_percentage(cprof__pf_cum(n), o->total, cum_pc, sizeof cum_pc);
    cprof__buf_printf(out, "%10s %s %s %10s %s                | ", flat, flat_pc, sum_pc, cum,
                      cum_pc);
    report_put_name(out, n->name);
    cprof__buf_putc(out, '\n');
    for (size_t k = 0; k < n->n_out; k++)
      edge_line(out, o, unit, n->out[k]->weight, cprof__pf_cum(n), n->out[k]->to,
                n->out[k]->inline_);
  }
  if (g->n_nodes > 0)
    cprof__buf_puts(out, separator);
  return matched;
}

int report_peek(cprof__buf_t *out, cprof__pf_t *p, report_opts_t *o, const char *arg, char *err,
                size_t errlen) {
  regex_t rx;
  if (report_regex(&rx, arg, err, errlen) != 0)
    return 1;
  /* pprof trims nothing for peek, but it still sorts the nodes as --cum
   * says. */
  cprof__pf_trim_t trim = {.cum_sort = o->cum_sort};
  cprof__pf_trimmed_t r;
  cprof__pf_graph_t *g;
  int rc = report_graph(p, o, &trim, &g, &r, err, errlen);
  if (rc == 0) {
    r.dropped_edges = 0;
    if (peek_write(out, p, o, g, &r, &rx) == 0) {
      snprintf(err, errlen, "no matches found for regexp: %s", arg);
      rc = 1;
    }
  }
  regfree(&rx);
  cprof__pf_graph_free(g);
  return rc;
}

int cmd_peek(int argc, char **argv) {
  return report_main("peek", usage, 1, NULL, NULL, report_peek, argc, argv);
}
