/* cprof graph: the call graph `go tool pprof -svg/-png/-dot` draws
 * (pprof's internal/graph/dotgraph.go with report.GetDOT's options):
 * boxes sized by flat, labelled with flat and cum, edges as wide as their
 * weight, dotted where they go through dropped nodes, coloured from grey
 * to red by their share of the total, and a legend with the report's
 * header lines. Graphviz's library lays it out and renders it. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include "commands.h"
#include "graph.h"
#include "profile/measure.h"
#include "profile/model.h"

/* ---- text for DOT ---------------------------------------------------------- */

typedef struct sbuf {
  char *s;
  size_t n, cap;
  int oom;
} sbuf_t;

static void sb_putn(sbuf_t *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = (b->n + n + 1) * 2;
    char *p = realloc(b->s, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->s = p;
    b->cap = cap;
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = '\0';
}

static void sb_puts(sbuf_t *b, const char *s) { sb_putn(b, s, strlen(s)); }

__attribute__((format(printf, 2, 3))) static void sb_printf(sbuf_t *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n < sizeof tmp) {
    sb_putn(b, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb_putn(b, big, (size_t)n);
  free(big);
}

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
static void sb_name(sbuf_t *b, const char *name, int entities, int split) {
  const unsigned char *s = (const unsigned char *)name;
  size_t n = strlen(name);
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    if (split && c == ':' && i + 1 < n && s[i + 1] == ':') {
      sb_puts(b, "\\n");
      i += 2;
    } else if (split && c == '.') {
      sb_puts(b, "\\n");
      i++;
    } else if (c == '\\') {
      sb_puts(b, "\\\\");
      i++;
    } else if (c == '"') {
      sb_puts(b, "\\\"");
      i++;
    } else if (c == '\n') {
      sb_puts(b, "\\l");
      i++;
    } else if (c < 0x20 || c == 0x7f) {
      sb_printf(b, "\\\\x%02x", c);
      i++;
    } else if (c == '&' && entities) {
      sb_puts(b, "&amp;");
      i++;
    } else {
      size_t len = utf8_len(s + i, n - i);
      if (len == 0) {
        sb_puts(b, "\xef\xbf\xbd");
        i++;
      } else {
        sb_putn(b, name + i, len);
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
  cprof__measure_label(v, d->sample_unit, d->output_unit, buf, len);
}

static void pct(int64_t v, int64_t total, char *buf, size_t len) {
  char tmp[32];
  cprof__measure_percentage(v, total, tmp, sizeof tmp);
  const char *s = tmp;
  while (*s == ' ')
    s++;
  snprintf(buf, len, "%s", s);
}

static int64_t value_of(int64_t v, int64_t div) { return div ? v / div : v; }

/* multilinePrintableName: the name's components one per line, the
 * function shortened and broken at "." and "::", the file's base name. */
static void node_label(sbuf_t *b, const cprof__pf_node_t *n, int entities) {
  if (n->address) {
    sb_printf(b, "%016llx\\n", (unsigned long long)n->address);
  }
  if (n->function[0]) {
    char buf[1024];
    sb_name(b, shorten(n->function, buf, sizeof buf), entities, 1);
    sb_puts(b, "\\n");
  }
  const char *file = n->file;
  if (file[0]) {
    const char *slash = strrchr(file, '/');
    if (slash && slash[1])
      file = slash + 1;
  }
  if (n->line != 0) {
    sb_name(b, file, entities, 0);
    sb_printf(b, ":%lld\\n", (long long)n->line);
  } else if (file[0]) {
    sb_name(b, file, entities, 0);
    sb_puts(b, "\\n");
  } else if (n->function[0]) {
    /* the name is all */
  } else if (n->mapping[0]) {
    const char *m = strrchr(n->mapping, '/');
    sb_puts(b, "[");
    sb_name(b, m && m[1] ? m + 1 : n->mapping, entities, 0);
    sb_puts(b, "]\\n");
  } else {
    sb_puts(b, "<unknown>\\n");
  }
}

int graph_dot(const cprof__pf_graph_t *g, const graph_doc_t *d, int entities, char **out) {
  sbuf_t b = {0};
  sb_puts(&b, "digraph \"");
  sb_name(&b, d->title && d->title[0] ? d->title : "unnamed", entities, 0);
  sb_puts(&b, "\" {\nnode [style=filled fillcolor=\"#f8f8f8\"]\n");
  if (d->n_labels) {
    sb_puts(&b, "subgraph cluster_L { \"");
    sb_name(&b, d->labels[0], entities, 0);
    sb_puts(&b, "\" [shape=box fontsize=16 label=\"");
    for (size_t i = 0; i < d->n_labels; i++) {
      if (i)
        sb_puts(&b, "\\l");
      sb_name(&b, d->labels[i], entities, 0);
    }
    sb_puts(&b, "\\l\"");
    if (d->title && d->title[0]) {
      sb_puts(&b, " tooltip=\"");
      sb_name(&b, d->title, entities, 0);
      sb_puts(&b, "\"");
    }
    sb_puts(&b, "] }\n");
  }
  double max_flat = 0;
  for (size_t i = 0; i < g->n_nodes; i++) {
    double f = fabs((double)value_of(g->nodes[i]->flat, g->nodes[i]->flat_div));
    if (f > max_flat)
      max_flat = f;
  }
  int64_t total = g->total;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const cprof__pf_node_t *n = g->nodes[i];
    int64_t flat = value_of(n->flat, n->flat_div), cum = value_of(n->cum, n->cum_div);
    char fv[64], cv[64], fp[32], cp[32], color[8], fill[8];
    fmt_value(d, flat, fv, sizeof fv);
    snprintf(cv, sizeof cv, "%s", fv);
    sb_printf(&b, "N%zu [label=\"", i + 1);
    node_label(&b, n, entities);
    if (flat != 0) {
      pct(flat, total, fp, sizeof fp);
      sb_printf(&b, "%s (%s)", fv, fp);
    } else {
      sb_puts(&b, "0");
    }
    if (cum != flat) {
      sb_puts(&b, flat != 0 ? "\\n" : " ");
      fmt_value(d, cum, cv, sizeof cv);
      pct(cum, total, cp, sizeof cp);
      sb_printf(&b, "of %s (%s)", cv, cp);
    }
    /* Font sizes from 8 to 24 by the square root of the flat share. */
    int fontsize = 8;
    if (max_flat != 0 && flat != 0 && fabs((double)flat) <= max_flat)
      fontsize += (int)ceil(16.0 * sqrt(fabs((double)flat) / max_flat));
    double score = total ? (double)cum / fabs((double)total) : 0;
    dot_color(score, 0, color);
    dot_color(score, 1, fill);
    sb_printf(&b, "\" id=\"node%zu\" fontsize=%d shape=box tooltip=\"", i + 1, fontsize);
    sb_name(&b, n->name, entities, 0);
    sb_printf(&b, " (%s)\" color=\"%s\" fillcolor=\"%s\"]\n", cv, color, fill);
  }
  /* Edges by weight, as pprof hints the layout with that order. */
  for (size_t i = 0; i < g->n_edges; i++) {
    const cprof__pf_edge_t *e = g->edges[i];
    size_t from = 0, to = 0;
    for (size_t k = 0; k < g->n_nodes; k++) {
      if (g->nodes[k] == e->from)
        from = k + 1;
      if (g->nodes[k] == e->to)
        to = k + 1;
    }
    int64_t w = value_of(e->weight, e->weight_div);
    char wv[64], color[8];
    fmt_value(d, w, wv, sizeof wv);
    sb_printf(&b, "N%zu -> N%zu [label=\" %s%s\"", from, to, wv, e->inline_ ? "\\n (inline)" : "");
    if (total != 0) {
      int64_t aw = w * 100 / total;
      aw = aw < 0 ? -aw : aw;
      int weight = 1 + (int)(aw < 100 ? aw : 100);
      if (weight > 1)
        sb_printf(&b, " weight=%d", weight);
      int64_t pw = w * 5 / total;
      pw = pw < 0 ? -pw : pw;
      int width = 1 + (int)(pw < 5 ? pw : 5);
      if (width > 1)
        sb_printf(&b, " penwidth=%d", width);
      dot_color((double)w / fabs((double)total), 0, color);
      sb_printf(&b, " color=\"%s\"", color);
    }
    for (int t = 0; t < 2; t++) {
      sb_puts(&b, t ? " labeltooltip=\"" : " tooltip=\"");
      sb_name(&b, e->from->name, entities, 0);
      sb_puts(&b, e->residual ? " ... " : " -> ");
      sb_name(&b, e->to->name, entities, 0);
      sb_printf(&b, " (%s)\"", wv);
    }
    if (e->residual)
      sb_puts(&b, " style=\"dotted\"");
    sb_puts(&b, "]\n");
  }
  sb_puts(&b, "}\n");
  if (b.oom) {
    free(b.s);
    return -ENOMEM;
  }
  *out = b.s;
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
  if (raw) {
    /* The graph as pprof's -dot writes it: not laid out. */
    FILE *f = fopen(path, "w");
    if (!f || fputs(dot, f) == EOF) {
      rc = -errno;
      snprintf(err, errlen, "%s: %s", path, strerror(errno));
    }
    if (f && fclose(f) != 0 && rc == 0) {
      rc = -errno;
      snprintf(err, errlen, "%s: %s", path, strerror(errno));
    }
    free(dot);
    return rc;
  }
  GVC_t *gvc = gvContext();
  Agraph_t *ag = gvc ? agmemread(dot) : NULL;
  if (!ag) {
    snprintf(err, errlen, "Graphviz could not read the graph");
    rc = -EINVAL;
  } else if (gvLayout(gvc, ag, "dot") != 0) {
    snprintf(err, errlen, "Graphviz could not lay the graph out");
    rc = -EINVAL;
  } else {
    if (gvRenderFilename(gvc, ag, format, path) != 0) {
      snprintf(err, errlen, "%s: Graphviz could not write it", path);
      rc = -EIO;
    }
    gvFreeLayout(gvc, ag);
  }
  if (ag)
    agclose(ag);
  if (gvc)
    gvFreeContext(gvc);
  free(dot);
  return rc;
}

/* ---- the header lines ------------------------------------------------------------ */

/* report.selectOutputUnit with -unit=minimum: the unit of the smallest
 * non-zero value, or a larger one when the total is 100 times more. */
static const char *output_unit(const cprof__pf_graph_t *g, const char *sample_unit) {
  int64_t min = 0, max = g->total;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const cprof__pf_node_t *n = g->nodes[i];
    int64_t v = value_of(n->flat, n->flat_div);
    v = v < 0 ? -v : v;
    if (v == 0) {
      v = value_of(n->cum, n->cum_div);
      v = v < 0 ? -v : v;
    }
    if (v > 0 && (min == 0 || v < min))
      min = v;
  }
  if (g->n_nodes == 0)
    return "minimum";
  if (min == 0)
    min = max;
  const char *minu, *maxu, *u;
  cprof__measure_scale(min, sample_unit, "minimum", &minu);
  cprof__measure_scale(max, sample_unit, "minimum", &maxu);
  u = minu;
  if (strcmp(minu, maxu) != 0 && min * 100 < max)
    cprof__measure_scale(100 * min, sample_unit, "minimum", &u);
  return u && u[0] ? u : sample_unit;
}

static const char *base(const char *p) {
  const char *s = strrchr(p, '/');
  return s && s[1] ? s + 1 : p;
}

/* Adds one line; lines[] holds at most GRAPH_MAX_LABELS. */
static void add_line(graph_doc_t *d, char *line) {
  if (line && d->n_labels < GRAPH_MAX_LABELS)
    d->labels[d->n_labels++] = line;
  else
    free(line);
}

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dupf(const char *fmt, ...) {
  va_list ap;
  char *s = NULL;
  va_start(ap, fmt);
  if (vasprintf(&s, fmt, ap) < 0)
    s = NULL;
  va_end(ap);
  return s;
}

void graph_labels(graph_doc_t *d, const cprof__pf_t *p, const cprof__pf_graph_t *g,
                  const cprof__pf_trimmed_t *t, const cprof__pf_trim_t *o) {
  d->output_unit = output_unit(g, d->sample_unit);
  char v[64], w[64], pc[32];
  /* report.ProfileLabels */
  if (p->n_mappings && p->mappings[0].file[0])
    add_line(d, dupf("File: %s", base(p->mappings[0].file)));
  if (p->n_mappings && p->mappings[0].build_id[0])
    add_line(d, dupf("Build ID: %s", p->mappings[0].build_id));
  for (size_t i = 0; i < p->n_comments; i++)
    if (p->comments[i][0] != '#')
      add_line(d, dupf("%s", p->comments[i]));
  add_line(d, dupf("Type: %s%s", d->mean ? "mean_" : "", d->sample_type));
  if (p->time_nanos) {
    time_t s = (time_t)(p->time_nanos / 1000000000);
    struct tm tm;
    char tb[64];
    localtime_r(&s, &tm);
    strftime(tb, sizeof tb, "%b %-d, %Y at %-I:%M%P (%Z)", &tm);
    add_line(d, dupf("Time: %s", tb));
  }
  if (p->duration_nanos) {
    char dur[64], ratio[48] = "";
    cprof__measure_label(p->duration_nanos, "nanoseconds", "auto", dur, sizeof dur);
    const char *u;
    double ns = cprof__measure_scale(g->total, d->sample_unit, "nanoseconds", &u);
    if (u && strcmp(u, "ns") == 0 && ns != 0) {
      cprof__measure_percentage((int64_t)ns, p->duration_nanos, pc, sizeof pc);
      snprintf(ratio, sizeof ratio, "(%s)", pc);
    }
    fmt_value(d, g->total, v, sizeof v);
    add_line(d, dupf("Duration: %s, Total samples = %s %s", dur, v, ratio));
  }
  for (size_t i = 0; i < d->n_filters; i++) {
    if (i == 0)
      add_line(d, dupf("Active filters:"));
    add_line(d, dupf("   %s", d->filters[i]));
  }
  /* report.reportLabels */
  int64_t flat_sum = 0;
  for (size_t i = 0; i < g->n_nodes; i++)
    flat_sum += value_of(g->nodes[i]->flat, g->nodes[i]->flat_div);
  fmt_value(d, flat_sum, v, sizeof v);
  fmt_value(d, g->total, w, sizeof w);
  pct(flat_sum, g->total, pc, sizeof pc);
  add_line(d, dupf("Showing nodes accounting for %s, %s of %s total", v, pc, w));
  if (g->total != 0) {
    if (t->dropped_nodes > 0) {
      int64_t c = (int64_t)((double)g->total * o->nodefraction);
      fmt_value(d, c < 0 ? -c : c, v, sizeof v);
      add_line(d, dupf("Dropped %zu node%s (cum <= %s)", t->dropped_nodes,
                       t->dropped_nodes > 1 ? "s" : "", v));
    }
    if (t->dropped_edges > 0) {
      int64_t c = (int64_t)((double)g->total * o->edgefraction);
      fmt_value(d, c < 0 ? -c : c, v, sizeof v);
      add_line(d, dupf("Dropped %zu edge%s (freq <= %s)", t->dropped_edges,
                       t->dropped_edges > 1 ? "s" : "", v));
    }
    if (g->n_nodes > 0 && g->n_nodes < t->orig_count)
      add_line(d, dupf("Showing top %zu nodes out of %zu", g->n_nodes, t->orig_count));
  }
  add_line(d, dupf("\nSee https://git.io/JfYMW for how to read the graph"));
}

void graph_doc_free(graph_doc_t *d) {
  for (size_t i = 0; i < d->n_labels; i++)
    free(d->labels[i]);
  d->n_labels = 0;
}

/* ---- the command --------------------------------------------------------------- */

static void usage(FILE *out) {
  fprintf(out, "usage: cprof graph SOURCE -o FILE.svg|FILE.png|FILE.dot [OPTIONS]\n"
               "\n"
               "Draws the call graph `go tool pprof -svg` draws: a box per function, as big\n"
               "as its own (flat) value, arrows for calls, hot paths red.\n"
               "\n"
               "  -o FILE               the output; its extension picks the format\n"
               "  --format svg|png|dot  the format, whatever the file's name\n"
               "  --sample-index NAME   which value (cpu, alloc_space, ...; or its index)\n"
               "  --mean                the value divided by the sample count\n"
               "  --functions | --files | --lines | --addresses   what a box stands for\n"
               "  --nodecount N         at most N boxes (default 80; 0: all)\n"
               "  --nodefraction F      hide boxes under F of the total (default 0.005)\n"
               "  --edgefraction F      hide arrows under F of the total (default 0.001)\n");
}

/* pprof's SampleIndexByName: "" is the profile's default sample type or
 * the last; a name, with or without "sample_"; or an index. */
static int sample_index(const cprof__pf_t *p, const char *name, size_t *out) {
  if (p->n_sample_types == 0)
    return -1;
  if (!name || !name[0]) {
    if (p->default_sample_type[0])
      for (size_t i = 0; i < p->n_sample_types; i++)
        if (strcmp(p->sample_types[i].type, p->default_sample_type) == 0) {
          *out = i;
          return 0;
        }
    *out = p->n_sample_types - 1;
    return 0;
  }
  const char *n = strncmp(name, "sample_", 7) == 0 ? name + 7 : name;
  for (size_t i = 0; i < p->n_sample_types; i++)
    if (strcmp(p->sample_types[i].type, n) == 0 || strcmp(p->sample_types[i].type, name) == 0) {
      *out = i;
      return 0;
    }
  char *end;
  errno = 0;
  unsigned long v = strtoul(name, &end, 10);
  if (!errno && *end == '\0' && end != name && v < p->n_sample_types) {
    *out = v;
    return 0;
  }
  return -1;
}

static int read_file(const char *path, char **data, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f)
    return -errno;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  int rc = 0;
  while (buf) {
    if (n == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
    }
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (r == 0)
      break;
  }
  if (!buf)
    rc = -ENOMEM;
  else if (ferror(f))
    rc = -EIO;
  if (f != stdin)
    fclose(f);
  if (rc < 0) {
    free(buf);
    return rc;
  }
  *data = buf;
  *len = n;
  return 0;
}

static int parse_double(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= 0))
    return -1;
  *out = v;
  return 0;
}

