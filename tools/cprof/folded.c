/* cprof folded SOURCE: collapsed stacks, one line per distinct stack, root
 * first, frames joined by ';', then a space and the value:
 *
 *   main;serve;parse_request 120
 *
 * the format Brendan Gregg's FlameGraph (flamegraph.pl), inferno and
 * speedscope read. Lines come from the call tree (src/model/tree.c), depth first,
 * heaviest child first; a stack whose value is 0 is left out. */
#include <stdlib.h>
#include <string.h>

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
int report_folded(cprof__buf_t *out, cprof__pf_t *p, report_opts_t *o, const char *arg, char *err,
                  size_t errlen) {
  typedef struct {
    const cprof__pf_tree_node_t *node;
    size_t next_child, prefix_len;
  } frame_t;
  (void)arg;
  cprof__pf_tree_t *t = NULL;
  size_t cap = 64, depth = 0, index = o->index;
  frame_t *stack = malloc(cap * sizeof *stack);
  cprof__buf_t path;
  cprof__buf_init(&path);
  if (!stack || cprof__pf_tree(p, &t) != 0) {
    free(stack);
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  stack[depth++] = (frame_t){t->root, 0, 0};
  while (depth > 0 && !out->failed && !path.failed) {
    frame_t *f = &stack[depth - 1];
    if (f->next_child == 0 && f->node != t->root && f->node->self[index] != 0) {
      cprof__buf_append(out, path.data, path.len);
      cprof__buf_printf(out, " %lld\n", (long long)f->node->self[index]);
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
  }
  int rc = depth == 0 && !path.failed ? 0 : 1;
  if (rc)
    snprintf(err, errlen, "out of memory");
  free(stack);
  cprof__buf_free(&path);
  cprof__pf_tree_free(t);
  return rc;
}

int cmd_folded(int argc, char **argv) {
  return report_main("folded", usage, 0, NULL, NULL, report_folded, argc, argv);
}
