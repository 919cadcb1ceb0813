/* cprof SOURCE (or cprof prompt SOURCE...): an interactive prompt on a
 * profile, as `go tool pprof SOURCE` gives one. Commands run the reports
 * of the other subcommands (top, peek, list, traces, folded, flame, web),
 * and settings (sample_index=, focus=, unit=, nodecount=, cum, lines...)
 * stay for the commands after, as in pprof's interactive mode:
 *
 *   (cprof) sample_index=alloc_space
 *   (cprof) top 5 -cum
 *   (cprof) peek cache_insert
 *
 * On a terminal, lines are edited and remembered with libedit (history in
 * $CPROF_HISTORY, else ~/.cprof_history). Otherwise commands are read
 * line by line with no prompt, so that `echo top | cprof prof.pb.gz`
 * prints only the report.
 *
 * The profile's bytes are read once (a URL is fetched once) and decoded
 * afresh for each command, because report_prepare filters the profile in
 * place. The greeting, help, options and messages go to standard error as
 * pprof's do; the reports go to standard output. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <editline/readline.h>

#include "commands.h"
#include "graph.h"
#include "page.h"
#include "report.h"
#include "save.h"
#include "source.h"
#include "web.h"

static const char usage[] =
    "usage: cprof SOURCE...\n"
    "       cprof prompt [OPTIONS] SOURCE...\n"
    "\n"
    "An interactive prompt on the profile, as go tool pprof SOURCE: type commands\n"
    "(top, peek REGEX, list REGEX, traces, folded, flame, web) and settings\n"
    "(sample_index=NAME, focus=RE, unit=ms, nodecount=N, cum, lines...);\n"
    "\"help\" lists them, \"quit\" or Ctrl-D leaves. Several SOURCEs are merged.\n"
    "With standard input not a terminal, commands are read from it line by line\n"
    "(echo top | cprof prof.pb.gz). History: $CPROF_HISTORY, else ~/.cprof_history.\n";

/* --- Settings: pprof's configuration variables that cprof's reports
 * take. Each is held as text, as pprof's config.get shows it. */

enum kind { K_STRING, K_INT, K_FLOAT, K_BOOL, K_CHOICE };

static const char *const granularities[] = {"addresses", "files", "functions", "lines", NULL};
static const char *const sorts[] = {"cum", "flat", NULL};

/* Sorted by name: "options" lists them in this order, as pprof does. */
enum {
  F_COMPACT_LABELS,
  F_EDGEFRACTION,
  F_FOCUS,
  F_GRANULARITY,
  F_HIDE,
  F_IGNORE,
  F_MEAN,
  F_NODECOUNT,
  F_NODEFRACTION,
  F_SAMPLE_INDEX,
  F_SHOW,
  F_SORT,
  F_TAGFOCUS,
  F_TAGIGNORE,
  F_TAGLEAF,
  F_TAGROOT,
  F_UNIT,
  F_N
};

typedef struct field {
  const char *name;
  enum kind kind;
  const char *const *choices;
  const char *initial;
  const char *help; /* pprof's configHelp; the first line is the summary */
} field_t;

static const field_t fields[F_N] = {
    {"compact_labels", K_BOOL, NULL, "true", "Show minimal headers\n"},
    {"edgefraction", K_FLOAT, NULL, "0.001", "Hide edges below <f>*total\n"},
    {"focus", K_STRING, NULL, "",
     "Restricts to samples going through a node matching regexp\n"
     "Discard samples that do not include a node matching this regexp.\n"
     "Matching includes the function name, filename or object name.\n"},
    {"granularity", K_CHOICE, granularities, "functions", ""},
    {"hide", K_STRING, NULL, "",
     "Skips nodes matching regexp\n"
     "Discard nodes that match this location.\n"
     "Other nodes from samples that include this location will be shown.\n"
     "Matching includes the function name, filename or object name.\n"},
    {"ignore", K_STRING, NULL, "",
     "Skips paths going through any nodes matching regexp\n"
     "If set, discard samples that include a node matching this regexp.\n"
     "Matching includes the function name, filename or object name.\n"},
    {"mean", K_BOOL, NULL, "false",
     "Average sample value over first value (count)\n"
     "For memory profiles, report average memory per allocation.\n"
     "For time-based profiles, report average time per event.\n"},
    {"nodecount", K_INT, NULL, "-1",
     "Max number of nodes to show\n"
     "Uses heuristics to limit the number of locations to be displayed.\n"
     "On graphs, dotted edges represent paths through nodes that have been removed.\n"},
    {"nodefraction", K_FLOAT, NULL, "0.005", "Hide nodes below <f>*total\n"},
    {"sample_index", K_STRING, NULL, "",
     "Sample value to report (0-based index or name)\n"
     "Profiles contain multiple values per sample.\n"
     "Use sample_index=i to select the ith value (starting at 0).\n"},
    {"show", K_STRING, NULL, "",
     "Only show nodes matching regexp\n"
     "If set, only show nodes that match this location.\n"
     "Matching includes the function name, filename or object name.\n"},
    {"sort", K_CHOICE, sorts, "flat", ""},
    {"tagfocus", K_STRING, NULL, "",
     "Restricts to samples with tags in range or matched by regexp\n"
     "Use name=value syntax to limit the matching to a specific tag.\n"
     "Numeric tag filter examples: 1kb, 1kb:10kb, memory=32mb:\n"
     "String tag filter examples: foo, foo.*bar, mytag=foo.*bar\n"},
    {"tagignore", K_STRING, NULL, "",
     "Discard samples with tags in range or matched by regexp\n"
     "Use name=value syntax to limit the matching to a specific tag.\n"
     "Numeric tag filter examples: 1kb, 1kb:10kb, memory=32mb:\n"
     "String tag filter examples: foo, foo.*bar, mytag=foo.*bar\n"},
    {"tagleaf", K_STRING, NULL, "",
     "Adds pseudo stack frames for labels key/value pairs at the callstack leaf.\n"
     "A comma-separated list of label keys.\n"
     "The last key creates frames at the new leaf.\n"},
    {"tagroot", K_STRING, NULL, "",
     "Adds pseudo stack frames for labels key/value pairs at the callstack root.\n"
     "A comma-separated list of label keys.\n"
     "The first key creates frames at the new root.\n"},
    {"unit", K_STRING, NULL, "minimum",
     "Measurement units to display\n"
     "Scale the sample values to this unit.\n"
     "For time-based profiles, use seconds, milliseconds, nanoseconds, etc.\n"
     "For memory profiles, use megabytes, kilobytes, bytes, etc.\n"
     "Using auto will scale each value independently to the most natural unit.\n"},
};