int graph_main(int argc, char **argv) {
  const char *source = NULL, *outpath = NULL, *format = NULL, *sindex = NULL;
  cprof__pf_trim_t trim = {
      .nodefraction = 0.005, .edgefraction = 0.001, .nodecount = 80, .visual = 1};
  cprof__pf_graph_options_t go = {.granularity = CPROF_PF_FUNCTIONS};
  char opt[64];
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    /* --name=value as well as --name value. */
    const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
    int inline_val = 0;
    if (eq && (size_t)(eq - a) < sizeof opt) {
      memcpy(opt, a, (size_t)(eq - a));
      opt[eq - a] = '\0';
      a = opt;
      val = eq + 1;
      inline_val = 1;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--functions") == 0) {
      go.granularity = CPROF_PF_FUNCTIONS;
    } else if (strcmp(a, "--files") == 0) {
      go.granularity = CPROF_PF_FILES;
    } else if (strcmp(a, "--lines") == 0) {
      go.granularity = CPROF_PF_LINES;
    } else if (strcmp(a, "--addresses") == 0) {
      go.granularity = CPROF_PF_ADDRESSES;
    } else if (strcmp(a, "--mean") == 0) {
      go.mean = 1;
    } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 || strcmp(a, "--format") == 0 ||
               strcmp(a, "--sample-index") == 0 || strcmp(a, "--nodecount") == 0 ||
               strcmp(a, "--nodefraction") == 0 || strcmp(a, "--edgefraction") == 0) {
      if (!val) {
        fprintf(stderr, "cprof graph: %s wants a value\n", a);
        return 2;
      }
      if (!inline_val)
        i++;
      if (a[1] == 'o' || strcmp(a, "--output") == 0) {
        outpath = val;
      } else if (strcmp(a, "--format") == 0) {
        format = val;
      } else if (strcmp(a, "--sample-index") == 0) {
        sindex = val;
      } else if (strcmp(a, "--nodecount") == 0) {
        char *end;
        errno = 0;
        long v = strtol(val, &end, 10);
        if (errno || *end || end == val || v < 0) {
          fprintf(stderr, "cprof graph: --nodecount wants a number, not %s\n", val);
          return 2;
        }
        trim.nodecount = (size_t)v;
      } else if (parse_double(val, a[2] == 'n' ? &trim.nodefraction : &trim.edgefraction) < 0) {
        fprintf(stderr, "cprof graph: %s wants a fraction, not %s\n", a, val);
        return 2;
      }
    } else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, "cprof graph: unknown option %s (cprof graph --help lists them)\n", a);
      return 2;
    } else if (!source) {
      source = a;
    } else {
      fprintf(stderr, "cprof graph: one SOURCE only (%s is a second)\n", a);
      return 2;
    }
  }
  if (!source || !outpath) {
    usage(stderr);
    return 2;
  }
  if (!format) {
    const char *dot = strrchr(outpath, '.');
    format = dot ? dot + 1 : "";
    if (strcmp(format, "svg") != 0 && strcmp(format, "png") != 0 && strcmp(format, "dot") != 0) {
      fprintf(stderr, "cprof graph: %s: say --format svg, png or dot\n", outpath);
      return 2;
    }
  }
  char *data = NULL;
  size_t len = 0;
  int rc = read_file(source, &data, &len);
  if (rc < 0) {
    fprintf(stderr, "cprof graph: %s: %s\n", source, strerror(-rc));
    return 1;
  }
  char err[256];
  cprof__pf_t *p = NULL;
  rc = cprof__pf_decode(data, len, &p, err, sizeof err);
  free(data);
  if (rc < 0) {
    fprintf(stderr, "cprof graph: %s: %s\n", source, rc == -ENOMEM ? "out of memory" : err);
    return 1;
  }
  if (sample_index(p, sindex, &go.sample_index) < 0) {
    fprintf(stderr, "cprof graph: %s: no sample type %s\n", source,
            sindex ? sindex : "(the profile has none)");
    cprof__pf_free(p);
    return 1;
  }
  cprof__pf_graph_t *g = NULL;
  cprof__pf_trimmed_t dropped;
  rc = cprof__pf_graph(p, &go, &g);
  if (rc == 0)
    rc = cprof__pf_graph_trim(g, &trim, &dropped);
  if (rc < 0) {
    fprintf(stderr, "cprof graph: %s\n", strerror(-rc));
    cprof__pf_graph_free(g);
    cprof__pf_free(p);
    return 1;
  }
  graph_doc_t d = {
      .sample_type = p->sample_types[go.sample_index].type,
      .sample_unit = p->sample_types[go.sample_index].unit,
      .mean = go.mean,
      .title = p->n_mappings && p->mappings[0].file[0] ? base(p->mappings[0].file) : NULL,
  };
  /* pprof lowercases the unit (report.NewDefault). */
  char unit[64];
  snprintf(unit, sizeof unit, "%s", d.sample_unit);
  for (char *c = unit; *c; c++)
    if (*c >= 'A' && *c <= 'Z')
      *c = (char)(*c - 'A' + 'a');
  d.sample_unit = unit;
  graph_labels(&d, p, g, &dropped, &trim);
  rc = graph_write(g, &d, outpath, format, err, sizeof err);
  if (rc < 0)
    fprintf(stderr, "cprof graph: %s\n", err);
  graph_doc_free(&d);
  cprof__pf_graph_free(g);
  cprof__pf_free(p);
  return rc < 0 ? 1 : 0;
}
