/* cprof list REGEX SOURCE: the source lines of each function whose name
 * matches, with the value spent on each line (flat) and below it (cum), as
 * go tool pprof -list prints them (pprof's report.printSource):
 *
 *   ROUTINE ======================== burn_cpu in /src/demo_server.c
 *            0      230ms (flat, cum) 17.97% of Total
 *            .       50ms     64:    sink += checksum_block(block, 16384);
 *
 * Source files are found as pprof finds them: an absolute path as it is,
 * else below the current directory or one of its parents, after cutting
 * the path up to the current directory's own name where it appears in it
 * (a profile from a build tree elsewhere then finds this checkout's
 * files). A file that cannot be read gets pprof's " Error:" line. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "model/measure.h"
#include "report.h"

static const char usage[] =
    "usage: cprof list [OPTIONS] REGEX SOURCE...\n"
    "\n"
    "Prints the source of the functions matching REGEX (POSIX extended) with the value\n"
    "of each line, as go tool pprof -list. Source files are looked for as they are\n"
    "named, then under the current directory and its parents.\n";

/* Lines before the first and after the last line with a value. */
#define MARGIN 5

/* pprof's trimPath with no -trim_path: the part of `path` after
 * "/<basename of the current directory>/", or after /proc/self/cwd/. */
static const char *trim_path(const char *path, const char *cwd) {
  const char *base = strrchr(cwd, '/');
  base = base ? base + 1 : cwd;
  char want[PATH_MAX + 2];
  if (*base && snprintf(want, sizeof want, "/%s/", base) < (int)sizeof want) {
    const char *at = strstr(path, want);
    if (at)
      return at + strlen(want);
  }
  static const char *const prefixes[] = {"/proc/self/cwd/./", "/proc/self/cwd/"};
  for (size_t i = 0; i < 2; i++)
    if (strncmp(path, prefixes[i], strlen(prefixes[i])) == 0)
      return path + strlen(prefixes[i]);
  return path;
}

/* pprof's openSourceFile. NULL with *why set when not found. */
static FILE *open_source(const char *file, const char *cwd, char *why, size_t len) {
  const char *path = trim_path(file, cwd);
  if (path[0] == '/') {
    FILE *f = fopen(path, "r");
    if (!f) {
      /* Go's error text, which pprof prints: strerror's in lower case
       * ("no such file or directory"). */
      char e[128];
      snprintf(e, sizeof e, "%s", strerror(errno));
      e[0] = (char)tolower((unsigned char)e[0]);
      snprintf(why, len, "open %s: %s", path, e);
    }
    return f;
  }
  char dir[PATH_MAX], name[2 * PATH_MAX + 2];
  snprintf(dir, sizeof dir, "%s", cwd);
  for (;;) {
    snprintf(name, sizeof name, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, path);
    FILE *f = fopen(name, "r");
    if (f)
      return f;
    char *slash = strrchr(dir, '/');
    if (!slash || strcmp(dir, "/") == 0)
      break;
    if (slash == dir)
      slash[1] = '\0';
    else
      *slash = '\0';
  }
  snprintf(why, len, "could not find file %s on path %s", path, cwd);
  return NULL;
}

/* A file's lines, read whole (lines[1] is the first). */
typedef struct text {
  char **lines;
  size_t n;
} text_t;

static int read_text(FILE *f, text_t *t) {
  char *line = NULL;
  size_t cap = 0, room = 0;
  ssize_t len;
  t->n = 1;
  t->lines = NULL;
  while ((len = getline(&line, &cap, f)) >= 0) {
    if (len > 0 && line[len - 1] == '\n')
      line[--len] = '\0';
    if (t->n + 1 > room) {
      room = room ? 2 * room : 256;
      char **grown = realloc(t->lines, room * sizeof *grown);
      if (!grown)
        break;
      t->lines = grown;
    }
    if (!(t->lines[t->n] = strdup(line)))
      break;
    t->n++;
  }
  free(line);
  return ferror(f) ? -1 : 0;
}

static void free_text(text_t *t) {
  for (size_t i = 1; i < t->n; i++)
    free(t->lines[i]);
  free(t->lines);
}

static void value_or_dot(char *buf, size_t len, int64_t v, const report_opts_t *o) {
  if (v == 0)
    snprintf(buf, len, ".");
  else
    report_value(buf, len, v, o, o->unit);
}

static int by_name(const void *a, const void *b) {
  const cprof__pf_node_t *l = *(cprof__pf_node_t *const *)a, *r = *(cprof__pf_node_t *const *)b;
  int c = strcmp(l->function, r->function);
  if (c)
    return c;
  c = strcmp(l->file, r->file);
  if (c)
    return c;
  return l->line < r->line ? -1 : l->line > r->line;
}