/* The help of a choice ("cum", "lines"), which sets its group. */
static const struct {
  const char *name, *help;
} choice_help[] = {
    {"addresses", "Aggregate at the address level.\n"
                  "Includes functions' addresses in the output.\n"},
    {"cum", "Sort entries based on cumulative weight\n"},
    {"files", "Aggregate at the file level.\n"},
    {"flat", "Sort entries based on own weight\n"},
    {"functions", "Aggregate at the function level.\n"
                  "Ignores the filename where the function was defined.\n"},
    {"lines", "Aggregate at the source code line level.\n"},
};

/* --- Commands. */

enum action { A_REPORT, A_FLAME, A_WEB, A_GRAPH };

typedef struct pcommand {
  const char *name;
  enum action action;
  report_fn fn;
  int has_param; /* takes a REGEX first, as list and peek */
  const char *description, *usage;
} pcommand_t;

#define SELECT_HELP                                                                                \
  "Include up to n samples\n"                                                                      \
  "Include samples matching focus_regex, and exclude ignore_regex.\n"
#define SAVE_HELP "Optionally save the report on the file f"
#define GRAPH_USAGE(c) c " [n] [focus_regex]* [-ignore_regex]* [-o f | >f]\n" SELECT_HELP SAVE_HELP

/* Sorted by name, for help. */
static const pcommand_t pcommands[] = {
    {"dot", A_GRAPH, NULL, 0, "Outputs a graph in DOT format", GRAPH_USAGE("dot")},
    {"flame", A_FLAME, NULL, 0, "Outputs the viewer page (flame graph, icicle, top table)",
     "flame [focus_regex]* [-ignore_regex]* [-o f | >f]\n"
     "Include samples matching focus_regex, and exclude ignore_regex.\n"
     "Saves the page in f (default flame.html)"},
    {"folded", A_REPORT, report_folded, 0, "Outputs collapsed stacks (a;b;c 123)",
     "folded [focus_regex]* [-ignore_regex]* [>f]\n"
     "Include samples matching focus_regex, and exclude ignore_regex.\n" SAVE_HELP},
    {"graph", A_GRAPH, NULL, 0, "Outputs a graph image in SVG format", GRAPH_USAGE("graph")},
    {"list", A_REPORT, report_list, 1, "Output annotated source for functions matching regexp",
     "list <func_regex> [-focus_regex]* [-ignore_regex]* [>f]\n"
     "Include functions matching func_regex.\n"
     "Include samples matching focus_regex, and exclude ignore_regex.\n" SAVE_HELP},
    {"peek", A_REPORT, report_peek, 1, "Output callers/callees of functions matching regexp",
     "peek func_regex\n"
     "Display callers and callees of functions matching func_regex."},
    {"png", A_GRAPH, NULL, 0, "Outputs a graph image in PNG format", GRAPH_USAGE("png")},
    {"svg", A_GRAPH, NULL, 0, "Outputs a graph in SVG format", GRAPH_USAGE("svg")},
    {"text", A_REPORT, report_top, 0, "Outputs top entries in text form",
     "text [n] [focus_regex]* [-ignore_regex]* [-cum] >f\n" SELECT_HELP
     "-cum sorts the output by cumulative weight\n" SAVE_HELP},
    {"top", A_REPORT, report_top, 0, "Outputs top entries in text form",
     "top [n] [focus_regex]* [-ignore_regex]* [-cum] >f\n" SELECT_HELP
     "-cum sorts the output by cumulative weight\n" SAVE_HELP},
    {"traces", A_REPORT, report_traces, 0, "Outputs all profile samples in text form", ""},
    {"web", A_WEB, NULL, 0, "Serve the viewer page over HTTP until Ctrl-C",
     "web [focus_regex]* [-ignore_regex]* [-http HOST:PORT]\n"
     "Serves the viewer page (default on 127.0.0.1:6061) until Ctrl-C,\n"
     "then comes back to the prompt."},
};
#define N_PCOMMANDS (sizeof pcommands / sizeof *pcommands)

