/* The profile library on any bytes: the decoder (src/model/decode.c)
 * must return, with a one-line error or with a model whose every pointer
 * holds; and on whatever it accepts, the reading side must too: the graph
 * at two granularities and its trimming, the call tree and the diff tree,
 * merge, diff, the filters and pprof's renaming. Everything they return is
 * walked, so that AddressSanitizer sees a bad pointer. The corpus holds
 * cprof's own profiles, gzip and not, of every kind. */
#include "fuzz.h"

#include "model/demangle.h"
#include "model/model.h"

static size_t touch(const char *s) { return strlen(s); }

static size_t walk_profile(const cprof__pf_t *p) {
  size_t sum = 0;
  for (size_t i = 0; i < p->n_sample_types; i++)
    sum += touch(p->sample_types[i].type) + touch(p->sample_types[i].unit);
  for (size_t i = 0; i < p->n_samples; i++) {
    const cprof__pf_sample_t *s = &p->samples[i];
    for (size_t k = 0; k < s->n_locations; k++)
      sum += s->locations[k]->n_lines;
    for (size_t k = 0; k < p->n_sample_types; k++)
      sum += (size_t)s->values[k];
    for (size_t k = 0; k < s->n_labels; k++)
      sum += touch(s->labels[k].key) + (s->labels[k].str ? touch(s->labels[k].str) : 0);
  }
  for (size_t i = 0; i < p->n_locations; i++) {
    const cprof__pf_location_t *l = &p->locations[i];
    if (l->mapping)
      sum += touch(l->mapping->file);
    for (size_t k = 0; k < l->n_lines; k++)
      if (l->lines[k].function)
        sum += touch(l->lines[k].function->name) + touch(l->lines[k].function->filename);
  }
  for (size_t i = 0; i < p->n_comments; i++)
    sum += touch(p->comments[i]);
  return sum;
}

static size_t walk_graph(const cprof__pf_graph_t *g) {
  size_t sum = 0;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const cprof__pf_node_t *n = g->nodes[i];
    sum += touch(n->name) + (size_t)n->flat;
    for (size_t k = 0; k < n->n_in; k++)
      sum += touch(n->in[k]->from->name);
    for (size_t k = 0; k < n->n_out; k++)
      sum += touch(n->out[k]->to->name);
  }
  return sum;
}

/* The tree without recursion: fuzzed stacks are deep. */
static size_t walk_tree(const cprof__pf_tree_t *t) {
  size_t sum = 0, n = 0, cap = 64;
  const cprof__pf_tree_node_t **stack = malloc(cap * sizeof *stack);
  if (!stack)
    abort();
  stack[n++] = t->root;
  while (n) {
    const cprof__pf_tree_node_t *x = stack[--n];
    sum += touch(x->name) + touch(x->file) + (size_t)x->total[0];
    for (size_t i = 0; i < x->n_children; i++) {
      if (n == cap && !(stack = realloc(stack, (cap *= 2) * sizeof *stack)))
        abort();
      stack[n++] = x->children[i];
    }
  }
  free(stack);
  return sum;
}

/* The operations on a profile the decoder accepted; their own failures
 * (a profile with no sample types has no graph) are fine, crashes not. */
static size_t operate(cprof__pf_t *p) {
  size_t sum = 0;
  char err[256];
  cprof__pf_t *m = NULL, *d = NULL;
  cprof__pf_t *twice[2] = {p, p};
  if (cprof__pf_merge(twice, 2, &m, err, sizeof err) == 0)
    sum += walk_profile(m);
  if (cprof__pf_diff(p, p, &d, err, sizeof err) == 0)
    sum += walk_profile(d);
  cprof__pf_tree_t *t = NULL;
  if (cprof__pf_tree(p, &t) == 0 && t->n_values)
    sum += walk_tree(t);
  cprof__pf_tree_free(t);
  t = NULL;
  if (cprof__pf_tree_diff(p, p, &t) == 0 && t->n_values)
    sum += walk_tree(t);
  cprof__pf_tree_free(t);
  for (int gran = CPROF_PF_FUNCTIONS; gran <= CPROF_PF_ADDRESSES && p->n_sample_types; gran += 2) {
    cprof__pf_graph_options_t go = {.sample_index = p->n_sample_types - 1,
                                    .granularity = (cprof__pf_granularity_t)gran,
                                    .mean = gran > 1};
    cprof__pf_graph_t *g = NULL;
    if (cprof__pf_graph(d ? d : p, &go, &g) == 0) {
      cprof__pf_trim_t trim = {.nodefraction = 0.005,
                               .edgefraction = 0.001,
                               .nodecount = 3,
                               .visual = gran == CPROF_PF_FUNCTIONS};
      cprof__pf_trimmed_t r;
      if (cprof__pf_graph_trim(g, &trim, &r) == 0)
        sum += walk_graph(g);
    }
    cprof__pf_graph_free(g);
  }
  cprof__pf_filter_t f = {.focus = "a|main", .hide = "^_", .tagfocus = "bytes=1b:"};
  int matched[CPROF_PF_FILTER_N];
  if (cprof__pf_filter(p, &f, matched, err, sizeof err) == 0)
    sum += walk_profile(p);
  if (cprof__pf_demangle(p, CPROF_PF_DEMANGLE_SIMPLIFIED) == 0)
    sum += walk_profile(p);
  cprof__pf_free(m);
  cprof__pf_free(d);
  return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  cprof__pf_t *p;
  char err[256];
  if (cprof__pf_decode(data, n, &p, err, sizeof err) != 0) {
    if (err[0] == '\0' || strchr(err, '\n'))
      abort(); /* an error must say what, on one line */
    return 0;
  }
  size_t sum = walk_profile(p) + operate(p);
  cprof__pf_free(p);
  volatile size_t sink = sum; /* so that nothing above is optimized away */
  (void)sink;
  return 0;
}
