/* Merge, diff, filter and the call tree on a profile that went through
 * cprof's own writer (builder.c) and decoder (model/decode.c), as the cprof
 * command will see them: symbolized, gzip-compressed, with pseudo frames
 * and labels. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "core/buf.h"
#include "profile/builder.h"
#include "model/model.h"

__attribute__((noinline)) static int here(void) { return 1; }
__attribute__((noinline)) static int there(void) { return 2; }

static cprof__pf_t *written_and_decoded(int extra) {
  static const cprof__profile_desc_t desc = {
      .sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
      .n_sample_types = 2,
      .period_type = {"cpu", "nanoseconds"},
      .period = 10000000,
      .time_nanos = 1000,
      .duration_nanos = 500,
  };
  static const cprof__label_t labels[] = {{.key = "bytes", .num = 4096, .num_unit = "bytes"},
                                          {.key = "handler", .str = "/x"}};
  cprof__builder_t *b = cprof__builder_new(&desc);
  uintptr_t pcs[2] = {(uintptr_t)(void *)here + 1, (uintptr_t)(void *)there + 1};
  int64_t v[2] = {1, 10};
  CHECK_EQ_INT(cprof__builder_add(b, pcs, 2, v, NULL, 0), 0);
  CHECK_EQ_INT(cprof__builder_add(b, pcs, 2, v, labels, 2), 0);
  CHECK_EQ_INT(cprof__builder_add(b, pcs + 1, 1, v, labels, 1), 0);
  for (int i = 0; i < 2 + extra; i++)
    CHECK_EQ_INT(cprof__builder_add_pseudo(b, "[lost]", v, NULL, 0), 0);
  cprof__buf_t out;
  cprof__buf_init(&out);
  CHECK_EQ_INT(cprof__builder_write_proto(b, &out), 0);
  cprof__builder_free(b);
  cprof__pf_t *p = NULL;
  char err[200] = "";
  int rc = cprof__pf_decode(out.data, out.len, &p, err, sizeof err);
  if (rc)
    fprintf(stderr, "decode: %s\n", err);
  CHECK_EQ_INT(rc, 0);
  cprof__buf_free(&out);
  return p;
}

static int64_t sum(const cprof__pf_t *p, size_t i) {
  int64_t s = 0;
  for (size_t k = 0; k < p->n_samples; k++)
    s += p->samples[k].values[i];
  return s;
}

int main(void) {
  cprof__pf_t *p = written_and_decoded(0), *q = written_and_decoded(3);
  if (!p || !q)
    return check_result("test_ops_decoded");
  CHECK_EQ_INT(sum(p, 1), 50);

  cprof__pf_tree_t *t;
  CHECK_EQ_INT(cprof__pf_tree(p, &t), 0);
  CHECK_EQ_INT(t->root->total[0], 5);
  CHECK_EQ_INT(t->root->total[1], 50);
  /* "[lost]" (2) against the pc stacks' outer frame (3): the pcs' frames
   * come first, whatever their names here. */
  CHECK_EQ_INT(t->root->n_children, 2);
  if (t->root->n_children == 2) {
    CHECK_EQ_INT(t->root->children[0]->total[0], 3);
    CHECK_EQ_STR(t->root->children[1]->name, "[lost]");
    CHECK_EQ_INT(t->root->children[1]->self[1], 20);
  }
  cprof__pf_tree_free(t);

  cprof__pf_t *ps[2] = {p, q}, *m, *d;
  char err[200] = "";
  CHECK_EQ_INT(cprof__pf_merge(ps, 2, &m, err, sizeof err), 0);
  CHECK_EQ_INT(m->n_samples, p->n_samples);
  CHECK_EQ_INT(m->n_locations, p->n_locations);
  CHECK_EQ_INT(sum(m, 0), 13);
  CHECK_EQ_INT(m->duration_nanos, 1000);
  CHECK_EQ_INT(m->time_nanos, p->time_nanos);
  cprof__pf_free(m);

  /* q has three "[lost]" more than p: the graph of the difference has
   * that node alone (BASE's samples are in d, negated, labelled
   * pprof::base, as pprof's -diff_base keeps them), and its total is p's. */
  CHECK_EQ_INT(cprof__pf_diff(p, q, &d, err, sizeof err), 0);
  cprof__pf_graph_options_t go = {.sample_index = 0};
  cprof__pf_graph_t *g = NULL;
  CHECK_EQ_INT(cprof__pf_graph(d, &go, &g), 0);
  if (g) {
    CHECK_EQ_INT(g->n_nodes, 1);
    if (g->n_nodes == 1) {
      CHECK_EQ_STR(g->nodes[0]->name, "[lost]");
      CHECK_EQ_INT(g->nodes[0]->flat, 3);
    }
    CHECK_EQ_INT(g->total, sum(p, 0));
  }
  cprof__pf_graph_free(g);
  cprof__pf_free(d);
  CHECK_EQ_INT(cprof__pf_diff(q, q, &d, err, sizeof err), 0);
  g = NULL;
  CHECK_EQ_INT(cprof__pf_graph(d, &go, &g), 0);
  if (g)
    CHECK_EQ_INT(g->n_nodes, 0);
  cprof__pf_graph_free(g);
  cprof__pf_free(d);

  int matched[CPROF_PF_FILTER_N];
  CHECK_EQ_INT(
      cprof__pf_filter(q, &(cprof__pf_filter_t){.tagfocus = "bytes=4kb"}, matched, err, sizeof err),
      0);
  CHECK_EQ_INT(q->n_samples, 2);
  CHECK_EQ_INT(cprof__pf_filter(p, &(cprof__pf_filter_t){.ignore = "^\\[lost\\]$"}, matched, err,
                                sizeof err),
               0);
  CHECK_EQ_INT(sum(p, 0), 3);
  CHECK_EQ_INT(matched[CPROF_PF_FILTER_IGNORE], 1);
  cprof__pf_free(p);
  cprof__pf_free(q);
  return check_result("test_ops_decoded");
}
