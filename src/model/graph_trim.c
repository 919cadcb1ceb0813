/* Trimming a graph, as report.newTrimmedGraph does before printing or
 * drawing: nodes below the node fraction go, the graph is rebuilt from the
 * samples with the nodes kept (so that calls through dropped nodes become
 * residual edges), light edges go, at most nodecount nodes stay, and for a
 * drawing the residual edges another path explains go too. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/graph_internal.h"

/* The set of g's first n nodes with cum at least cutoff (the nodes live in
 * g's arena, which outlives the set). Keys are distinct: one per node. */
static int keep_set(const cprof__pf_graph_t *g, size_t n, int64_t cutoff, keyset_t *t) {
  cprof__table_init(&t->index);
  t->nodes = g->nodes;
  for (size_t i = 0; i < n; i++) {
    const node_t *x = (const node_t *)g->nodes[i];
    bytes_t k = {x->key, x->key_len};
    if (abs64(x->n.cum) >= cutoff && cprof__table_insert(&t->index, key_hash(&k), (uint32_t)i) != 0)
      return -ENOMEM;
  }
  return 0;
}

/* Builds g again with only the nodes in kept, putting the new graph's
 * contents in g's place. */
static int rebuild(cprof__pf_graph_t *g, const keyset_t *kept) {
  graph_priv_t *gp = (graph_priv_t *)g;
  cprof__pf_graph_t *ng;
  int rc = cprof__graph_build(gp->p, &gp->o, kept, &ng);
  if (rc < 0)
    return rc;
  cprof__arena_t *old = g->arena;
  *gp = *(graph_priv_t *)ng;
  free(ng);
  cprof__arena_free(old);
  return 0;
}
static size_t trim_edges(cprof__pf_graph_t *g, int64_t cutoff) {
  const graph_priv_t *gp = (const graph_priv_t *)g;
  size_t dropped = 0;
  for (size_t i = 0; i < g->n_edges + gp->n_ghosts; i++) {
    edge_t *e = i < g->n_edges ? (edge_t *)g->edges[i] : gp->ghosts[i - g->n_edges];
    if (!e->dead && abs64(e->e.weight) < cutoff) {
      e->dead = 1;
      dropped++;
    }
  }
  return dropped;
}

/* isRedundantEdge: another path leads from e's caller to its callee. */
static int redundant(const cprof__pf_graph_t *g, const cprof__pf_edge_t *e,
                     cprof__pf_node_t **queue, unsigned char *seen) {
  (void)g;
  size_t head = 0, tail = 0;
  queue[tail++] = e->to;
  seen[((const node_t *)e->to)->id] = 1;
  while (head < tail) {
    const cprof__pf_node_t *n = queue[head++];
    for (size_t i = 0; i < n->n_in; i++) {
      const cprof__pf_edge_t *ie = n->in[i];
      if (ie == e || ((const edge_t *)ie)->dead || seen[((const node_t *)ie->from)->id])
        continue;
      if (ie->from == e->from)
        return 1;
      seen[((const node_t *)ie->from)->id] = 1;
      queue[tail++] = ie->from;
    }
  }
  return 0;
}

/* RemoveRedundantEdges: from the last node up and each node's lightest
 * calls first, residual edges whose callee another path reaches go. */
static int remove_redundant(cprof__pf_graph_t *g) {
  cprof__pf_node_t **queue = malloc((g->n_nodes + 1) * sizeof *queue);
  unsigned char *seen = malloc(g->n_nodes + 1);
  if (!queue || !seen) {
    free(queue);
    free(seen);
    return -ENOMEM;
  }
  for (size_t i = 0; i < g->n_nodes; i++)
    ((node_t *)g->nodes[i])->id = i;
  for (size_t i = g->n_nodes; i > 0; i--) {
    cprof__pf_node_t *n = g->nodes[i - 1];
    for (size_t j = n->n_in; j > 0; j--) {
      edge_t *e = (edge_t *)n->in[j - 1];
      if (e->dead)
        continue;
      if (!e->e.residual)
        break;
      memset(seen, 0, g->n_nodes);
      if (redundant(g, &e->e, queue, seen))
        e->dead = 1;
    }
  }
  free(queue);
  free(seen);
  return 0;
}

int cprof__pf_graph_trim(cprof__pf_graph_t *g, const cprof__pf_trim_t *t, cprof__pf_trimmed_t *r) {
  memset(r, 0, sizeof *r);
  int64_t total_value = 0;
  for (size_t i = 0; i < g->n_nodes; i++)
    total_value += g->nodes[i]->flat;
  int64_t node_cutoff = abs64((int64_t)((double)total_value * t->nodefraction));
  int64_t edge_cutoff = abs64((int64_t)((double)total_value * t->edgefraction));
  int rc;
  if (node_cutoff > 0) {
    keyset_t kept;
    rc = keep_set(g, g->n_nodes, node_cutoff, &kept);
    if (rc == 0 && kept.index.n != g->n_nodes) {
      r->dropped_nodes = g->n_nodes - kept.index.n;
      rc = rebuild(g, &kept);
    }
    cprof__table_free(&kept.index);
    if (rc < 0)
      return rc;
  }
  r->orig_count = g->n_nodes;
  cprof__graph_sort_nodes(g, t->visual, t->cum_sort);
  if (t->nodecount > 0) {
    trim_edges(g, edge_cutoff);
    if ((rc = cprof__graph_link_edges(g)) < 0)
      return rc;
    size_t n = t->nodecount < g->n_nodes ? t->nodecount : g->n_nodes;
    if (n != g->n_nodes) {
      keyset_t kept;
      rc = keep_set(g, n, 0, &kept);
      if (rc == 0)
        rc = rebuild(g, &kept);
      cprof__table_free(&kept.index);
      if (rc < 0)
        return rc;
      cprof__graph_sort_nodes(g, t->visual, t->cum_sort);
    }
  }
  r->dropped_edges = trim_edges(g, edge_cutoff);
  if ((rc = cprof__graph_link_edges(g)) < 0)
    return rc;
  if (t->visual) {
    if ((rc = remove_redundant(g)) < 0 || (rc = cprof__graph_link_edges(g)) < 0)
      return rc;
  }
  return 0;
}
