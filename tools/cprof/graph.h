/* cprof graph's drawing, apart from its argument parsing, so that the
 * interactive prompt's `svg`, `png` and `dot` draw the same. */
#ifndef CPROF_TOOLS_GRAPH_H
#define CPROF_TOOLS_GRAPH_H

#include <stddef.h>

#include "model/model.h"
#include "report.h"

/* What the drawing says besides the graph. */
typedef struct graph_doc {
  const char *title;      /* the graph's name: the main binary's base name, or NULL */
  const report_opts_t *o; /* the value shown (its unit, mean) and the total */
  const char *unit;       /* the unit values are shown in (report_output_unit) */
  const char *legend;     /* the legend's lines, '\n' between them */
} graph_doc_t;

/* The graph in DOT, as pprof's ComposeDot writes it; entities: write '&'
 * as "&amp;" (for Graphviz's own rendering, which reads entities). *out
 * is malloc'd. */
int graph_dot(const cprof__pf_graph_t *g, const graph_doc_t *d, int entities, char **out);

/* Writes the graph to path as "svg", "png" (laid out by Graphviz's dot) or
 * "dot" (not laid out, as pprof's -dot), whole or not at all. 0, or a
 * negative errno with a line in err. */
int graph_write(const cprof__pf_graph_t *g, const graph_doc_t *d, const char *path,
                const char *format, char *err, size_t errlen);

/* The whole drawing of prepared profile p under options o (nodecount -1:
 * pprof's 80 for a graph) into path. 0, or a negative errno with a line
 * in err. */
int graph_save(cprof__pf_t *p, const report_opts_t *o, const char *path, const char *format,
               char *err, size_t errlen);

/* "svg", "png" or "dot" from path's extension; NULL if it has none of them. */
const char *graph_format_of(const char *path);

#endif
