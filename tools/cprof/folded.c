/* cprof folded SOURCE: collapsed stacks, one line per distinct stack, root
 * first, frames joined by ';', then a space and the value:
 *
 *   main;serve;parse_request 120
 *
 * the format Brendan Gregg's FlameGraph (flamegraph.pl), inferno and
 * speedscope read. Lines come from the call tree (tree.c), depth first,
 * heaviest child first; a stack whose value is 0 is left out. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "report.h"

static const char usage[] = "usage: cprof folded [OPTIONS] SOURCE...\n"
                            "\n"
                            "Prints the profile as collapsed stacks (a;b;c 123), root first, as\n"
                            "FlameGraph, inferno and speedscope read them.\n";

/* A frame's name in a folded line: escaped as the terminal reports are,
 * and ';' too, which would split the frame in two. */
static void put_frame(cprof__buf_t *out, const char *name) {
  for (const char *s = name, *semi;; s = semi + 1) {
    semi = strchr(s, ';');
    if (!semi) {
      report_put_name(out, s);
      return;
    }
    char *part = strndup(s, (size_t)(semi - s));
    if (part)
      report_put_name(out, part);
    free(part);
    cprof__buf_puts(out, "\\x3b");
  }
}

/* Depth first without recursion: stacks run thousands of frames deep. */
static int write_folded(const cprof__pf_tree_t *t, size_t index, int fd) {
  typedef struct {
    const cprof__pf_tree_node_t *node;
    size_t next_child, prefix_len;
  } frame_t;
  size_t cap = 64, depth = 0;
  frame_t *stack = malloc(cap * sizeof *stack);
  cprof__buf_t path, out;
  cprof__buf_init(&path);
  cprof__buf_init(&out);
  if (!stack)
    return -1;
  stack[depth++] = (frame_t){t->root, 0, 0};
  while (depth > 0 && !out.failed && !path.failed) {
    frame_t *f = &stack[depth - 1];
    if (f->next_child == 0 && f->node != t->root && f->node->self[index] != 0) {
      cprof__buf_append(&out, path.data, path.len);
      cprof__buf_printf(&out, " %lld\n", (long long)f->node->self[index]);
    }
    if (f->next_child == f->node->n_children) {
      path.len = f->prefix_len;
      depth--;
      continue;
    }
    const cprof__pf_tree_node_t *child = f->node->children[f->next_child++];
    if (child->total[index] == 0)
      continue;
    if (depth == cap) {
      frame_t *grown = realloc(stack, 2 * cap * sizeof *stack);
      if (!grown)
        break;
      stack = grown;
      cap *= 2;
    }
    size_t prefix = path.len;
    if (prefix)
      cprof__buf_putc(&path, ';');
    put_frame(&path, child->name);
    stack[depth++] = (frame_t){child, 0, prefix};
    if (out.len >= 1 << 20) { /* written as it goes, for profiles of any size */
      if (write(fd, out.data, out.len) != (ssize_t)out.len)
        break;
      out.len = 0;
    }
  }
  int rc = depth == 0 && !out.failed && !path.failed &&
                   write(fd, out.data, out.len) == (ssize_t)out.len
               ? 0
               : -1;
  free(stack);
  cprof__buf_free(&path);
  cprof__buf_free(&out);
  return rc;
}

int cmd_folded(int argc, char **argv) {
  report_opts_t o;
  report_opts_init(&o);
  char **sources = calloc((size_t)argc, sizeof *sources);
  int n, rc;
  if (!sources)
    return 1;
  if (report_args("folded", usage, &o, NULL, NULL, argc, argv, sources, &n, &rc) != 0)
    goto done;
  rc = 2;
  if (n == 0) {
    fprintf(stderr, "cprof folded: which profile? (cprof folded --help)\n");
    goto done;
  }
  cprof__pf_t *p = NULL;
  cprof__pf_tree_t *t = NULL;
  rc = report_load("folded", sources, n, &p);
  if (rc == 0)
    rc = report_prepare("folded", p, &o);
  if (rc == 0 && cprof__pf_tree(p, &t) != 0) {
    fprintf(stderr, "cprof folded: out of memory\n");
    rc = 1;
  }
  if (rc == 0 && write_folded(t, o.index, STDOUT_FILENO) != 0) {
    fprintf(stderr, "cprof folded: writing the stacks failed\n");
    rc = 1;
  }
  cprof__pf_tree_free(t);
  cprof__pf_free(p);
done:
  free(sources);
  return rc;
}
