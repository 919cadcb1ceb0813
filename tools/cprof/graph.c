/* cprof graph: the call graph `go tool pprof -svg/-png/-dot` draws
 * (pprof's internal/graph/dotgraph.go with report.GetDOT's options):
 * boxes sized by flat, labelled with flat and cum, edges as wide as their
 * weight, dotted where they go through dropped nodes, coloured from grey
 * to red by their share of the total, and a legend with the report's
 * header lines. Graphviz's library lays it out and renders it (loaded
 * when first asked: graphviz.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "graph.h"
#include "graphviz.h"
#include "model/measure.h"
#include "model/model.h"
#include "report.h"
#include "save.h"

/* ---- text for DOT ---------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at s (at most n bytes), 0 when
 * the bytes there are not one. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len = 0;
  unsigned min;
  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf)
    len = 2, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef)
    len = 3, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4)
    len = 4, min = 0x10000;
  else
    return 0;
  if (len > n)
    return 0;
  unsigned cp = c & (0x7f >> len);
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

/* A name inside a quoted DOT string: pprof's escapeForDot (backslash and
 * quote escaped, a newline becomes a left-justified line break), and, so
 * that whatever bytes a name holds the SVG stays well-formed XML, bytes
 * that are not UTF-8 become U+FFFD, other control characters show as
 * \xNN, and for Graphviz's rendering (which reads entities in labels) an
 * ampersand is written as the entity "&amp;". `split` also breaks the
 * line at "::" and ".", as pprof's multilinePrintableName does. */
static void put_dot_name(cprof__buf_t *b, const char *name, int entities, int split) {
  const unsigned char *s = (const unsigned char *)name;
  size_t n = strlen(name);
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    if (split && c == ':' && i + 1 < n && s[i + 1] == ':') {
      cprof__buf_puts(b, "\\n");
      i += 2;
    } else if (split && c == '.') {
      cprof__buf_puts(b, "\\n");
      i++;
    } else if (c == '\\') {
      cprof__buf_puts(b, "\\\\");
      i++;
    } else if (c == '"') {
      cprof__buf_puts(b, "\\\"");
      i++;
    } else if (c == '\n') {
      cprof__buf_puts(b, "\\l");
      i++;
    } else if (c < 0x20 || c == 0x7f) {
      cprof__buf_printf(b, "\\\\x%02x", c);
      i++;
    } else if (c == '&' && entities) {
      cprof__buf_puts(b, "&amp;");
      i++;
    } else {
      size_t len = utf8_len(s + i, n - i);
      if (len == 0) {
        cprof__buf_puts(b, "\xef\xbf\xbd");
        i++;
      } else {
        cprof__buf_append(b, name + i, len);
        i += len;
      }
    }
  }
}

/* ---- pprof's ShortenFunctionName ------------------------------------------- */

