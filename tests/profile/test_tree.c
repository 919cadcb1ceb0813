/* The call tree (src/model/tree.c): totals, selfs, names as pprof's
 * -functions gives them, order, the differential tree, and stacks deep
 * enough that a recursive build would overflow. */
#include <errno.h>

#include "check.h"
#include "profile/pf_fixture.h"

static const cprof__pf_tree_node_t *child(const cprof__pf_tree_node_t *n, size_t i) {
  return n && i < n->n_children ? n->children[i] : NULL;
}

static const char *name(const cprof__pf_tree_node_t *n) { return n ? n->name : "(none)"; }

/* Sums of self over the whole tree, walked with a stack of our own; and
 * checks at every node that its total is its self and its children's. */
static void sum_selfs(const cprof__pf_tree_t *t, int64_t *self, size_t *n_nodes) {
  size_t cap = t->n_nodes + 1, top = 0, bad = 0;
  const cprof__pf_tree_node_t **stack = malloc(cap * sizeof *stack);
  memset(self, 0, t->n_values * sizeof *self);
  *n_nodes = 0;
  stack[top++] = t->root;
  while (top) {
    const cprof__pf_tree_node_t *n = stack[--top];
    ++*n_nodes;
    for (size_t v = 0; v < t->n_values; v++) {
      int64_t sum = n->self[v];
      for (size_t c = 0; c < n->n_children; c++)
        sum += n->children[c]->total[v];
      bad += sum != n->total[v];
      self[v] += n->self[v];
    }
    for (size_t c = 0; c < n->n_children && top < cap; c++)
      stack[top++] = n->children[c];
  }
  CHECK_EQ_INT(bad, 0);
  free(stack);
}

static void test_basic(void) {
  fx_t f = fx_new("samples/count cpu/nanoseconds", 32);
  fx_sample(&f, "main;work;leaf", (int64_t[]){1, 10});
  fx_sample(&f, "main;work>inl", (int64_t[]){2, 20});
  fx_sample(&f, "main;@/lib/libc.so.6", (int64_t[]){3, 30});
  fx_sample(&f, "main;#abc", (int64_t[]){4, 40});
  fx_sample(&f, "main;work", (int64_t[]){5, 50});
  fx_sample(&f, "", (int64_t[]){6, 60});
  fx_sample(&f, "main;never", (int64_t[]){0, 0}); /* all zero: no node */
  cprof__pf_tree_t *t;
  CHECK_EQ_INT(cprof__pf_tree(f.p, &t), 0);
  cprof__pf_free(f.p); /* the tree stands alone */
  CHECK_EQ_INT(t->n_values, 2);
  const cprof__pf_tree_node_t *r = t->root, *main_ = child(r, 0);
  CHECK_EQ_STR(r->name, "");
  CHECK_EQ_INT(r->total[0], 21);
  CHECK_EQ_INT(r->total[1], 210);
  CHECK_EQ_INT(r->self[0], 6);
  CHECK_EQ_INT(r->n_children, 1);
  CHECK_EQ_STR(name(main_), "main");
  CHECK_EQ_INT(main_->total[1], 150);
  CHECK_EQ_INT(main_->self[1], 0);
  /* Heaviest first by cpu, the last type. */
  CHECK_EQ_INT(main_->n_children, 3);
  CHECK_EQ_STR(name(child(main_, 0)), "work");
  CHECK_EQ_STR(name(child(main_, 1)), "<unknown>");
  CHECK_EQ_STR(name(child(main_, 2)), "[libc.so.6]");
  const cprof__pf_tree_node_t *work = child(main_, 0);
  CHECK_EQ_INT(work->total[0], 8);
  CHECK_EQ_INT(work->total[1], 80);
  CHECK_EQ_INT(work->self[1], 50);
  CHECK_EQ_STR(name(child(work, 0)), "inl"); /* inlined: a node of its own */
  CHECK_EQ_INT(child(work, 0)->total[1], 20);
  CHECK_EQ_STR(name(child(work, 1)), "leaf");
  CHECK_EQ_INT(child(work, 1)->self[0], 1);
  CHECK_EQ_INT(child(work, 1)->n_children, 0);
  int64_t self[2];
  size_t n;
  sum_selfs(t, self, &n);
  CHECK_EQ_INT(self[0], r->total[0]);
  CHECK_EQ_INT(self[1], r->total[1]);
  CHECK_EQ_INT(n, t->n_nodes);
  CHECK_EQ_INT(t->n_nodes, 7); /* root main work inl leaf <unknown> [libc.so.6] */
  cprof__pf_tree_free(t);
}

static void test_names_and_order(void) {
  fx_t f = fx_new("samples/count cpu/nanoseconds", 32);
  fx_sample(&f, "main;f(a.c)", (int64_t[]){1, 5});
  fx_sample(&f, "main;f(b.c)", (int64_t[]){1, 5});
  fx_sample(&f, "main;(x.c)@/usr/lib/libm.so.6/", (int64_t[]){1, 5}); /* no name: mapping */
  fx_sample(&f, "main;(x.c)", (int64_t[]){9, 1});                     /* neither */
  fx_sample(&f, "main;r;r;r", (int64_t[]){1, 2});
  f.p->default_sample_type = "samples";
  cprof__pf_tree_t *t;
  CHECK_EQ_INT(cprof__pf_tree(f.p, &t), 0);
  const cprof__pf_tree_node_t *main_ = child(t->root, 0);
  /* By samples, the default type here; ties by name, then file. */
  CHECK_EQ_INT(main_->n_children, 5);
  CHECK_EQ_STR(name(child(main_, 0)), "<unknown>");
  CHECK_EQ_STR(name(child(main_, 1)), "[libm.so.6]");
  CHECK_EQ_STR(name(child(main_, 2)), "f");
  CHECK_EQ_STR(child(main_, 2)->file, "a.c");
  CHECK_EQ_STR(name(child(main_, 3)), "f");
  CHECK_EQ_STR(child(main_, 3)->file, "b.c");
  CHECK_EQ_STR(name(child(main_, 4)), "r");
  /* Recursion is a chain. */
  const cprof__pf_tree_node_t *r = child(main_, 4);
  CHECK_EQ_STR(name(child(r, 0)), "r");
  CHECK_EQ_STR(name(child(child(r, 0), 0)), "r");
  CHECK_EQ_INT(child(child(r, 0), 0)->self[1], 2);
  CHECK_EQ_INT(t->n_nodes, 9);
  cprof__pf_tree_free(t);
  cprof__pf_free(f.p);
}

