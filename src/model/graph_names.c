/* The names of a graph's nodes, as pprof prints them: a file name cleaned
 * as Go's filepath does, and NodeInfo.PrintableName. */
#include <stdio.h>
#include <string.h>

#include "core/path.h"
#include "model/graph_internal.h"

/* Go's filepath.Clean: the shortest equivalent path, lexically. */
static char *clean_path(cprof__arena_t *a, const char *p) {
  size_t n = strlen(p);
  char *out = cprof__arena_alloc(a, n + 2);
  if (!out)
    return NULL;
  int rooted = p[0] == '/';
  size_t w = 0, r = 0, dotdot = 0;
  if (rooted) {
    out[w++] = '/';
    r = 1;
    dotdot = 1;
  }
  while (r < n) {
    if (p[r] == '/') {
      r++;
    } else if (p[r] == '.' && (r + 1 == n || p[r + 1] == '/')) {
      r++;
    } else if (p[r] == '.' && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
      r += 2;
      if (w > dotdot) {
        w--;
        while (w > dotdot && out[w] != '/')
          w--;
      } else if (!rooted) {
        if (w > 0)
          out[w++] = '/';
        out[w++] = '.';
        out[w++] = '.';
        dotdot = w;
      }
    } else {
      if ((rooted && w != 1) || (!rooted && w != 0))
        out[w++] = '/';
      for (; r < n && p[r] != '/'; r++)
        out[w++] = p[r];
    }
  }
  if (w == 0)
    out[w++] = '.';
  out[w] = '\0';
  return out;
}

/* report.newGraph's trimPath with no -trim_path or -source_path: only the
 * prefixes Bazel and friends leave. */
static const char *trim_path(const char *p) {
  static const char *const prefixes[] = {"/proc/self/cwd/./", "/proc/self/cwd/"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (strncmp(p, prefixes[i], strlen(prefixes[i])) == 0)
      return p + strlen(prefixes[i]);
  return p;
}

/* NodeInfo.PrintableName: the address as %016x, the function, then
 * file:line, the file, or the object file's base name in brackets, and
 * "<unknown>" when there is nothing at all. */
char *cprof__graph_printable_name(cprof__arena_t *a, const node_t *x) {
  const cprof__pf_node_t *n = &x->n;
  char addr[24] = "";
  if (n->address)
    snprintf(addr, sizeof addr, "%016llx", (unsigned long long)n->address);
  const char *obj = "";
  size_t objlen = 0;
  if (x->objfile && x->objfile[0]) {
    obj = cprof__path_base(x->objfile, &objlen);
  }
  size_t cap = strlen(addr) + strlen(n->function) + strlen(n->file) + objlen + 48;
  char *s = cprof__arena_alloc(a, cap);
  if (!s)
    return NULL;
  size_t w = 0;
#define PART(str)                                                                                  \
  do {                                                                                             \
    if (w)                                                                                         \
      s[w++] = ' ';                                                                                \
    w += (size_t)snprintf(s + w, cap - w, "%s", (str));                                            \
  } while (0)
  if (addr[0])
    PART(addr);
  if (n->function[0])
    PART(n->function);
  if (n->line != 0) {
    if (w)
      s[w++] = ' ';
    w += (size_t)snprintf(s + w, cap - w, "%s:%lld", n->file, (long long)n->line);
  } else if (n->file[0]) {
    PART(n->file);
  } else if (n->function[0]) {
    /* The name alone. */
  } else if (objlen) {
    if (w)
      s[w++] = ' ';
    w += (size_t)snprintf(s + w, cap - w, "[%.*s]", (int)objlen, obj);
  } else {
    PART("<unknown>");
  }
#undef PART
  s[w] = '\0';
  return s;
}

char *cprof__graph_file_name(cprof__arena_t *a, const char *filename) {
  return clean_path(a, trim_path(filename));
}
