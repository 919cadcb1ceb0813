/* Call trees made by hand for the viewer's tests, in the shape
 * cprof__pf_tree builds (model/model.h): a node's total is its self plus its
 * children's totals, for every value. */
#ifndef CPROF_TESTS_UI_TREE_FIXTURE_H
#define CPROF_TESTS_UI_TREE_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

/* A node with self values self[0..t->n_values), added under parent (NULL
 * for the root). Totals are filled in by fixture_totals. */
static cprof__pf_tree_node_t *fixture_node(cprof__pf_tree_t *t, cprof__pf_tree_node_t *parent,
                                           const char *name, const char *file,
                                           const int64_t *self) {
  cprof__pf_tree_node_t *n = cprof__arena_alloc(t->arena, sizeof *n);
  n->name = cprof__arena_strdup(t->arena, name);
  n->file = cprof__arena_strdup(t->arena, file);
  n->total = cprof__arena_array(t->arena, t->n_values, sizeof *n->total);
  n->self = cprof__arena_array(t->arena, t->n_values, sizeof *n->self);
  n->children = cprof__arena_array(t->arena, 16, sizeof *n->children);
  if (self)
    memcpy(n->self, self, t->n_values * sizeof *self);
  if (parent && parent->n_children == 16)
    abort(); /* room for 16 children: enough for a test */
  if (parent)
    parent->children[parent->n_children++] = n;
  else
    t->root = n;
  t->n_nodes++;
  return n;
}

static void fixture_totals(cprof__pf_tree_t *t, cprof__pf_tree_node_t *n) {
  for (size_t v = 0; v < t->n_values; v++)
    n->total[v] = n->self[v];
  for (size_t c = 0; c < n->n_children; c++) {
    fixture_totals(t, n->children[c]);
    for (size_t v = 0; v < t->n_values; v++)
      n->total[v] += n->children[c]->total[v];
  }
}

static cprof__pf_tree_t *fixture_tree(size_t n_values) {
  cprof__pf_tree_t *t = calloc(1, sizeof *t);
  t->arena = cprof__arena_new(0);
  t->n_values = n_values;
  fixture_node(t, NULL, "", "", NULL);
  return t;
}

static void fixture_free(cprof__pf_tree_t *t) {
  cprof__arena_free(t->arena);
  free(t);
}

#endif