/* 10000 frames deep: f0 (the root's child) to f9999, and a recursion as
 * deep through one location. */
static void test_deep(void) {
  enum { DEPTH = 10000 };
  fx_t f = fx_new("samples/count", DEPTH + 8);
  char *stack = malloc(DEPTH * 8), *rec = malloc(DEPTH * 2 + 8), *s = stack;
  for (int i = 0; i < DEPTH; i++)
    s += sprintf(s, "%sf%d", i ? ";" : "", i);
  strcpy(rec, "r");
  for (int i = 1; i < DEPTH; i++)
    strcpy(rec + 2 * i - 1, ";r");
  fx_sample(&f, stack, (int64_t[]){1});
  fx_sample(&f, stack, (int64_t[]){2});
  fx_sample(&f, rec, (int64_t[]){4});
  free(stack);
  free(rec);
  CHECK_EQ_INT(f.p->n_samples, 3);
  CHECK_EQ_INT(f.p->samples[0].n_locations, DEPTH);
  cprof__pf_tree_t *t;
  CHECK_EQ_INT(cprof__pf_tree(f.p, &t), 0);
  CHECK_EQ_INT(t->n_nodes, 1 + 2 * DEPTH);
  CHECK_EQ_INT(t->root->total[0], 7);
  CHECK_EQ_STR(name(child(t->root, 0)), "r"); /* 4 against 3 */
  const cprof__pf_tree_node_t *n = child(t->root, 1);
  int depth = 0, wrong = 0;
  char want[16];
  for (; n; n = child(n, 0), depth++) {
    snprintf(want, sizeof want, "f%d", depth);
    wrong += strcmp(n->name, want) != 0 || n->total[0] != 3 || n->n_children > 1;
    if (!n->n_children)
      CHECK_EQ_INT(n->self[0], 3);
  }
  CHECK_EQ_INT(depth, DEPTH);
  CHECK_EQ_INT(wrong, 0);
  int64_t self;
  size_t count;
  sum_selfs(t, &self, &count);
  CHECK_EQ_INT(self, 7);
  CHECK_EQ_INT(count, t->n_nodes);
  cprof__pf_tree_free(t);
  cprof__pf_free(f.p);
}

static void test_diff(void) {
  fx_t base = fx_new("samples/count cpu/nanoseconds", 16);
  fx_t new_ = fx_new("samples/count cpu/nanoseconds", 16);
  fx_sample(&base, "main;a", (int64_t[]){5, 50});
  fx_sample(&base, "main;gone", (int64_t[]){1, 10});
  fx_sample(&base, "main;lost", (int64_t[]){2, 20});
  fx_sample(&new_, "main;a", (int64_t[]){7, 70});
  fx_sample(&new_, "main;b", (int64_t[]){3, 30});
  cprof__pf_tree_t *t;
  CHECK_EQ_INT(cprof__pf_tree_diff(base.p, new_.p, &t), 0);
  CHECK_EQ_INT(t->n_values, 4);
  const cprof__pf_tree_node_t *r = t->root, *main_ = child(r, 0);
  CHECK_EQ_INT(r->total[0], 10);
  CHECK_EQ_INT(r->total[1], 100);
  CHECK_EQ_INT(r->total[2], 8);
  CHECK_EQ_INT(r->total[3], 80);
  /* NEW's cpu orders, BASE's breaks the ties among what is gone. */
  CHECK_EQ_INT(main_->n_children, 4);
  CHECK_EQ_STR(name(child(main_, 0)), "a");
  CHECK_EQ_STR(name(child(main_, 1)), "b");
  CHECK_EQ_STR(name(child(main_, 2)), "lost");
  CHECK_EQ_STR(name(child(main_, 3)), "gone");
  const cprof__pf_tree_node_t *a = child(main_, 0), *gone = child(main_, 3);
  CHECK_EQ_INT(a->self[1], 70);
  CHECK_EQ_INT(a->self[3], 50);
  CHECK_EQ_INT(gone->total[1], 0);
  CHECK_EQ_INT(gone->total[3], 10);
  int64_t self[4];
  size_t n;
  sum_selfs(t, self, &n);
  for (int i = 0; i < 4; i++)
    CHECK_EQ_INT(self[i], r->total[i]);
  cprof__pf_tree_free(t);

  fx_t other = fx_new("alloc_space/bytes", 4);
  t = (cprof__pf_tree_t *)1;
  CHECK_EQ_INT(cprof__pf_tree_diff(other.p, new_.p, &t), -EINVAL);
  CHECK(t == NULL);
  cprof__pf_free(other.p);
  cprof__pf_free(base.p);
  cprof__pf_free(new_.p);
}

int main(void) {
  test_basic();
  test_names_and_order();
  test_deep();
  test_diff();
  return check_result("test_tree");
}
