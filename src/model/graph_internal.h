/* What the files of the graph share (graph.c, building; graph_names.c,
 * the nodes' files and printable names; graph_order.c, pprof's sort
 * orders; graph_trim.c, trimming): the nodes and edges as the graph keeps
 * them, and its private part. */
#ifndef CPROF_MODEL_GRAPH_INTERNAL_H
#define CPROF_MODEL_GRAPH_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "model/model.h"
#include "profile/table.h"

/* An edge as the graph keeps it: the public part, and whether trimming
 * removed it. */
typedef struct edge {
  cprof__pf_edge_t e;
  int dead;
  size_t stamp; /* the last sample that added to it, plus one */
} edge_t;

/* A node and what building needs of it. */
typedef struct node {
  cprof__pf_node_t n;
  const char *key; /* identity: every NodeInfo field */
  size_t key_len;
  int64_t start_line; /* kept in the identity when the name is unknown */
  const char *objfile;
  size_t stamp;
  int64_t score; /* the sort's, for CumNameOrder and EntropyOrder */
  size_t id;     /* the index in g->nodes, while removing redundant edges */
} node_t;

/* Nodes are found by their identity, the bytes key_put writes, and edges
 * by their two nodes, in the profile library's one hash table (profile/table.h),
 * whose values index the builder's arrays. */
typedef struct bytes {
  const char *p;
  size_t len;
} bytes_t;

static inline uint64_t key_hash(const bytes_t *k) {
  return cprof__hash_bytes(CPROF_HASH_SEED, k->p, k->len);
}

/* The nodes a rebuilt graph keeps: the keys of nodes[] in index. */
typedef struct keyset {
  cprof__table_t index;
  cprof__pf_node_t *const *nodes;
} keyset_t;

/* The private part of a graph: what trimming needs to build it again, and
 * the edges into its nodes from nodes that are no part of it: a sample can
 * reach a node and leave it nothing (a diff's +1 and -1, a value of 0
 * with -mean's counts), and selectNodesForGraph leaves such a node out.
 * pprof still keeps its edges in their callee's In, where they count for
 * the callee's "(inline)"; here they count for that alone, and trimming
 * drops them as it drops the others. */
typedef struct graph_priv {
  cprof__pf_graph_t g;
  const cprof__pf_t *p;
  cprof__pf_graph_options_t o;
  edge_t **ghosts;
  size_t n_ghosts;
} graph_priv_t;

static inline int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

/* graph.newGraph with report.newGraph's options, kept NULL or a set of
 * node keys (graph.c). */
int cprof__graph_build(const cprof__pf_t *p, const cprof__pf_graph_options_t *o,
                       const keyset_t *kept, cprof__pf_graph_t **out);

/* Makes every node's in and out lists anew from the live edges, heaviest
 * first, and g->edges the same way (graph.c). */
int cprof__graph_link_edges(cprof__pf_graph_t *g);

/* A file name as report.newGraph shows it: Bazel's prefixes trimmed, then
 * cleaned as Go's filepath.Clean does (graph_names.c). NULL without
 * memory. */
char *cprof__graph_file_name(cprof__arena_t *a, const char *filename);

/* NodeInfo.PrintableName (graph_names.c). */
char *cprof__graph_printable_name(cprof__arena_t *a, const node_t *x);

/* FlatNameOrder and edgeList.Less, for qsort (graph_order.c). */
int cprof__graph_flat_name_order(const void *a, const void *b);
int cprof__graph_edge_order(const void *a, const void *b);

/* pprof's SortNodes: EntropyOrder for a graph to draw, CumNameOrder for
 * -cum, FlatNameOrder otherwise (graph_order.c). */
void cprof__graph_sort_nodes(cprof__pf_graph_t *g, int visual, int cum);

#endif
