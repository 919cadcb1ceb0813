/* The graph (src/model/graph.c) on hand-built profiles: flat and cum as
 * pprof counts them (a recursive stack counts once), inline frames as
 * nodes of their own, the names each granularity gives, edge weights,
 * what trimming drops and keeps, and "(inline)" from a caller a diff left
 * with nothing. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/model.h"

static cprof__pf_mapping_t mapping = {
    .id = 1, .file = "/lib/x86_64-linux-gnu/libc.so.6", .build_id = ""};
static cprof__pf_function_t fn[6] = {
    {1, "main", "", "src/./main.c", 1}, {2, "a", "", "/src/a.c", 10},
    {3, "b", "", "/src/b.c", 20},       {4, "leaf", "", "/src/b.c", 30},
    {5, "inl", "", "/src/b.c", 40},     {6, "cold", "", "c.c", 0},
};
/* Locations: 1 main, 2 a, 3 b, 4 leaf, 5 inl inlined into b, 6 no
 * function (libc), 7 cold. */
static cprof__pf_line_t l_main = {&fn[0], 5, 0}, l_a = {&fn[1], 12, 0}, l_b = {&fn[2], 22, 0},
                        l_leaf = {&fn[3], 33, 0}, l_cold = {&fn[5], 3, 0};
static cprof__pf_line_t l_inl[2] = {{&fn[4], 41, 0}, {&fn[2], 25, 0}};
static cprof__pf_location_t loc[7];

static cprof__pf_t *profile(cprof__pf_sample_t *s, size_t n) {
  static cprof__value_type_t types[2] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
  loc[0] = (cprof__pf_location_t){1, NULL, 0x1000, &l_main, 1, 0};
  loc[1] = (cprof__pf_location_t){2, NULL, 0x2000, &l_a, 1, 0};
  loc[2] = (cprof__pf_location_t){3, NULL, 0x3000, &l_b, 1, 0};
  loc[3] = (cprof__pf_location_t){4, NULL, 0x4000, &l_leaf, 1, 0};
  loc[4] = (cprof__pf_location_t){5, NULL, 0x5000, l_inl, 2, 0};
  loc[5] = (cprof__pf_location_t){6, &mapping, 0x6000, NULL, 0, 0};
  loc[6] = (cprof__pf_location_t){7, NULL, 0x7000, &l_cold, 1, 0};
  static cprof__pf_t p;
  memset(&p, 0, sizeof p);
  p.sample_types = types;
  p.n_sample_types = 2;
  p.samples = s;
  p.n_samples = n;
  p.locations = loc;
  p.n_locations = 7;
  p.functions = fn;
  p.n_functions = 6;
  p.mappings = &mapping;
  p.n_mappings = 1;
  return &p;
}

/* A sample: leaf first, as profile.proto has them; locations by id. */
static cprof__pf_sample_t sample(int64_t v, const int *ids) {
  size_t n = 0;
  while (ids[n])
    n++;
  const cprof__pf_location_t **l = calloc(n, sizeof *l);
  for (size_t i = 0; i < n; i++)
    l[i] = &loc[ids[i] - 1];
  int64_t *vals = calloc(2, sizeof *vals);
  vals[0] = 1;
  vals[1] = v;
  return (cprof__pf_sample_t){l, n, vals, NULL, 0};
}

static const cprof__pf_node_t *node(const cprof__pf_graph_t *g, const char *name) {
  for (size_t i = 0; i < g->n_nodes; i++)
    if (strcmp(g->nodes[i]->name, name) == 0)
      return g->nodes[i];
  return NULL;
}

static const cprof__pf_edge_t *edge(const cprof__pf_graph_t *g, const char *from, const char *to) {
  for (size_t i = 0; i < g->n_edges; i++)
    if (strcmp(g->edges[i]->from->name, from) == 0 && strcmp(g->edges[i]->to->name, to) == 0)
      return g->edges[i];
  return NULL;
}

static void free_samples(cprof__pf_sample_t *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(s[i].locations);
    free(s[i].values);
  }
}