static int is_word(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* goRegExp, ^(?:[\w\-\.]+\/)+(.+): drops a Go package path. */
static const char *shorten_go(const char *f) {
  const char *keep = NULL, *p = f;
  for (;;) {
    const char *q = p;
    while (is_word((unsigned char)*q) || *q == '-' || *q == '.')
      q++;
    if (q == p || *q != '/' || q[1] == '\0')
      break;
    keep = p = q + 1;
  }
  return keep;
}

/* cppRegExp, ^(?:[_a-zA-Z]\w*::)+(_*[A-Z]\w*::~?[_a-zA-Z]\w*(?:<.*>)?):
 * keeps Class::method of a C++ name. */
static const char *shorten_cpp(const char *f, size_t *len) {
  /* The namespaces, then backtrack to the last that leaves a match. */
  const char *starts[256];
  size_t n = 0;
  const char *p = f;
  while (n < 256) {
    const char *q = p;
    if (!(*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
      break;
    while (is_word((unsigned char)*q))
      q++;
    if (q[0] != ':' || q[1] != ':')
      break;
    p = q + 2;
    starts[n++] = p;
  }
  for (size_t k = n; k > 0; k--) {
    const char *q = starts[k - 1];
    while (*q == '_')
      q++;
    if (!(*q >= 'A' && *q <= 'Z'))
      continue;
    while (is_word((unsigned char)*q))
      q++;
    if (q[0] != ':' || q[1] != ':')
      continue;
    q += 2;
    if (*q == '~')
      q++;
    if (!(*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
      continue;
    while (is_word((unsigned char)*q))
      q++;
    if (*q == '<') {
      const char *gt = strrchr(q, '>');
      if (gt)
        q = gt + 1;
    }
    *len = (size_t)(q - starts[k - 1]);
    return starts[k - 1];
  }
  return NULL;
}

/* ShortenFunctionName for the names C and C++ programs have: the
 * anonymous namespace, Go package paths and C++ namespaces go. (Java's
 * rule is left out: no C name matches it.) The result is in buf. */
static const char *shorten(const char *f, char *buf, size_t cap) {
  static const char anon[] = "(anonymous namespace)::";
  if (strncmp(f, anon, sizeof anon - 1) == 0)
    f += sizeof anon - 1;
  const char *g = shorten_go(f);
  if (g)
    return g;
  size_t len = 0;
  const char *c = shorten_cpp(f, &len);
  if (c && len < cap) {
    memcpy(buf, c, len);
    buf[len] = '\0';
    return buf;
  }
  return f;
}

/* ---- pprof's dotColor ------------------------------------------------------- */

static void dot_color(double score, int background, char out[8]) {
  const double shift = 0.7;
  double saturation = background ? 0.1 : 1.0, value = background ? 0.93 : 0.7;
  if (score > 1.0)
    score = 1.0;
  if (score < -1.0)
    score = -1.0;
  if (isnan(score))
    score = 0;
  if (fabs(score) < 0.2)
    saturation *= fabs(score) / 0.2;
  if (score > 0.0)
    score = pow(score, 1.0 - shift);
  if (score < 0.0)
    score = -pow(-score, 1.0 - shift);
  double r, g, b;
  if (score < 0.0) {
    g = value;
    r = value * (1 + saturation * score);
  } else {
    r = value;
    g = value * (1 - saturation * score);
  }
  b = value * (1 - saturation);
  snprintf(out, 8, "#%02x%02x%02x", (unsigned)(uint8_t)(r * 255.0), (unsigned)(uint8_t)(g * 255.0),
           (unsigned)(uint8_t)(b * 255.0));
}

/* ---- the DOT ------------------------------------------------------------------ */

static void fmt_value(const graph_doc_t *d, int64_t v, char *buf, size_t len) {
  report_value(buf, len, v, d->o, d->unit);
}

static void pct(int64_t v, int64_t total, char *buf, size_t len) {
  char tmp[32];
  cprof__measure_percentage(v, total, tmp, sizeof tmp);
  const char *s = tmp;
  while (*s == ' ')
    s++;
  snprintf(buf, len, "%s", s);
}

/* multilinePrintableName: the name's components one per line, the
 * function shortened and broken at "." and "::", the file's base name. */
static void node_label(cprof__buf_t *b, const cprof__pf_node_t *n, int entities) {
  if (n->address) {
    cprof__buf_printf(b, "%016llx\\n", (unsigned long long)n->address);
  }
  if (n->function[0]) {
    char buf[1024];
    put_dot_name(b, shorten(n->function, buf, sizeof buf), entities, 1);
    cprof__buf_puts(b, "\\n");
  }
  const char *file = n->file;
  if (file[0]) {
    const char *slash = strrchr(file, '/');
    if (slash && slash[1])
      file = slash + 1;
  }
  if (n->line != 0) {
    put_dot_name(b, file, entities, 0);
    cprof__buf_printf(b, ":%lld\\n", (long long)n->line);
  } else if (file[0]) {
    put_dot_name(b, file, entities, 0);
    cprof__buf_puts(b, "\\n");
  } else if (n->function[0]) {
    /* the name is all */
  } else if (n->mapping[0]) {
    const char *m = strrchr(n->mapping, '/');
    cprof__buf_puts(b, "[");
    put_dot_name(b, m && m[1] ? m + 1 : n->mapping, entities, 0);
    cprof__buf_puts(b, "]\\n");
  } else {
    cprof__buf_puts(b, "<unknown>\\n");
  }
}

/* The legend box, named by its first line. */
static void dot_legend(cprof__buf_t *b, const graph_doc_t *d, int entities) {
  char *first = strndup(d->legend, strcspn(d->legend, "\n"));
  cprof__buf_puts(b, "subgraph cluster_L { \"");
  put_dot_name(b, first ? first : "", entities, 0);
  free(first);
  cprof__buf_puts(b, "\" [shape=box fontsize=16 label=\"");
  /* Its lines, each left-justified (\l); a newline in one is an empty
   * line too, as pprof's "\nSee https://..." makes. */
  put_dot_name(b, d->legend, entities, 0);
  cprof__buf_puts(b, "\\l\"");
  if (d->title && d->title[0]) {
    cprof__buf_puts(b, " tooltip=\"");
    put_dot_name(b, d->title, entities, 0);
    cprof__buf_puts(b, "\"");
  }
  cprof__buf_puts(b, "] }\n");
}

/* Node i + 1 (n): its label, size by its flat share of the largest
 * (max_flat), colour by its cum share of total. */
static void dot_node(cprof__buf_t *b, const graph_doc_t *d, const cprof__pf_node_t *n, size_t i,
                     double max_flat, int64_t total, int entities) {
  int64_t flat = cprof__pf_flat(n), cum = cprof__pf_cum(n);
  char fv[64], cv[64], fp[32], cp[32], color[8], fill[8];
  fmt_value(d, flat, fv, sizeof fv);
  snprintf(cv, sizeof cv, "%s", fv);
  cprof__buf_printf(b, "N%zu [label=\"", i + 1);
  node_label(b, n, entities);
  if (flat != 0) {
    pct(flat, total, fp, sizeof fp);
    cprof__buf_printf(b, "%s (%s)", fv, fp);
  } else {
    cprof__buf_puts(b, "0");
  }
  if (cum != flat) {
    cprof__buf_puts(b, flat != 0 ? "\\n" : " ");
    fmt_value(d, cum, cv, sizeof cv);
    pct(cum, total, cp, sizeof cp);
    cprof__buf_printf(b, "of %s (%s)", cv, cp);
  }
  /* Font sizes from 8 to 24 by the square root of the flat share. */
  int fontsize = 8;
  if (max_flat != 0 && flat != 0 && fabs((double)flat) <= max_flat)
    fontsize += (int)ceil(16.0 * sqrt(fabs((double)flat) / max_flat));
  double score = total ? (double)cum / fabs((double)total) : 0;
  dot_color(score, 0, color);
  dot_color(score, 1, fill);
  cprof__buf_printf(b, "\" id=\"node%zu\" fontsize=%d shape=box tooltip=\"", i + 1, fontsize);
  put_dot_name(b, n->name, entities, 0);
  cprof__buf_printf(b, " (%s)\" color=\"%s\" fillcolor=\"%s\"]\n", cv, color, fill);
}

/* Edge e of g, between the nodes' numbers, weighted and coloured by its
 * share of total. */
static void dot_edge(cprof__buf_t *b, const graph_doc_t *d, const cprof__pf_graph_t *g,
                     const cprof__pf_edge_t *e, int64_t total, int entities) {
  size_t from = 0, to = 0;
  for (size_t k = 0; k < g->n_nodes; k++) {
    if (g->nodes[k] == e->from)
      from = k + 1;
    if (g->nodes[k] == e->to)
      to = k + 1;
  }
  int64_t w = e->weight_div ? e->weight / e->weight_div : e->weight;
  char wv[64], color[8];
  fmt_value(d, w, wv, sizeof wv);
  cprof__buf_printf(b, "N%zu -> N%zu [label=\" %s%s\"", from, to, wv,
                    e->inline_ ? "\\n (inline)" : "");
  if (total != 0) {
    int64_t aw = w * 100 / total;
    aw = aw < 0 ? -aw : aw;
    int weight = 1 + (int)(aw < 100 ? aw : 100);
    if (weight > 1)
      cprof__buf_printf(b, " weight=%d", weight);
    int64_t pw = w * 5 / total;
    pw = pw < 0 ? -pw : pw;
    int width = 1 + (int)(pw < 5 ? pw : 5);
    if (width > 1)
      cprof__buf_printf(b, " penwidth=%d", width);
    dot_color((double)w / fabs((double)total), 0, color);
    cprof__buf_printf(b, " color=\"%s\"", color);
  }
  for (int t = 0; t < 2; t++) {
    cprof__buf_puts(b, t ? " labeltooltip=\"" : " tooltip=\"");
    put_dot_name(b, e->from->name, entities, 0);
    cprof__buf_puts(b, e->residual ? " ... " : " -> ");
    put_dot_name(b, e->to->name, entities, 0);
    cprof__buf_printf(b, " (%s)\"", wv);
  }
  if (e->residual)
    cprof__buf_puts(b, " style=\"dotted\"");
  cprof__buf_puts(b, "]\n");
}

int graph_dot(const cprof__pf_graph_t *g, const graph_doc_t *d, int entities, char **out) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__buf_puts(&b, "digraph \"");
  put_dot_name(&b, d->title && d->title[0] ? d->title : "unnamed", entities, 0);
  cprof__buf_puts(&b, "\" {\nnode [style=filled fillcolor=\"#f8f8f8\"]\n");
  if (d->legend && d->legend[0])
    dot_legend(&b, d, entities);
  double max_flat = 0;
  for (size_t i = 0; i < g->n_nodes; i++) {
    double f = fabs((double)cprof__pf_flat(g->nodes[i]));
    if (f > max_flat)
      max_flat = f;
  }
  for (size_t i = 0; i < g->n_nodes; i++)
    dot_node(&b, d, g->nodes[i], i, max_flat, d->o->total, entities);
  /* Edges by weight, as pprof hints the layout with that order. */
  for (size_t i = 0; i < g->n_edges; i++)
    dot_edge(&b, d, g, g->edges[i], d->o->total, entities);
  cprof__buf_puts(&b, "}\n");
  cprof__buf_putc(&b, '\0');
  if (b.failed) {
    cprof__buf_free(&b);
    return -ENOMEM;
  }
  *out = b.data;
  return 0;
}

int graph_write(const cprof__pf_graph_t *g, const graph_doc_t *d, const char *path,
                const char *format, char *err, size_t errlen) {
  int raw = strcmp(format, "dot") == 0;
  if (!raw && strcmp(format, "svg") != 0 && strcmp(format, "png") != 0) {
    snprintf(err, errlen, "unknown output format %s (svg, png or dot)", format);
    return -EINVAL;
  }
  char *dot;
  if (graph_dot(g, d, !raw, &dot) < 0) {
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  int rc = 0;
  if (raw) { /* as pprof's -dot writes it: not laid out */
    rc = save_file(path, dot, strlen(dot));
    if (rc != 0)
      snprintf(err, errlen, "%s: %s", path, strerror(-rc));
    free(dot);
    return rc;
  }
  const graphviz_t *gv;
  if ((rc = graphviz_load(&gv, err, errlen)) != 0) {
    free(dot);
    return rc;
  }
  void *gvc = gv->context();
  void *ag = gvc ? gv->read(dot) : NULL;
  char *bytes = NULL;
  unsigned int len = 0;
  if (!ag) {
    snprintf(err, errlen, "Graphviz could not read the graph");
    rc = -EINVAL;
  } else if (gv->layout(gvc, ag, "dot") != 0) {
    snprintf(err, errlen, "Graphviz could not lay the graph out");
    rc = -EINVAL;
  } else {
    if (gv->render(gvc, ag, format, &bytes, &len) != 0) {
      snprintf(err, errlen, "Graphviz could not render the graph as %s", format);
      rc = -EIO;
    } else if ((rc = save_file(path, bytes, len)) != 0) {
      snprintf(err, errlen, "%s: %s", path, strerror(-rc));
    }
    gv->free_render(bytes);
    gv->free_layout(gvc, ag);
  }
  if (ag)
    gv->close(ag);
  if (gvc)
    gv->free_context(gvc);
  free(dot);
  return rc;
}

int graph_save(cprof__pf_t *p, const report_opts_t *o, const char *path, const char *format,
               char *err, size_t errlen) {
  /* report.GetDOT's trimming: pprof's defaults for a graph, 80 nodes
   * unless told, ranked to be drawn. */
  cprof__pf_trim_t trim = {.nodefraction = o->nodefraction,
                           .edgefraction = o->edgefraction,
                           .nodecount = o->nodecount >= 0 ? (size_t)o->nodecount : 80,
                           .visual = 1};
  cprof__pf_trimmed_t dropped;
  cprof__pf_graph_t *g;
  if (report_graph(p, o, &trim, &g, &dropped, err, errlen) != 0)
    return -ENOMEM;
  int rc;
  const cprof__pf_mapping_t *m = report_main_mapping(p);
  const char *title = m && m->file[0] ? strrchr(m->file, '/') : NULL;
  graph_doc_t d = {.o = o, .title = title ? title + 1 : m ? m->file : NULL};
  d.unit = report_output_unit(o, g);
  /* The legend: the report's header lines (report.reportLabels with
   * fullHeaders), then the line pprof adds for newcomers. */
  cprof__buf_t legend;
  cprof__buf_init(&legend);
  report_labels(&legend, p, o, g, &dropped, d.unit);
  cprof__buf_puts(&legend, "\nSee https://git.io/JfYMW for how to read the graph");
  cprof__buf_putc(&legend, '\0');
  if (legend.failed) {
    snprintf(err, errlen, "out of memory");
    rc = -ENOMEM;
  } else {
    d.legend = legend.data;
    rc = graph_write(g, &d, path, format, err, errlen);
  }
  cprof__buf_free(&legend);
  cprof__pf_graph_free(g);
  return rc;
}

/* ---- the command --------------------------------------------------------------- */

static const char usage[] =
    "usage: cprof graph [OPTIONS] SOURCE... -o FILE.svg|FILE.png|FILE.dot\n"
    "\n"
    "Draws the call graph go tool pprof -svg draws: a box per function, as big as\n"
    "its own (flat) value, arrows for calls, hot paths red. Graphviz lays it out.\n"
    "\n"
    "  -o, --output FILE     the output; its extension picks the format\n"
    "  --format svg|png|dot  the format, whatever the file's name\n"
    "  (--nodecount is 80 by default here, as pprof's for graphs)\n";

typedef struct graph_args {
  const char *output, *format;
} graph_args_t;

static int extra(void *ctx, int argc, char **argv, int *i) {
  graph_args_t *a = ctx;
  const char *arg = argv[*i], **slot = NULL;
  if (strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0)
    slot = &a->output;
  else if (strcmp(arg, "--format") == 0)
    slot = &a->format;
  else if (strncmp(arg, "--output=", 9) == 0 || strncmp(arg, "--format=", 9) == 0) {
    *(arg[2] == 'o' ? &a->output : &a->format) = arg + 9;
    return 1;
  }
  if (!slot)
    return 0;
  if (*i + 1 >= argc) {
    fprintf(stderr, "cprof graph: %s wants a value\n", arg);
    return -1;
  }
  *slot = argv[++*i];
  return 1;
}

/* The format a file's name asks for; NULL when it does not say. */
const char *graph_format_of(const char *path) {
  const char *dot = strrchr(path, '.');
  if (dot && (strcmp(dot, ".svg") == 0 || strcmp(dot, ".png") == 0 || strcmp(dot, ".dot") == 0))
    return dot + 1;
  return NULL;
}

/* -o is wanted, and a format its name or --format gives. */
static int check(void *ctx) {
  graph_args_t *a = ctx;
  if (!a->output) {
    fprintf(stderr, "cprof graph: wants -o FILE (cprof graph --help)\n");
    return 2;
  }
  if (!a->format && !(a->format = graph_format_of(a->output))) {
    fprintf(stderr, "cprof graph: %s: name it .svg, .png or .dot, or say --format\n", a->output);
    return 2;
  }
  return 0;
}

int cmd_graph(int argc, char **argv) {
  report_opts_t o;
  graph_args_t a = {NULL, NULL};
  const char *arg;
  cprof__pf_t *p;
  int rc = report_open("graph", usage, 0, extra, check, &a, argc, argv, &o, &arg, &p);
  if (rc != -1)
    return rc;
  char err[512];
  rc = 0;
  if (graph_save(p, &o, a.output, a.format, err, sizeof err) != 0) {
    fprintf(stderr, "cprof graph: %s\n", err);
    rc = 1;
  }
  cprof__pf_free(p);
  return rc;
}
