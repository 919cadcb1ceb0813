/* Nodes and edges of a profile, as pprof's internal/graph builds them for
 * its reports (graph.New, with report.newGraph's options), and the
 * trimming report.newTrimmedGraph does before printing or drawing.
 *
 * A node is what pprof calls a NodeInfo: a function name, a file, a line,
 * an address and an object file, of which the granularity keeps some (as
 * driver.aggregate clears the others in the profile). Every sample adds its
 * value to the cum of each node on its stack once, to the flat of its leaf,
 * and to each caller->callee edge once. Trimming rebuilds the graph from
 * the samples with only the kept nodes, as pprof does, so that the calls
 * through dropped nodes become residual edges.
 *
 * This file builds the graph; the nodes' names are made in graph_names.c,
 * pprof's sort orders are graph_order.c's and trimming graph_trim.c's
 * (graph_internal.h is what they share). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/graph_internal.h"

/* ---- lookups ------------------------------------------------------------- */

/* Whether node x's identity is the key k (graph_internal.h). */
static int key_is(const node_t *x, const bytes_t *k) {
  return x->key_len == k->len && memcmp(x->key, k->p, k->len) == 0;
}

/* ctx: the builder's node_t *list[]. */
static int list_key_eq(const void *ctx, uint32_t v, const void *key) {
  return key_is(((node_t *const *)ctx)[v], key);
}

/* ctx: a graph's nodes, whose node_t each cprof__pf_node_t begins. */
static int graph_key_eq(const void *ctx, uint32_t v, const void *key) {
  return key_is((const node_t *)((cprof__pf_node_t *const *)ctx)[v], key);
}

/* ---- building ------------------------------------------------------------- */

typedef struct builder {
  const cprof__pf_t *p;
  const cprof__pf_graph_options_t *o;
  const keyset_t *kept; /* NULL: every node */
  cprof__arena_t *arena;
  cprof__table_t nodes; /* key -> index in list */
  node_t **list;
  size_t n_list, cap_list;
  cprof__table_t edges; /* (from, to) -> index in elist */
  edge_t **elist;
  size_t n_elist, cap_elist;
  char *keybuf;
  size_t keycap;
} builder_t;

static int key_put(builder_t *b, size_t *w, const void *v, size_t n) {
  if (*w + n + 8 > b->keycap) {
    size_t cap = (*w + n + 8) * 2;
    char *k = realloc(b->keybuf, cap);
    if (!k)
      return -ENOMEM;
    b->keybuf = k;
    b->keycap = cap;
  }
  uint64_t len = n;
  memcpy(b->keybuf + *w, &len, sizeof len);
  memcpy(b->keybuf + *w + 8, v, n);
  *w += n + 8;
  return 0;
}

/* The node for line li of location l (li NULL: a location without
 * lines), made if new; *out NULL when kept leaves it out. */
/* What identifies the node of line li of location l (li NULL: a location
 * without lines) at granularity gr, in x's fields: what driver.aggregate
 * keeps, -functions the names, -files the files, -lines names, files and
 * lines, -addresses everything (inline frames kept). */
static int frame_identity(cprof__arena_t *a, cprof__pf_granularity_t gr,
                          const cprof__pf_location_t *l, const cprof__pf_line_t *li, node_t *x) {
  const char *objfile = l->mapping && l->mapping->file[0] ? l->mapping->file : "";
  int keep_name = gr != CPROF_PF_FILES, keep_file = gr != CPROF_PF_FUNCTIONS;
  int keep_line = gr == CPROF_PF_LINES || gr == CPROF_PF_ADDRESSES;
  memset(x, 0, sizeof *x);
  x->n.function = x->n.file = x->objfile = "";
  x->n.mapping = objfile;
  x->n.address = gr == CPROF_PF_ADDRESSES ? l->address : 0;
  if (li && li->function) {
    const cprof__pf_function_t *f = li->function;
    x->n.function = keep_name ? f->name : "";
    if (keep_file && f->filename[0] && !(x->n.file = cprof__graph_file_name(a, f->filename)))
      return -ENOMEM;
    x->n.line = keep_line ? li->line : 0;
    if (!x->n.function[0]) {
      x->objfile = objfile;
      x->start_line = f->start_line;
    }
    /* For list's range: the function's first line, with -lines. */
    x->n.start_line = gr == CPROF_PF_LINES ? f->start_line : x->start_line;
  } else {
    x->objfile = objfile;
  }
  return 0;
}