static void test_functions(void) {
  profile(NULL, 0); /* the locations, for sample() */
  cprof__pf_sample_t s[] = {
      /* main -> a -> b -> a -> leaf: a is on it twice. */
      sample(100, (int[]){4, 2, 3, 2, 1, 0}),
      /* main -> b -> inl (inlined into b) */
      sample(30, (int[]){5, 1, 0}),
      /* main -> a -> libc (no function) */
      sample(-20, (int[]){6, 2, 1, 0}),
  };
  cprof__pf_t *p = profile(s, 3);
  cprof__pf_graph_options_t o = {.sample_index = 1, .granularity = CPROF_PF_FUNCTIONS};
  cprof__pf_graph_t *g = NULL;
  CHECK_EQ_INT(cprof__pf_graph(p, &o, &g), 0);
  if (!g)
    return;
  CHECK_EQ_INT(g->total, 150); /* absolute values */
  CHECK_EQ_INT(g->n_nodes, 6);
  const cprof__pf_node_t *a = node(g, "a"), *m = node(g, "main"), *l = node(g, "leaf"),
                         *inl = node(g, "inl"), *libc = node(g, "[libc.so.6]"), *b = node(g, "b");
  CHECK(a && m && l && inl && libc && b);
  if (a && m && l && inl && libc && b) {
    CHECK_EQ_INT(a->cum, 80); /* 100 once, not twice, and -20 */
    CHECK_EQ_INT(a->flat, 0);
    CHECK_EQ_INT(m->cum, 110);
    CHECK_EQ_INT(l->flat, 100);
    CHECK_EQ_INT(inl->flat, 30);
    CHECK_EQ_INT(b->cum, 130);
    CHECK_EQ_INT(b->flat, 0);
    CHECK_EQ_INT(libc->flat, -20);
    CHECK_EQ_STR(libc->function, "");
    CHECK_EQ_INT(inl->inlined, 1);
    CHECK_EQ_INT(l->inlined, 0);
    /* Sorted by |flat| down: leaf 100, inl 30, libc -20, then name. */
    CHECK_EQ_STR(g->nodes[0]->name, "leaf");
    CHECK_EQ_STR(g->nodes[1]->name, "inl");
    CHECK_EQ_STR(g->nodes[2]->name, "[libc.so.6]");
    CHECK_EQ_STR(g->nodes[3]->name, "a");
  }
  const cprof__pf_edge_t *e = edge(g, "main", "a");
  CHECK(e && e->weight == 80 && !e->inline_);
  e = edge(g, "a", "b");
  CHECK(e && e->weight == 100);
  e = edge(g, "b", "a");
  CHECK(e && e->weight == 100);
  e = edge(g, "b", "inl");
  CHECK(e && e->weight == 30 && e->inline_ && !e->residual);
  CHECK_EQ_INT(g->n_edges, 7);
  /* main's calls, heaviest first: a (80), then b (30). */
  if (m && m->n_out == 2) {
    CHECK_EQ_STR(m->out[0]->to->name, "a");
    CHECK_EQ_STR(m->out[1]->to->name, "b");
  } else {
    CHECK(0);
  }
  cprof__pf_graph_free(g);

  /* -lines, -addresses, -files. */
  o.granularity = CPROF_PF_LINES;
  CHECK_EQ_INT(cprof__pf_graph(p, &o, &g), 0);
  CHECK(node(g, "leaf /src/b.c:33") != NULL);
  CHECK(node(g, "main src/main.c:5") != NULL); /* src/./main.c cleaned */
  CHECK(node(g, "inl /src/b.c:41") != NULL);
  CHECK(node(g, "b /src/b.c:25") != NULL);
  CHECK(node(g, "[libc.so.6]") != NULL);
  cprof__pf_graph_free(g);
  o.granularity = CPROF_PF_ADDRESSES;
  CHECK_EQ_INT(cprof__pf_graph(p, &o, &g), 0);
  CHECK(node(g, "0000000000004000 leaf /src/b.c:33") != NULL);
  CHECK(node(g, "0000000000006000 [libc.so.6]") != NULL);
  cprof__pf_graph_free(g);
  o.granularity = CPROF_PF_FILES;
  CHECK_EQ_INT(cprof__pf_graph(p, &o, &g), 0);
  CHECK(node(g, "/src/a.c") != NULL);
  CHECK(node(g, "src/main.c") != NULL);
  cprof__pf_graph_free(g);
  free_samples(s, 3);
}