typedef struct prompt {
  source_t *src; /* the SOURCEs' bytes, decoded again for each command */
  int n_src;
  char **names;
  cprof__pf_t *meta; /* decoded once, never filtered: sample types, names */
  char *values[F_N];
  FILE *in;   /* where commands come from */
  int edit;   /* through libedit */
  int prompt; /* print "(cprof) " before reading (a dumb terminal) */
  char *history;
} prompt_t;

/* --- Small helpers. */

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
    s[--n] = '\0';
  return s;
}

/* Prints s on stderr quoted as Go's %q would, so that what a user typed
 * (or a profile holds) is shown, never obeyed by the terminal. */
static void put_quoted(FILE *f, const char *s) {
  cprof__buf_t raw, out;
  cprof__buf_init(&raw);
  cprof__buf_init(&out);
  for (const char *c = s; *c; c++) {
    if (*c == '"' || *c == '\\')
      cprof__buf_putc(&raw, '\\');
    cprof__buf_putc(&raw, *c);
  }
  cprof__buf_putc(&raw, '\0');
  if (!raw.failed)
    report_put_name(&out, raw.data);
  fprintf(f, "\"%.*s\"", out.failed ? 0 : (int)out.len, out.failed ? "" : out.data);
  cprof__buf_free(&raw);
  cprof__buf_free(&out);
}

static void put_name(FILE *f, const char *s) {
  cprof__buf_t out;
  cprof__buf_init(&out);
  report_put_name(&out, s);
  if (!out.failed)
    fwrite(out.data, 1, out.len, f);
  cprof__buf_free(&out);
}

static int find_field(const char *name) {
  for (int i = 0; i < F_N; i++)
    if (strcmp(fields[i].name, name) == 0)
      return i;
  return -1;
}

/* The field whose choice name is ("cum": sort), or -1. */
static int find_choice(const char *name) {
  for (int i = 0; i < F_N; i++)
    for (const char *const *c = fields[i].choices; c && *c; c++)
      if (strcmp(*c, name) == 0)
        return i;
  return -1;
}