/* One function in one file: the nodes nodes[0..n), all of its lines. */
static void list_file(cprof__buf_t *out, const report_opts_t *o, int64_t total,
                      cprof__pf_node_t **nodes, size_t n, const char *cwd) {
  int64_t flat = 0, cum = 0;
  for (size_t i = 0; i < n; i++)
    flat += nodes[i]->flat, cum += nodes[i]->cum;
  char a[64], b[64], pc[32];
  cprof__buf_puts(out, "ROUTINE ======================== ");
  report_put_name(out, nodes[0]->function);
  cprof__buf_puts(out, " in ");
  report_put_name(out, nodes[0]->file);
  report_value(a, sizeof a, flat, o, o->unit);
  report_value(b, sizeof b, cum, o, o->unit);
  cprof__measure_percentage(cum, total, pc, sizeof pc);
  cprof__buf_printf(out, "\n%10s %10s (flat, cum) %s of Total\n", a, b, pc);

  /* The range pprof shows (getSourceFromFile). */
  int64_t start = nodes[0]->start_line ? nodes[0]->start_line : nodes[0]->line - MARGIN;
  int64_t end = nodes[0]->line + MARGIN;
  for (size_t i = 0; i < n; i++) {
    int64_t s = nodes[i]->start_line ? nodes[i]->start_line : nodes[i]->line - MARGIN;
    if (s < start)
      start = s;
    else if (nodes[i]->line + MARGIN > end)
      end = nodes[i]->line + MARGIN;
  }
  if (start < 1)
    start = 1;
  char why[PATH_MAX + 128];
  FILE *f = open_source(nodes[0]->file, cwd, why, sizeof why);
  if (!f) {
    cprof__buf_puts(out, " Error: ");
    report_put_name(out, why);
    cprof__buf_putc(out, '\n');
    return;
  }
  text_t t;
  int rc = read_text(f, &t);
  fclose(f);
  if (rc != 0) {
    cprof__buf_printf(out, " Error: reading %s failed\n", nodes[0]->file);
    free_text(&t);
    return;
  }
  for (int64_t line = start; line <= end && (size_t)line < t.n; line++) {
    int64_t lf = 0, lc = 0;
    for (size_t i = 0; i < n; i++)
      if (nodes[i]->line == line)
        lf += nodes[i]->flat, lc += nodes[i]->cum;
    value_or_dot(a, sizeof a, lf, o);
    value_or_dot(b, sizeof b, lc, o);
    cprof__buf_printf(out, "%10s %10s %6lld:", a, b, (long long)line);
    report_put_text(out, t.lines[line]);
    cprof__buf_putc(out, '\n');
  }
  free_text(&t);
}

/* The listing; the number of functions that matched. */
static size_t list_write(cprof__buf_t *out, const report_opts_t *o, const cprof__pf_graph_t *g,
                         const regex_t *rx) {
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd))
    snprintf(cwd, sizeof cwd, ".");
  cprof__pf_node_t **nodes = malloc((g->n_nodes + 1) * sizeof *nodes);
  size_t n = 0, functions = 0;
  if (!nodes)
    return 0;
  for (size_t i = 0; i < g->n_nodes; i++)
    if (regexec(rx, g->nodes[i]->function, 0, NULL, 0) == 0)
      nodes[n++] = g->nodes[i];
  qsort(nodes, n, sizeof *nodes, by_name);
  char total[64];
  report_value(total, sizeof total, o->total, o, o->unit);
  if (n > 0)
    cprof__buf_printf(out, "Total: %s\n", total);
  for (size_t i = 0; i < n;) {
    size_t fn_end = i;
    while (fn_end < n && strcmp(nodes[fn_end]->function, nodes[i]->function) == 0)
      fn_end++;
    functions++;
    int any_file = 0;
    for (size_t k = i; k < fn_end;) {
      size_t file_end = k;
      while (file_end < fn_end && strcmp(nodes[file_end]->file, nodes[k]->file) == 0)
        file_end++;
      if (nodes[k]->file[0]) {
        list_file(out, o, o->total, nodes + k, file_end - k, cwd);
        any_file = 1;
      }
      k = file_end;
    }
    if (!any_file) {
      cprof__buf_puts(out, "No source information for ");
      report_put_name(out, nodes[i]->function);
      cprof__buf_putc(out, '\n');
    }
    i = fn_end;
  }
  free(nodes);
  return functions;
}

int report_list(cprof__buf_t *out, cprof__pf_t *p, report_opts_t *o, const char *arg, char *err,
                size_t errlen) {
  regex_t rx;
  if (report_regex(&rx, arg, err, errlen) != 0)
    return 1;
  /* As pprof: by line, nothing trimmed. */
  cprof__pf_graph_options_t go = {
      .sample_index = o->index, .granularity = CPROF_PF_LINES, .mean = o->mean};
  cprof__pf_graph_t *g = NULL;
  int rc = 0;
  if (cprof__pf_graph(p, &go, &g) != 0) {
    snprintf(err, errlen, "out of memory");
    rc = 1;
  } else if (list_write(out, o, g, &rx) == 0) {
    snprintf(err, errlen, "no matches found for regexp: %s", arg);
    rc = 1;
  }
  regfree(&rx);
  cprof__pf_graph_free(g);
  return rc;
}

int cmd_list(int argc, char **argv) {
  return report_main("list", usage, 1, NULL, NULL, report_list, argc, argv);
}
