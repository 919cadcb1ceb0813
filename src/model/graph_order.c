/* The orders of pprof's graph (internal/graph's NodeOrder and edgeList):
 * how its nodes and edges are sorted for reports and drawings. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/graph_internal.h"

/* graph.compareNodes: fmt.Sprint of the NodeInfo, which for nodes that
 * print alike comes down to these fields in this order. */
static int compare_info(const node_t *l, const node_t *r) {
  int c;
  if ((c = strcmp(l->n.function, r->n.function)))
    return c;
  if (l->n.address != r->n.address)
    return l->n.address < r->n.address ? -1 : 1;
  if ((c = strcmp(l->n.file, r->n.file)))
    return c;
  if (l->start_line != r->start_line)
    return l->start_line < r->start_line ? -1 : 1;
  if (l->n.line != r->n.line)
    return l->n.line < r->n.line ? -1 : 1;
  return strcmp(l->objfile, r->objfile);
}

/* FlatNameOrder: flat (absolute) down, name up, cum down. */
int cprof__graph_flat_name_order(const void *a, const void *b) {
  const node_t *l = *(node_t *const *)a, *r = *(node_t *const *)b;
  int64_t lv = abs64(l->n.flat), rv = abs64(r->n.flat);
  if (lv != rv)
    return lv > rv ? -1 : 1;
  int c = strcmp(l->n.name, r->n.name);
  if (c)
    return c;
  lv = abs64(l->n.cum);
  rv = abs64(r->n.cum);
  if (lv != rv)
    return lv > rv ? -1 : 1;
  return compare_info(l, r);
}

/* CumNameOrder and EntropyOrder: a score down, name up, flat down. */
static int score_order(const void *a, const void *b) {
  const node_t *l = *(node_t *const *)a, *r = *(node_t *const *)b;
  int64_t lv = abs64(l->score), rv = abs64(r->score);
  if (lv != rv)
    return lv > rv ? -1 : 1;
  int c = strcmp(l->n.name, r->n.name);
  if (c)
    return c;
  lv = abs64(l->n.flat);
  rv = abs64(r->n.flat);
  if (lv != rv)
    return lv > rv ? -1 : 1;
  return compare_info(l, r);
}

/* edgeList.Less: weight (absolute) down, then the caller's and callee's
 * names. */
int cprof__graph_edge_order(const void *a, const void *b) {
  const cprof__pf_edge_t *l = *(cprof__pf_edge_t *const *)a, *r = *(cprof__pf_edge_t *const *)b;
  if (l->weight != r->weight) {
    int64_t lv = abs64(l->weight), rv = abs64(r->weight);
    if (lv != rv)
      return lv > rv ? -1 : 1;
  }
  int c = strcmp(l->from->name, r->from->name);
  return c ? c : strcmp(l->to->name, r->to->name);
}

/* edgeEntropyScore over a node's live edges, in or out. */
static double edge_entropy(cprof__pf_edge_t **edges, size_t n, int64_t self) {
  double score = 0;
  int64_t total = self;
  for (size_t i = 0; i < n; i++)
    if (edges[i]->weight > 0)
      total += abs64(edges[i]->weight);
  if (total != 0) {
    for (size_t i = 0; i < n; i++) {
      double frac = (double)abs64(edges[i]->weight) / (double)total;
      score += -frac * log2(frac);
    }
    if (self > 0) {
      double frac = (double)abs64(self) / (double)total;
      score += -frac * log2(frac);
    }
  }
  return score;
}

static int64_t entropy_score(const cprof__pf_node_t *n) {
  double score = 0;
  score += n->n_in == 0 ? 1 : edge_entropy(n->in, n->n_in, 0);
  score += n->n_out == 0 ? 1 : edge_entropy(n->out, n->n_out, n->flat);
  return (int64_t)(score * (double)n->cum) + n->flat;
}

/* pprof's SortNodes: CumNameOrder is the same comparison as EntropyOrder,
 * on cum. */
void cprof__graph_sort_nodes(cprof__pf_graph_t *g, int visual, int cum) {
  if (!visual && !cum) {
    qsort(g->nodes, g->n_nodes, sizeof *g->nodes, cprof__graph_flat_name_order);
    return;
  }
  for (size_t i = 0; i < g->n_nodes; i++)
    ((node_t *)g->nodes[i])->score = visual ? entropy_score(g->nodes[i]) : g->nodes[i]->cum;
  qsort(g->nodes, g->n_nodes, sizeof *g->nodes, score_order);
}