const char *cprof__pf_frame_name(cprof__arena_t *a, const cprof__pf_location_t *l,
                                 const cprof__pf_line_t *li, cprof__pf_granularity_t g) {
  node_t x;
  return frame_identity(a, g, l, li, &x) == 0 ? cprof__graph_printable_name(a, &x) : NULL;
}

static int node_for(builder_t *b, const cprof__pf_location_t *l, const cprof__pf_line_t *li,
                    node_t **out) {
  node_t id;
  int rc = frame_identity(b->arena, b->o->granularity, l, li, &id);
  if (rc != 0)
    return rc;
  const char *name = id.n.function, *file = id.n.file, *obj = id.objfile;
  uint64_t address = id.n.address;
  int64_t line = id.n.line, start_line = id.start_line;
  size_t w = 0;
  if ((rc = key_put(b, &w, name, strlen(name))) < 0 ||
      (rc = key_put(b, &w, file, strlen(file))) < 0 ||
      (rc = key_put(b, &w, obj, strlen(obj))) < 0 ||
      (rc = key_put(b, &w, &address, sizeof address)) < 0 ||
      (rc = key_put(b, &w, &line, sizeof line)) < 0 ||
      (rc = key_put(b, &w, &start_line, sizeof start_line)) < 0)
    return rc;
  *out = NULL;
  bytes_t k = {b->keybuf, w};
  uint64_t h = key_hash(&k);
  if (b->kept && cprof__table_find(&b->kept->index, h, graph_key_eq, b->kept->nodes, &k) < 0)
    return 0;
  int64_t i = cprof__table_find(&b->nodes, h, list_key_eq, b->list, &k);
  if (i >= 0) {
    *out = b->list[i];
    return 0;
  }
  node_t *x = cprof__arena_alloc(b->arena, sizeof *x);
  char *key = x ? cprof__arena_alloc(b->arena, w) : NULL;
  if (!key || cprof__grow((void **)&b->list, &b->cap_list, b->n_list + 1, sizeof *b->list) != 0)
    return -ENOMEM;
  *x = id;
  memcpy(key, b->keybuf, w);
  x->key = key;
  x->key_len = w;
  if (!(x->n.name = cprof__graph_printable_name(b->arena, x)) ||
      cprof__table_insert(&b->nodes, h, (uint32_t)b->n_list) != 0)
    return -ENOMEM;
  b->list[b->n_list++] = x;
  *out = x;
  return 0;
}

/* Node.AddToEdgeDiv: an existing edge is residual if any path through it
 * was, inline only if every one was. */
/* ctx: the builder's edge_t *elist[]; key: the two nodes. */
static int edge_eq(const void *ctx, uint32_t v, const void *key) {
  const edge_t *e = ((edge_t *const *)ctx)[v];
  node_t *const *pair = key;
  return e->e.from == &pair[0]->n && e->e.to == &pair[1]->n;
}

static int add_edge(builder_t *b, node_t *from, node_t *to, int64_t dw, int64_t w, int residual,
                    int inline_, size_t stamp) {
  node_t *pair[2] = {from, to};
  uint64_t h = cprof__hash_u64(cprof__hash_u64(CPROF_HASH_SEED, (uintptr_t)from), (uintptr_t)to);
  int64_t i = cprof__table_find(&b->edges, h, edge_eq, b->elist, pair);
  edge_t *e = i >= 0 ? b->elist[i] : NULL;
  if (e) {
    if (e->stamp == stamp)
      return 0; /* once per sample */
    e->e.weight_div += dw;
    e->e.weight += w;
    if (residual)
      e->e.residual = 1;
    if (!inline_)
      e->e.inline_ = 0;
  } else {
    e = cprof__arena_alloc(b->arena, sizeof *e);
    if (!e ||
        cprof__grow((void **)&b->elist, &b->cap_elist, b->n_elist + 1, sizeof *b->elist) != 0 ||
        cprof__table_insert(&b->edges, h, (uint32_t)b->n_elist) != 0)
      return -ENOMEM;
    e->e.from = &from->n;
    e->e.to = &to->n;
    e->e.weight = w;
    e->e.weight_div = dw;
    e->e.residual = residual;
    e->e.inline_ = inline_;
    b->elist[b->n_elist++] = e;
  }
  e->stamp = stamp;
  return 0;
}
/* sample.DiffBaseSample: the label pprof's -diff_base puts on BASE's
 * samples. */
static int diff_base_sample(const cprof__pf_sample_t *s) {
  for (size_t i = 0; i < s->n_labels; i++)
    if (s->labels[i].str && strcmp(s->labels[i].key, "pprof::base") == 0 &&
        strcmp(s->labels[i].str, "true") == 0)
      return 1;
  return 0;
}

