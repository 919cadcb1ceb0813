/* Writes a viewer page for a call tree made by hand, for viewer_browser.sh:
 *   viewer_page [--diff | --big N] OUT.html
 * A heap profile's four sample types; a hot function with C++ in its name
 * under two callers, and names that try to break the page: a </script>
 * with a script after it, quotes and an ampersand, a newline, bytes that
 * are not UTF-8. --diff adds BASE values (the hot function grew, the cold
 * one shrank); --big N makes a wide and deep tree of about N nodes instead,
 * to see a large profile load. Linked with cprof_offline, as the cprof command
 * is: the page's assets must be in it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tree_fixture.h"
#include "ui/viewer.h"

static cprof__value_type_t heap_types[] = {
    {"alloc_objects", "count"},
    {"alloc_space", "bytes"},
    {"inuse_objects", "count"},
    {"inuse_space", "bytes"},
};

#define MB (1024 * 1024)

static void add(cprof__pf_tree_t *t, cprof__pf_tree_node_t *parent, const char *name,
                const char *file, int64_t objects, int64_t bytes, int64_t base_scale) {
  /* alloc_* twice inuse_*; BASE is NEW times base_scale / 4. */
  int64_t v[8] = {2 * objects, 2 * bytes, objects, bytes};
  for (int i = 0; i < 4; i++)
    v[4 + i] = v[i] * base_scale / 4;
  fixture_node(t, parent, name, file, v);
}

static void small(cprof__pf_tree_t *t) {
  cprof__pf_tree_node_t *root = t->root;
  cprof__pf_tree_node_t *m = fixture_node(t, root, "main", "main.c", NULL);
  add(t, m, "hot_function<std::map<int, char>>&", "hot.cc", 600, MB + MB / 2, 2);
  add(t, m->children[0], "malloc", "malloc.c", 50, 50 * 1024, 4);
  add(t, m, "</script><script>window.__pwned=1;alert(1)</script>", "evil<file>.c", 40, 160 * 1024,
      4);
  add(t, m, "say \"hi\" & 'bye'", "quotes.c", 30, 120 * 1024, 4);
  add(t, m, "line1\nline2", "newline.c", 20, 100 * 1024, 4);
  add(t, m, "bad\xff\xfe caf\xc3\xa9", "bytes.c", 20, 90 * 1024, 4);
  add(t, m, "cold_function", "cold.c", 100, 200 * 1024, 12);
  cprof__pf_tree_node_t *st = fixture_node(t, root, "start_thread", "", NULL);
  cprof__pf_tree_node_t *w = fixture_node(t, st, "worker", "worker.c", NULL);
  add(t, w, "hot_function<std::map<int, char>>&", "hot.cc", 200, MB / 2, 2);
}

/* About n nodes: fanout 6, depth up to 9, values from a fixed LCG. */
static unsigned long long seed = 12345;
static unsigned next(void) {
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)(seed >> 33);
}
static void big(cprof__pf_tree_t *t, cprof__pf_tree_node_t *n, int depth, size_t limit) {
  char name[64];
  for (int c = 0; c < 6 && t->n_nodes < limit; c++) {
    snprintf(name, sizeof name, "fn_%u_%d<T>::call", next() % 5000, depth);
    add(t, n, name, "big.c", next() % 100, next() % 100000, 4);
    if (depth < 9 && next() % 3 != 0)
      big(t, n->children[n->n_children - 1], depth + 1, limit);
  }
}

int main(int argc, char **argv) {
  int diff = 0;
  size_t n_big = 0;
  int i = 1;
  for (; i < argc - 1; i++) {
    if (strcmp(argv[i], "--diff") == 0) {
      diff = 1;
    } else if (strcmp(argv[i], "--big") == 0 && i + 1 < argc - 1) {
      n_big = strtoul(argv[++i], NULL, 10);
    } else {
      break;
    }
  }
  if (i != argc - 1) {
    fprintf(stderr, "usage: viewer_page [--diff | --big N] OUT.html\n");
    return 2;
  }
  cprof__pf_tree_t *t = fixture_tree(diff ? 8 : 4);
  if (n_big)
    while (t->n_nodes < n_big)
      big(t, t->root, 1, n_big);
  else
    small(t);
  fixture_totals(t, t->root);

  cprof__pf_t p = {0};
  p.sample_types = heap_types;
  p.n_sample_types = 4;
  p.default_sample_type = "";
  const char *comments[] = {"made by tests/ui/viewer_page.c <not markup>"};
  p.comments = comments;
  p.n_comments = 1;
  p.duration_nanos = 30000000000;

  cprof__buf_t json, page;
  cprof__buf_init(&json);
  cprof__buf_init(&page);
  int rc = cprof__viewer_json(t, &p, diff ? "heap diff </title>" : "heap </title>", diff, &json);
  if (rc == 0)
    rc = cprof__viewer_page(json.data, json.len, diff ? "heap diff </title>" : "heap </title>",
                            &page);
  FILE *f = rc == 0 ? fopen(argv[argc - 1], "w") : NULL;
  if (rc == 0 && (!f || fwrite(page.data, 1, page.len, f) != page.len || fclose(f) != 0))
    rc = -EIO;
  if (rc != 0)
    fprintf(stderr, "viewer_page: %s\n", strerror(-rc));
  cprof__buf_free(&json);
  cprof__buf_free(&page);
  fixture_free(t);
  return rc == 0 ? 0 : 1;
}