/* pprof's stringToBool: "" is true. -1 if neither. */
static int parse_bool(const char *v) {
  static const char *const yes[] = {"true", "t", "yes", "y", "1", ""};
  static const char *const no[] = {"false", "f", "no", "n", "0"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
    if (strcasecmp(v, yes[i]) == 0)
      return 1;
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    if (strcasecmp(v, no[i]) == 0)
      return 0;
  return -1;
}

static int set_value(prompt_t *ps, int f, const char *text) {
  char *v = strdup(text);
  if (!v) {
    fprintf(stderr, "out of memory\n");
    return -1;
  }
  free(ps->values[f]);
  ps->values[f] = v;
  return 0;
}

/* Sets field f from value as pprof's config.set: checked, and kept in the
 * form pprof shows it. 0, or -1 after a line on stderr. */
static int configure(prompt_t *ps, int f, const char *value) {
  const field_t *fd = &fields[f];
  char text[64], err[512];
  switch (fd->kind) {
  case K_STRING:
    if (f == F_SAMPLE_INDEX) {
      size_t index;
      if (report_sample_index(ps->meta, value, &index, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
      }
      value = ps->meta->sample_types[index].type;
    }
    return set_value(ps, f, value);
  case K_INT: {
    char *end;
    errno = 0;
    long n = strtol(value, &end, 10);
    if (errno || end == value || *end || n < INT32_MIN || n > INT32_MAX) {
      fprintf(stderr, "strconv.Atoi: parsing ");
      put_quoted(stderr, value);
      fprintf(stderr, ": invalid syntax\n");
      return -1;
    }
    snprintf(text, sizeof text, "%ld", n);
    return set_value(ps, f, text);
  }
  case K_FLOAT: {
    char *end;
    errno = 0;
    double x = strtod(value, &end);
    if (errno || end == value || *end || x < 0) {
      fprintf(stderr, "%s wants a number, not ", fd->name);
      put_quoted(stderr, value);
      fputc('\n', stderr);
      return -1;
    }
    snprintf(text, sizeof text, "%g", x);
    return set_value(ps, f, text);
  }
  case K_BOOL: {
    int b = parse_bool(value);
    if (b < 0) {
      fprintf(stderr, "illegal value ");
      put_quoted(stderr, value);
      fprintf(stderr, " for bool variable\n");
      return -1;
    }
    return set_value(ps, f, b ? "true" : "false");
  }
  case K_CHOICE:
    for (const char *const *c = fd->choices; *c; c++)
      if (strcmp(*c, value) == 0)
        return set_value(ps, f, value);
    fprintf(stderr, "invalid \"%s\" value ", fd->name);
    put_quoted(stderr, value);
    fputc('\n', stderr);
    return -1;
  }
  return -1;
}

/* The value as "options" shows it: sample_index's default is named. */
static const char *shown_value(const prompt_t *ps, int f) {
  const char *v = ps->values[f];
  if (f == F_SAMPLE_INDEX && !v[0]) {
    size_t index;
    char err[256];
    if (report_sample_index(ps->meta, NULL, &index, err, sizeof err) == 0)
      return ps->meta->sample_types[index].type;
  }
  return v;
}

/* pprof's printCurrentOptions. */
static void print_options(const prompt_t *ps) {
  for (int f = 0; f < F_N; f++) {
    const field_t *fd = &fields[f];
    const char *v = shown_value(ps, f);
    cprof__buf_t comment;
    cprof__buf_init(&comment);
    if (fd->choices) {
      cprof__buf_puts(&comment, "//: [");
      for (const char *const *c = fd->choices; *c; c++)
        cprof__buf_printf(&comment, "%s%s", c == fd->choices ? "" : " | ", *c);
      cprof__buf_puts(&comment, "]");
    } else if (f == F_SAMPLE_INDEX) {
      cprof__buf_puts(&comment, "//: [");
      for (size_t i = 0; i < ps->meta->n_sample_types; i++) {
        cprof__buf_puts(&comment, i ? " | " : "");
        report_put_name(&comment, ps->meta->sample_types[i].type);
      }
      cprof__buf_puts(&comment, "]");
    } else if (f == F_NODECOUNT && strcmp(v, "-1") == 0) {
      cprof__buf_puts(&comment, "//: default");
    } else if (!v[0]) {
      v = "\"\"";
    }
    cprof__buf_t value;
    cprof__buf_init(&value);
    report_put_name(&value, v);
    cprof__buf_putc(&value, '\0');
    cprof__buf_putc(&comment, '\0');
    fprintf(stderr, "  %-25s = %-20s %s\n", fd->name, value.failed ? "" : value.data,
            comment.failed ? "" : comment.data);
    cprof__buf_free(&value);
    cprof__buf_free(&comment);
  }
}

/* pprof's commandHelp. */
static void print_help(const char *what) {
  if (!what[0]) {
    fprintf(stderr, "  Commands:\n");
    for (size_t i = 0; i < N_PCOMMANDS; i++)
      fprintf(stderr, "    %-16s %s\n", pcommands[i].name, pcommands[i].description);
    fprintf(stderr, "    %-16s %s\n", "o/options", "List options and their current values");
    fprintf(stderr, "    %-16s %s\n", "q/quit/exit/^D", "Exit cprof");
    fprintf(stderr, "\n  Options:\n");
    for (int f = 0; f < F_N; f++)
      if (!fields[f].choices)
        fprintf(stderr, "    %-16s %.*s\n", fields[f].name, (int)strcspn(fields[f].help, "\n"),
                fields[f].help);
    fprintf(stderr, "\n  Option groups (only set one per group):\n");
    for (int f = 0; f < F_N; f++) {
      if (!fields[f].choices)
        continue;
      fprintf(stderr, "    %-16s \n", fields[f].name);
      for (const char *const *c = fields[f].choices; *c; c++)
        for (size_t k = 0; k < sizeof choice_help / sizeof *choice_help; k++)
          if (strcmp(choice_help[k].name, *c) == 0)
            fprintf(stderr, "      %-16s %.*s\n", *c, (int)strcspn(choice_help[k].help, "\n"),
                    choice_help[k].help);
    }
    fprintf(stderr, "  :   Clear focus/ignore/hide/tagfocus/tagignore\n"
                    "\n"
                    "  type \"help <cmd|option>\" for more information\n");
    return;
  }
  for (size_t i = 0; i < N_PCOMMANDS; i++)
    if (strcmp(pcommands[i].name, what) == 0) {
      fprintf(stderr, "%s\n", pcommands[i].description);
      const char *u = pcommands[i].usage;
      if (u[0]) {
        fprintf(stderr, "  Usage:\n");
        while (*u) {
          size_t n = strcspn(u, "\n");
          fprintf(stderr, "    %.*s\n", (int)n, u);
          u += n + (u[n] == '\n');
        }
      }
      fputc('\n', stderr);
      return;
    }
  int f = find_field(what);
  if (f >= 0) {
    fprintf(stderr, "%s\n", fields[f].help);
    return;
  }
  for (size_t k = 0; k < sizeof choice_help / sizeof *choice_help; k++)
    if (strcmp(choice_help[k].name, what) == 0) {
      fprintf(stderr, "%s\n", choice_help[k].help);
      return;
    }
  fprintf(stderr, "Unknown command: ");
  put_name(stderr, what);
  fputc('\n', stderr);
}

/* --- Running a command. */

/* A fresh copy of the profile: each SOURCE decoded again, merged if
 * several. 0, or 1 after a line on stderr. */
static int load(const prompt_t *ps, cprof__pf_t **out) {
  char err[512];
  cprof__pf_t **p = calloc((size_t)ps->n_src, sizeof *p);
  int rc = 1;
  if (!p) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  for (int i = 0; i < ps->n_src; i++)
    if (cprof__pf_decode(ps->src[i].data, ps->src[i].len, &p[i], err, sizeof err) != 0) {
      fprintf(stderr, "%s: %s\n", ps->src[i].name, err);
      goto done;
    }
  if (ps->n_src == 1) {
    *out = p[0];
    p[0] = NULL;
    rc = 0;
  } else if (cprof__pf_merge(p, (size_t)ps->n_src, out, err, sizeof err) != 0) {
    fprintf(stderr, "merging the profiles: %s\n", err);
  } else {
    rc = 0;
  }
done:
  for (int i = 0; i < ps->n_src; i++)
    cprof__pf_free(p[i]);
  free(p);
  return rc;
}

/* pprof's catRegex. Returns a malloc'd a|b (a is freed), NULL if out of
 * memory. */
static char *cat_regex(char *a, const char *b) {
  size_t na = a ? strlen(a) : 0, nb = strlen(b);
  char *r = malloc(na + nb + 2);
  if (r)
    snprintf(r, na + nb + 2, "%s%s%s", a ? a : "", na && nb ? "|" : "", b);
  free(a);
  return r;
}

/* What one command line asks for besides the settings: pprof's
 * parseCommandLine's copy of the configuration. */
typedef struct request {
  const pcommand_t *c;
  const char *param;
  long nodecount; /* -2: as set */
  int cum;        /* -1: as set */
  char *focus, *ignore;
  const char *output, *http;
} request_t;

static int parse_request(request_t *r, char **tok, int n) {
  r->nodecount = -2;
  r->cum = -1;
  int i = 1;
  if (r->c->has_param) {
    if (n < 2) {
      fprintf(stderr, "command %s requires an argument\n", r->c->name);
      return -1;
    }
    r->param = tok[i++];
  }
  for (; i < n; i++) {
    const char *t = tok[i];
    char *end;
    errno = 0;
    long v = strtol(t, &end, 10);
    if (!errno && end != t && !*end && v >= INT32_MIN && v <= INT32_MAX) {
      r->nodecount = v;
      continue;
    }
    if (t[0] == '>' || strcmp(t, "-o") == 0) {
      const char *file = t[0] == '>' ? t + 1 : "";
      if (!file[0]) {
        if (++i >= n) {
          fprintf(stderr, "unexpected end of line after %s\n", t);
          return -1;
        }
        file = tok[i];
      }
      r->output = file;
    } else if (r->c->action == A_WEB && (strcmp(t, "-http") == 0 || strcmp(t, "--http") == 0)) {
      if (++i >= n) {
        fprintf(stderr, "unexpected end of line after %s\n", t);
        return -1;
      }
      r->http = tok[i];
    } else if (r->c->action == A_WEB &&
               (strncmp(t, "-http=", 6) == 0 || strncmp(t, "--http=", 7) == 0)) {
      r->http = strchr(t, '=') + 1;
    } else if (t[0] == '-') {
      if (strcmp(t, "-cum") == 0 || strcmp(t, "--cum") == 0) {
        r->cum = 1;
        continue;
      }
      if (!(r->ignore = cat_regex(r->ignore, t + 1)))
        return -1;
    } else if (!(r->focus = cat_regex(r->focus, t))) {
      return -1;
    }
  }
  return 0;
}

/* The report options of the settings and the request. The strings stay
 * the prompt's and the request's. */
static void make_opts(const prompt_t *ps, const request_t *r, report_opts_t *o) {
  report_opts_init(o);
  const char *const *v = (const char *const *)ps->values;
  o->sample_index = v[F_SAMPLE_INDEX][0] ? v[F_SAMPLE_INDEX] : NULL;
  o->unit = v[F_UNIT][0] ? v[F_UNIT] : "minimum";
  o->cum_sort = r->cum >= 0 ? r->cum : strcmp(v[F_SORT], "cum") == 0;
  o->nodecount = r->nodecount != -2 ? r->nodecount : strtol(v[F_NODECOUNT], NULL, 10);
  if (o->nodecount == -1 && r->c->fn == report_top)
    o->nodecount = 10; /* pprof's prompt: top shows 10 unless told */
  o->nodefraction = strtod(v[F_NODEFRACTION], NULL);
  o->edgefraction = strtod(v[F_EDGEFRACTION], NULL);
  const char *g = v[F_GRANULARITY];
  o->granularity = strcmp(g, "lines") == 0       ? CPROF_PF_LINES
                   : strcmp(g, "files") == 0     ? CPROF_PF_FILES
                   : strcmp(g, "addresses") == 0 ? CPROF_PF_ADDRESSES
                                                 : CPROF_PF_FUNCTIONS;
  o->mean = strcmp(v[F_MEAN], "true") == 0;
  o->compact_labels = strcmp(v[F_COMPACT_LABELS], "true") == 0;
  const char *s;
#define STR(field) ((s = v[field])[0] ? s : NULL)
  o->filter.focus = r->focus ? r->focus : STR(F_FOCUS);
  o->filter.ignore = r->ignore ? r->ignore : STR(F_IGNORE);
  o->filter.hide = STR(F_HIDE);
  o->filter.show = STR(F_SHOW);
  o->filter.tagfocus = STR(F_TAGFOCUS);
  o->filter.tagignore = STR(F_TAGIGNORE);
  o->tagroot = STR(F_TAGROOT);
  o->tagleaf = STR(F_TAGLEAF);
#undef STR
}

/* Writes what a report made to its file (>f, -o f) or standard output. */
static void emit(const request_t *r, const cprof__buf_t *out) {
  if (out->failed) {
    fprintf(stderr, "%s: out of memory\n", r->c->name);
    return;
  }
  if (r->output) {
    int e = save_file(r->output, out->data, out->len);
    if (e != 0) {
      put_name(stderr, r->output);
      fprintf(stderr, ": %s\n", strerror(-e));
    }
    return;
  }
  if (fwrite(out->data, 1, out->len, stdout) != out->len || fflush(stdout) != 0)
    fprintf(stderr, "%s: writing the report failed\n", r->c->name);
}

/* Returns 1 when the prompt should end (the web server got a SIGTERM). */
static int run(prompt_t *ps, request_t *r) {
  report_opts_t o;
  make_opts(ps, r, &o);
  cprof__pf_t *p = NULL;
  int quit = 0;
  if (load(ps, &p) != 0 || report_prepare(r->c->name, p, &o) != 0) {
    cprof__pf_free(p);
    return 0;
  }
  cprof__buf_t out;
  cprof__buf_init(&out);
  if (r->c->action == A_GRAPH) {
    /* As pprof's: "Generating report in profile001.svg". */
    const char *format = strcmp(r->c->name, "graph") == 0 ? "svg" : r->c->name;
    char def[32], err[512];
    snprintf(def, sizeof def, "profile001.%s", format);
    const char *file = r->output ? r->output : def;
    fprintf(stderr, "Generating report in ");
    put_name(stderr, file);
    fputc('\n', stderr);
    if (graph_save(p, &o, file, graph_format_of(file) ? graph_format_of(file) : format, err,
                   sizeof err) != 0)
      fprintf(stderr, "%s: %s\n", r->c->name, err);
  } else if (r->c->action == A_REPORT) {
    char err[512] = "";
    int rc = r->c->fn(&out, p, &o, r->param, err, sizeof err);
    emit(r, &out);
    if (rc != 0)
      fprintf(stderr, "%s\n", err);
  } else if (page_build(p, NULL, &out) != 0 || out.failed) {
    fprintf(stderr, "%s: out of memory\n", r->c->name);
  } else if (r->c->action == A_FLAME) {
    const char *file = r->output ? r->output : "flame.html";
    int e = save_file(file, out.data, out.len);
    if (e == 0)
      fprintf(stderr, "Saved flame graph in ");
    put_name(stderr, file);
    if (e != 0)
      fprintf(stderr, ": %s", strerror(-e));
    fputc('\n', stderr);
  } else {
    web_page_t page = {out.data, out.len};
    int sig = 0;
    fprintf(stderr, "Ctrl-C stops serving and comes back to the prompt.\n");
    web_serve(&page, r->http ? r->http : "127.0.0.1:6061", &sig);
    quit = sig != 0 && sig != SIGINT;
  }
  cprof__buf_free(&out);
  cprof__pf_free(p);
  return quit;
}

/* --- The loop. */

/* One setting (name=value, or a bare name). 1 if line was one, else 0. */
static int setting(prompt_t *ps, char *line) {
  char *eq = strchr(line, '=');
  char *name = line, *value = NULL;
  if (eq) {
    *eq = '\0';
    value = eq + 1;
    char *comment = strstr(value, "//:");
    if (comment)
      *comment = '\0';
    value = trim(value);
  }
  name = trim(name);
  int f = find_field(name), choice = f < 0 ? find_choice(name) : -1;
  if (f < 0 && choice < 0) {
    if (eq)
      *eq = '=';
    return 0;
  }
  if (choice >= 0) {
    /* "cum", "lines", "cum=true": the group takes that choice. */
    int b = parse_bool(value ? value : "");
    if (b < 0) {
      fprintf(stderr, "illegal value ");
      put_quoted(stderr, value);
      fprintf(stderr, " for bool variable\n");
    } else if (b) {
      configure(ps, choice, name);
    }
    return 1;
  }
  if (!value && fields[f].kind != K_BOOL) {
    /* A bare name tells its value. */
    fprintf(stderr, "%s = ", name);
    put_name(stderr, shown_value(ps, f)[0] ? shown_value(ps, f) : "\"\"");
    fputc('\n', stderr);
    return 1;
  }
  configure(ps, f, value ? value : "");
  return 1;
}

/* Runs one line; 1 to leave the prompt. */
static int execute(prompt_t *ps, char *line) {
  line = trim(line);
  if (!line[0])
    return 0;
  /* pprof's shortcuts: ":" clears the filters; a sample type's name
   * chooses it (mean_NAME, total_NAME with mean set or not). */
  if (strcmp(line, ":") == 0) {
    int clear[] = {F_FOCUS, F_IGNORE, F_HIDE, F_TAGFOCUS, F_TAGIGNORE};
    for (size_t i = 0; i < sizeof clear / sizeof *clear; i++)
      set_value(ps, clear[i], "");
    return 0;
  }
  for (size_t i = 0; i < ps->meta->n_sample_types; i++) {
    const char *t = ps->meta->sample_types[i].type;
    int mean = -1;
    if (strncmp(line, "mean_", 5) == 0 && strcmp(line + 5, t) == 0)
      mean = 1;
    else if (strncmp(line, "total_", 6) == 0 && strcmp(line + 6, t) == 0)
      mean = 0;
    else if (strcmp(line, t) != 0)
      continue;
    if (mean >= 0)
      set_value(ps, F_MEAN, mean ? "true" : "false");
    configure(ps, F_SAMPLE_INDEX, t);
    return 0;
  }
  if (setting(ps, line))
    return 0;

  size_t cap = strlen(line) / 2 + 2;
  char **tok = malloc(cap * sizeof *tok);
  int n = 0, quit = 0;
  if (!tok) {
    fprintf(stderr, "out of memory\n");
    return 0;
  }
  for (char *save, *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
    tok[n++] = t;
  if (strcmp(tok[0], "o") == 0 || strcmp(tok[0], "options") == 0) {
    print_options(ps);
    goto done;
  }
  if (strcmp(tok[0], "exit") == 0 || strcmp(tok[0], "quit") == 0 || strcmp(tok[0], "q") == 0) {
    quit = 1;
    goto done;
  }
  if (strcmp(tok[0], "help") == 0) {
    /* pprof joins the words after help: "help top" */
    cprof__buf_t what;
    cprof__buf_init(&what);
    for (int i = 1; i < n; i++)
      cprof__buf_printf(&what, "%s%s", i > 1 ? " " : "", tok[i]);
    cprof__buf_putc(&what, '\0');
    print_help(what.failed ? "" : what.data);
    cprof__buf_free(&what);
    goto done;
  }
  request_t r = {0};
  char digits[32] = "";
  for (size_t i = 0; i < N_PCOMMANDS && !r.c; i++)
    if (strcmp(pcommands[i].name, tok[0]) == 0)
      r.c = &pcommands[i];
  if (!r.c) {
    /* "top10" is "top 10". */
    size_t len = strlen(tok[0]), d = len;
    while (d > 0 && tok[0][d - 1] >= '0' && tok[0][d - 1] <= '9')
      d--;
    if (d > 0 && d < len && len - d < sizeof digits) {
      for (size_t i = 0; i < N_PCOMMANDS && !r.c; i++)
        if (strlen(pcommands[i].name) == d && strncmp(pcommands[i].name, tok[0], d) == 0)
          r.c = &pcommands[i];
      if (r.c) {
        memcpy(digits, tok[0] + d, len - d + 1);
        /* The number goes in as the first argument, as in pprof. */
        memmove(tok + 2, tok + 1, (size_t)(n - 1) * sizeof *tok);
        tok[1] = digits;
        n++;
      }
    }
  }
  if (!r.c) {
    if (find_field(tok[0]) >= 0) {
      fprintf(stderr, "did you mean: %s=", tok[0]);
      put_name(stderr, n > 1 ? tok[1] : "<val>");
      fputc('\n', stderr);
    } else {
      fprintf(stderr, "unrecognized command: ");
      put_quoted(stderr, tok[0]);
      fputc('\n', stderr);
    }
    goto done;
  }
  if (parse_request(&r, tok, n) == 0)
    quit = run(ps, &r);
  free(r.focus);
  free(r.ignore);
done:
  free(tok);
  return quit;
}

/* The next command line (malloc'd), or NULL at the end. */
static char *read_command(prompt_t *ps) {
  if (ps->edit) {
    char *line = readline("(cprof) ");
    if (line && ps->history && *trim(line)) {
      add_history(line);
      write_history(ps->history); /* each time: a crash or Ctrl-C keeps it */
    }
    return line;
  }
  if (ps->prompt) {
    fputs("(cprof) ", stderr);
    fflush(stderr);
  }
  char *line = NULL;
  size_t cap = 0;
  if (getline(&line, &cap, ps->in) < 0) {
    free(line);
    return NULL;
  }
  return line;
}

/* Chooses where commands come from and how. 0, or 2 after a line. */
static int open_input(prompt_t *ps, int stdin_used) {
  ps->in = stdin;
  if (stdin_used && !isatty(STDIN_FILENO)) {
    /* The profile came through standard input: commands come from the
     * terminal, if there is one. */
    ps->in = fopen("/dev/tty", "r");
    if (!ps->in) {
      fprintf(stderr, "cprof: standard input held the profile, and there is no terminal to "
                      "read commands from (give the profile as a file, or run one report on "
                      "it: cprof top -)\n");
      return 2;
    }
  }
  clearerr(ps->in);
  if (!isatty(fileno(ps->in)))
    return 0;
  const char *term = getenv("TERM");
  if (!term || !term[0] || strcmp(term, "dumb") == 0) {
    ps->prompt = 1;
    return 0;
  }
  ps->edit = 1;
  rl_readline_name = "cprof";
  rl_instream = ps->in;
  rl_outstream = isatty(STDOUT_FILENO) ? stdout : stderr;
  using_history();
  stifle_history(1000);
  const char *h = getenv("CPROF_HISTORY"), *home = getenv("HOME");
  if (h && h[0]) {
    ps->history = strdup(h);
  } else if (home && home[0]) {
    size_t n = strlen(home) + sizeof "/.cprof_history";
    if ((ps->history = malloc(n)))
      snprintf(ps->history, n, "%s/.cprof_history", home);
  }
  if (ps->history)
    read_history(ps->history); /* none yet, or unreadable: start afresh */
  return 0;
}

/* pprof's greetings. */
static void greet(prompt_t *ps) {
  report_opts_t o;
  request_t r = {.c = &pcommands[0], .nodecount = -2, .cum = -1};
  make_opts(ps, &r, &o);
  cprof__pf_t *p = NULL;
  if (load(ps, &p) == 0 && report_prepare("prompt", p, &o) == 0) {
    cprof__buf_t out;
    cprof__buf_init(&out);
    report_profile_labels(&out, p, &o);
    if (!out.failed)
      fwrite(out.data, 1, out.len, stderr);
    cprof__buf_free(&out);
    if (o.total == 0 && p->n_sample_types > 1)
      fprintf(stderr, "No samples were found with the default sample value type.\n"
                      "Try \"sample_index\" command to analyze different sample values.\n\n");
  }
  cprof__pf_free(p);
  fprintf(stderr, "Entering interactive mode (type \"help\" for commands, \"o\" for options)\n");
}

int cmd_prompt(int argc, char **argv) {
  report_opts_t o;
  report_opts_init(&o);
  prompt_t ps = {0};
  char **sources = calloc((size_t)argc + 1, sizeof *sources);
  int n = 0, rc = 1, stdin_used = 0;
  char err[512];
  if (!sources)
    return 1;
  if (report_args("prompt", usage, &o, NULL, NULL, argc, argv, sources, &n, &rc) != 0)
    goto done;
  rc = 2;
  if (n == 0) {
    fprintf(stderr, "cprof prompt: which profile? (cprof prompt --help)\n");
    goto done;
  }
  rc = 1;
  ps.src = calloc((size_t)n, sizeof *ps.src);
  if (!ps.src)
    goto done;
  for (int i = 0; i < n; i++) {
    if (source_read(sources[i], &ps.src[i], err, sizeof err) != 0) {
      fprintf(stderr, "cprof: %s\n", err);
      goto done;
    }
    ps.n_src = i + 1;
    stdin_used |= strcmp(sources[i], "-") == 0;
  }
  if (load(&ps, &ps.meta) != 0)
    goto done;
  for (int f = 0; f < F_N; f++)
    if (set_value(&ps, f, fields[f].initial) != 0)
      goto done;
  /* The report options given on the command line are the first settings. */
  const char *given[F_N] = {0};
  given[F_SAMPLE_INDEX] = o.sample_index;
  given[F_UNIT] = strcmp(o.unit, "minimum") ? o.unit : NULL;
  given[F_FOCUS] = o.filter.focus;
  given[F_IGNORE] = o.filter.ignore;
  given[F_HIDE] = o.filter.hide;
  given[F_SHOW] = o.filter.show;
  given[F_TAGFOCUS] = o.filter.tagfocus;
  given[F_TAGIGNORE] = o.filter.tagignore;
  given[F_TAGROOT] = o.tagroot;
  given[F_TAGLEAF] = o.tagleaf;
  given[F_SORT] = o.cum_sort ? "cum" : NULL;
  given[F_MEAN] = o.mean ? "true" : NULL;
  given[F_GRANULARITY] = granularities[o.granularity == CPROF_PF_ADDRESSES ? 0
                                       : o.granularity == CPROF_PF_FILES   ? 1
                                       : o.granularity == CPROF_PF_LINES   ? 3
                                                                           : 2];
  char num[3][32];
  snprintf(num[0], sizeof num[0], "%ld", o.nodecount);
  snprintf(num[1], sizeof num[1], "%g", o.nodefraction);
  snprintf(num[2], sizeof num[2], "%g", o.edgefraction);
  given[F_NODECOUNT] = num[0];
  given[F_NODEFRACTION] = num[1];
  given[F_EDGEFRACTION] = num[2];
  for (int f = 0; f < F_N; f++)
    if (given[f] && configure(&ps, f, given[f]) != 0) {
      rc = 2;
      goto done;
    }
  if ((rc = open_input(&ps, stdin_used)) != 0)
    goto done;
  greet(&ps);
  for (;;) {
    char *line = read_command(&ps);
    if (!line) {
      if (ps.edit) /* Ctrl-D: the shell's prompt on a line of its own */
        fputc('\n', rl_outstream);
      break;
    }
    int quit = execute(&ps, line);
    free(line);
    fflush(stdout);
    if (quit)
      break;
  }
  rc = 0;
done:
  if (ps.in && ps.in != stdin)
    fclose(ps.in);
  for (int i = 0; i < ps.n_src; i++)
    source_free(&ps.src[i]);
  free(ps.src);
  cprof__pf_free(ps.meta);
  for (int f = 0; f < F_N; f++)
    free(ps.values[f]);
  free(ps.history);
  free(sources);
  return rc;
}