/* report.computeTotal. */
int64_t cprof__pf_total(const cprof__pf_t *p, const cprof__pf_graph_options_t *o) {
  int64_t div = 0, total = 0, diff_div = 0, diff_total = 0;
  for (size_t i = 0; i < p->n_samples; i++) {
    const cprof__pf_sample_t *s = &p->samples[i];
    int64_t v = abs64(s->values[o->sample_index]), d = o->mean ? s->values[0] : 0;
    total += v;
    div += d;
    if (diff_base_sample(s)) {
      diff_total += v;
      diff_div += d;
    }
  }
  if (diff_total > 0) {
    total = diff_total;
    div = diff_div;
  }
  return div ? total / div : total;
}

static int samples(builder_t *b) {
  const cprof__pf_t *p = b->p;
  /* locmap: each location's nodes, lines[0] (innermost) first. */
  node_t ***locmap = calloc(p->n_locations ? p->n_locations : 1, sizeof *locmap);
  size_t *locn = calloc(p->n_locations ? p->n_locations : 1, sizeof *locn);
  int rc = 0;
  if (!locmap || !locn) {
    rc = -ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < p->n_locations && rc == 0; i++) {
    const cprof__pf_location_t *l = &p->locations[i];
    size_t n = l->n_lines ? l->n_lines : 1;
    locmap[i] = cprof__arena_array(b->arena, n, sizeof *locmap[i]);
    if (!locmap[i]) {
      rc = -ENOMEM;
      break;
    }
    locn[i] = n;
    for (size_t k = 0; k < n && rc == 0; k++)
      rc = node_for(b, l, l->n_lines ? &l->lines[k] : NULL, &locmap[i][k]);
  }
  for (size_t si = 0; si < p->n_samples && rc == 0; si++) {
    const cprof__pf_sample_t *s = &p->samples[si];
    int64_t w = s->values[b->o->sample_index], dw = b->o->mean ? s->values[0] : 0;
    if (w == 0 && dw == 0)
      continue;
    size_t stamp = si + 1;
    node_t *parent = NULL;
    int residual = 0;
    for (size_t i = s->n_locations; i-- > 0 && rc == 0;) {
      size_t li = (size_t)(s->locations[i] - p->locations);
      if (li >= p->n_locations)
        continue; /* not this profile's: cannot happen after decode */
      for (size_t ni = locn[li]; ni-- > 0;) {
        node_t *n = locmap[li][ni];
        if (!n) {
          residual = 1;
          continue;
        }
        if (n->stamp != stamp) {
          n->stamp = stamp;
          n->n.cum += w;
          n->n.cum_div += dw;
        }
        if (parent && n != parent &&
            (rc = add_edge(b, parent, n, dw, w, residual, ni != locn[li] - 1, stamp)) < 0)
          break;
        parent = n;
        residual = 0;
      }
    }
    if (parent && !residual) {
      parent->n.flat += w;
      parent->n.flat_div += dw;
    }
  }
out:
  free(locmap);
  free(locn);
  return rc;
}

/* Whether node n is part of the graph. */
static int in_graph(const cprof__pf_node_t *n) { return n->cum || n->flat; }

/* Makes every node's in and out lists anew from the live edges, heaviest
 * first, and g->edges the same way. */
