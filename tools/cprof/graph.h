/* cprof graph's drawing, apart from its argument parsing, so that another
 * command (the interactive prompt's `svg`, the viewer) can draw a graph. */
#ifndef CPROF_TOOLS_GRAPH_H
#define CPROF_TOOLS_GRAPH_H

#include <stddef.h>

#include "profile/model.h"

#define GRAPH_MAX_LABELS 64

/* What the drawing says besides the graph. */
typedef struct graph_doc {
  const char *title;       /* the graph's name: the main binary's base name, or NULL */
  const char *sample_type; /* "cpu" */
  const char *sample_unit; /* "nanoseconds", lowercase */
  const char *output_unit; /* set by graph_labels (pprof's -unit=minimum) */
  int mean;
  const char *const *filters; /* "focus=RE" lines for the legend */
  size_t n_filters;
  char *labels[GRAPH_MAX_LABELS]; /* the legend's lines, graph_labels's */
  size_t n_labels;
} graph_doc_t;

/* The legend as pprof's report.GetDOT makes it: File, Build ID, Type,
 * Time, Duration, active filters, "Showing nodes accounting for ...",
 * the lines for what trimming dropped. Also picks the output unit. */
void graph_labels(graph_doc_t *d, const cprof__pf_t *p, const cprof__pf_graph_t *g,
                  const cprof__pf_trimmed_t *t, const cprof__pf_trim_t *o);
void graph_doc_free(graph_doc_t *d);

/* The graph in DOT, as pprof's ComposeDot writes it; entities: write '&'
 * as "&amp;" (for Graphviz's own rendering, which reads entities). *out
 * is malloc'd. */
int graph_dot(const cprof__pf_graph_t *g, const graph_doc_t *d, int entities, char **out);

/* Writes the graph to path as "svg", "png" (laid out by Graphviz's dot) or
 * "dot" (not laid out, as pprof's -dot). 0, or a negative errno with a
 * line in err. */
int graph_write(const cprof__pf_graph_t *g, const graph_doc_t *d, const char *path,
                const char *format, char *err, size_t errlen);

int graph_main(int argc, char **argv);

#endif