static void test_trim(void) {
  profile(NULL, 0);
  cprof__pf_sample_t s[] = {
      sample(900, (int[]){4, 3, 2, 1, 0}), /* main -> a -> b -> leaf */
      sample(98, (int[]){4, 1, 0}),        /* main -> leaf */
      sample(2, (int[]){7, 1, 0}),         /* main -> cold: 0.2 % */
  };
  cprof__pf_t *p = profile(s, 3);
  cprof__pf_graph_options_t o = {.sample_index = 1};
  cprof__pf_graph_t *g = NULL;
  CHECK_EQ_INT(cprof__pf_graph(p, &o, &g), 0);
  if (!g)
    return;
  CHECK_EQ_INT(g->n_nodes, 5);
  cprof__pf_trim_t t = {.nodefraction = 0.005, .edgefraction = 0.001, .nodecount = 0};
  cprof__pf_trimmed_t r;
  CHECK_EQ_INT(cprof__pf_graph_trim(g, &t, &r), 0);
  CHECK_EQ_INT(r.dropped_nodes, 1); /* cold: 2 < 5 */
  CHECK_EQ_INT(r.orig_count, 4);
  CHECK(node(g, "cold") == NULL);
  CHECK_EQ_INT(g->total, 1000);
  /* Keep 2 nodes: leaf (flat 998) and, of those with no flat, the first
   * by name: a. main and b go, and a reaches leaf through b: a residual
   * edge. */
  t.nodecount = 2;
  CHECK_EQ_INT(cprof__pf_graph_trim(g, &t, &r), 0);
  CHECK_EQ_INT(g->n_nodes, 2);
  CHECK_EQ_INT(r.orig_count, 4);
  CHECK(node(g, "leaf") && node(g, "a"));
  const cprof__pf_edge_t *e = edge(g, "a", "leaf");
  CHECK(e && e->weight == 900 && e->residual);
  cprof__pf_graph_free(g);

  /* Edges under edgefraction go. */
  CHECK_EQ_INT(cprof__pf_graph(p, &o, &g), 0);
  t = (cprof__pf_trim_t){.nodefraction = 0, .edgefraction = 0.01, .nodecount = 0};
  CHECK_EQ_INT(cprof__pf_graph_trim(g, &t, &r), 0);
  CHECK_EQ_INT(r.dropped_nodes, 0);
  CHECK_EQ_INT(r.dropped_edges, 1); /* main -> cold, 2 < 10 */
  CHECK(edge(g, "main", "cold") == NULL);
  CHECK(node(g, "cold") != NULL);
  cprof__pf_graph_free(g);

  /* A visual trim removes a residual edge another path already shows. */
  CHECK_EQ_INT(cprof__pf_graph(p, &o, &g), 0);
  t = (cprof__pf_trim_t){
      .nodefraction = 0.005, .edgefraction = 0.001, .nodecount = 80, .visual = 1};
  CHECK_EQ_INT(cprof__pf_graph_trim(g, &t, &r), 0);
  CHECK_EQ_INT(g->n_nodes, 4);
  CHECK(edge(g, "main", "a") && edge(g, "a", "b") && edge(g, "b", "leaf"));
  cprof__pf_graph_free(g);
  free_samples(s, 3);
}

/* A diff can leave a caller nothing (b: +10 and -10), and pprof leaves
 * it out of the graph, but its edge to a callee that kept a value still
 * counts for the callee's "(inline)" (pprof's TextItems reads the
 * callee's In, which keeps it). */
static void test_ghost_caller(void) {
  profile(NULL, 0);
  cprof__pf_sample_t s[] = {
      sample(10, (int[]){5, 1, 0}),     /* main -> b -> inl, inlined into b */
      sample(-10, (int[]){4, 3, 1, 0}), /* main -> b -> leaf */
  };
  cprof__pf_t *p = profile(s, 2);
  cprof__pf_graph_options_t o = {.sample_index = 1, .granularity = CPROF_PF_FUNCTIONS};
  cprof__pf_graph_t *g = NULL;
  CHECK_EQ_INT(cprof__pf_graph(p, &o, &g), 0);
  if (!g)
    return;
  const cprof__pf_node_t *inl = node(g, "inl"), *l = node(g, "leaf");
  CHECK(!node(g, "b") && !node(g, "main")); /* nothing left: out of the graph */
  CHECK(inl && l && !edge(g, "b", "inl"));
  if (inl && l) {
    CHECK_EQ_INT(inl->flat, 10);
    CHECK_EQ_INT(inl->inlined, 1);
    CHECK_EQ_INT(l->inlined, 0);
    CHECK_EQ_INT(inl->n_in, 0);
  }
  cprof__pf_graph_free(g);
  free_samples(s, 2);
}

int main(void) {
  test_functions();
  test_trim();
  test_ghost_caller();
  return check_result("test_graph");
}