int cprof__graph_link_edges(cprof__pf_graph_t *g) {
  for (size_t i = 0; i < g->n_nodes; i++)
    g->nodes[i]->n_in = g->nodes[i]->n_out = 0;
  size_t live = 0;
  for (size_t i = 0; i < g->n_edges; i++) {
    edge_t *e = (edge_t *)g->edges[i];
    if (e->dead)
      continue;
    g->edges[live++] = &e->e;
    e->e.from->n_out++;
    e->e.to->n_in++;
  }
  g->n_edges = live;
  for (size_t i = 0; i < g->n_nodes; i++) {
    cprof__pf_node_t *n = g->nodes[i];
    n->in = n->n_in ? cprof__arena_array(g->arena, n->n_in, sizeof *n->in) : NULL;
    n->out = n->n_out ? cprof__arena_array(g->arena, n->n_out, sizeof *n->out) : NULL;
    if ((n->n_in && !n->in) || (n->n_out && !n->out))
      return -ENOMEM;
    n->n_in = n->n_out = 0;
  }
  for (size_t i = 0; i < g->n_edges; i++) {
    cprof__pf_edge_t *e = g->edges[i];
    e->from->out[e->from->n_out++] = e;
    e->to->in[e->to->n_in++] = e;
  }
  /* report.TextItems' (inline) and (partial-inline), from every live edge
   * in, the ghosts' too: 1 for an inline one seen, 2 for another. */
  for (size_t i = 0; i < g->n_nodes; i++)
    g->nodes[i]->inlined = 0;
  const graph_priv_t *gp = (const graph_priv_t *)g;
  for (size_t i = 0; i < g->n_edges + gp->n_ghosts; i++) {
    const cprof__pf_edge_t *e = i < g->n_edges ? g->edges[i] : &gp->ghosts[i - g->n_edges]->e;
    if (i >= g->n_edges && gp->ghosts[i - g->n_edges]->dead)
      continue;
    e->to->inlined |= e->inline_ ? 1 : 2;
  }
  for (size_t i = 0; i < g->n_nodes; i++) {
    cprof__pf_node_t *n = g->nodes[i];
    n->inlined = n->inlined & 1 ? (n->inlined & 2 ? 2 : 1) : 0;
    /* A node without callers or callees has NULL lists, which qsort
     * must not be given, even with no elements (UBSan says so). */
    if (n->n_in > 1)
      qsort(n->in, n->n_in, sizeof *n->in, cprof__graph_edge_order);
    if (n->n_out > 1)
      qsort(n->out, n->n_out, sizeof *n->out, cprof__graph_edge_order);
  }
  qsort(g->edges, g->n_edges, sizeof *g->edges, cprof__graph_edge_order);
  return 0;
}

/* graph.newGraph with report.newGraph's options, kept NULL or a set of
 * node keys. */
int cprof__graph_build(const cprof__pf_t *p, const cprof__pf_graph_options_t *o,
                       const keyset_t *kept, cprof__pf_graph_t **out) {
  *out = NULL;
  if (!p || !o || (p->n_sample_types && o->sample_index >= p->n_sample_types) ||
      (!p->n_sample_types && p->n_samples))
    return -EINVAL;
  cprof__arena_t *a = cprof__arena_new(0);
  graph_priv_t *gp = a ? calloc(1, sizeof *gp) : NULL;
  if (!gp) {
    cprof__arena_free(a);
    return -ENOMEM;
  }
  builder_t b = {.p = p, .o = o, .kept = kept, .arena = a};
  int rc = samples(&b);
  cprof__pf_graph_t *g = &gp->g;
  g->arena = a;
  gp->p = p;
  gp->o = *o;
  if (rc == 0) {
    g->total = cprof__pf_total(p, o);
    /* selectNodesForGraph: nodes no sample reached are no part of it. */
    g->nodes = cprof__arena_array(a, b.n_list ? b.n_list : 1, sizeof *g->nodes);
    g->edges = cprof__arena_array(a, b.n_elist ? b.n_elist : 1, sizeof *g->edges);
    gp->ghosts = cprof__arena_array(a, b.n_elist ? b.n_elist : 1, sizeof *gp->ghosts);
    if (!g->nodes || !g->edges || !gp->ghosts)
      rc = -ENOMEM;
  }
  if (rc == 0) {
    for (size_t i = 0; i < b.n_list; i++)
      if (in_graph(&b.list[i]->n))
        g->nodes[g->n_nodes++] = &b.list[i]->n;
    /* An edge goes with the nodes; one into the graph from a node left
     * out is a ghost (see graph_priv_t). */
    for (size_t i = 0; i < b.n_elist; i++) {
      const cprof__pf_edge_t *e = &b.elist[i]->e;
      if (in_graph(e->from) && in_graph(e->to))
        g->edges[g->n_edges++] = &b.elist[i]->e;
      else if (in_graph(e->to))
        gp->ghosts[gp->n_ghosts++] = b.elist[i];
    }
    qsort(g->nodes, g->n_nodes, sizeof *g->nodes, cprof__graph_flat_name_order);
    rc = cprof__graph_link_edges(g);
  }
  cprof__table_free(&b.nodes);
  cprof__table_free(&b.edges);
  free(b.list);
  free(b.elist);
  free(b.keybuf);
  if (rc < 0) {
    cprof__arena_free(a);
    free(gp);
    return rc;
  }
  *out = g;
  return 0;
}

int cprof__pf_graph(const cprof__pf_t *p, const cprof__pf_graph_options_t *o,
                    cprof__pf_graph_t **out) {
  return cprof__graph_build(p, o, NULL, out);
}

void cprof__pf_graph_free(cprof__pf_graph_t *g) {
  if (g) {
    cprof__arena_free(g->arena);
    free(g); /* the graph_priv_t it begins */
  }
}
